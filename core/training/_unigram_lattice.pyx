# cython: language_level=3
"""The Unigram trainer's hot loops in C; the twin of ``unigram_lattice.py`` (read its docstring).

Edges live in flat arrays, sorted by (start, end) within each word; at each position the
unknown edge (when no live one-character piece starts there) comes first, exactly where the
Python twin's sort puts it, so both visit edges in the same order and give the same results.
"""

from cpython.array cimport array, clone
from libc.math cimport INFINITY, exp, log1p
from libc.stdint cimport int32_t, int64_t

from tokend.core.training.unigram_lattice import ALTERNATIVE, KEEP, REMOVABLE

DEF UNK_PENALTY = 10.0


cdef inline double _logaddexp(double x, double y) noexcept nogil:
    if x == -INFINITY:
        return y
    if x > y:
        return x + log1p(exp(y - x))
    return y + log1p(exp(x - y))


cdef class CompiledLattices:
    """All words' lattices in flat arrays; see ``PyLattices`` for the meaning of each method."""

    cdef int32_t[::1] lengths
    cdef double[::1] counts
    cdef int64_t[::1] offsets
    cdef int32_t[::1] starts
    cdef int32_t[::1] ends
    cdef int32_t[::1] pieces
    cdef int max_length
    cdef readonly str name

    def __init__(self, *, lengths, counts, offsets, starts, ends, pieces):
        self.name = "compiled"
        self.lengths = array("i", lengths)
        self.counts = array("d", counts)
        self.offsets = array("q", offsets)
        self.starts = array("i", starts)
        self.ends = array("i", ends)
        self.pieces = array("i", pieces)
        self.max_length = 0
        cdef Py_ssize_t w
        for w in range(self.lengths.shape[0]):
            if self.lengths[w] > self.max_length:
                self.max_length = self.lengths[w]

    def num_edges(self):
        return int(self.offsets[self.offsets.shape[0] - 1])

    def drop_dead(self, scores):
        cdef double[::1] sc = array("d", scores)
        cdef Py_ssize_t w, k, out = 0
        cdef int64_t lo = 0, hi
        for w in range(self.lengths.shape[0]):
            hi = self.offsets[w + 1]
            for k in range(lo, hi):
                if sc[self.pieces[k]] != -INFINITY:
                    self.starts[out] = self.starts[k]
                    self.ends[out] = self.ends[k]
                    self.pieces[out] = self.pieces[k]
                    out += 1
            lo = hi
            self.offsets[w + 1] = out

    def expectations(self, scores, double min_score):
        cdef double[::1] sc = array("d", scores)
        cdef array expected_arr = clone(array("d"), sc.shape[0], zero=True)
        cdef double[::1] expected = expected_arr
        cdef array alpha_arr = clone(array("d"), self.max_length + 1, zero=False)
        cdef array beta_arr = clone(array("d"), self.max_length + 1, zero=False)
        cdef double[::1] alpha = alpha_arr
        cdef double[::1] beta = beta_arr
        cdef double unk = min_score - UNK_PENALTY
        cdef double total = 0.0, objective = 0.0, z, count, s
        cdef Py_ssize_t w, p, k, lo, hi, n, nw = self.lengths.shape[0]
        cdef int32_t piece
        for w in range(nw):
            total += self.counts[w]
        with nogil:
            for w in range(nw):
                n = self.lengths[w]
                count = self.counts[w]
                lo = self.offsets[w]
                hi = self.offsets[w + 1]
                for p in range(n + 1):
                    alpha[p] = -INFINITY
                    beta[p] = -INFINITY
                alpha[0] = 0.0
                beta[n] = 0.0
                # forward: edges by start; the unknown edge first at its position
                k = lo
                for p in range(n):
                    if not (k < hi and self.starts[k] == p and self.ends[k] == p + 1):
                        alpha[p + 1] = _logaddexp(alpha[p + 1], alpha[p] + unk)
                    while k < hi and self.starts[k] == p:
                        alpha[self.ends[k]] = _logaddexp(
                            alpha[self.ends[k]], alpha[p] + sc[self.pieces[k]])
                        k += 1
                # backward: the same edges in reverse order
                k = hi - 1
                p = n - 1
                while p >= 0:
                    while k >= lo and self.starts[k] == p:
                        beta[p] = _logaddexp(beta[p], beta[self.ends[k]] + sc[self.pieces[k]])
                        k -= 1
                    if not (k + 1 < hi and self.starts[k + 1] == p and self.ends[k + 1] == p + 1):
                        beta[p] = _logaddexp(beta[p], beta[p + 1] + unk)
                    p -= 1
                z = alpha[n]
                for k in range(lo, hi):
                    piece = self.pieces[k]
                    s = sc[piece]
                    expected[piece] += count * exp(alpha[self.starts[k]] + s + beta[self.ends[k]] - z)
                objective -= count * z / total
        return list(expected_arr), objective

    cdef int _best(self, double[::1] sc, double unk, Py_ssize_t lo, Py_ssize_t hi,
                   int32_t from_pos, int32_t to_pos, Py_ssize_t skip,
                   double[::1] best, int32_t[::1] back_start, int32_t[::1] back_piece,
                   int32_t[::1] path) noexcept nogil:
        """Best path from from_pos to to_pos over edges lo:hi inside that range (edge ``skip``
        left out); writes its pieces in order into ``path``; returns their number, or -1."""
        cdef Py_ssize_t k = lo, m = to_pos - from_pos, q
        cdef int32_t p, e
        cdef double score
        cdef bint single
        for q in range(m + 1):
            best[q] = -INFINITY
            back_start[q] = -1
        best[0] = 0.0
        for p in range(from_pos, to_pos):
            while k < hi and self.starts[k] < p:
                k += 1
            # the unknown edge comes first where no live one-character piece starts
            single = False
            q = k
            while q < hi and self.starts[q] == p:
                if self.ends[q] == p + 1 and q != skip:
                    single = True
                q += 1
            if best[p - from_pos] == -INFINITY:
                continue
            if not single:
                score = best[p - from_pos] + unk
                if back_start[p + 1 - from_pos] < 0 or score > best[p + 1 - from_pos]:
                    best[p + 1 - from_pos] = score
                    back_start[p + 1 - from_pos] = p
                    back_piece[p + 1 - from_pos] = -1
            q = k
            while q < hi and self.starts[q] == p:
                e = self.ends[q]
                if q != skip and e <= to_pos:
                    score = best[p - from_pos] + sc[self.pieces[q]]
                    if back_start[e - from_pos] < 0 or score > best[e - from_pos]:
                        best[e - from_pos] = score
                        back_start[e - from_pos] = p
                        back_piece[e - from_pos] = self.pieces[q]
                q += 1
        if back_start[m] < 0:
            return -1
        cdef int count = 0
        p = to_pos
        while p > from_pos:
            path[count] = back_piece[p - from_pos]
            count += 1
            p = back_start[p - from_pos]
        # reverse in place
        cdef int i = 0, j = count - 1
        cdef int32_t tmp
        while i < j:
            tmp = path[i]
            path[i] = path[j]
            path[j] = tmp
            i += 1
            j -= 1
        return count

    def viterbi_counts(self, scores, double min_score):
        cdef double[::1] sc = array("d", scores)
        cdef array freq_arr = clone(array("d"), sc.shape[0], zero=True)
        cdef double[::1] freq = freq_arr
        cdef Py_ssize_t size = self.max_length + 1
        cdef double[::1] best = clone(array("d"), size, zero=False)
        cdef int32_t[::1] back_start = clone(array("i"), size, zero=False)
        cdef int32_t[::1] back_piece = clone(array("i"), size, zero=False)
        cdef int32_t[::1] path = clone(array("i"), size, zero=False)
        cdef double unk = min_score - UNK_PENALTY
        cdef Py_ssize_t w, i, nw = self.lengths.shape[0]
        cdef int count
        with nogil:
            for w in range(nw):
                count = self._best(sc, unk, self.offsets[w], self.offsets[w + 1], 0,
                                   self.lengths[w], -1, best, back_start, back_piece, path)
                for i in range(count):
                    if path[i] >= 0:
                        freq[path[i]] += self.counts[w]
        return list(freq_arr)

    def second_best(self, scores, double min_score, pieces, words, starts):
        cdef double[::1] sc = array("d", scores)
        cdef Py_ssize_t size = self.max_length + 1
        cdef double[::1] best = clone(array("d"), size, zero=False)
        cdef int32_t[::1] back_start = clone(array("i"), size, zero=False)
        cdef int32_t[::1] back_piece = clone(array("i"), size, zero=False)
        cdef int32_t[::1] path = clone(array("i"), size, zero=False)
        cdef double unk = min_score - UNK_PENALTY
        cdef Py_ssize_t lo, hi, k, whole, i
        cdef int32_t piece, w, start, end
        cdef int count
        out = []
        for piece, w, start in zip(pieces, words, starts):
            lo = self.offsets[w]
            hi = self.offsets[w + 1]
            whole = -1
            for k in range(lo, hi):
                if self.starts[k] == start and self.pieces[k] == piece:
                    whole = k
                    break
            if whole < 0:
                raise ValueError(f"piece {piece} is not in word {w} at {start}")
            end = self.ends[whole]
            if end - start == 1:
                out.append((KEEP, []))
                continue
            count = self._best(sc, unk, lo, hi, start, end, -1, best, back_start, back_piece,
                               path)
            if count >= 2:
                out.append((REMOVABLE, []))
                continue
            count = self._best(sc, unk, lo, hi, start, end, whole, best, back_start,
                               back_piece, path)
            alt = [path[i] for i in range(count)] if count >= 0 else None
            if alt is None or -1 in alt:
                out.append((KEEP, []))
            else:
                out.append((ALTERNATIVE, alt))
        return out
