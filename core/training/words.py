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

from collections.abc import Callable
from dataclasses import dataclass

from tokend.core import corpus as corpus_io
from tokend.core.corpus import CorpusInput, Splitter, open_sources, utf8_length
from tokend.core.train import Throttle

Words = Callable[[str], list[str]]


@dataclass
class WordCounts:
    """Words in first-seen order (dicts keep insertion order) with their counts."""

    counts: dict[str, int]
    bytes_read: int
    documents: int
    occurrences: int


def count_words(
    corpus: CorpusInput, specials: list[str], words_of: Words, throttle: Throttle
) -> WordCounts:
    """Stream ``corpus`` and count the words ``words_of(piece)`` yields for each piece."""
    sources = open_sources(corpus)
    total = 0 if any(s.size is None for s in sources) else sum(s.size or 0 for s in sources)
    splitter = Splitter(specials, safe_cuts=True, target_chars=corpus_io.TARGET_PIECE_CHARS)
    counts: dict[str, int] = {}
    get = counts.get
    bytes_read = 0
    occurrences = 0

    def add(pieces: list[str]) -> None:
        nonlocal occurrences
        for piece in pieces:
            throttle.check("count")
            found = words_of(piece)
            occurrences += len(found)
            for word in found:
                counts[word] = get(word, 0) + 1

    for source in sources:
        before = bytes_read
        chars = 0
        for block in source.blocks:
            throttle.check("count")
            if source.size is None:
                bytes_read += utf8_length(block)
                shown = bytes_read
            else:  # characters approximate bytes until the file is done
                chars += len(block)
                shown = before + min(chars, source.size)
            add(splitter.feed(block))
            throttle.report("count", shown, total)
        add(splitter.finish())
        if source.size is not None:
            bytes_read += source.size
    throttle.report("count", bytes_read, total, force=True)
    return WordCounts(counts, bytes_read, splitter.documents, occurrences)
