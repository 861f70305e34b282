"""Property tests: arbitrary text gives tiktoken's ids, round-trips and streams identically."""

from __future__ import annotations

import functools
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_reference import reference

from tokend.core import Encoding, get_encoding
from tokend.core.engine import EngineName, default_engine

# Every test here runs once per engine (compiled, python): see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("each_engine")

NAMES = ("o200k_base", "cl100k_base", "r50k_base", "p50k_base")


def small_cache(name: str) -> Encoding:
    """A copy with a tiny cache, so eviction and re-insertion happen during the tests (one
    per engine: the ``each_engine`` fixture switches the default)."""
    return _small_cache(name, default_engine())


@functools.cache
def _small_cache(name: str, engine: EngineName) -> Encoding:
    base = get_encoding(name)
    return Encoding(
        f"{name}-small",
        pat_str=base.pat_str,
        mergeable_ranks=base.mergeable_ranks,
        special_tokens=base.special_tokens,
        cache_entries=64,
        engine=engine,
    )


# Text built from the characters that decide chunk boundaries and pretoken shapes.
TRICKY = [" ", " ", " ", "  ", "\n", "\r\n", "\t", "\u00a0", "\u3000", "\x1c", "\x0b", "\x7f"]
WORDS = ["a", "the", "The", "THE", "don't", "I'LL", "x's", "'s", "'", "123", "4567", "é", "日本"]
PUNCT = [".", ",", "!", "?", "...", "/", "//", "(", ")", "-", "'", '"', "#", "\\", "😀", "👍🏽"]
SURROGATES = ["\ud800", "\udfff", "\ud83d", "\ude00"]

tricky_text = st.lists(
    st.one_of(
        st.sampled_from(TRICKY),
        st.sampled_from(WORDS),
        st.sampled_from(PUNCT),
        st.text(max_size=4),
    ),
    max_size=40,
).map("".join)
# ASCII text takes another splitting path (marked spaces and str.split) than wider text.
ascii_tricky_text = st.lists(
    st.sampled_from(
        [" ", " ", " ", "  ", "   ", "\n", "\n ", " \n", "\r\n", "\t", "\x0b", "\x1c", "\x7f"]
        + [w for w in WORDS + PUNCT if w.isascii()]
    ),
    max_size=40,
).map("".join)
any_text = st.one_of(
    st.text(max_size=60),
    tricky_text,
    ascii_tricky_text,
    st.text(alphabet=st.characters(codec=None), max_size=30),
    st.lists(st.one_of(tricky_text, st.sampled_from(SURROGATES)), max_size=6).map("".join),
)


class TestAgainstTiktoken:
    """Arbitrary Unicode (lone surrogates included) encodes exactly like tiktoken."""

    @settings(max_examples=400, deadline=None)
    @given(text=any_text, index=st.integers(0, len(NAMES) - 1))
    def test_same_ids(self, text: str, index: int) -> None:
        """encode_ordinary, encode(disallowed=()), count equal tiktoken; text round-trips."""
        name = NAMES[index]
        expected = reference(name).encode_ordinary(text)
        for enc in (get_encoding(name), small_cache(name)):
            assert enc.encode_ordinary(text) == expected
            assert enc.encode(text, disallowed_special=()) == expected
            assert enc.count(text, disallowed_special=()) == len(expected)
        fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        assert get_encoding(name).decode(expected) == fixed

    @settings(max_examples=150, deadline=None)
    @given(
        parts=st.lists(any_text, max_size=8),
        specials=st.lists(st.sampled_from(["<|endoftext|>", "<|endofprompt|>"]), max_size=8),
    )
    def test_specials_in_text(self, parts: list[str], specials: list[str]) -> None:
        """Text with special tokens sprinkled in: allowed ones become ids like tiktoken's."""
        text = "".join(p + s for p, s in zip(parts, specials, strict=False)) + "".join(parts)
        for name in ("o200k_base", "cl100k_base"):
            got = get_encoding(name).encode(text, allowed_special="all")
            assert got == reference(name).encode(text, allowed_special="all")


class TestStreaming:
    """encode_iterable over arbitrary splits equals encode of the concatenation."""

    @settings(max_examples=200, deadline=None)
    @given(chunks=st.lists(any_text, max_size=12), name=st.sampled_from(NAMES))
    def test_iterable_equals_encode(self, chunks: list[str], name: str) -> None:
        """Any split of the text streams to the same ids."""
        enc = get_encoding(name)
        text = "".join(chunks)
        assert list(enc.encode_iterable(chunks, disallowed_special=())) == enc.encode(
            text, disallowed_special=()
        )

    @settings(max_examples=30, deadline=None)
    @given(
        seed_text=tricky_text,
        cuts=st.lists(st.integers(0, 200_000), max_size=30),
    )
    def test_iterable_long_text(self, seed_text: str, cuts: list[int]) -> None:
        """Texts past the flush size, cut at random places, stream to encode's ids."""
        enc = get_encoding("cl100k_base")
        text = (seed_text + " word x") * (1 + 140_000 // (len(seed_text) + 7))
        bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
        chunks = [text[a:b] for a, b in pairwise(bounds)]
        expected = reference("cl100k_base").encode_ordinary(text)
        assert list(enc.encode_iterable(chunks, disallowed_special=())) == expected


@functools.cache
def _trained(pattern: str) -> tuple[dict[bytes, int], str]:
    """Ranks and pattern of a small tokenizer trained on the test corpus (shared by engines)."""
    from pathlib import Path

    from tokend.core import train_bpe

    corpus = Path(__file__).resolve().parent.parent / "fixtures" / "corpora" / "corpus.en"
    result = train_bpe(corpus, 700, ["<|endoftext|>"], pattern=pattern, workers=1)
    return result.mergeable_ranks(), result.pattern


class TestTrainedTokenizers:
    """Tokenizers the tests train encode arbitrary Unicode like tiktoken built from the same
    ranks and pattern; with a custom pattern (regex over the whole text, no blocks), both
    engines agree (tiktoken's regex knows older Unicode than the ``regex`` module there)."""

    @settings(max_examples=150, deadline=None)
    @given(text=any_text, pattern=st.sampled_from(["gpt2", "cl100k", "o200k"]))
    def test_same_ids_as_tiktoken(self, text: str, pattern: str) -> None:
        import tiktoken

        ranks, pat_str = _trained(pattern)
        ours = Encoding("trained", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
        ref = tiktoken.Encoding(
            "trained", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={}
        )
        assert ours.encode_ordinary(text) == ref.encode_ordinary(text)
        assert ours.count(text, disallowed_special=()) == len(ref.encode_ordinary(text))

    @settings(max_examples=100, deadline=None)
    @given(text=any_text)
    def test_custom_pattern_engines_agree(self, text: str) -> None:
        ranks, pat_str = _trained(r"\w+|\s+|[^\w\s]+")
        encodings = [
            Encoding("t", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={}, engine=name)
            for name in ("compiled", "python")
        ]
        assert encodings[0].encode_ordinary(text) == encodings[1].encode_ordinary(text)
