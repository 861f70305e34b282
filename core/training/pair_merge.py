"""The merge loop shared by word-level BPE and WordPiece: pick a pair, merge it everywhere.

Words are lists of symbol ids weighted by how often the word occurs. Each round picks the
pair with the best score, merges every occurrence of it and updates the counts only around
the merge sites. The score (``score=``) is

- ``count``: the pair's count (BPE, Sennrich et al. 2016);
- ``ratio``: count(ab) / (count(a) * count(b)), the WordPiece score as usually quoted;
- ``gain``: the exact change in log-likelihood of the corpus under a unigram model of the
  symbols when every (a, b) becomes ab (what Schuster & Nakajima's WordPiece maximises):
  ``c log c + (na-c) log(na-c) - na log na + (nb-c) log(nb-c) - nb log nb
  - ((N-c) log(N-c) - N log N)`` for c = count(ab), na, nb the symbols' counts, N all symbols;
  about ``c * log(N * ratio)``, i.e. the ratio weighted by how often the pair occurs.

Ties go to the pair *seen first*: the one whose first occurrence comes first in the words'
order (the order words first appear in the corpus), then by position inside the word. That
is what the paper's reference code does (``max`` over a dict filled in that order).

The heap holds ``(-score, word index, char offset, left, right, exact, version)`` entries,
and each pair has one *valid* entry: the latest it was given (``_version``); older ones are
skipped when they surface (an indexed heap's update-in-place, done lazily; the compiled twin
updates in place). A valid entry may be stale: at the top it is checked against the true
score and a still-existing occurrence, and replaced by the true values when it is not.
Scores that grow are re-entered when they change (counts that grow, new earlier occurrences
and, for ``ratio`` and ``gain``, every tracked pair of a symbol whose count shrank); scores
that shrink (``gain`` shrinks for every pair as N falls) are fixed when they reach the top.
Under ``gain`` a pair whose lasting upper bound is below the best score so far is *parked*
(``exact`` 0): its entry holds that bound and it is not re-scored until the entry reaches the
top — most pairs, most of the time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from heapq import heapify, heappop, heappush

SCORES = ("count", "ratio", "gain")
Pair = tuple[int, int]
Position = tuple[int, int]  # (word index, char offset of the pair's left symbol)
Entry = tuple[float, int, int, int, int, int, int]  # (-score, *position, *pair, exact, version)
_FAR: Position = (1 << 62, 0)


class _XLogX(dict[int, float]):
    """x -> x log x (0 for x <= 0), memoized: the same few counts recur all through training."""

    def __missing__(self, x: int) -> float:
        value = x * math.log(x) if x > 0 else 0.0
        self[x] = value
        return value


class PairMerger:
    """Greedy pair merging over weighted words (see the module docstring).

    ``words[wi]`` is a list of symbol ids, ``freqs[wi]`` its weight; ``lengths[sym]`` is the
    width of a symbol in characters (any positive widths order positions, as long as a new
    symbol's width is the sum of its two parts': offsets must not move). The caller owns the
    token strings and appends the new symbol's width before ``merge``.
    ``_pair_merge.CompiledPairMerger`` is the compiled twin (``merge_kernel`` picks one).
    """

    name = "python"

    def __init__(
        self,
        words: list[list[int]],
        freqs: list[int],
        lengths: list[int],
        *,
        score: str = "count",
        check: Callable[[], None] = lambda: None,
    ) -> None:
        if score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, not {score!r}")
        self._words = words
        self._freqs = freqs
        self._lengths = lengths
        self._likelihood = score != "count"  # scores depend on the symbols' counts too
        self._gain = score == "gain"
        self._xlogx = _XLogX().__getitem__
        self._check = check
        pair_counts: dict[Pair, int] = {}
        first: dict[Pair, Position] = {}
        where: defaultdict[Pair, list[int]] = defaultdict(list)
        symbol_counts: defaultdict[int, int] = defaultdict(int)
        for wi, w in enumerate(words):
            f = freqs[wi]
            off = 0
            for i, sym in enumerate(w):
                symbol_counts[sym] += f
                if i + 1 < len(w):
                    p = (sym, w[i + 1])
                    if p not in pair_counts:
                        pair_counts[p] = 0
                        first[p] = (wi, off)
                    pair_counts[p] += f
                    where[p].append(wi)
                off += lengths[sym]
            if wi & 0xFFF == 0:
                check()
        self._pair_counts = pair_counts
        self._first = first  # a lower bound of each pair's first occurrence (fixed on pop)
        self._where = where
        self._symbol_counts = symbol_counts
        self._total = sum(symbol_counts.values())
        # ratio / gain: pairs whose heap entry is their exact score, and per symbol the
        # tracked pairs holding it (re-scored when its count drops). A gain pair whose lasting
        # upper bound is below the best score so far is *parked* instead: one bound entry,
        # no re-scoring, exact again once that bound reaches the top of the heap.
        self._tracked: set[Pair] = set()
        self._pairs_of: defaultdict[int, set[Pair]] = defaultdict(set)
        self._threshold = -math.inf
        if self._gain and pair_counts:
            self._threshold = max(self._score(p, c) for p, c in pair_counts.items())
        self._version: dict[Pair, int] = {}  # each pair's valid heap entry
        self._stamp = 0
        self._heap = [self._entry(p, c) for p, c in pair_counts.items()]
        heapify(self._heap)

    def _score(self, p: Pair, count: int) -> float:
        if not self._likelihood:
            return float(count)
        counts = self._symbol_counts
        if not self._gain:
            return count / (counts[p[0]] * counts[p[1]])
        a, b = p
        na, nb, n = counts[a], counts[b], self._total
        xl = self._xlogx
        if a == b:
            change = xl(na - 2 * count) - xl(na)
        else:
            change = xl(na - count) - xl(na) + xl(nb - count) - xl(nb)
        return xl(count) + change - (xl(n - count) - xl(n))

    def _bound(self, p: Pair, count: int) -> float:
        """An upper bound of the pair's gain for the rest of training (gain only).

        Each ``xl(x - c) - xl(x)`` term is at most ``-xl(c)`` (x >= c; for a == b at most
        ``-xl(c)`` in all), and the N term falls with N exactly as the gain's does; the margin
        covers rounding.
        """
        xl = self._xlogx
        n = self._total
        bound = xl(n) - xl(n - count)
        if p[0] != p[1]:
            bound -= xl(count)
        return bound + abs(bound) * 1e-9 + 1e-9

    def _entry(self, p: Pair, count: int) -> Entry:
        """The pair's new valid entry: its exact score (tracked), or a parked pair's bound."""
        pos = self._first.get(p, _FAR)
        if self._gain:
            bound = self._bound(p, count)
            if bound < self._threshold:
                self._untrack(p)
                return self._valid(-bound, pos, p, 0)
        if self._likelihood:
            self._track(p)
        return self._valid(-self._score(p, count), pos, p, 1)

    def _valid(self, neg: float, pos: Position, p: Pair, exact: int) -> Entry:
        """An entry for ``p`` that replaces (invalidates) the one it had."""
        self._stamp += 1
        self._version[p] = self._stamp
        return (neg, *pos, *p, exact, self._stamp)

    def _track(self, p: Pair) -> None:
        if p not in self._tracked:
            self._tracked.add(p)
            self._pairs_of[p[0]].add(p)
            self._pairs_of[p[1]].add(p)

    def _untrack(self, p: Pair) -> None:
        if p in self._tracked:
            self._tracked.discard(p)
            self._pairs_of[p[0]].discard(p)
            self._pairs_of[p[1]].discard(p)

    def _find_first(self, p: Pair) -> Position:
        """The pair's true first occurrence, by scanning the words that held it."""
        a, b = p
        lengths = self._lengths
        for wi in sorted(set(self._where.get(p, ()))):
            w = self._words[wi]
            off = 0
            for i in range(len(w) - 1):
                if w[i] == a and w[i + 1] == b:
                    return (wi, off)
                off += lengths[w[i]]
        return _FAR

    def _occurs_at(self, p: Pair, pos: Position) -> bool:
        w = self._words[pos[0]]
        off = 0
        lengths = self._lengths
        for i in range(len(w) - 1):
            if off == pos[1]:
                return w[i] == p[0] and w[i + 1] == p[1]
            if off > pos[1]:
                return False
            off += lengths[w[i]]
        return False

    def pop_best(self) -> Pair | None:
        """Remove and return the best pair (ties: seen first), or None when none is left."""
        heap = self._heap
        pair_counts = self._pair_counts
        version = self._version
        while heap:
            neg, wi, off, a, b, exact, v = heappop(heap)
            p = (a, b)
            if version.get(p) != v:
                continue  # replaced or dropped since
            count = pair_counts.get(p, 0)
            if count <= 0:
                del version[p]
                continue
            pos = (wi, off)
            if not exact:  # a parked pair's bound reached the top: score it exactly now
                if not self._occurs_at(p, pos):
                    pos = self._find_first(p)
                    self._first[p] = pos
                self._track(p)
                heappush(heap, self._valid(-self._score(p, count), pos, p, 1))
                continue
            if self._likelihood and p not in self._tracked:
                del version[p]  # not reached: parking replaces a pair's exact entry
                continue
            score = self._score(p, count)
            if -neg == score and self._occurs_at(p, pos):
                del version[p]
                self._threshold = score
                self._untrack(p)
                return p
            # subtle: a stale entry (score or position moved): replace it by its true values
            if not self._occurs_at(p, pos):
                pos = self._find_first(p)
                self._first[p] = pos
            heappush(heap, self._valid(-score, pos, p, 1))
        return None

    def merge(self, a: int, b: int, new: int) -> None:
        """Replace every (a, b) by ``new``, updating counts around each merge site.

        Example: word [a, b, a, b, c] -> [n, n, c]: pairs (a,b) x2, (b,a), (b,c) go;
        (n,n), (n,c) come.
        """
        words, freqs, lengths, where = self._words, self._freqs, self._lengths, self._where
        delta: dict[Pair, int] = {}
        created: dict[Pair, Position] = {}
        merged_sites = 0

        def add(p: Pair, d: int, wi: int, off: int) -> None:
            delta[p] = delta.get(p, 0) + d
            if d > 0:
                where[p].append(wi)
                if p not in created or (wi, off) < created[p]:
                    created[p] = (wi, off)

        for visited, wi in enumerate(sorted(set(where.pop((a, b), ())))):
            if visited & 0xFFFF == 0xFFFF:
                self._check()
            w = words[wi]
            f = freqs[wi]
            n = len(w)
            out: list[int] = []
            i = 0
            off = 0
            hit = False
            while i < n:
                if i + 1 < n and w[i] == a and w[i + 1] == b:
                    hit = True
                    merged_sites += f
                    if out:
                        left = out[-1]
                        left_off = off - lengths[left]
                        add((left, a) if left != new else (b, a), -f, wi, left_off)
                        add((left, new), f, wi, left_off)
                    if i + 2 < n:
                        right = w[i + 2]
                        if not (right == a and i + 3 < n and w[i + 3] == b):
                            add((b, right), -f, wi, off)
                            add((new, right), f, wi, off)
                    out.append(new)
                    off += lengths[a] + lengths[b]
                    i += 2
                else:
                    out.append(w[i])
                    off += lengths[w[i]]
                    i += 1
            if hit:
                words[wi] = out
        pair_counts = self._pair_counts
        pair_counts.pop((a, b), None)
        if self._likelihood:
            counts = self._symbol_counts
            counts[a] -= merged_sites
            counts[b] -= merged_sites
            counts[new] += merged_sites
            self._total -= merged_sites
        touched: set[Pair] = set()
        for p, d in delta.items():
            if p == (a, b):
                continue
            count = pair_counts.get(p, 0) + d
            if count > 0:
                pair_counts[p] = count
            else:
                pair_counts.pop(p, None)
                self._untrack(p)
                self._version.pop(p, None)  # its entry goes with it
                continue
            pos = created.get(p)
            known = self._first.get(p, _FAR)
            if pos is not None and pos < known:
                self._first[p] = pos
                touched.add(p)
            elif d > 0:
                touched.add(p)
        if self._likelihood:  # every tracked pair with a or b now scores higher: re-push
            touched |= self._pairs_of[a] | self._pairs_of[b] | self._pairs_of[new]
        heap = self._heap
        for p in touched:
            count = pair_counts.get(p, 0)
            if count > 0:
                heappush(heap, self._entry(p, count))
