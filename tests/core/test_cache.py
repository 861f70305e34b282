"""The chunk cache: bounded, counting, and safe under threads."""

from __future__ import annotations

import threading
from typing import ClassVar

import pytest
from tiktoken_reference import reference

from tokend.core import get_encoding
from tokend.core.cache import ChunkCache
from tokend.core.encoding import Encoding


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
        """Encoding fills the cache up to its bound; a repeat is mostly hits."""
        base = get_encoding("cl100k_base")
        enc = Encoding(
            "small",
            pat_str=base.pat_str,
            mergeable_ranks=base.mergeable_ranks,
            special_tokens=base.special_tokens,
            cache_entries=100,
        )
        text = " ".join(f"word{i} thing{i % 7}" for i in range(2000))
        first = enc.encode(text)
        info = enc.cache_info()
        assert info.misses > 0 and info.entries <= 100 and info.evictions > 0
        assert enc.encode(text) == first == base.encode(text)
        small = "the same words again and again"
        enc.encode(small)
        before = enc.cache_info().hits
        enc.encode(small)
        assert enc.cache_info().hits >= before + 5


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
