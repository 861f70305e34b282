# The compiled Unigram lattice: HF's Viterbi over piece scores, for core/pipeline/models.py,
# and SentencePiece's (float32 path scores) for core/pipeline/sentencepiece.py.
#
# Included textually into _compiled.pyx. The pure-Python twin with the same interface and the
# same results is tokend.core.pipeline.lattice.PyUnigramLattice (tests run both).
#
# The pieces live in a trie over code points: one open-addressing table maps (node, code point)
# to the child node, and each node knows the id of the piece that ends there. From each start
# the walk meets exactly the pieces that begin there, shortest first, without building one
# substring or hashing one str.

# SentencePiece (0.2.3's EncodeOptimized) rebases path scores past this magnitude.
cdef double SP_SCORE_RESET = 100000.0


cdef struct _TrieSlot:
    uint64_t key    # (parent node << 21) | code point, + 1 (0: empty slot)
    int32_t child


cdef class UnigramLattice:
    """Best segmentation of a word by summed piece scores (HF ``Unigram``'s Viterbi).

    ``pieces[i]`` has id ``i`` and score ``scores[i]`` (a later duplicate of a piece wins, as in
    a dict); an unknown character scores ``unk_score``. ``best_path(word)`` is a flat list
    ``[start, end, id, ...]`` of character spans covering the word, id -1 for an unknown
    character.

    ``float32=True`` reproduces SentencePiece's ``EncodeOptimized`` (0.2.3) instead: scores
    and path scores are floats, each candidate summed in float; a path score past +-1e5 where
    a piece starts is subtracted, in float, from every path score up to the furthest end met.
    Ties (equal values) keep the first candidate met in both references: starts in order,
    shortest piece first.
    """

    cdef _TrieSlot* slots
    cdef uint64_t mask
    cdef int32_t* node_piece  # node -> id of the piece ending there, or -1
    cdef Py_ssize_t nodes
    cdef double* scores
    cdef double unk_score
    cdef bint float32

    def __cinit__(self, list pieces, list scores, double unk_score, bint float32=False):
        cdef Py_ssize_t total = 1, i, capacity = 16
        cdef str piece
        for piece in pieces:
            total += len(piece)
        while capacity < 2 * total:
            capacity *= 2
        self.mask = capacity - 1
        self.slots = <_TrieSlot*>calloc(capacity, sizeof(_TrieSlot))
        self.node_piece = <int32_t*>malloc(total * sizeof(int32_t))
        self.scores = <double*>malloc((len(scores) + 1) * sizeof(double))
        if self.slots == NULL or self.node_piece == NULL or self.scores == NULL:
            raise MemoryError()
        self.unk_score = unk_score
        self.float32 = float32
        for i in range(len(scores)):
            self.scores[i] = scores[i]
        self.node_piece[0] = -1
        self.nodes = 1
        cdef int32_t node
        cdef Py_UCS4 c
        for i in range(len(pieces)):
            piece = pieces[i]
            if not piece:
                continue
            node = 0
            for c in piece:
                node = self._child(node, c, True)
            self.node_piece[node] = <int32_t>i

    def __dealloc__(self):
        free(self.slots)
        free(self.node_piece)
        free(self.scores)

    cdef inline int32_t _child(self, int32_t node, Py_UCS4 c, bint insert):
        """The child of ``node`` along ``c`` (-1 if none and not ``insert``)."""
        cdef uint64_t key = ((<uint64_t>node << 21) | <uint64_t>c) + 1
        cdef uint64_t i = (key * 0x9E3779B97F4A7C15ULL) >> 20
        while True:
            i &= self.mask
            if self.slots[i].key == key:
                return self.slots[i].child
            if self.slots[i].key == 0:
                break
            i += 1
        if not insert:
            return -1
        self.slots[i].key = key
        self.slots[i].child = <int32_t>self.nodes
        self.node_piece[self.nodes] = -1
        self.nodes += 1
        return <int32_t>(self.nodes - 1)

    def best_path(self, str word):
        """``[start, end, id, ...]`` of the best-scoring segmentation of ``word``.

        >>> UnigramLattice(["a", "b", "ab"], [-1.0, -1.0, -1.5], -11.0).best_path("abc")
        [0, 2, 2, 2, 3, -1]
        """
        cdef Py_ssize_t n = len(word), i, end, k
        if n == 0:
            return []
        # subtle: code points and the per-position arrays in C, pieces found by walking the
        # trie: over the 8,655 distinct words of 1 MB of bench/texts.py (mon-tokenizer file)
        # 0.011 s of CPU against the twin's 0.17 s (dict lookups of every substring)
        cdef Py_UCS4* cps = <Py_UCS4*>malloc(n * sizeof(Py_UCS4))
        cdef double* best = <double*>malloc((n + 1) * sizeof(double))
        cdef Py_ssize_t* start_of = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
        cdef int32_t* node_id = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        if cps == NULL or best == NULL or start_of == NULL or node_id == NULL:
            free(cps)
            free(best)
            free(start_of)
            free(node_id)
            raise MemoryError()
        cdef Py_UCS4 c
        k = 0
        for c in word:
            cps[k] = c
            k += 1
        for i in range(n + 1):
            best[i] = 0.0
            start_of[i] = -1
            node_id[i] = 0
        if self.float32:
            self._viterbi_f32(cps, n, best, start_of, node_id)
        else:
            self._viterbi(cps, n, best, start_of, node_id)
        cdef list out = []
        end = n
        while end > 0:
            out.append(node_id[end])
            out.append(end)
            out.append(start_of[end])
            end = start_of[end]
        free(cps)
        free(best)
        free(start_of)
        free(node_id)
        out.reverse()
        return out

    cdef void _viterbi(self, Py_UCS4* cps, Py_ssize_t n, double* best, Py_ssize_t* start_of,
                       int32_t* node_id) noexcept:
        """HF's Viterbi: f64 sums, the first candidate met kept on ties."""
        cdef Py_ssize_t i, end
        cdef double here, score
        cdef int32_t node, token
        cdef bint single
        for i in range(n):
            here = best[i]
            single = False
            node = 0
            for end in range(i + 1, n + 1):
                node = self._child(node, cps[end - 1], False)
                if node < 0:
                    break
                token = self.node_piece[node]
                if token < 0:
                    continue
                score = self.scores[token] + here
                if start_of[end] < 0 or score > best[end]:
                    best[end] = score
                    start_of[end] = i
                    node_id[end] = token
                if end == i + 1:
                    single = True
            if not single:
                score = self.unk_score + here
                if start_of[i + 1] < 0 or score > best[i + 1]:
                    best[i + 1] = score
                    start_of[i + 1] = i
                    node_id[i + 1] = -1

    cdef void _viterbi_f32(self, Py_UCS4* cps, Py_ssize_t n, double* best,
                           Py_ssize_t* start_of, int32_t* node_id) noexcept:
        """SentencePiece's: every sum of two floats rounded to float, path scores rebased."""
        cdef Py_ssize_t i, end, j
        cdef Py_ssize_t frontier = 0  # the furthest end met so far
        cdef double here, score
        cdef int32_t node, token
        cdef bint single
        for i in range(n):
            here = best[i]
            if here < -SP_SCORE_RESET or here > SP_SCORE_RESET:
                # subtle: SentencePiece moves every path score from here to the frontier by
                # -here (in float), so that sums stay small; the rounding follows it
                for j in range(i, frontier + 1):
                    if j == i or start_of[j] >= 0:
                        best[j] = <float>(best[j] - here)
                here = 0.0
            single = False
            node = 0
            for end in range(i + 1, n + 1):
                node = self._child(node, cps[end - 1], False)
                if node < 0:
                    break
                token = self.node_piece[node]
                if token < 0:
                    continue
                if end > frontier:
                    frontier = end
                score = <float>(self.scores[token] + here)
                if start_of[end] < 0 or score > best[end]:
                    best[end] = score
                    start_of[end] = i
                    node_id[end] = token
                if end == i + 1:
                    single = True
            if not single:
                if i + 1 > frontier:
                    frontier = i + 1
                score = <float>(self.unk_score + here)
                if start_of[i + 1] < 0 or score > best[i + 1]:
                    best[i + 1] = score
                    start_of[i + 1] = i
                    node_id[i + 1] = -1
