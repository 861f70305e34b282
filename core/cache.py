"""A bounded, thread-safe cache of encoded chunks with hit/miss/eviction counters.

It is an approximate LRU built from two generations of plain dicts, so that the hot path is a
bare ``dict.get`` (callable from ``map`` at C speed, atomic under the GIL) instead of a
Python-level move-to-end on every hit:

- new entries go into the *young* dict; when it holds half the budget, the *old* dict is
  dropped (its entries are the evictions) and young becomes old;
- a lookup that misses young but hits old moves the entry back into young, so anything used
  at least once per generation survives, like an LRU with a coarse clock.

Mutations take a lock; lookups do not.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

DEFAULT_CACHE_ENTRIES = 65536


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

    >>> cache: ChunkCache[str, int] = ChunkCache(4)
    >>> cache.put("a", 1); cache.get("a"), cache.get("b")
    (1, None)
    >>> cache.info().hits, cache.info().misses
    (1, 1)
    """

    def __init__(self, max_entries: int = DEFAULT_CACHE_ENTRIES) -> None:
        if max_entries < 0:
            raise ValueError(f"cache size is {max_entries}; it must be >= 0")
        self._max_entries = max_entries
        # With one entry there is no room for two generations; keep only the young one.
        self._generation_size = max_entries // 2 if max_entries >= 2 else max_entries
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._evictions = 0

    @property
    def young(self) -> dict[K, V]:
        """The current young generation, for lock-free ``map(cache.young.get, keys)``.

        Callers must treat it as read-only and report what they found with :meth:`record`.
        """
        return self._young

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
        if self._generation_size == 0:
            return
        with self._lock:
            self._insert(key, value)

    def record(self, hits: int, misses: int = 0) -> None:
        """Add lookups done directly on :attr:`young` to the counters."""
        with self._lock:
            self._hits += hits
            self._misses += misses

    def _insert(self, key: K, value: V) -> None:
        # Called with the lock held.
        young = self._young
        young[key] = value
        if len(young) >= self._generation_size:
            if self._max_entries >= 2:
                self._evictions += len(self._old)
                self._old = young
            else:
                self._evictions += len(young) - 1
                self._old = {}
            self._young = {}
            if self._max_entries < 2:
                self._young[key] = value

    def clear(self) -> None:
        """Drop every entry (counters are kept)."""
        with self._lock:
            self._young = {}
            self._old = {}

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
