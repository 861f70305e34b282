"""Byte-level BPE's merge phase: index the pairs of the distinct pretokens, merge greedily.

Never recounts: keeps ``pair -> count`` and ``pair -> pretokens holding it``, updates only
around the places a merge touches, and picks the best pair from a heap whose stale entries
are fixed up lazily when they reach the top. Ties go to the greatest ``(bytes, bytes)``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from heapq import heapify, heappop, heappush
from itertools import pairwise

from tokend.core.training.progress import Throttle


def _inverted(token: bytes) -> tuple[int, ...]:
    """A heap key that sorts byte strings in *descending* order.

    Each byte x becomes 255 - x and a terminator 256 (above every inverted byte) is added, so
    a proper prefix sorts after its extensions: b"ab" > b"a" gives key(b"ab") < key(b"a").
    """
    return (*(255 - x for x in token), 256)


class MergeLearner:
    """Phase 2 and 3: index pairs of the distinct pretokens, then merge greedily.

    Data shapes (ids are token ids, ``wi`` is the index of a distinct pretoken):
    ``words[wi]``: list of ids; ``freqs[wi]``: occurrences; ``pair_counts``: (id, id) ->
    weighted count (> 0 only); ``where``: (id, id) -> list of ``wi`` that held the pair (may
    repeat or be stale: a word that no longer holds the pair is skipped when visited);
    ``heap``: (-count, _inverted(left), _inverted(right), left, right), smallest = best pair.
    """

    def __init__(self, word_counts: Mapping[bytes, int], throttle: Throttle) -> None:
        start = time.perf_counter()
        self._throttle = throttle
        self.vocab: list[bytes] = [bytes([i]) for i in range(256)]
        self._inv: list[tuple[int, ...]] = [_inverted(t) for t in self.vocab]
        self.merges: list[tuple[int, int]] = []
        self.distinct_pretokens = len(word_counts)
        words: list[list[int]] = []
        freqs: list[int] = []
        for word, n in word_counts.items():
            if len(word) > 1:  # a single byte has no pair to merge
                words.append(list(word))
                freqs.append(n)
        pair_counts: dict[tuple[int, int], int] = {}
        where: defaultdict[tuple[int, int], list[int]] = defaultdict(list)
        get = pair_counts.get
        total = len(words)
        for wi, w in enumerate(words):
            f = freqs[wi]
            for p in pairwise(w):
                pair_counts[p] = get(p, 0) + f
                where[p].append(wi)
            if wi & 0xFFF == 0:
                throttle.check("index")
                throttle.report("index", wi, total)
        throttle.report("index", total, total, force=True)
        inv = self._inv
        self._heap = [(-c, inv[a], inv[b], a, b) for (a, b), c in pair_counts.items()]
        heapify(self._heap)
        self._words = words
        self._freqs = freqs
        self._pair_counts = pair_counts
        self._where = where
        self.index_seconds = time.perf_counter() - start

    def _pop_best(self) -> tuple[int, int] | None:
        """Pop the valid best pair, fixing stale heap entries on the way; None when empty."""
        heap = self._heap
        pair_counts = self._pair_counts
        inv = self._inv
        while heap:
            neg, _, _, a, b = heap[0]
            count = pair_counts.get((a, b), 0)
            if count == -neg:
                heappop(heap)
                return a, b
            heappop(heap)
            # subtle: a count that grew was pushed again when it grew; one that shrank was
            # not, so re-push it now with its true count.
            if 0 < count < -neg:
                heappush(heap, (-count, inv[a], inv[b], a, b))
        return None

    def learn(self, n_merges: int) -> None:
        """Run up to ``n_merges`` merges (fewer when no pair is left)."""
        throttle = self._throttle
        for k in range(n_merges):
            throttle.check("merge")  # both throttle themselves by the clock
            throttle.report("merge", k, n_merges)
            best = self._pop_best()
            if best is None:
                break
            self._merge(best[0], best[1])
        throttle.report("merge", len(self.merges), n_merges, force=True)

    def _merge(self, a: int, b: int) -> None:
        """Merge every (a, b) into a new token, updating counts only around each merge site.

        Example: word [a, b, a, b, c] -> [n, n, c]: pairs (a,b) x2, (b,a), (b,c) go;
        (n,n), (n,c) come. The pair between two adjacent sites is counted once.
        """
        new = len(self.vocab)
        token = self.vocab[a] + self.vocab[b]
        self.vocab.append(token)
        self._inv.append(_inverted(token))
        self.merges.append((a, b))
        words = self._words
        freqs = self._freqs
        where = self._where
        delta: dict[tuple[int, int], int] = {}
        dget = delta.get
        for visited, wi in enumerate(where.pop((a, b))):
            if visited & 0xFFFF == 0xFFFF:  # one merge of a huge corpus can take seconds
                self._throttle.check("merge")
            w = words[wi]
            try:
                i = w.index(a)
            except ValueError:  # stale index entry
                continue
            f = freqs[wi]
            n = len(w)
            last = n - 1
            nw = w[:i]
            prev_site = -2
            while i < last:
                if w[i] == a and w[i + 1] == b:
                    if i > 0:
                        if prev_site == i - 2:  # ... a b | a b ...: (b, a) becomes (new, new)
                            p = (b, a)
                            delta[p] = dget(p, 0) - f
                            p = (new, new)
                        else:
                            left = w[i - 1]
                            p = (left, a)
                            delta[p] = dget(p, 0) - f
                            p = (left, new)
                        delta[p] = dget(p, 0) + f
                        where[p].append(wi)
                    # The right neighbour, unless it starts the next site (handled there).
                    if i + 2 < n and not (w[i + 2] == a and i + 3 < n and w[i + 3] == b):
                        right = w[i + 2]
                        p = (b, right)
                        delta[p] = dget(p, 0) - f
                        p = (new, right)
                        delta[p] = dget(p, 0) + f
                        where[p].append(wi)
                    nw.append(new)
                    prev_site = i
                    i += 2
                else:
                    nw.append(w[i])
                    i += 1
            if prev_site < 0:  # a occurs, but never followed by b: stale entry
                continue
            if i == last:
                nw.append(w[i])
            words[wi] = nw
        pair_counts = self._pair_counts
        del pair_counts[(a, b)]
        heap = self._heap
        inv = self._inv
        for p, d in delta.items():
            if d == 0 or p == (a, b):
                continue
            count = pair_counts.get(p, 0) + d
            if count > 0:
                pair_counts[p] = count
            else:
                del pair_counts[p]
            if d > 0:
                heappush(heap, (-count, inv[p[0]], inv[p[1]], p[0], p[1]))
