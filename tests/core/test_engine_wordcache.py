"""The compiled engine's word cache and the pretokenizer's ASCII fast path (SIMD and scalar).

The word cache (core/engine/_wordcache.pxi) maps pretoken bytes to ids in a fixed table; these
tests check that it is bounded, evicts, and never changes an id. The ASCII fast path
(_ascii_scan.h) is checked at its two levels: the run finder, SIMD against scalar, and the
pretokenizer that uses it, against the regex reference.
"""

from __future__ import annotations

import random
import threading

import pytest
from fresh_encoding import fresh, shakespeare_text
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_reference import reference

from tokend.core import Encoding
from tokend.core.engine import _compiled
from tokend.core.engine.pretokenize import SCANNER_KINDS, compile_pattern

assert _compiled is not None, "these tests need the compiled engine (scripts/setup.sh builds it)"
from tokend.core.engine._compiled import SIMD_BUILT, ascii_run, pretokenize  # noqa: E402


def compiled(name: str, cache_entries: int) -> Encoding:
    return fresh(name, cache_entries=cache_entries, engine="compiled")


def unique_words(count: int, seed: int) -> str:
    """``count`` never-repeated words (random letters, 3-12 long) joined by spaces."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return " ".join(
        "".join(rng.choices(letters, k=rng.randint(3, 12))) + str(i) for i in range(count)
    )


class TestWordCache:
    """Pretokens are cached in a fixed table: bounded, evicting, never changing an id."""

    @pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
    def test_hits_on_known_words_in_new_text(self, name: str) -> None:
        """Words met in one text are hits in another (never seen as a whole)."""
        text = shakespeare_text()
        enc = compiled(name, cache_entries=1 << 16)
        ref = reference(name)
        assert enc.encode_ordinary(text[:100_000]) == ref.encode_ordinary(text[:100_000])
        before = enc._engine.word_cache_info()
        part = text[200_000:260_000]
        assert enc.encode_ordinary(part) == ref.encode_ordinary(part)
        assert enc.count(part) == len(ref.encode_ordinary(part))
        after = enc._engine.word_cache_info()
        assert after.hits - before.hits > 5 * (after.misses - before.misses)

    def test_bounded_by_cache_entries(self) -> None:
        """Never-repeated words fill the table to its fixed size and then evict; ids stay."""
        enc = compiled("o200k_base", cache_entries=4096)  # 1,024 word entries
        ref = reference("o200k_base")
        for seed in range(6):
            text = unique_words(3000, seed)
            assert enc.encode_ordinary(text) == ref.encode_ordinary(text)
            info = enc._engine.word_cache_info()
            assert info.max_entries == 1024
            assert info.entries <= info.max_entries
        info = enc._engine.word_cache_info()
        assert info.entries == info.max_entries
        assert info.evictions > 10_000

    def test_tiny_and_disabled(self) -> None:
        """Below one set the cache is off; with none at all the ids are the same."""
        text = shakespeare_text()[:30_000]
        expected = reference("cl100k_base").encode_ordinary(text)
        for entries in (0, 3, 7, 8, 9, 40):
            enc = compiled("cl100k_base", cache_entries=entries)
            assert enc.encode_ordinary(text) == expected
            assert enc.count(text) == len(expected)
            info = enc._engine.word_cache_info()
            assert info.max_entries == (0 if entries // 4 < 4 else 8)
            assert info.entries <= info.max_entries

    def test_hot_words_survive_a_stream_of_unique_ones(self) -> None:
        """CLOCK keeps a word that is used between the unique words streaming through."""
        enc = compiled("o200k_base", cache_entries=1 << 14)
        ref = reference("o200k_base")
        hot = " the king and queen"
        stream = unique_words(20_000, 7).split(" ")
        for i in range(0, len(stream), 50):
            text = " ".join(stream[i : i + 50]) + hot
            assert enc.encode_ordinary(text) == ref.encode_ordinary(text)
        before = enc._engine.word_cache_info()
        last = "Zqxjv" + hot  # a text (so a block) never seen: its words are looked up
        assert enc.encode_ordinary(last) == ref.encode_ordinary(last)
        after = enc._engine.word_cache_info()
        assert after.hits - before.hits == 4 and after.misses - before.misses == 1

    def test_threads_share_it(self) -> None:
        """Threads encoding at once (one holds the cache, others go without) agree with
        tiktoken."""
        text = shakespeare_text()
        enc = compiled("cl100k_base", cache_entries=2048)
        ref = reference("cl100k_base")
        docs = [text[i : i + 30_000] for i in range(0, 480_000, 30_000)]
        expected = [ref.encode_ordinary(doc) for doc in docs]
        errors: list[int] = []

        def work(seed: int) -> None:
            for k in random.Random(seed).sample(range(len(docs)), len(docs)):
                if enc.encode_ordinary(docs[k]) != expected[k]:
                    errors.append(k)

        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []


# -- the ASCII fast path ---------------------------------------------------------------------

RANGES = [(0x61, 0x7A, False), (0x41, 0x5A, False), (0x61, 0x7A, True), (0x30, 0x39, False)]


class TestAsciiRuns:
    """The SIMD run finder and its scalar twin give the same lengths."""

    def test_simd_is_built_on_x86_64(self) -> None:
        """SSE2 is on every x86-64: the SIMD path is the one compiled there."""
        import platform

        if platform.machine() in ("x86_64", "AMD64"):
            assert SIMD_BUILT
        else:
            assert SIMD_BUILT in (True, False)

    @settings(max_examples=400, deadline=None)
    @given(
        data=st.binary(max_size=80)
        | st.text("abcxyzABCXYZ09@[`{ \n\xe9", max_size=80).map(lambda s: s.encode()),
        which=st.sampled_from(RANGES),
    )
    def test_same_runs(self, data: bytes, which: tuple[int, int, bool]) -> None:
        lo, hi, fold = which
        scalar = ascii_run(data, lo, hi, fold, False)
        assert ascii_run(data, lo, hi, fold, True) == scalar
        expected = 0
        while expected < len(data) and lo <= (data[expected] | (0x20 if fold else 0)) <= hi:
            expected += 1
        assert scalar == expected

    def test_every_byte_at_every_offset(self) -> None:
        """Each byte value ends a run at each position of a 40-byte window."""
        for lo, hi, fold in RANGES:
            for b in range(256):
                for at in range(40):
                    data = bytes([lo]) * at + bytes([b]) + bytes([hi]) * 20
                    want = ascii_run(data, lo, hi, fold, False)
                    assert ascii_run(data, lo, hi, fold, True) == want


LONG_PIECES = ["a" * 17, "Z" * 20, "Hello", "HELLO", "hELLO", "McDonald", "x" * 40 + "é"]
LONG_PIECES += ["'s", "'S", "'ll", "'", " ", "  ", "\n", "123456", ".,;", "/", "\r\n", "É", "ß"]


@pytest.mark.parametrize(
    ("kind", "pattern"), [(k, p) for p, k in SCANNER_KINDS.items() if k in (2, 3)]
)
class TestFastPathSplits:
    """The pretokenizer with its fast path splits ASCII-heavy text like the regex."""

    @settings(max_examples=300, deadline=None)
    @given(text=st.lists(st.sampled_from(LONG_PIECES), max_size=30).map("".join))
    def test_long_runs_and_boundaries(self, kind: int, pattern: str, text: str) -> None:
        assert pretokenize(kind, text) == compile_pattern(pattern)(text)

    @settings(max_examples=200, deadline=None)
    @given(text=st.text(st.characters(codec="utf-8"), max_size=60))
    def test_arbitrary_unicode(self, kind: int, pattern: str, text: str) -> None:
        assert pretokenize(kind, text) == compile_pattern(pattern)(text)
