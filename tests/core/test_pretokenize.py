"""Safe points and the ASCII fast path of pretokenization."""

from __future__ import annotations

import random

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.engine.pretokenize import (
    ASCII_PATTERNS,
    CHUNKABLE_PATTERNS,
    UNSAFE_SPACE,
    compile_ascii_pattern,
    compile_pattern,
    is_chunkable,
    last_safe_point,
    mark_unsafe_spaces,
    split_at_safe_points,
)

ASCII_PIECES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "'", "/"]
ASCII_PIECES += ["'s", "'S", "'ll", "'LL", "'Re", "'d", "a", "Z", "abc", "ABC", "AbC", "9", "123"]
ascii_text = st.lists(
    st.one_of(st.sampled_from(ASCII_PIECES), st.text(st.characters(max_codepoint=127), max_size=3)),
    max_size=30,
).map("".join)
unicode_text = st.lists(
    st.one_of(
        st.sampled_from([" ", "  ", "\n", "\u00a0", "\u3000", "\x1c", "a", "é", "日"]),
        st.text(max_size=4),
    ),
    max_size=30,
).map("".join)


def is_safe_point(text: str, i: int) -> bool:
    """The definition: a space whose neighbours are both non-whitespace."""
    return (
        0 < i < len(text) - 1
        and text[i] == " "
        and not text[i - 1].isspace()
        and not text[i + 1].isspace()
    )


class TestAsciiPatterns:
    """The stdlib-re ASCII patterns split ASCII text exactly like the regex originals."""

    @settings(max_examples=400, deadline=None)
    @given(text=ascii_text)
    def test_same_pretokens(self, text: str) -> None:
        """Every chunkable pattern has an ASCII twin giving the same pretokens."""
        assert set(ASCII_PATTERNS) == set(CHUNKABLE_PATTERNS)
        for pattern in CHUNKABLE_PATTERNS:
            fast = compile_ascii_pattern(pattern)
            assert fast is not None
            assert fast(text) == compile_pattern(pattern)(text), repr(pattern)

    def test_same_pretokens_on_many_random_strings(self) -> None:
        """20,000 seeded strings dense in case changes, contractions, punctuation and spaces
        (where a wrong possessive quantifier in a twin would show) split alike."""
        rng = random.Random(20261123)
        alphabet = "aAbZ'sStTlLmdDvVeErR \n\r\t\x0b\x0c\x1c/.,;:!?-_09xX"
        texts = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(20_000)
        ]
        for pattern in CHUNKABLE_PATTERNS:
            fast, full = compile_ascii_pattern(pattern), compile_pattern(pattern)
            assert fast is not None
            mismatched = [text for text in texts if fast(text) != full(text)]
            assert mismatched == [], (pattern, mismatched[:3])

    def test_custom_pattern_has_no_twin(self) -> None:
        """Unknown patterns are neither chunkable nor given an ASCII twin."""
        assert not is_chunkable(r"\w+|\s+")
        assert compile_ascii_pattern(r"\w+|\s+") is None


class TestSafePoints:
    """split_at_safe_points cuts exactly at safe points, and chunks encode independently."""

    @settings(max_examples=300, deadline=None)
    @given(text=unicode_text)
    def test_split_matches_definition(self, text: str) -> None:
        """Rejoining with spaces restores the text; each cut is a safe point."""
        parts = split_at_safe_points(text)
        assert " ".join(parts) == text
        cuts = []
        position = 0
        for part in parts[:-1]:
            position += len(part)
            cuts.append(position)
            position += 1
        assert cuts == [i for i in range(len(text)) if is_safe_point(text, i)]

    @settings(max_examples=300, deadline=None)
    @given(text=unicode_text)
    def test_chunks_pretokenize_independently(self, text: str) -> None:
        """For every chunkable pattern, pretokens of the chunks concatenate to the whole's."""
        parts = split_at_safe_points(text)
        chunks = [parts[0]] + [" " + part for part in parts[1:]]
        for pattern in CHUNKABLE_PATTERNS:
            findall = regex.compile(pattern).findall
            assert [p for chunk in chunks for p in findall(chunk)] == findall(text)

    @settings(max_examples=200, deadline=None)
    @given(text=unicode_text, lo=st.integers(0, 40))
    def test_last_safe_point(self, text: str, lo: int) -> None:
        """last_safe_point finds the last safe point at or after lo."""
        expected = max(
            (i for i in range(max(lo, 1), len(text)) if is_safe_point(text, i)), default=-1
        )
        assert last_safe_point(text, lo) == expected


def marked_parts(text: str) -> list[str]:
    """The parts ``str.split(" ")`` gives after marking, marks read back as spaces."""
    return [part.replace(UNSAFE_SPACE, " ") for part in mark_unsafe_spaces(text).split(" ")]


class TestMarkedSpaces:
    """Marking unsafe spaces, then str.split, cuts exactly where split_at_safe_points does."""

    @settings(max_examples=400, deadline=None)
    @given(text=st.one_of(unicode_text, ascii_text))
    def test_same_parts_as_the_regex(self, text: str) -> None:
        """Same parts (marks read back as spaces), and no mark where a space is safe."""
        text = text.replace(UNSAFE_SPACE, "")  # (callers never pass text holding the mark)
        marked = mark_unsafe_spaces(text)
        assert len(marked) == len(text)
        assert marked_parts(text) == split_at_safe_points(text)
        for i, char in enumerate(marked):
            if char == UNSAFE_SPACE:
                assert text[i] == " " and not is_safe_point(text, i)

    def test_every_kind_of_unsafe_space(self) -> None:
        """Runs of any length, both ends, and each whitespace character as a neighbour."""
        others = [chr(c) for c in range(0x110000) if chr(c).isspace() and chr(c) != " "]
        for space in others:
            for text in (f"a {space}b", f"a{space} b", f" a {space}", f"a{space}   b c"):
                assert marked_parts(text) == split_at_safe_points(text), repr(text)
        for run in range(1, 6):
            text = "a" + " " * run + "b c" + " " * run
            assert marked_parts(text) == split_at_safe_points(text), repr(text)
