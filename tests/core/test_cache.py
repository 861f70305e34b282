"""The chunk cache: bounded, counting, and safe under threads."""

from __future__ import annotations

import threading
from typing import ClassVar

import pytest
from fresh_encoding import fresh, shakespeare_text
from tiktoken_reference import reference

from tokend.core import get_encoding
from tokend.core.engine.cache import MIN_MISSED_KEYS, ChunkCache
from tokend.core.engine.encoding import Encoding


class TestChunkCache:
    """ChunkCache unit behaviour."""

    def test_bound_and_counters(self) -> None:
        """Never more than max_entries; hits, misses and evictions move."""
        cache: ChunkCache[int, tuple[int, ...]] = ChunkCache(10)
        for i in range(100):
            if cache.get(i) is None:
                cache.put(i, (i * 2,))
            assert len(cache) <= 10
        info = cache.info()
        assert info.misses == 100
        assert info.evictions >= 80
        assert info.entries == len(cache) <= 10
        assert info.max_entries == 10
        assert cache.get(99) == (198,)
        assert cache.info().hits == 1

    def test_recently_used_survive(self) -> None:
        """A key read between every insertion misses at most once per turnover of old."""
        cache: ChunkCache[int, tuple[int, ...]] = ChunkCache(64)
        hot_misses = 0
        for i in range(640):
            cache.put(i, (i,))
            if cache.get(-1) is None:
                hot_misses += 1
                cache.put(-1, (7,))
        assert hot_misses <= 640 // 32
        assert cache.info().evictions > 500

    def test_working_set_that_fits_never_evicts(self) -> None:
        """Repeated passes over fewer keys than the bound are all hits after the first."""
        cache: ChunkCache[int, tuple[int, ...]] = ChunkCache(100)
        for _ in range(5):
            for key in range(100):
                if cache.get(key) is None:
                    cache.put(key, (key,))
        info = cache.info()
        assert (info.misses, info.hits, info.evictions) == (100, 400, 0)

    @pytest.mark.parametrize("size", [0, 1, 2, 3])
    def test_tiny_sizes(self, size: int) -> None:
        """Size 0 disables caching; tiny sizes stay within their bound."""
        cache: ChunkCache[int, tuple[int, ...]] = ChunkCache(size)
        for i in range(20):
            cache.put(i, (i,))
            assert len(cache) <= size
        if size == 0:
            assert cache.get(19) is None
        else:
            assert cache.get(19) == (19,)

    def test_negative_size(self) -> None:
        """A negative size is refused."""
        with pytest.raises(ValueError, match="-1"):
            ChunkCache(-1)

    def test_threads(self) -> None:
        """Concurrent put/get keep the bound and never return a wrong value."""
        cache: ChunkCache[int, tuple[int, ...]] = ChunkCache(64)
        wrong: list[int] = []

        def work(offset: int) -> None:
            for i in range(5000):
                key = (i * 7 + offset) % 300
                value = cache.get(key)
                if value is None:
                    cache.put(key, (key + 1,) * (key % 3 + 1))
                elif value != (key + 1,) * (key % 3 + 1):
                    wrong.append(key)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert wrong == []
        assert len(cache) <= 64
        info = cache.info()
        assert info.hits + info.misses == 30000
        assert cache.young_sizes == {k: len(v) for k, v in cache.young.items()}

    def test_young_sizes_follow_young(self) -> None:
        """young_sizes holds len(value) for exactly young's keys through inserts, batch
        inserts, promotions from old and generation turnovers."""
        cache: ChunkCache[int, tuple[int, ...]] = ChunkCache(40)
        turnovers = promotions = 0
        for step in range(400):
            key = (step * 7) % 23
            young_before = cache.young
            if step % 4 == 0:
                cache.put_many({10_000 + step + i: (step,) * i for i in range(1, 4)})
            else:
                in_old_only = key in cache.old and key not in cache.young
                if cache.get(key) is None:
                    cache.put(key, (step,) * (key % 4 + 1))
                else:
                    promotions += in_old_only
            turnovers += cache.young is not young_before
            assert cache.young_sizes == {k: len(v) for k, v in cache.young.items()}, step
        assert turnovers > 5 and promotions > 20


class TestEncodingCache:
    """The Encoding's cache is bounded and its counters move."""

    def test_encoding_counters(self) -> None:
        """A long new text is encoded around the cache (its sampled lookups count as misses);
        met again it fills the cache up to its bound; a repeat is mostly hits."""
        base = get_encoding("cl100k_base")
        enc = Encoding(
            "small",
            pat_str=base.pat_str,
            mergeable_ranks=base.mergeable_ranks,
            special_tokens=base.special_tokens,
            cache_entries=100,
            engine="python",
        )
        text = " ".join(f"word{i} thing{i % 7}" for i in range(2000))
        first = enc.encode(text)
        info = enc.cache_info()
        assert info.misses > 0 and info.evictions == 0
        assert enc.encode(text) == first == base.encode(text)
        info = enc.cache_info()
        assert info.entries <= 100 and info.evictions > 0
        small = "the same words again and again"
        enc.encode(small)
        before = enc.cache_info().hits
        enc.encode(small)
        assert enc.cache_info().hits >= before + 5


@pytest.mark.usefixtures("each_engine")
class TestCacheContexts:
    """A cached chunk is only reused where it means the same: ids never depend on history."""

    TEXTS: ClassVar[list[str]] = [
        "x foo\n",  # the last part "foo\n" is cached as a chunk that ends the text
        "x foo\n bar",  # here "foo\n" is followed by an unsafe space
        "x foo\n\n",
        "a  b",
        "a b",
        " a",
        "a ",
        "a b ",
        "a b  ",
        "  a b",
        "a\u007f b c",  # the marker character itself, as text
        "a b\u007f c",
        "a\tb c\t d",
        "a b\u00a0 c d",
        "x = 1\n    y = 2\n    z = 3",
        "x = 1\n    y = 2\n    z = 3\n",
        "sp \n  \n end",
        # many new chunks and a last part ending in whitespace, encoded in one batch
        " ".join(f"w{i}" for i in range(300)) + " tail\n",
        " ".join(f"w{i}" for i in range(300)) + " tail\n\t",
        "start " + " ".join(f"v{i}" for i in range(20)) + " end\n",
    ]

    @pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "r50k_base"])
    def test_texts_in_every_order(self, name: str) -> None:
        """Each text gives tiktoken's ids after any of the others warmed the same cache."""
        base = get_encoding(name)
        expected = {text: reference(name).encode_ordinary(text) for text in self.TEXTS}
        for first in self.TEXTS:
            enc = Encoding(
                name,
                pat_str=base.pat_str,
                mergeable_ranks=base.mergeable_ranks,
                special_tokens=base.special_tokens,
            )
            enc.encode_ordinary(first * 3)
            for text in self.TEXTS:
                assert enc.encode_ordinary(text) == expected[text], (first, text)
                assert enc.encode_ordinary(f"{text} {text}") == reference(name).encode_ordinary(
                    f"{text} {text}"
                )


class TestNewTextAdmission:
    """A long ASCII text new to the cache is encoded directly and cached on its second sight;
    every route gives tiktoken's ids."""

    def test_first_sight_direct_second_fills_third_warm(self) -> None:
        """Sight 1 leaves the chunk cache empty, sight 2 fills it, sight 3 only hits it."""
        text = shakespeare_text()[:30_000]
        expected = reference("o200k_base").encode(text)
        enc = fresh("o200k_base", engine="python")
        assert enc.encode(text) == expected
        assert enc._engine._cache.info().entries == 0
        assert enc.encode(text) == expected
        filled = enc._engine._cache.info()
        assert filled.entries > 1000
        assert enc.count(text) == len(expected)
        assert enc.encode(text) == expected
        warm = enc._engine._cache.info()
        assert warm.misses == filled.misses and warm.hits > filled.hits + 2 * 4000

    def test_text_like_cached_text_fills_the_cache_at_once(self) -> None:
        """A long text whose opening chunks are cached already goes through the cache."""
        text = shakespeare_text()[:30_000]
        enc = fresh("o200k_base", engine="python")
        enc.encode(text[:4000])  # short: always cached
        before = enc._engine._cache.info().entries
        assert enc.encode(text) == reference("o200k_base").encode(text)
        assert enc._engine._cache.info().entries > before + 1000

    def test_non_ascii_text_always_uses_the_cache(self) -> None:
        """Long non-ASCII text keeps the chunk path (the regex pattern over it all is slower)."""
        text = shakespeare_text()[:20_000] + " café"
        enc = fresh("o200k_base", engine="python")
        assert enc.encode(text) == reference("o200k_base").encode(text)
        assert enc._engine._cache.info().entries > 1000

    LONG_TEXTS: ClassVar[dict[str, str]] = {
        "prose": shakespeare_text()[:12_000],
        "code": "\n".join(
            f"\tdef f{i}(x):\r\n        return x  *  {i} // 3  # it's {i}'s\n\n" for i in range(300)
        ),
        "digits and runs": " ".join(f"{i * 7919} \t{i}  ,  x{i}y" for i in range(1500)) + "  \n ",
        "specials": ("say <|endoftext|> and <|fim_prefix|> then " * 200) + "end",
        "marker": "a\x7f b " * 1500,
    }

    @pytest.mark.usefixtures("each_engine")
    @pytest.mark.parametrize(
        "name",
        ["o200k_base", "cl100k_base", "p50k_base", "r50k_base", "gpt2", "o200k_harmony"],
    )
    def test_every_route_matches_tiktoken(self, name: str) -> None:
        """encode / encode_ordinary / count / allowed specials, on sights 1 to 3, equal
        tiktoken for long texts of several kinds."""
        ref = reference(name)
        specials = get_encoding(name).special_tokens_set
        enc = fresh(name)
        for label, text in self.LONG_TEXTS.items():
            ordinary = ref.encode_ordinary(text)
            with_specials = ref.encode(text, allowed_special="all")
            for sight in range(3):
                where = (name, label, sight)
                assert enc.encode_ordinary(text) == ordinary, where
                assert enc.count(text, disallowed_special=()) == len(ordinary), where
                assert enc.encode(text, allowed_special="all") == with_specials, where
                if not any(s in text for s in specials):
                    assert enc.encode(text) == ordinary, where
                    assert enc.count(text) == len(ordinary), where


class TestDoorkeeper:
    """ChunkCache.mostly_new remembers a bounded number of missed keys."""

    def test_bounded_and_forgets_the_oldest(self) -> None:
        """Past its bound the doorkeeper forgets the oldest keys, which then count as new."""
        cache: ChunkCache[str, tuple[int, ...]] = ChunkCache(16)
        first = [f"a{i}" for i in range(100)]
        assert cache.mostly_new(first)
        assert not cache.mostly_new(first)
        for start in range(0, 2 * MIN_MISSED_KEYS, 100):
            cache.mostly_new([f"b{i}" for i in range(start, start + 100)])
        assert len(cache._missed) <= MIN_MISSED_KEYS
        assert cache.mostly_new(first)

    def test_disabled_cache_always_answers_new(self) -> None:
        """With caching off, every long text takes the direct route (nothing to fill)."""
        cache: ChunkCache[str, tuple[int, ...]] = ChunkCache(0)
        assert cache.mostly_new(["a", "b"]) and cache.mostly_new(["a", "b"])
        text = shakespeare_text()[:10_000]
        enc = fresh("cl100k_base", cache_entries=0, engine="python")
        for _ in range(2):
            assert enc.encode(text) == reference("cl100k_base").encode(text)
        assert enc.cache_info().entries == 0

    def test_counts_sampled_lookups(self) -> None:
        """The sample's hits and misses reach the counters."""
        cache: ChunkCache[str, tuple[int, ...]] = ChunkCache(16)
        cache.put("x", (1,))
        cache.mostly_new(["x", "y", "z"])
        info = cache.info()
        assert (info.hits, info.misses) == (1, 2)
