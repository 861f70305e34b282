"""truncate and chunk: properties on every built-in encoding and a trained tokenizer.

BPE counts are not monotonic in the text, so the properties are the local ones the API
promises: a truncation fits and one more character would not; every chunk fits alone, the
chunks cover the text in order, offsets (characters and UTF-8 bytes) point at the piece.
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokend.core import BUILTIN_NAMES, Encoding, InvalidInput, get_encoding, train_bpe
from tokend.core.counting import chunk, truncate

FIXTURES = Path(__file__).parents[2] / "fixtures"
ALPHABET = [
    *" \n\n\t  aAbBzZ09.,!?'’-éß日本語한😀👍🏽\u200d\u0301",
    *["the ", "quick ", "brown ", "fox. ", "\n\n", "<|endoftext|>", "    ", "1234", "ʼs"],
]
texts = st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join)
SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@functools.cache
def trained() -> Encoding:
    """A small tokenizer trained on the TinyStories sample (merges of its own)."""
    result = train_bpe(FIXTURES / "corpora" / "tinystories_sample.txt", 400, ["<|endoftext|>"])
    return result.to_encoding("trained-400")


def encoding(name: str) -> Encoding:
    return trained() if name == "trained" else get_encoding(name)


NAMES = [*BUILTIN_NAMES, "trained"]


def plain(enc: Encoding, text: str) -> int:
    return len(enc.encode_ordinary(text))


@pytest.mark.parametrize("name", NAMES)
class TestTruncateProperties:
    @SETTINGS
    @given(text=texts, budget=st.integers(0, 12))
    def test_head_and_tail_are_maximal(self, name: str, text: str, budget: int) -> None:
        enc = encoding(name)
        head = truncate(enc, text, budget, keep="head")
        assert text.startswith(head.text) and head.count <= budget
        assert head.ids == enc.encode_ordinary(head.text) and head.count == len(head.ids)
        if len(head.text) < len(text):
            assert plain(enc, text[: len(head.text) + 1]) > budget
        tail = truncate(enc, text, budget, keep="tail")
        assert text.endswith(tail.text) and tail.count <= budget
        if len(tail.text) < len(text):
            assert plain(enc, text[len(text) - len(tail.text) - 1:]) > budget

    @SETTINGS
    @given(text=texts, budget=st.integers(1, 14))
    def test_both_ends_are_maximal_around_the_marker(
        self, name: str, text: str, budget: int
    ) -> None:
        enc = encoding(name)
        marker = "…"
        if plain(enc, text) <= budget:  # nothing to cut: the text comes back as it is
            assert truncate(enc, text, budget, keep="both").text == text
            return
        if plain(enc, marker) > budget:
            with pytest.raises(InvalidInput, match="marker"):
                truncate(enc, text, budget, keep="both", marker=marker)
            return
        result = truncate(enc, text, budget, keep="both", marker=marker)
        assert result.count <= budget and result.truncated
        a, b = result.head_chars, result.tail_chars
        assert result.text == text[:a] + marker + text[len(text) - b:]
        assert a + b < len(text)
        assert plain(enc, text[: a + 1] + marker + text[len(text) - b:]) > budget
        assert plain(enc, text[:a] + marker + text[len(text) - b - 1:]) > budget


@pytest.mark.parametrize("name", NAMES)
class TestChunkProperties:
    @SETTINGS
    @given(text=texts, budget=st.integers(4, 16), overlap=st.integers(0, 3))
    def test_pieces_fit_cover_and_point_at_the_text(
        self, name: str, text: str, budget: int, overlap: int
    ) -> None:
        enc = encoding(name)
        pieces = chunk(enc, text, budget, overlap=overlap)
        data = text.encode("utf-8")
        if not text:
            assert pieces == []
            return
        assert pieces[0].start == 0 and pieces[-1].end == len(text)
        for i, piece in enumerate(pieces):
            assert piece.index == i
            assert piece.text == text[piece.start:piece.end]
            assert data[piece.byte_start:piece.byte_end] == piece.text.encode("utf-8")
            assert piece.count == plain(enc, piece.text) <= budget
        for prev, nxt in itertools.pairwise(pieces):
            assert prev.start < nxt.start <= prev.end  # forward, no gap
            assert plain(enc, text[nxt.start:prev.end]) <= overlap
            if overlap == 0:
                assert nxt.start == prev.end


class TestChunkBoundaries:
    def test_prefers_paragraphs_then_sentences_then_words(self) -> None:
        enc = get_encoding("o200k_base")
        text = "First sentence here. Second one follows.\n\nA new paragraph starts. And more."
        pieces = chunk(enc, text, 14)
        assert pieces[0].text.endswith("\n\n")
        words = chunk(enc, "alpha beta gamma delta epsilon zeta eta theta", 5)
        assert all(p.text.endswith(" ") for p in words[:-1])
        assert "".join(p.text for p in words) == "alpha beta gamma delta epsilon zeta eta theta"

    def test_overlap_repeats_the_end_of_the_previous_piece(self) -> None:
        enc = get_encoding("cl100k_base")
        text = " ".join(f"word{i}" for i in range(60))
        pieces = chunk(enc, text, 20, overlap=5)
        assert len(pieces) > 2
        for prev, nxt in itertools.pairwise(pieces):
            shared = text[nxt.start:prev.end]
            assert shared and prev.text.endswith(shared) and nxt.text.startswith(shared)

    def test_bad_arguments(self) -> None:
        with pytest.raises(InvalidInput, match="overlap"):
            chunk("o200k_base", "abc", 4, overlap=4)
        with pytest.raises(InvalidInput, match="too small"):
            chunk("o200k_base", "𓀀", 1)  # one character, 4 tokens
        with pytest.raises(InvalidInput, match="keep"):
            truncate("o200k_base", "abc", 1, keep="middle")  # type: ignore[arg-type]


class TestTruncateExamples:
    def test_long_document_head_tail_both(self) -> None:
        """On a long document (the ends are looked at through windows) the cut is maximal."""
        import gzip

        text = gzip.decompress((FIXTURES / "corpora" / "shakespeare.txt.gz").read_bytes()).decode()
        text = text[:200_000]
        enc = get_encoding("o200k_base")
        n = len(text)
        head = truncate(enc, text, 1000, keep="head")
        assert head.count <= 1000 < plain(enc, text[: head.head_chars + 1])
        tail = truncate(enc, text, 1000, keep="tail")
        assert tail.count <= 1000 < plain(enc, text[n - tail.tail_chars - 1:])
        both = truncate(enc, text, 1000, keep="both")
        a, b = both.head_chars, both.tail_chars
        assert both.count <= 1000
        assert plain(enc, text[: a + 1] + "…" + text[n - b:]) > 1000
        assert plain(enc, text[:a] + "…" + text[n - b - 1:]) > 1000
