"""A bounded, thread-safe cache of encoded chunks with hit/miss/eviction counters.

An approximate LRU built from two plain dicts, so that the hot path is a bare ``dict.get``
(callable from ``map`` at C speed, atomic under the GIL) instead of a Python-level
move-to-end on every hit:

- new entries go into the *young* dict;
- when the cache is over budget, the oldest entries of the *old* dict are evicted in a batch;
  when old is empty, young becomes old (and a new young starts);
- a lookup that misses young but hits old moves the entry back into young.

So an entry survives as long as it is used at least once between two turnovers, like an LRU
with a coarse clock, and a cache big enough for the working set never evicts at all.
Mutations take a lock; lookups do not.

Beside the young dict, a dict of the same keys holds ``len(value)``: counting tokens then sums
``map(young_sizes.get, keys)`` without calling ``len`` per chunk (that step of a warm count
of shakespeare took ~30% less time, ad hoc).

Admission on second sight: :meth:`mostly_new` tells the encoder when a sample of a text's chunks
mostly misses the cache *and* was mostly not missed before either -- a document seen for the
first time. The encoder then encodes it directly (one regex pass, as tiktoken does), which is
~1.4x faster than filling the cache with chunks that may never come back (shakespeare: 0.35x
tiktoken against 0.23-0.27x, bench_encode's cold row before and after); the sample's keys
are remembered (a bounded "doorkeeper", as in TinyLFU), so the same text, or text like it, is
cached when it comes again.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence, Sized
from dataclasses import dataclass
from itertools import islice
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Sized)

DEFAULT_CACHE_ENTRIES = 1 << 18  # shakespeare (5 MB) needs ~182k: chunks plus pretokens
# The doorkeeper remembers at least this many missed keys (or 1/16 of the cache's entries).
MIN_MISSED_KEYS = 4096


@dataclass(frozen=True)
class CacheInfo:
    """A snapshot of the cache counters (exported as metrics by the server)."""

    hits: int
    misses: int
    evictions: int
    entries: int
    max_entries: int


class ChunkCache(Generic[K, V]):
    """Bounded two-generation cache; ``max_entries`` = 0 disables caching.

    >>> cache: ChunkCache[str, tuple[int, ...]] = ChunkCache(4)
    >>> cache.put("a", (1, 2)); cache.get("a"), cache.get("b"), cache.young_sizes["a"]
    ((1, 2), None, 2)
    >>> cache.info().hits, cache.info().misses
    (1, 1)
    """

    def __init__(self, max_entries: int = DEFAULT_CACHE_ENTRIES) -> None:
        if max_entries < 0:
            raise ValueError(f"cache size is {max_entries}; it must be >= 0")
        self._max_entries = max_entries
        self._batch = max(1, max_entries // 16)  # evict at least this many at a time
        self._young: dict[K, V] = {}
        self._young_sizes: dict[K, int] = {}  # the same keys as _young, always
        self._old: dict[K, V] = {}
        # keys that missed in the samples of texts encoded directly, oldest first
        self._missed: dict[K, None] = {}
        self._max_missed = max(MIN_MISSED_KEYS, max_entries // 16)
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._evictions = 0

    @property
    def young(self) -> dict[K, V]:
        """The young generation, for lock-free ``map(cache.young.get, keys)``.

        Callers must treat it as read-only and report what they found with :meth:`record`.
        """
        return self._young

    @property
    def young_sizes(self) -> dict[K, int]:
        """``{key: len(value)}`` for the young generation's keys (read-only, like young)."""
        return self._young_sizes

    @property
    def old(self) -> dict[K, V]:
        """The old generation (read-only for callers; see :meth:`put_many` to promote)."""
        return self._old

    def get(self, key: K) -> V | None:
        """Look ``key`` up in both generations, counting a hit or a miss."""
        value = self._young.get(key)
        if value is not None:
            with self._lock:
                self._hits += 1
            return value
        return self.get_cold(key)

    def get_cold(self, key: K) -> V | None:
        """Look up a key already known to miss the young generation (promote it if old)."""
        with self._lock:
            value = self._young.get(key)  # another thread may have inserted it meanwhile
            if value is None:
                value = self._old.pop(key, None)
                if value is None:
                    self._misses += 1
                    return None
                self._insert(key, value)
            self._hits += 1
            return value

    def put(self, key: K, value: V) -> None:
        """Insert ``key`` (a no-op when caching is disabled)."""
        if self._max_entries == 0:
            return
        with self._lock:
            self._insert(key, value)

    def put_many(self, items: dict[K, V]) -> None:
        """Insert (or promote from old) many entries under one lock acquisition."""
        if self._max_entries == 0 or not items:
            return
        with self._lock:
            old = self._old
            if old:
                pop = old.pop
                for key in items:
                    pop(key, None)
            self._young.update(items)
            self._young_sizes.update(zip(items, map(len, items.values()), strict=True))
            if len(self._young) + len(self._old) > self._max_entries:
                self._evict()

    def mostly_new(self, keys: Sequence[K]) -> bool:
        """Whether most of ``keys`` (a sample of a text's chunks) miss the cache and most of
        those missed were not seen in an earlier sample either: a text met for the first time.

        The keys that miss are remembered either way (up to a bound, oldest forgotten first), so
        that a text met again, or one with the same chunks, answers False and gets cached. The
        sample's lookups count as hits and misses.

        >>> cache: ChunkCache[str, tuple[int, ...]] = ChunkCache(16)
        >>> cache.mostly_new(["a", "b"]), cache.mostly_new(["a", "b"])
        (True, False)
        >>> cache.put("c", (1,)); cache.put("d", (2,)); cache.mostly_new(["c", "d", "e"])
        False
        """
        if self._max_entries == 0:  # nothing would be cached: always the direct route
            return True
        young, old = self._young, self._old
        missing = [key for key in keys if key not in young and key not in old]
        with self._lock:
            self._hits += len(keys) - len(missing)
            self._misses += len(missing)
            if not missing or len(missing) * 2 <= len(keys):
                return False
            missed = self._missed
            again = sum(map(missed.__contains__, missing))
            missed.update(dict.fromkeys(missing))
            excess = len(missed) - self._max_missed
            if excess > 0:
                for key in list(islice(missed, excess)):
                    del missed[key]
        return again * 2 <= len(missing)

    def record(self, hits: int, misses: int = 0) -> None:
        """Add lookups done directly on :attr:`young` to the counters."""
        with self._lock:
            self._hits += hits
            self._misses += misses

    def _insert(self, key: K, value: V) -> None:
        # Called with the lock held.
        self._old.pop(key, None)
        self._young[key] = value
        self._young_sizes[key] = len(value)
        if len(self._young) + len(self._old) > self._max_entries:
            self._evict()

    def _evict(self) -> None:
        # Called with the lock held, when over budget: drop the oldest entries of old.
        while True:
            excess = len(self._young) + len(self._old) - self._max_entries
            if excess <= 0:
                return
            if not self._old:
                self._old, self._young, self._young_sizes = self._young, {}, {}
            old = self._old
            count = min(len(old), max(excess, self._batch))
            for key in list(islice(old, count)):
                del old[key]
            self._evictions += count

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def info(self) -> CacheInfo:
        """Current counters and size."""
        with self._lock:
            return CacheInfo(
                hits=self._hits,
                misses=self._misses,
                evictions=self._evictions,
                entries=len(self._young) + len(self._old),
                max_entries=self._max_entries,
            )
