"""Corpus -> word counts: the fast paths (split first, characters) equal the plain one."""

from __future__ import annotations

from collections import Counter

from family_texts import SAMPLES, random_text
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.training import corpus as corpus_io
from tokend.core.training.progress import Throttle
from tokend.core.training.unigram_kind import _words as metaspace_words
from tokend.core.training.word_bpe import _words as whitespace_words
from tokend.core.training.wordpiece import _BertWords
from tokend.core.training.words import count_words

texts = st.lists(st.one_of(random_text, st.sampled_from(list(SAMPLES.values()))),
                 min_size=1, max_size=6)


def counts(chunks: list[str], words_of, **kw) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Word counts with pieces cut every few characters (at safe cuts), to test the cuts."""
    saved = corpus_io.TARGET_PIECE_CHARS
    corpus_io.TARGET_PIECE_CHARS = 8
    try:
        return count_words(iter(chunks), ["<s>"], words_of, Throttle(None, None), **kw).counts
    finally:
        corpus_io.TARGET_PIECE_CHARS = saved


@settings(max_examples=80, deadline=None)
@given(chunks=texts)
def test_split_first_equals_whole_pieces(chunks: list[str]) -> None:
    """Same words, counts and first-seen order as pre-tokenizing each whole document."""
    docs = "".join(chunks).split("<s>")
    for words_of in (whitespace_words, _BertWords(), metaspace_words):
        whole: dict[str, int] = {}
        for doc in docs:
            for word in words_of(doc) if doc else []:
                whole[word] = whole.get(word, 0) + 1
        assert list(counts(chunks, words_of).items()) == list(whole.items())
        if words_of is not metaspace_words:  # Metaspace keeps spaces: never split first
            fast = counts(chunks, words_of, split_first=True)
            assert list(fast.items()) == list(whole.items())


@settings(max_examples=40, deadline=None)
@given(chunks=texts)
def test_chars_and_metaspace(chunks: list[str]) -> None:
    """chars=True counts characters between special tokens; Metaspace words keep the spaces."""
    text = "".join(chunks)
    expected = Counter("".join(text.split("<s>")))
    assert counts(chunks, list, chars=True) == dict(expected)
    assert sum(counts(chunks, metaspace_words).values()) == sum(
        len(metaspace_words(part)) for part in text.split("<s>") if part)
