# cython: language_level=3
"""The merge loop of word-level BPE and WordPiece in C; the twin of ``pair_merge.py``.

The same algorithm step for step (read ``pair_merge``'s docstring): the same heap keys
``(-score, word index, char offset, left, right, exact)`` compared as Python compares those
tuples, the same scores computed in the same order with C doubles and libm's ``log`` (what
``math.log`` calls), so both return the same pairs in the same order
(``tests/core/training/test_merge_kernel.py``). Only the data structures differ:

- words: one flat ``int32`` buffer of symbol ids, merged in place (a word only shrinks);
- pairs: an open-addressing hash table ``(left << 32 | right) -> pair id`` and one record
  per pair id (count, first position bound, the words it was seen in, tracking flags) kept
  for the whole run, as the Python twin keeps ``_first`` and ``_where``;
- the heap: a binary heap of C structs holding each pair's one valid entry, replaced in
  place (the record knows its slot), where the Python twin pushes a new versioned entry and
  skips the old one when it surfaces;
- per symbol, the tracked pairs holding it: a list with lazy deletion (an untracked pair is
  dropped the next time its list is walked), the Python twin's set of pairs.

The extension is compiled with ``-ffp-contract=off``: a fused multiply-add would round
``x * log(x) + y`` once instead of twice and break float equality with the Python twin.
"""

from libc.math cimport fabs, log
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, qsort, realloc

DEF FAR_WORD = 1 << 62  # the Python twin's _FAR position: (1 << 62, 0)
# Python's c / (na * nb) on ints is correctly rounded; so is a C double division whenever
# both operands are exact doubles (at most 2**53). Larger products go through Python ints.
DEF EXACT_DOUBLE = 1 << 53


cdef struct IntVec:
    int32_t *data
    int64_t size
    int64_t cap


cdef struct Pair:
    int32_t a
    int32_t b
    int64_t count        # 0: absent (the Python twin's pair_counts has no entry)
    int64_t first_wi     # a lower bound of the first occurrence (the Python twin's _first)
    int64_t first_off
    IntVec where         # words that held the pair, with repeats (the Python twin's _where)
    int64_t delta        # this merge's count change (valid when dstamp == the merge's round)
    int64_t cr_wi        # this merge's earliest created occurrence (when has_cr)
    int64_t cr_off
    int64_t dstamp
    int64_t tstamp       # == the merge's round: already in this merge's touched list
    int64_t hpos         # the slot of the pair's heap entry, -1: none
    char has_cr
    char tracked         # in the Python twin's _tracked set
    char listed_l        # present in pairs_of[a] (possibly stale: then untracked)
    char listed_r        # present in pairs_of[b] (a != b)


cdef struct Entry:
    double neg
    int64_t wi
    int64_t off
    int32_t a
    int32_t b
    int32_t exact
    int32_t pid          # (a, b)'s id; not part of the order, (a, b) decides it


cdef inline bint _less(const Entry *x, const Entry *y) noexcept nogil:
    """Python's order of the tuples (-score, wi, off, a, b, exact)."""
    if x.neg != y.neg:
        return x.neg < y.neg
    if x.wi != y.wi:
        return x.wi < y.wi
    if x.off != y.off:
        return x.off < y.off
    if x.a != y.a:
        return x.a < y.a
    if x.b != y.b:
        return x.b < y.b
    return x.exact < y.exact


cdef inline double _xl(int64_t x) noexcept nogil:
    """x log x (0 for x <= 0): the Python twin's ``x * math.log(x)`` on an int x."""
    if x <= 0:
        return 0.0
    return <double>x * log(<double>x)


cdef int _cmp_int32(const void *x, const void *y) noexcept nogil:
    cdef int32_t u = (<const int32_t *>x)[0]
    cdef int32_t v = (<const int32_t *>y)[0]
    return (u > v) - (u < v)


cdef int _vec_push(IntVec *v, int32_t x) except -1:
    cdef int64_t cap
    cdef int32_t *data
    if v.size == v.cap:
        cap = v.cap * 2 if v.cap else 4
        data = <int32_t *>realloc(v.data, cap * sizeof(int32_t))
        if data == NULL:
            raise MemoryError()
        v.data = data
        v.cap = cap
    v.data[v.size] = x
    v.size += 1
    return 0


cdef void _sort_unique(IntVec *v) noexcept nogil:
    """``sorted(set(v))`` in place."""
    cdef int64_t i, out = 0
    if v.size < 2:
        return
    qsort(v.data, v.size, sizeof(int32_t), _cmp_int32)
    for i in range(v.size):
        if out == 0 or v.data[out - 1] != v.data[i]:
            v.data[out] = v.data[i]
            out += 1
    v.size = out


cdef class CompiledPairMerger:
    """Greedy pair merging over weighted words; see ``pair_merge.PairMerger``.

    ``words`` are copied (the Python twin rewrites the caller's lists; nothing reads them
    after). ``lengths`` is kept by reference: the caller appends the new symbol's width
    before each ``merge``, as for the Python twin.
    """

    cdef readonly str name
    cdef object _check
    cdef list _lengths
    cdef bint _likelihood, _gain
    cdef double _threshold
    cdef int64_t _total, _round
    # words
    cdef int32_t *_syms
    cdef int64_t *_wstart
    cdef int32_t *_wlen
    cdef int64_t *_freqs
    cdef int64_t _nwords
    # symbols
    cdef int64_t *_sym_count
    cdef int64_t *_sym_len
    cdef IntVec *_pairs_of
    cdef int64_t _nsyms, _sym_cap
    # pairs
    cdef Pair *_pairs
    cdef int64_t _npairs, _pair_cap
    cdef uint64_t *_hkeys
    cdef int32_t *_hvals
    cdef int64_t _hcap
    cdef int _hbits
    # heap
    cdef Entry *_heap
    cdef int64_t _hsize, _heap_cap
    # this merge's changed pairs and touched pairs
    cdef IntVec _dlist, _tlist

    def __cinit__(self):
        self._syms = NULL
        self._wstart = NULL
        self._wlen = NULL
        self._freqs = NULL
        self._sym_count = NULL
        self._sym_len = NULL
        self._pairs_of = NULL
        self._pairs = NULL
        self._hkeys = NULL
        self._hvals = NULL
        self._heap = NULL
        self._nsyms = self._sym_cap = self._npairs = self._pair_cap = 0
        self._hsize = self._heap_cap = 0
        self._dlist.data = self._tlist.data = NULL
        self._dlist.size = self._dlist.cap = self._tlist.size = self._tlist.cap = 0

    def __dealloc__(self):
        cdef int64_t i
        free(self._syms)
        free(self._wstart)
        free(self._wlen)
        free(self._freqs)
        free(self._sym_count)
        free(self._sym_len)
        if self._pairs_of != NULL:
            for i in range(self._nsyms):
                free(self._pairs_of[i].data)
            free(self._pairs_of)
        if self._pairs != NULL:
            for i in range(self._npairs):
                free(self._pairs[i].where.data)
            free(self._pairs)
        free(self._hkeys)
        free(self._hvals)
        free(self._heap)
        free(self._dlist.data)
        free(self._tlist.data)

    def __init__(self, words, freqs, lengths, *, score="count", check=lambda: None):
        from tokend.core.training.pair_merge import SCORES  # one list of score names

        if score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, not {score!r}")
        if len(freqs) < len(words):
            raise ValueError(f"{len(words)} words but {len(freqs)} frequencies")
        self.name = "compiled"
        self._check = check
        self._lengths = lengths
        self._likelihood = score != "count"
        self._gain = score == "gain"
        self._threshold = float("-inf")
        self._total = 0
        self._round = 0
        self._sync_symbols()
        self._load_words(words, freqs)
        self._hash_init(1024)
        self._index()

    # -- storage -------------------------------------------------------------------------

    cdef int _sync_symbols(self) except -1:
        """Extend the symbol arrays to every width in ``lengths`` (new symbols: count 0)."""
        cdef int64_t n = len(self._lengths), cap, i, width
        if n > self._sym_cap:
            cap = max(n, 2 * self._sym_cap, 64)
            self._sym_count = <int64_t *>_grow(self._sym_count, cap * sizeof(int64_t))
            self._sym_len = <int64_t *>_grow(self._sym_len, cap * sizeof(int64_t))
            self._pairs_of = <IntVec *>_grow(self._pairs_of, cap * sizeof(IntVec))
            self._sym_cap = cap
        for i in range(self._nsyms, n):
            width = self._lengths[i]
            self._sym_len[i] = width
            self._sym_count[i] = 0
            self._pairs_of[i].data = NULL
            self._pairs_of[i].size = self._pairs_of[i].cap = 0
            self._nsyms = i + 1
        return 0

    cdef int _load_words(self, list words, freqs) except -1:
        cdef int64_t nw = len(words), total = 0, wi, i, n, sym
        cdef list w
        for w in words:
            total += len(w)
        self._nwords = nw
        self._syms = <int32_t *>_grow(NULL, (total + 1) * sizeof(int32_t))
        self._wstart = <int64_t *>_grow(NULL, (nw + 1) * sizeof(int64_t))
        self._wlen = <int32_t *>_grow(NULL, (nw + 1) * sizeof(int32_t))
        self._freqs = <int64_t *>_grow(NULL, (nw + 1) * sizeof(int64_t))
        total = 0
        for wi in range(nw):
            w = words[wi]
            n = len(w)
            self._wstart[wi] = total
            self._wlen[wi] = <int32_t>n
            self._freqs[wi] = freqs[wi]
            for i in range(n):
                sym = w[i]
                if sym < 0 or sym >= self._nsyms:
                    raise IndexError(f"symbol {sym} has no width in lengths")
                self._syms[total + i] = <int32_t>sym
            total += n
        return 0

    cdef int _hash_init(self, int64_t cap) except -1:
        cdef int64_t i
        cdef int bits = 0
        while (<int64_t>1 << bits) < cap:
            bits += 1
        cap = <int64_t>1 << bits
        free(self._hkeys)
        free(self._hvals)
        self._hkeys = NULL
        self._hvals = NULL
        self._hkeys = <uint64_t *>_grow(NULL, cap * sizeof(uint64_t))
        self._hvals = <int32_t *>_grow(NULL, cap * sizeof(int32_t))
        for i in range(cap):
            self._hvals[i] = -1
        self._hcap = cap
        self._hbits = bits
        return 0

    cdef inline int64_t _slot(self, uint64_t key) noexcept nogil:
        cdef uint64_t mask = <uint64_t>(self._hcap - 1)
        cdef uint64_t h = (key * <uint64_t>0x9E3779B97F4A7C15) >> (64 - self._hbits)
        while self._hvals[h] >= 0 and self._hkeys[h] != key:
            h = (h + 1) & mask
        return <int64_t>h

    cdef inline int64_t _find(self, int32_t a, int32_t b) noexcept nogil:
        """The pair id of (a, b), or -1 when it was never seen."""
        cdef uint64_t key = (<uint64_t><uint32_t>a << 32) | <uint32_t>b
        return self._hvals[self._slot(key)]

    cdef int64_t _intern(self, int32_t a, int32_t b) except -1:
        """The pair id of (a, b), made (count 0, no position) when it was never seen."""
        cdef uint64_t key = (<uint64_t><uint32_t>a << 32) | <uint32_t>b
        cdef int64_t h = self._slot(key), pid, i, cap
        cdef Pair *p
        if self._hvals[h] >= 0:
            return self._hvals[h]
        if self._npairs == self._pair_cap:
            cap = max(2 * self._pair_cap, 1024)
            self._pairs = <Pair *>_grow(self._pairs, cap * sizeof(Pair))
            self._pair_cap = cap
        if self._npairs >= 0x7FFFFFFF:
            raise MemoryError("more than 2**31 distinct pairs")
        pid = self._npairs
        self._npairs += 1
        p = &self._pairs[pid]
        p.a = a
        p.b = b
        p.count = 0
        p.first_wi = FAR_WORD
        p.first_off = 0
        p.where.data = NULL
        p.where.size = p.where.cap = 0
        p.delta = 0
        p.cr_wi = p.cr_off = 0
        p.dstamp = p.tstamp = -1
        p.hpos = -1
        p.has_cr = p.tracked = p.listed_l = p.listed_r = 0
        self._hkeys[h] = key
        self._hvals[h] = <int32_t>pid
        if 2 * self._npairs > self._hcap:  # keep the table at most half full
            self._hash_init(2 * self._hcap)
            for i in range(self._npairs):
                h = self._slot((<uint64_t><uint32_t>self._pairs[i].a << 32)
                               | <uint32_t>self._pairs[i].b)
                self._hkeys[h] = (<uint64_t><uint32_t>self._pairs[i].a << 32) \
                    | <uint32_t>self._pairs[i].b
                self._hvals[h] = <int32_t>i
        return pid

    # -- heap ----------------------------------------------------------------------------

    cdef int _set(self, double neg, int64_t pid, int32_t exact, int64_t wi,
                  int64_t off) except -1:
        """Give pair ``pid`` the entry (neg, wi, off, a, b, exact), replacing its old one."""
        # subtle: one entry per pair, moved in place, instead of pushing a new one and leaving
        # the old to be popped and skipped: on corpus.en (7,000 merges) 182k pops of 350k
        # pushes became ~55k, most of them dead pairs' entries; the merge loop's time under
        # "gain" halved (0.068 -> 0.037 s; Shakespeare 0.157 -> 0.073 s), "ratio" -20%.
        cdef int64_t i = self._pairs[pid].hpos, cap
        cdef Entry e
        e.neg = neg
        e.wi = wi
        e.off = off
        e.a = self._pairs[pid].a
        e.b = self._pairs[pid].b
        e.exact = exact
        e.pid = <int32_t>pid
        if i < 0:
            if self._hsize == self._heap_cap:
                cap = max(2 * self._heap_cap, 1024)
                self._heap = <Entry *>_grow(self._heap, cap * sizeof(Entry))
                self._heap_cap = cap
            i = self._hsize
            self._hsize += 1
            self._sift_up(i, e)
        elif _less(&e, &self._heap[i]):
            self._sift_up(i, e)
        else:
            self._sift_down(i, e)
        return 0

    cdef void _remove(self, int64_t pid) noexcept nogil:
        """Drop pair ``pid``'s entry (if it has one)."""
        cdef int64_t i = self._pairs[pid].hpos
        cdef Entry last
        if i < 0:
            return
        self._pairs[pid].hpos = -1
        self._hsize -= 1
        if i == self._hsize:
            return
        last = self._heap[self._hsize]
        if i > 0 and _less(&last, &self._heap[(i - 1) >> 1]):
            self._sift_up(i, last)
        else:
            self._sift_down(i, last)

    cdef void _sift_up(self, int64_t i, Entry e) noexcept nogil:
        """Put ``e`` at slot ``i`` and move it up to its place."""
        cdef int64_t parent
        while i > 0:
            parent = (i - 1) >> 1
            if not _less(&e, &self._heap[parent]):
                break
            self._heap[i] = self._heap[parent]
            self._pairs[self._heap[i].pid].hpos = i
            i = parent
        self._heap[i] = e
        self._pairs[e.pid].hpos = i

    cdef void _sift_down(self, int64_t i, Entry e) noexcept nogil:
        """Put ``e`` at slot ``i`` and move it down to its place."""
        cdef int64_t child, n = self._hsize
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and _less(&self._heap[child + 1], &self._heap[child]):
                child += 1
            if not _less(&self._heap[child], &e):
                break
            self._heap[i] = self._heap[child]
            self._pairs[self._heap[i].pid].hpos = i
            i = child
        self._heap[i] = e
        self._pairs[e.pid].hpos = i

    # -- scores --------------------------------------------------------------------------

    cdef double _score(self, int64_t pid) except? -1.0:
        """The pair's score, computed as the Python twin's ``_score`` computes it."""
        cdef Pair *p = &self._pairs[pid]
        cdef int64_t count = p.count, na, nb, n
        cdef double change
        if not self._likelihood:
            return <double>count
        na = self._sym_count[p.a]
        nb = self._sym_count[p.b]
        if not self._gain:
            if 0 < na <= EXACT_DOUBLE and 0 < nb <= EXACT_DOUBLE // na:
                return <double>count / <double>(na * nb)
            return float(int(count) / (int(na) * int(nb)))
        n = self._total
        if p.a == p.b:
            change = _xl(na - 2 * count) - _xl(na)
        else:
            change = _xl(na - count) - _xl(na) + _xl(nb - count) - _xl(nb)
        return _xl(count) + change - (_xl(n - count) - _xl(n))

    cdef inline double _bound(self, int64_t pid) noexcept nogil:
        """The Python twin's ``_bound``: the pair's gain can never rise above it."""
        cdef Pair *p = &self._pairs[pid]
        cdef double bound = _xl(self._total) - _xl(self._total - p.count)
        if p.a != p.b:
            bound -= _xl(p.count)
        return bound + fabs(bound) * 1e-9 + 1e-9

    cdef int _entry(self, int64_t pid) except -1:
        """Push the pair's exact score (tracked) or, parked, its bound (the twin's _entry)."""
        cdef double bound
        if self._gain:
            bound = self._bound(pid)
            if bound < self._threshold:
                self._pairs[pid].tracked = 0
                return self._set(-bound, pid, 0, self._pairs[pid].first_wi,
                                 self._pairs[pid].first_off)
        if self._likelihood:
            self._track(pid)
        return self._set(-self._score(pid), pid, 1, self._pairs[pid].first_wi,
                         self._pairs[pid].first_off)

    cdef int _track(self, int64_t pid) except -1:
        cdef Pair *p = &self._pairs[pid]
        cdef int32_t a = p.a, b = p.b
        if p.tracked:
            return 0
        p.tracked = 1
        if not p.listed_l:
            p.listed_l = 1
            _vec_push(&self._pairs_of[a], <int32_t>pid)
        p = &self._pairs[pid]
        if a != b and not p.listed_r:
            p.listed_r = 1
            _vec_push(&self._pairs_of[b], <int32_t>pid)
        return 0

    cdef int _touch_tracked_of(self, int32_t sym) except -1:
        """Add the tracked pairs holding ``sym`` to the touched list; drop untracked ones."""
        cdef IntVec *v = &self._pairs_of[sym]
        cdef int64_t i, out = 0
        cdef int32_t pid
        cdef Pair *p
        for i in range(v.size):
            pid = v.data[i]
            p = &self._pairs[pid]
            if p.tracked:
                v.data[out] = pid
                out += 1
                if p.tstamp != self._round:
                    p.tstamp = self._round
                    _vec_push(&self._tlist, pid)
            elif p.a == sym:
                p.listed_l = 0
            else:
                p.listed_r = 0
        v.size = out
        return 0

    # -- positions -----------------------------------------------------------------------

    cdef bint _occurs_at(self, int64_t pid, int64_t wi, int64_t off) noexcept nogil:
        cdef Pair *p = &self._pairs[pid]
        cdef int32_t *w
        cdef int64_t i, n, at = 0
        if wi < 0 or wi >= self._nwords:
            return False
        w = self._syms + self._wstart[wi]
        n = self._wlen[wi]
        for i in range(n - 1):
            if at == off:
                return w[i] == p.a and w[i + 1] == p.b
            if at > off:
                return False
            at += self._sym_len[w[i]]
        return False

    cdef void _find_first(self, int64_t pid) noexcept nogil:
        """Set the pair's first position to its true first occurrence (the twin's)."""
        cdef Pair *p = &self._pairs[pid]
        cdef int32_t *w
        cdef int64_t k, i, n, wi, at
        _sort_unique(&p.where)
        for k in range(p.where.size):
            wi = p.where.data[k]
            w = self._syms + self._wstart[wi]
            n = self._wlen[wi]
            at = 0
            for i in range(n - 1):
                if w[i] == p.a and w[i + 1] == p.b:
                    p.first_wi = wi
                    p.first_off = at
                    return
                at += self._sym_len[w[i]]
        p.first_wi = FAR_WORD
        p.first_off = 0

    # -- the algorithm -------------------------------------------------------------------

    cdef int _index(self) except -1:
        """Count every pair and symbol, then push every pair's entry (the twin's __init__)."""
        cdef int64_t wi, i, n, f, off, pid
        cdef int32_t *w
        cdef int32_t sym
        cdef double best = float("-inf"), s
        for wi in range(self._nwords):
            w = self._syms + self._wstart[wi]
            n = self._wlen[wi]
            f = self._freqs[wi]
            off = 0
            for i in range(n):
                sym = w[i]
                self._sym_count[sym] += f
                if i + 1 < n:
                    pid = self._intern(sym, w[i + 1])
                    if self._pairs[pid].first_wi == FAR_WORD:  # seen for the first time
                        self._pairs[pid].first_wi = wi
                        self._pairs[pid].first_off = off
                    self._pairs[pid].count += f
                    _vec_push(&self._pairs[pid].where, <int32_t>wi)
                off += self._sym_len[sym]
            if wi & 0xFFF == 0:
                self._check()
        for i in range(self._nsyms):
            self._total += self._sym_count[i]
        if self._gain and self._npairs:
            for pid in range(self._npairs):
                s = self._score(pid)
                if s > best:
                    best = s
            self._threshold = best
        for pid in range(self._npairs):
            self._entry(pid)
        return 0

    def pop_best(self):
        """Remove and return the best pair (ties: seen first), or None when none is left."""
        cdef Entry e
        cdef int64_t pid, wi, off
        cdef double score
        cdef Pair *p
        while self._hsize > 0:
            e = self._heap[0]
            pid = e.pid
            p = &self._pairs[pid]
            if p.count <= 0:
                self._remove(pid)
                continue
            wi = e.wi
            off = e.off
            if not e.exact:  # a parked pair's bound reached the top: score it exactly now
                if not self._occurs_at(pid, wi, off):
                    self._find_first(pid)
                    wi = p.first_wi
                    off = p.first_off
                self._track(pid)
                self._set(-self._score(pid), pid, 1, wi, off)
                continue
            if self._likelihood and not p.tracked:
                self._remove(pid)  # not reached: parking replaces a pair's exact entry
                continue
            score = self._score(pid)
            if -e.neg == score and self._occurs_at(pid, wi, off):
                self._remove(pid)
                self._threshold = score
                p.tracked = 0
                return (p.a, p.b)
            # a stale entry (score or position moved): its true values, in place
            if not self._occurs_at(pid, wi, off):
                self._find_first(pid)
                wi = p.first_wi
                off = p.first_off
            self._set(-score, pid, 1, wi, off)
        return None

    cdef int _add(self, int32_t a, int32_t b, int64_t d, int64_t wi, int64_t off) except -1:
        """Record a change ``d`` of pair (a, b)'s count at (wi, off) (the twin's ``add``)."""
        cdef int64_t pid = self._intern(a, b)
        cdef Pair *p = &self._pairs[pid]
        if p.dstamp != self._round:
            p.dstamp = self._round
            p.delta = 0
            p.has_cr = 0
            _vec_push(&self._dlist, <int32_t>pid)
            p = &self._pairs[pid]
        p.delta += d
        if d > 0:
            _vec_push(&p.where, <int32_t>wi)
            if not p.has_cr or wi < p.cr_wi or (wi == p.cr_wi and off < p.cr_off):
                p.has_cr = 1
                p.cr_wi = wi
                p.cr_off = off
        return 0

    cdef inline int _touch(self, int64_t pid) except -1:
        cdef Pair *p = &self._pairs[pid]
        if p.tstamp != self._round:
            p.tstamp = self._round
            _vec_push(&self._tlist, <int32_t>pid)
        return 0

    def merge(self, a, b, new):
        """Replace every (a, b) by ``new``, updating counts around each merge site."""
        self._sync_symbols()
        if not (0 <= a < self._nsyms and 0 <= b < self._nsyms and 0 <= new < self._nsyms):
            raise IndexError(f"merge({a}, {b}, {new}): a symbol has no width in lengths")
        self._merge(a, b, new)

    cdef int _merge(self, int32_t a, int32_t b, int32_t new) except -1:
        cdef int64_t pid_ab = self._find(a, b), k, wi, i, n, o, off, f, left_off
        cdef int64_t merged_sites = 0, count, pid
        cdef int32_t *w
        cdef int32_t left, right
        cdef bint hit
        cdef IntVec sites
        cdef Pair *p
        self._round += 1
        self._dlist.size = 0
        self._tlist.size = 0
        sites.data = NULL
        sites.size = sites.cap = 0
        if pid_ab >= 0:  # the twin's where.pop((a, b))
            sites = self._pairs[pid_ab].where
            self._pairs[pid_ab].where.data = NULL
            self._pairs[pid_ab].where.size = self._pairs[pid_ab].where.cap = 0
        try:
            _sort_unique(&sites)
            for k in range(sites.size):
                if k & 0xFFFF == 0xFFFF:
                    self._check()
                wi = sites.data[k]
                # subtle: the word is rewritten in place; the output never overtakes the
                # input (o <= i), and w[o - 1] is the twin's out[-1]
                w = self._syms + self._wstart[wi]
                n = self._wlen[wi]
                f = self._freqs[wi]
                i = o = off = 0
                hit = False
                while i < n:
                    if i + 1 < n and w[i] == a and w[i + 1] == b:
                        hit = True
                        merged_sites += f
                        if o:
                            left = w[o - 1]
                            left_off = off - self._sym_len[left]
                            if left != new:
                                self._add(left, a, -f, wi, left_off)
                            else:
                                self._add(b, a, -f, wi, left_off)
                            self._add(left, new, f, wi, left_off)
                        if i + 2 < n:
                            right = w[i + 2]
                            if not (right == a and i + 3 < n and w[i + 3] == b):
                                self._add(b, right, -f, wi, off)
                                self._add(new, right, f, wi, off)
                        w[o] = new
                        o += 1
                        off += self._sym_len[a] + self._sym_len[b]
                        i += 2
                    else:
                        w[o] = w[i]
                        o += 1
                        off += self._sym_len[w[i]]
                        i += 1
                if hit:
                    self._wlen[wi] = <int32_t>o
        finally:
            free(sites.data)
        if pid_ab >= 0:
            self._pairs[pid_ab].count = 0
        if self._likelihood:
            self._sym_count[a] -= merged_sites
            self._sym_count[b] -= merged_sites
            self._sym_count[new] += merged_sites
            self._total -= merged_sites
        for k in range(self._dlist.size):
            pid = self._dlist.data[k]
            if pid == pid_ab:
                continue
            p = &self._pairs[pid]
            count = p.count + p.delta
            if count > 0:
                p.count = count
            else:
                p.count = 0
                p.tracked = 0
                self._remove(pid)  # its entry goes with it
                continue
            if p.has_cr and (p.cr_wi < p.first_wi
                             or (p.cr_wi == p.first_wi and p.cr_off < p.first_off)):
                p.first_wi = p.cr_wi
                p.first_off = p.cr_off
                self._touch(pid)
            elif p.delta > 0:
                self._touch(pid)
        if self._likelihood:  # every tracked pair with a or b now scores higher: re-push
            self._touch_tracked_of(a)
            self._touch_tracked_of(b)
            self._touch_tracked_of(new)
        for k in range(self._tlist.size):
            pid = self._tlist.data[k]
            if self._pairs[pid].count > 0:
                self._entry(pid)
        return 0


cdef void *_grow(void *ptr, size_t size) except NULL:
    """realloc, or MemoryError."""
    cdef void *out = realloc(ptr, size if size else 1)
    if out == NULL:
        raise MemoryError()
    return out
