"""Character-level tokenizer: the ``vocab_size`` most frequent characters, one token each.

Served as an HF BPE model with no merges (so each character is its own token), no normalizer
and no pre-tokenizer (the whole text is one word; BPE with no merges is linear in it), and a
Fuse decoder (tokens are concatenated back). A character outside the vocabulary becomes the
unknown token. Ties in frequency go to the lower code point.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tokend.core.training.corpus import CorpusInput
from tokend.core.training.progress import Throttle
from tokend.core.training.result import TrainedTokenizer, tokenizer_json
from tokend.core.training.words import count_words


def train_char(
    corpus: CorpusInput,
    vocab_size: int,
    specials: Sequence[str],
    *,
    unk_token: str,
    throttle: Throttle,
) -> TrainedTokenizer[str]:
    """Keep the most frequent characters; ``specials`` (unk included) take the first ids."""
    start = time.perf_counter()
    counted = count_words(corpus, list(specials), list, throttle, chars=True)
    seconds = {"count": time.perf_counter() - start}
    start = time.perf_counter()
    room = vocab_size - len(specials)
    chars = sorted(
        (c for c in counted.counts if c not in specials),
        key=lambda c: (-counted.counts[c], ord(c)),
    )
    kept = chars[:room]
    vocab = {text: i for i, text in enumerate(specials)}
    for c in kept:
        vocab[c] = len(vocab)
    seconds["select"] = time.perf_counter() - start
    seconds["total"] = seconds["count"] + seconds["select"]
    throttle.report("select", len(kept), room, force=True)
    model: dict[str, Any] = {
        "type": "BPE", "dropout": None, "unk_token": unk_token,
        "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
        "byte_fallback": False, "ignore_merges": False, "vocab": vocab, "merges": [],
    }
    special_ids = {text: vocab[text] for text in specials}
    stats = counted.stats(steps=len(kept), stopped_early=len(kept) < room, seconds=seconds)
    return TrainedTokenizer(
        model="char",
        vocab={i: t for t, i in vocab.items()},
        merges=[],
        special_tokens=special_ids,
        vocab_size=vocab_size,
        stats=stats,
        tokenizer_json=tokenizer_json(
            model=model, special_tokens=special_ids, decoder={"type": "Fuse"}
        ),
    )
