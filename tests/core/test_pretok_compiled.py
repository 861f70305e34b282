"""The compiled pretokenizer (core/engine/_pretok.pxi) splits exactly like the regex reference.

The reference is ``compile_pattern(pattern)``: the ``regex`` module running the built-in pattern
narrowed to tiktoken's Unicode data. The scanner's class tables are generated from that same
module (tools/gen_unicode_tables.py) and checked here against tiktoken's own regex.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import random
import subprocess
import sys
import unicodedata
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.engine import _compiled
from tokend.core.engine.pretokenize import SCANNER_KINDS, compile_pattern

assert _compiled is not None, "these tests need the compiled engine (scripts/setup.sh builds it)"
from tokend.core.engine._compiled import (  # noqa: E402 (after the clear failure above)
    CLASS_BITS,
    PretokenCounter,
    class_bits,
    contraction_letter,
    count_pretokens,
    pretokenize,
)

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT / "tests" / "fixtures" / "corpora"
PATTERNS = sorted(SCANNER_KINDS, key=SCANNER_KINDS.__getitem__)
PATTERN_IDS = ["gpt2", "r50k", "cl100k", "o200k", "tekken"]
CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]


def assert_same_split(kind: int, pattern: str, text: str, what: str = "") -> None:
    """The scanner's pretokens of ``text`` equal the reference's; on a mismatch, show where."""
    ours, ref = pretokenize(kind, text), compile_pattern(pattern)(text)
    if ours == ref:
        return
    i = next((i for i, (a, b) in enumerate(zip(ours, ref, strict=False)) if a != b), 0)
    at = sum(map(len, ref[:i]))
    raise AssertionError(
        f"{PATTERN_IDS[kind]} {what}: pretoken {i} (char {at}) differs; "
        f"context {text[max(0, at - 20) : at + 20]!r}\n"
        f"  scanner: {ours[max(0, i - 3) : i + 4]}\n  regex:   {ref[max(0, i - 3) : i + 4]}"
    )


# -- random text weighted to where the patterns decide something ----------------------------

_WHITESPACE = [" ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\n\n", " \n", "\n ", "\t\n", " \r\n "]
_WHITESPACE += ["\x0b", "\x0c", "\x85", "\xa0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029"]
_WHITESPACE += ["\u202f", "\u205f", "\u3000", "\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "\ufeff"]
_CONTRACTIONS = ["'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'rE", "'ve", "'VE", "'vE", "'m"]
_CONTRACTIONS += ["'M", "'ll", "'LL", "'lL", "'Ll", "'d", "'D", "'\u017f", "'\u017ft", "'\u212a"]
_CONTRACTIONS += ["'", "''", "'r", "'v", "'l", "'x", "'e", "\u2019s", "'\u0301", "'1"]
_ASCII = ["a", "z", "A", "Z", "ab", "AB", "Ab", "aB", "abc", "ABC", "the", "The", "THE", "x"]
_ASCII += ["0", "7", "12", "123", "1234", "12345", ".", ",", "!", "?", "/", "//", "-", "_", "("]
_ASCII += ['"', "@", "#", "~", "`", "\\", "|", "...", "\x00", "\x7f", "\x1b"]
_UNICODE = ["é", "É", "ß", "ẞ", "İ", "ı", "ǅ", "ǈ", "ʰ", "ʕ", "ſ", "\u212a", "Σ", "σ", "ς", "Ж"]
_UNICODE += ["\u0301", "\u0300", "\u20dd", "\u0903", "\u1acf", "\u0558", "\u200d", "\u0e31"]
_UNICODE += ["日本", "語", "한", "ー", "々", "〇", "क्ष", "ت", "ש", "ก", "ᚠ", "ꙮ", "\U00010940"]
_UNICODE += ["٣", "१२", "Ⅻ", "½", "²", "①", "\U0001d7ce", "😀", "👍🏽", "🇩🇪", "€", "©", "™"]
_UNICODE += ["\ue000", "\U000e0080", "\uffff", "\U0010ffff", "\U0003d000", "\U000323b0"]


def _one_per_block_and_category() -> list[str]:
    """A code point of each general category in each 256-block: every script is represented
    (categories by Python's Unicode data, which only decides what is sampled)."""
    seen: dict[tuple[int, str], str] = {}
    for c in CODE_POINTS:
        seen.setdefault((c >> 8, unicodedata.category(chr(c))), chr(c))
    return list(seen.values())


@functools.cache
def piece_pool() -> tuple[list[str], list[int]]:
    """Pieces to build random text from, with their cumulative weights."""
    groups: list[tuple[list[str], int]] = [
        (_ASCII, 30),
        (_WHITESPACE, 20),
        (_CONTRACTIONS, 12),
        (_UNICODE, 20),
        (_one_per_block_and_category(), 18),
    ]
    pool: list[str] = []
    cum: list[int] = []
    total = 0
    for pieces, weight in groups:
        for piece in pieces:
            # spread each group's weight over its pieces (x1000 keeps integer weights)
            total += max(1, weight * 1000 // len(pieces))
            pool.append(piece)
            cum.append(total)
    return pool, cum


def random_strings(seed: int, count: int, max_pieces: int) -> list[str]:
    """``count`` strings of 1..max_pieces random pieces."""
    rng = random.Random(seed)
    pool, cum = piece_pool()
    sizes = rng.choices(range(1, max_pieces + 1), k=count)
    pieces = rng.choices(pool, cum_weights=cum, k=sum(sizes))
    out, at = [], 0
    for size in sizes:
        out.append("".join(pieces[at : at + size]))
        at += size
    return out


def random_texts(seed: int, strings: int, max_pieces: int, per_text: int) -> list[str]:
    """``strings`` strings as random_strings makes them, concatenated ``per_text`` at a time
    (joined straight from their pieces: the same texts, without a str per string)."""
    rng = random.Random(seed)
    pool, cum = piece_pool()
    sizes = rng.choices(range(1, max_pieces + 1), k=strings)
    pieces = rng.choices(pool, cum_weights=cum, k=sum(sizes))
    texts, at = [], 0
    for start in range(0, strings, per_text):
        n = sum(sizes[start : start + per_text])
        texts.append("".join(pieces[at : at + n]))
        at += n
    return texts


@pytest.fixture(scope="module")
def million_strings() -> list[str]:
    """A million random strings of 1-4 pieces, in texts of 2,000 (shared by the patterns)."""
    return random_texts(20261124, 1_000_000, 4, 2_000)


@pytest.mark.parametrize(("kind", "pattern"), list(enumerate(PATTERNS)), ids=PATTERN_IDS)
class TestRandomText:
    """Random text dense in category boundaries, contractions, digits and whitespace runs."""

    def test_million_strings_in_big_texts(
        self, kind: int, pattern: str, million_strings: list[str]
    ) -> None:
        """A million random strings, concatenated 2,000 at a time, split alike."""
        assert len(million_strings) == 500
        for i, text in enumerate(million_strings):
            assert_same_split(kind, pattern, text, f"text {i}")

    def test_short_strings_one_by_one(self, kind: int, pattern: str) -> None:
        """Short strings on their own, where the end of the text decides ($, (?!\\S))."""
        for text in random_strings(kind, 10_000, 5):
            assert_same_split(kind, pattern, text)


# -- every code point, the corpora, arbitrary text --------------------------------------------

_CONTEXT = ["a", "A", "1", " ", "'", "\n", ".", "\u0301", "  ", "日", "\r\n", "ʰ"]


@pytest.fixture(scope="module")
def every_code_point_text() -> str:
    """Each code point once, each followed by a different one of a few context characters."""
    return "".join([chr(c) + _CONTEXT[i % len(_CONTEXT)] for i, c in enumerate(CODE_POINTS)])


@pytest.fixture(scope="module")
def mixed_blocks_text() -> str:
    """Each code point of a 128-block whose classes are not all alike, in rich contexts."""
    mixed = {c >> 7 for c in CODE_POINTS[1:] if class_bits(c) != class_bits(c - 1)}
    parts = []
    for c in (c for c in CODE_POINTS if c >> 7 in mixed):
        ch = chr(c)
        parts.append(f"A{ch}b {ch}{ch}'s\n{ch}1{ch}x'{ch}e ")
    return "".join(parts)


@pytest.mark.parametrize(("kind", "pattern"), list(enumerate(PATTERNS)), ids=PATTERN_IDS)
class TestCoverage:
    """Every code point, the corpora and arbitrary Unicode text."""

    def test_every_code_point(self, kind: int, pattern: str, every_code_point_text: str) -> None:
        """Every code point but the surrogates, between context characters."""
        assert_same_split(kind, pattern, every_code_point_text)

    def test_code_points_of_mixed_blocks(
        self, kind: int, pattern: str, mixed_blocks_text: str
    ) -> None:
        """Code points near a class boundary after an upper-case letter, doubled, after a space,
        a newline, a digit and a quote."""
        assert_same_split(kind, pattern, mixed_blocks_text)

    @pytest.mark.parametrize("name", sorted(p.name for p in CORPORA.iterdir()))
    def test_corpus(self, kind: int, pattern: str, name: str) -> None:
        """Each corpus in tests/fixtures/corpora (shakespeare's first 500k characters of 5M: the
        regex reference is slow, and the rest adds no new kind of text)."""
        raw = (CORPORA / name).read_bytes()
        text = (gzip.decompress(raw) if name.endswith(".gz") else raw).decode("utf-8")
        text = text[:500_000]
        assert_same_split(kind, pattern, text, name)

    @settings(max_examples=150, deadline=None)
    @given(text=st.text(st.characters(codec="utf-8")))
    def test_arbitrary_text(self, kind: int, pattern: str, text: str) -> None:
        """Any text without lone surrogates (which UTF-8, so the engine, never holds)."""
        assert_same_split(kind, pattern, text)
        assert "".join(pretokenize(kind, text)) == text

    @settings(max_examples=150, deadline=None)
    @given(
        text=st.lists(
            st.sampled_from(_WHITESPACE + _CONTRACTIONS + _ASCII + _UNICODE)
            | st.text(st.characters(codec="utf-8"), max_size=3),
            max_size=20,
        ).map("".join)
    )
    def test_arbitrary_pieces(self, kind: int, pattern: str, text: str) -> None:
        """Any sequence of the random-text pieces and arbitrary characters."""
        assert_same_split(kind, pattern, text)


class TestInterface:
    """pretokenize, count_pretokens and PretokenCounter as Python sees them."""

    def test_partition_and_count(self) -> None:
        """Pretokens are non-empty, join back to the text and are what count_pretokens counts."""
        text = "".join(random_strings(7, 5_000, 4))
        for kind in range(len(PATTERNS)):
            out = pretokenize(kind, text)
            assert "".join(out) == text
            assert all(out)
            assert count_pretokens(kind, text) == len(out)

    def test_counter_counts_like_the_reference(self) -> None:
        """PretokenCounter's totals (across several add calls, through table and arena growth:
        ~100k distinct pretokens, one of 300 KB) are the regex reference's pretokens counted."""
        texts = ["".join(random_strings(1, 30_000, 4)), "".join(random_strings(2, 9, 4))]
        words = ("".join(chr(97 + int(d)) for d in str(i)) for i in range(100_000))
        texts += [" ".join(words), "x" * 300_000, ""]
        for kind, pattern in enumerate(PATTERNS):
            reference = compile_pattern(pattern)
            counter = PretokenCounter(kind)
            expected: Counter[bytes] = Counter()
            for text in texts:
                found = reference(text)
                assert counter.add(text) == len(found)
                expected.update(p.encode() for p in found)
            assert counter.to_dict() == expected
            assert len(counter) == len(expected) > 100_000
            assert counter.pretokens == expected.total()

    def test_empty_text(self) -> None:
        """The empty text has no pretokens."""
        assert [pretokenize(k, "") for k in range(len(PATTERNS))] == [[]] * len(PATTERNS)

    def test_unknown_kind(self) -> None:
        """An unknown pattern kind is refused, naming the known ones."""
        with pytest.raises(ValueError, match="unknown pattern kind 5"):
            pretokenize(5, "a")
        with pytest.raises(ValueError, match="unknown pattern kind -1"):
            count_pretokens(-1, "a")
        with pytest.raises(ValueError, match="unknown pattern kind 9"):
            PretokenCounter(9)

    def test_lone_surrogate(self) -> None:
        """A lone surrogate cannot be UTF-8 encoded; the error says so."""
        with pytest.raises(UnicodeEncodeError):
            pretokenize(3, "a\ud800b")
        with pytest.raises(UnicodeEncodeError):
            PretokenCounter(3).add("a\ud800b")


# -- the class tables ---------------------------------------------------------------------------


class TestTables:
    """The generated tables: reproducible from the installed regex module, and tiktoken's."""

    def test_header_is_current(self, tmp_path: Path) -> None:
        """Regenerating _unicode_tables.h gives the committed file byte for byte."""
        out = tmp_path / "_unicode_tables.h"
        subprocess.run(
            [sys.executable, str(ROOT / "tools" / "gen_unicode_tables.py"), "--out", str(out)],
            check=True,
            capture_output=True,
        )
        committed = (ROOT / "core" / "engine" / "_unicode_tables.h").read_text(encoding="ascii")
        assert out.read_text(encoding="ascii") == committed, (
            "core/engine/_unicode_tables.h is stale: run .venv/bin/python "
            "tools/gen_unicode_tables.py and rebuild (bash scripts/setup.sh)"
        )

    def test_generator_refuses_broken_assumptions(self) -> None:
        """The generator stops when a class relation the scanner relies on fails (here: a
        letter that is also a digit)."""
        spec = importlib.util.spec_from_file_location(
            "gen", ROOT / "tools" / "gen_unicode_tables.py"
        )
        assert spec is not None and spec.loader is not None
        gen = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gen)
        bits = bytearray(class_bits(c) if not 0xD800 <= c < 0xE000 else 0 for c in range(0x110000))
        gen.check_relations(bits)
        bits[ord("A")] |= CLASS_BITS["N"]
        with pytest.raises(SystemExit, match=r"U\+0041 breaks the scanner's assumption"):
            gen.check_relations(bits)

    # tiktoken's own (un-narrowed) expression for each class: its Unicode data is the reference
    TIKTOKEN_CLASSES: dict[str, str] = {  # noqa: RUF012 (read-only table)
        "ws": r"\s",
        "L": r"\p{L}",
        "N": r"\p{N}",
        "X": r"[^\s\p{L}\p{N}]",
        "P": r"[^\r\n\p{L}\p{N}]",
        "UP": r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
        "LO": r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
    }

    @staticmethod
    def tiktoken_members(expressions: Sequence[str], points: Sequence[int]) -> list[set[int]]:
        """For each one-character expression, the ``points`` tiktoken's regex matches with it.

        One encoding holds, per expression k, a token for "<marker k><c>" for every c; its
        pattern is ``<marker k>(?:expr k)|...|[\\s\\S]``, so encoding "<marker k><c>" gives that
        token exactly when c matches expression k (else the marker and c are split apart).
        """
        ranks = {bytes([b]): b for b in range(256)}
        markers = [chr(0xE000 + k) for k in range(len(expressions))]
        for marker in markers:
            for c in points:
                ranks[(marker + chr(c)).encode()] = len(ranks)
        pattern = "|".join(f"{m}(?:{e})" for m, e in zip(markers, expressions, strict=True))
        enc = tiktoken.Encoding(
            "probe", pat_str=pattern + r"|[\s\S]", mergeable_ranks=ranks, special_tokens={}
        )
        members: list[set[int]] = []
        for k, marker in enumerate(markers):
            base = 256 + k * len(points)
            ids = enc.encode_ordinary("".join(marker + chr(c) for c in points))
            members.append({points[i - base] for i in ids if base <= i < base + len(points)})
        return members

    def test_classes_agree_with_tiktoken(self) -> None:
        """On ASCII, Latin-1, both sides of every class boundary and a random sample, each class
        bit holds exactly where tiktoken's regex (its Unicode data) matches the class."""
        edges = {c for c in CODE_POINTS[1:] if class_bits(c) != class_bits(c - 1)}
        sample = set(range(256)) | edges | {c - 1 for c in edges}
        sample |= set(random.Random(11).sample(CODE_POINTS, 20_000))
        points = sorted(c for c in sample if not 0xD800 <= c < 0xE000)
        names = list(self.TIKTOKEN_CLASSES)
        found = self.tiktoken_members([self.TIKTOKEN_CLASSES[n] for n in names], points)
        for name, members in zip(names, found, strict=True):
            ours = {c for c in points if class_bits(c) & CLASS_BITS[name]}
            assert ours == members, (name, sorted(map(hex, ours ^ members))[:10])

    def test_contraction_letters_agree_with_tiktoken(self) -> None:
        """Case-insensitive contraction letters: the same code points as tiktoken's (?i)."""
        letters = "sdmtlvre"
        points = [
            c for c in CODE_POINTS if c < 0x3000 or 0xFF00 <= c < 0xFF60 or contraction_letter(c)
        ]
        found = self.tiktoken_members([f"(?i:{x})" for x in letters], points)
        for letter, members in zip(letters, found, strict=True):
            assert {c for c in points if contraction_letter(c) == letter} == members, letter
