"""The framework side of Unigram: Metaspace words in, tokenizer.json out.

The algorithm (EM over piece probabilities, pruning) lives in ``tokend.core.training.unigram``
(``train_unigram``). This module counts the corpus' words as HF's ``Metaspace(replacement="▁",
prepend_scheme="always", split=True)`` cuts them, hands them over with the special tokens (the
unknown token among them), and exports the pieces through ``UnigramResult.tokenizer_json`` (HF
Unigram model, Metaspace pre-tokenizer and decoder).

A line is a sentence, as for SentencePiece and HF's trainer: each line gets its own ``▁`` in
front, so ``"sir.\nThe"`` counts ``▁sir.\n`` and ``▁The``, not ``▁sir.\nThe``. The newline
stays at the end of its line, exactly as HF's ``Tokenizer.train(files)`` reads lines, so it
is a known character when a multi-line text is served (SentencePiece drops it).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from tokend.core.errors import CorruptData
from tokend.core.pipeline.pre_tokenizers import Metaspace
from tokend.core.training.corpus import CorpusInput
from tokend.core.training.progress import Throttle
from tokend.core.training.result import TrainedTokenizer
from tokend.core.training.unigram import train_unigram
from tokend.core.training.words import count_words

_PRE = Metaspace("\u2581", "always", True)
# Lines with their "\n" (the last one may have none); only "\n" ends a line, as in HF.
_LINES = re.compile(r"[^\n]*\n|[^\n]+").findall


def _words(piece: str) -> list[str]:
    r"""Metaspace words of each line of ``piece``: "a b\nc" -> ["▁a", "▁b\n", "▁c"].

    Exact across pieces: the corpus splitter cuts a document only before a space that
    follows a non-space, never at a line start, and the space a piece then starts with
    gives its first word the ``▁`` the whole line would (nothing is prepended). Text after
    a special token starts a new sentence.
    """
    pre = _PRE.pre_tokenize
    return [text for line in _LINES(piece) for text, _ in pre([(line, True)])]


def train_unigram_kind(
    corpus: CorpusInput,
    vocab_size: int,
    specials: Sequence[str],
    *,
    unk_token: str,
    throttle: Throttle,
) -> TrainedTokenizer[str]:
    """Count Metaspace words line by line, run the Unigram trainer, export its pieces."""
    start = time.perf_counter()
    counted = count_words(corpus, list(specials), _words, throttle)
    seconds = {"count": time.perf_counter() - start}
    start = time.perf_counter()
    result = train_unigram(
        counted.counts, vocab_size, list(specials), unk_token=unk_token,
        progress=throttle.report, should_stop=throttle.stopped,
    )
    throttle.check("train")
    seconds["train"] = time.perf_counter() - start
    seconds["total"] = seconds["count"] + seconds["train"]
    pieces: list[tuple[str, float]] = result.pieces
    ids = {p: i for i, (p, _) in reversed(list(enumerate(pieces)))}
    missing = [s for s in specials if s not in ids]
    if missing:
        raise CorruptData(f"the Unigram trainer lost the special tokens {missing}")
    special_ids = {text: ids[text] for text in specials}
    stats = counted.stats(
        steps=len(pieces), stopped_early=len(pieces) < vocab_size, seconds=seconds
    )
    return TrainedTokenizer(
        model="unigram",
        vocab=dict(enumerate(p for p, _ in pieces)),
        merges=[],
        special_tokens=special_ids,
        vocab_size=vocab_size,
        stats=stats,
        tokenizer_json=result.tokenizer_json(),
    )
