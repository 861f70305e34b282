"""Corpus -> word counts for the kinds served by the HF-style pipeline (char, word-bpe, ...).

The corpus streams exactly as for ``train_bpe`` (files or str chunks, split at special
tokens, cut before a space that follows a non-space so memory stays bounded). Each piece goes
through the *same* normalizer and pre-tokenizer objects the exported tokenizer.json builds
(``core/pipeline``), so training sees exactly the words serving will see. Cutting before such
a space is safe for every pre-tokenizer used here (Whitespace, BertPreTokenizer, Metaspace
with ``prepend_scheme: always``, none): each treats the space as a word boundary and a piece
that starts with it splits as it would inside the whole text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from tokend.core.training import corpus as corpus_io
from tokend.core.training.corpus import CorpusInput, Splitter, open_sources
from tokend.core.training.progress import Throttle
from tokend.core.training.result import KindStats
from tokend.core.training.utf8 import utf8_length

Words = Callable[[str], list[str]]
# Whitespace every pre-tokenizer given ``split_first`` treats as a boundary, and which no
# normalizer used with it joins to a neighbour (see count_words).
_BOUNDARY = re.compile(r"[ \t\n\r]+")


@dataclass
class WordCounts:
    """Words in first-seen order (dicts keep insertion order) with their counts."""

    counts: dict[str, int]
    bytes_read: int
    documents: int
    occurrences: int

    def stats(self, *, steps: int, stopped_early: bool, seconds: dict[str, float]) -> KindStats:
        """The training statistics of a kind trained on these counts."""
        return KindStats(
            bytes_read=self.bytes_read, documents=self.documents, words=self.occurrences,
            distinct_words=len(self.counts), steps=steps, stopped_early=stopped_early,
            seconds=seconds,
        )


def count_words(
    corpus: CorpusInput, specials: list[str], words_of: Words, throttle: Throttle,
    *, split_first: bool = False, chars: bool = False,
) -> WordCounts:
    """Stream ``corpus`` and count the words ``words_of(piece)`` yields for each piece.

    ``split_first``: cut pieces at runs of space, tab, CR and LF first and run ``words_of``
    once per *distinct* chunk (counts multiplied), a large saving on real text. Exact when
    ``words_of`` splits at those characters and sees nothing across them: Whitespace and
    BertPreTokenizer, with no normalizer or BertNormalizer (per character, NFD never moves
    a mark across a space); not Metaspace, which keeps the spaces. ``chars``: count the
    characters of the text itself (``words_of`` is not called).
    """
    sources = open_sources(corpus)
    total = 0 if any(s.size is None for s in sources) else sum(s.size or 0 for s in sources)
    splitter = Splitter(specials, safe_cuts=True, target_chars=corpus_io.TARGET_PIECE_CHARS)
    counts: dict[str, int] = {}
    get = counts.get
    bytes_read = 0
    occurrences = 0

    chunks: Counter[str] = Counter()

    def add(pieces: list[str]) -> None:
        nonlocal occurrences
        for piece in pieces:
            throttle.check("count")
            if split_first:
                chunks.update(_BOUNDARY.split(piece))
                continue
            if chars:
                chunks.update(piece)
                continue
            found = words_of(piece)
            occurrences += len(found)
            for word in found:
                counts[word] = get(word, 0) + 1

    for source in sources:
        before = bytes_read
        block_chars = 0
        for block in source.blocks:
            throttle.check("count")
            if source.size is None:
                bytes_read += utf8_length(block)
                shown = bytes_read
            else:  # characters approximate bytes until the file is done
                block_chars += len(block)
                shown = before + min(block_chars, source.size)
            add(splitter.feed(block))
            throttle.report("count", shown, total)
        add(splitter.finish())
        if source.size is not None:
            bytes_read += source.size
    if split_first:
        occurrences = _count_chunks(chunks, words_of, counts, throttle)
    elif chars:
        counts, occurrences = dict(chunks), chunks.total()
    throttle.report("count", bytes_read, total, force=True)
    return WordCounts(counts, bytes_read, splitter.documents, occurrences)


def _count_chunks(
    chunks: Counter[str], words_of: Words, counts: dict[str, int], throttle: Throttle
) -> int:
    """Words of each distinct chunk (first-seen order, so words keep theirs), times its count."""
    occurrences = 0
    get = counts.get
    for i, (chunk, n) in enumerate(chunks.items()):
        if i & 0xFFF == 0:
            throttle.check("count")
        if not chunk:
            continue
        for word in words_of(chunk):
            counts[word] = get(word, 0) + n
            occurrences += n
    return occurrences
