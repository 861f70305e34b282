# cython: language_level=3
"""The Unigram trainer's hot loops in C; the twin of ``unigram_lattice.py`` (read its docstring).

Edges live in flat arrays, sorted by (start, end) within each word; at each position the
unknown edge (when no live one-character piece starts there) comes first, exactly where the
Python twin's sort puts it, so both visit edges in the same order and give the same results.
"""

from cpython.array cimport array, clone
from libc.math cimport INFINITY, exp, log1p
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

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


# ---------------------------------------------------------------------------------------------
# Substring counting for the seed vocabulary (twin: unigram_seed.PySubstrings)

cdef extern from "Python.h":
    object PyUnicode_FromKindAndData(int kind, const void *buffer, Py_ssize_t size)
    int PyUnicode_4BYTE_KIND


DEF NO_FOLLOWER = -1
DEF BRANCHING = -2
DEF ANY_SCRIPT = -1
DEF INHERITED_SCRIPT = -2

cdef struct Entry:
    uint64_t h
    int32_t word  # -1: empty slot
    int32_t start
    int32_t length
    int32_t follower  # NO_FOLLOWER, BRANCHING or the one character id seen after it so far
    int32_t piece  # the seed id, -1 when the substring is no seed
    int64_t freq


cdef inline uint64_t _step(uint64_t h, int32_t char_id) noexcept nogil:
    return (h ^ <uint64_t>(char_id + 1)) * <uint64_t>0x100000001B3


cdef inline uint64_t _slot(uint64_t h) noexcept nogil:
    h ^= h >> 33
    h *= <uint64_t>0xff51afd7ed558ccd
    h ^= h >> 33
    return h


cdef class CompiledSubstrings:
    """Every valid substring of every word (up to max_length characters) in one C hash table:
    its weighted count and whether it always had the same next character. See PySubstrings."""

    cdef int32_t *text  # the words' characters as ids, back to back
    cdef int64_t *word_start
    cdef int64_t *counts
    cdef int32_t *lengths
    cdef Py_ssize_t num_words
    cdef uint8_t *known
    cdef uint8_t *is_ws
    cdef int32_t *script
    cdef uint32_t *codepoint
    cdef int32_t *cp_to_id
    cdef Py_ssize_t num_chars
    cdef int max_length
    cdef Entry *table
    cdef uint64_t mask
    cdef Py_ssize_t size
    cdef readonly str name

    def __cinit__(self):
        self.text = NULL
        self.word_start = NULL
        self.counts = NULL
        self.lengths = NULL
        self.known = NULL
        self.is_ws = NULL
        self.script = NULL
        self.codepoint = NULL
        self.cp_to_id = NULL
        self.table = NULL

    def __dealloc__(self):
        free(self.text)
        free(self.word_start)
        free(self.counts)
        free(self.lengths)
        free(self.known)
        free(self.is_ws)
        free(self.script)
        free(self.codepoint)
        free(self.cp_to_id)
        free(self.table)

    def __init__(self, *, words, counts, chars, max_length, whole_word_seeds):
        """``chars``: character -> (known, is ▁, script class); every character of the words."""
        self.name = "compiled"
        self.max_length = max_length
        self.num_chars = len(chars)
        self.known = <uint8_t *>calloc(self.num_chars + 1, 1)
        self.is_ws = <uint8_t *>calloc(self.num_chars + 1, 1)
        self.script = <int32_t *>calloc(self.num_chars + 1, sizeof(int32_t))
        self.codepoint = <uint32_t *>calloc(self.num_chars + 1, sizeof(uint32_t))
        self.cp_to_id = <int32_t *>malloc(0x110000 * sizeof(int32_t))
        if (self.known == NULL or self.is_ws == NULL or self.script == NULL
                or self.codepoint == NULL or self.cp_to_id == NULL):
            raise MemoryError()
        cdef Py_ssize_t i
        for i in range(0x110000):
            self.cp_to_id[i] = -1
        cdef int32_t char_id = 0
        for char, (known, ws, cls) in chars.items():
            self.cp_to_id[ord(char)] = char_id
            self.codepoint[char_id] = ord(char)
            self.known[char_id] = 1 if known else 0
            self.is_ws[char_id] = 1 if ws else 0
            self.script[char_id] = cls
            char_id += 1
        self.num_words = len(words)
        self.word_start = <int64_t *>malloc((self.num_words + 1) * sizeof(int64_t))
        self.counts = <int64_t *>malloc((self.num_words + 1) * sizeof(int64_t))
        self.lengths = <int32_t *>malloc((self.num_words + 1) * sizeof(int32_t))
        if self.word_start == NULL or self.counts == NULL or self.lengths == NULL:
            raise MemoryError()
        cdef int64_t total = 0
        cdef Py_ssize_t w = 0
        for word in words:
            self.word_start[w] = total
            self.lengths[w] = len(word)
            total += len(word)
            w += 1
        self.word_start[self.num_words] = total
        self.text = <int32_t *>malloc((total + 1) * sizeof(int32_t))
        if self.text == NULL:
            raise MemoryError()
        cdef int64_t pos = 0
        cdef Py_UCS4 c
        cdef str s
        for s in words:
            for c in s:
                self.text[pos] = self.cp_to_id[c]
                pos += 1
        w = 0
        for count in counts:
            self.counts[w] = count
            w += 1
        self.mask = (1 << 16) - 1
        self.size = 0
        self.table = <Entry *>calloc(self.mask + 1, sizeof(Entry))
        if self.table == NULL:
            raise MemoryError()
        self._clear(self.table, self.mask + 1)
        self._count(1 if whole_word_seeds else 0)

    cdef void _clear(self, Entry *table, Py_ssize_t n) noexcept nogil:
        cdef Py_ssize_t i
        for i in range(n):
            table[i].word = -1

    cdef int _grow(self) except -1:
        cdef uint64_t new_mask = (self.mask << 1) | 1
        cdef Entry *new_table = <Entry *>calloc(new_mask + 1, sizeof(Entry))
        if new_table == NULL:
            raise MemoryError()
        self._clear(new_table, new_mask + 1)
        cdef uint64_t i, j
        for i in range(self.mask + 1):
            if self.table[i].word >= 0:
                j = _slot(self.table[i].h) & new_mask
                while new_table[j].word >= 0:
                    j = (j + 1) & new_mask
                new_table[j] = self.table[i]
        free(self.table)
        self.table = new_table
        self.mask = new_mask
        return 0

    cdef inline Entry *_find(self, uint64_t h, const int32_t *chars, int32_t length) noexcept nogil:
        """The entry of this substring, or the empty slot where it would go."""
        cdef uint64_t j = _slot(h) & self.mask
        cdef Entry *e
        while True:
            e = &self.table[j]
            if e.word < 0:
                return e
            if (e.h == h and e.length == length and memcmp(
                    &self.text[self.word_start[e.word] + e.start], chars,
                    length * sizeof(int32_t)) == 0):
                return e
            j = (j + 1) & self.mask

    cdef inline int32_t _valid_end(self, const int32_t *chars, int32_t start,
                                   int32_t max_end) noexcept nogil:
        """As unigram_seed.valid_end."""
        cdef int32_t previous = ANY_SCRIPT, cls, end, c
        for end in range(start, max_end):
            c = chars[end]
            if not self.known[c]:
                return end
            if self.is_ws[c]:
                if end > start:
                    return end
                continue
            cls = self.script[c]
            if cls == INHERITED_SCRIPT:
                cls = previous
            if cls != ANY_SCRIPT and previous != ANY_SCRIPT and previous != cls:
                return end
            previous = cls
        return max_end

    cdef int _count(self, bint whole_word_seeds) except -1:
        cdef Py_ssize_t w
        cdef int32_t n, start, end, limit, nxt
        cdef int64_t count
        cdef const int32_t *chars
        cdef uint64_t h
        cdef Entry *e
        # the ▁ that starts the next word (an id of its own when no word holds a ▁)
        cdef int32_t ws_id = <int32_t>self.num_chars
        cdef Py_ssize_t i
        for i in range(self.num_chars):
            if self.is_ws[i]:
                ws_id = <int32_t>i
        for w in range(self.num_words):
            n = self.lengths[w]
            count = self.counts[w]
            chars = &self.text[self.word_start[w]]
            for start in range(n):
                limit = self._valid_end(chars, start, min(n, start + self.max_length))
                h = 0
                for end in range(start + 1, limit + 1):
                    h = _step(h, chars[end - 1])
                    if 2 * (self.size + 1) > <Py_ssize_t>(self.mask + 1):
                        self._grow()
                    e = self._find(h, chars + start, end - start)
                    if e.word < 0:
                        e.h = h
                        e.word = <int32_t>w
                        e.start = start
                        e.length = end - start
                        e.follower = NO_FOLLOWER
                        e.piece = -1
                        e.freq = 0
                        self.size += 1
                    e.freq += count
                    if end < n:
                        nxt = chars[end]
                    elif whole_word_seeds:
                        nxt = BRANCHING
                    else:
                        nxt = ws_id
                    if e.follower == NO_FOLLOWER:
                        e.follower = nxt
                    elif e.follower != nxt:
                        e.follower = BRANCHING
        return 0

    cdef str _string(self, Entry *e, uint32_t *buffer):
        cdef int32_t k
        cdef const int32_t *chars = &self.text[self.word_start[e.word] + e.start]
        for k in range(e.length):
            buffer[k] = self.codepoint[chars[k]]
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buffer, e.length)

    def candidates(self):
        """(count x length, substring) of each seed candidate, in no particular order."""
        cdef uint32_t buffer[256]
        cdef uint64_t i
        cdef Entry *e
        out = []
        if self.max_length > 256:
            raise ValueError("max_piece_length above 256 is not supported by the compiled kernel")
        for i in range(self.mask + 1):
            e = &self.table[i]
            if e.word >= 0 and e.length >= 2 and e.freq >= 2 and e.follower == BRANCHING:
                out.append((e.freq * e.length, self._string(e, buffer)))
        return out

    def lattice_edges(self, pieces):
        """(offsets, starts, ends, piece ids, first word, first start) of the pieces' edges."""
        cdef int32_t ids[256]
        cdef Py_ssize_t p, k, num_pieces = len(pieces)
        cdef uint64_t h
        cdef Entry *e
        cdef Py_UCS4 c
        cdef str piece
        for p in range(num_pieces):
            piece = pieces[p]
            if len(piece) > 256:
                raise ValueError(f"piece {piece!r:.40} is too long")
            h = 0
            k = 0
            for c in piece:
                ids[k] = self.cp_to_id[c] if c < 0x110000 else -1
                h = _step(h, ids[k])
                k += 1
            e = self._find(h, ids, <int32_t>k)
            if e.word < 0:
                raise ValueError(f"piece {piece!r:.40} is not a substring of any word")
            e.piece = <int32_t>p
        cdef Py_ssize_t w, total = 0, out = 0
        cdef int32_t n, start, end, limit
        cdef const int32_t *chars
        cdef int pass_
        cdef array offsets = clone(array("q"), self.num_words + 1, zero=True)
        cdef array starts = array("i")
        cdef array ends = array("i")
        cdef array piece_ids = array("i")
        cdef array first_word = array("i", [-1]) * num_pieces
        cdef array first_start = array("i", [0]) * num_pieces
        cdef int32_t[::1] fw = first_word
        cdef int32_t[::1] fs = first_start
        cdef int64_t[::1] off = offsets
        cdef int32_t[::1] st
        cdef int32_t[::1] en
        cdef int32_t[::1] pi
        # two passes: count the edges, then fill arrays of that size
        for pass_ in range(2):
            if pass_ == 1:
                starts = clone(array("i"), total, zero=False)
                ends = clone(array("i"), total, zero=False)
                piece_ids = clone(array("i"), total, zero=False)
                st = starts
                en = ends
                pi = piece_ids
            out = 0
            for w in range(self.num_words):
                n = self.lengths[w]
                chars = &self.text[self.word_start[w]]
                for start in range(n):
                    limit = self._valid_end(chars, start, min(n, start + self.max_length))
                    h = 0
                    for end in range(start + 1, limit + 1):
                        h = _step(h, chars[end - 1])
                        e = self._find(h, chars + start, end - start)
                        if e.word >= 0 and e.piece >= 0:
                            if pass_ == 1:
                                st[out] = start
                                en[out] = end
                                pi[out] = e.piece
                                if fw[e.piece] < 0:
                                    fw[e.piece] = <int32_t>w
                                    fs[e.piece] = start
                            out += 1
                off[w + 1] = out
            total = out
        return offsets, starts, ends, piece_ids, first_word, first_start
