"""The framework side of Unigram: Metaspace words in, tokenizer.json out.

The algorithm (EM over piece probabilities, pruning) lives in ``tokend.core.training.unigram``
(``train_unigram``, see ``kinds``' docstring for its interface). This module counts the
corpus' words as HF's ``Metaspace(replacement="▁", prepend_scheme="always", split=True)``
cuts them (what SentencePiece and HF's Unigram trainer see), hands them over, and exports the
pieces as an HF Unigram model with a Metaspace decoder.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Sequence
from typing import Any

from tokend.core.corpus import CorpusInput
from tokend.core.errors import CorruptData, FailedPrecondition
from tokend.core.pipeline.pre_tokenizers import Metaspace
from tokend.core.train import Throttle
from tokend.core.training.result import KindStats, TrainedTokenizer, tokenizer_json
from tokend.core.training.words import count_words

METASPACE = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
             "split": True}
_PRE = Metaspace("\u2581", "always", True)


def _words(piece: str) -> list[str]:
    return [text for text, _ in _PRE.pre_tokenize([(piece, True)])]


def train_unigram_kind(
    corpus: CorpusInput,
    vocab_size: int,
    specials: Sequence[str],
    *,
    unk_token: str,
    throttle: Throttle,
) -> TrainedTokenizer:
    """Count Metaspace words, run the Unigram trainer, export its pieces."""
    try:
        module: Any = importlib.import_module("tokend.core.training.unigram")
    except ModuleNotFoundError:
        raise FailedPrecondition(
            "model 'unigram' is not available in this build yet; choose byte-bpe, char, "
            "word-bpe or wordpiece"
        ) from None
    start = time.perf_counter()
    counted = count_words(corpus, list(specials), _words, throttle)
    seconds = {"count": time.perf_counter() - start}
    start = time.perf_counter()
    result = module.train_unigram(
        counted.counts, vocab_size, list(specials), unk_token=unk_token,
        progress=throttle.report, should_stop=throttle.stopped,
    )
    throttle.check("train")
    seconds["train"] = time.perf_counter() - start
    seconds["total"] = seconds["count"] + seconds["train"]
    pieces: list[tuple[str, float]] = [(str(p), float(s)) for p, s in result.pieces]
    ids = {p: i for i, (p, _) in reversed(list(enumerate(pieces)))}
    missing = [s for s in specials if s not in ids]
    if missing or not 0 <= int(result.unk_id) < len(pieces):
        raise CorruptData(f"the Unigram trainer lost special tokens {missing} or its unk_id")
    special_ids = {text: ids[text] for text in specials}
    model: dict[str, Any] = {"type": "Unigram", "unk_id": int(result.unk_id),
             "vocab": [[p, s] for p, s in pieces], "byte_fallback": False}
    stats = KindStats(
        bytes_read=counted.bytes_read, documents=counted.documents,
        words=counted.occurrences, distinct_words=len(counted.counts), steps=len(pieces),
        stopped_early=len(pieces) < vocab_size, seconds=seconds,
    )
    return TrainedTokenizer(
        model="unigram",
        vocab=dict(enumerate(p for p, _ in pieces)),
        merges=[],
        special_tokens=special_ids,
        vocab_size=vocab_size,
        stats=stats,
        tokenizer_json=tokenizer_json(
            model=model, special_tokens=special_ids, pre_tokenizer=dict(METASPACE),
            decoder={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                     "split": True},
        ),
    )
