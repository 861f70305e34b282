# cython: language_level=3
"""The compiled encoding engine (see ``tokend.core.engine`` for the interface and glossary).

One pass per segment, on the UTF-8 bytes of the str (for ASCII text CPython hands those out
without a copy):

1. *Cut and look up* (GIL held: the block cache is shared by the worker's threads, and the
   GIL is the lock that guards it). The segment is cut into blocks at safe points; each
   block's bytes are hashed and looked up. Hits are copied out at once, so that another
   thread may change the cache while this one works without the GIL.
2. *Encode the misses* (GIL released when there is enough work to be worth it: only the
   read-only token table and per-call buffers are touched, so threads run in parallel). Each
   missed block is pretokenized, every pretoken is looked up in the token table, and the
   rest get BPE.
3. *Publish* (GIL held): the ids become one list of shared int objects; missed blocks are
   inserted into the cache.

Custom patterns have no safe-point proof: their pretokens come from the ``regex`` module over
the whole segment (GIL held); the token table and BPE do the rest.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLongLong, PyLong_Check
from cpython.ref cimport Py_INCREF, PyObject
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memchr, memcmp, memcpy, memmove, memset

from tokend.core.engine.cache import CacheInfo
from tokend.core.errors import UnknownTokenId
from tokend.core.engine.pattern_compiler import findall_scanner
from tokend.core.engine.pretokenize import SCANNER_KINDS, compile_pattern

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL

include "_pretok.pxi"
include "_general.pxi"
include "_unigram.pxi"
include "_wordcache.pxi"

cdef extern from "_fast.h":
    void tokend_prefetch(const void* p) noexcept nogil

cdef enum:
    NO_TOKEN = -1
    NO_RANK = 0x7fffffff
    # Pieces up to this many bytes use tiktoken's scan (quadratic, but no heap to keep);
    # longer ones a heap over a linked list, O(n log n): 1 MB of one letter stays fast.
    SHORT_PIECE = 64
    # Long pieces from this many bytes sort their first pairs (see _bpe_long).
    SORTED_PAIRS_BYTES = 16384
    # Blocks: cut at the first safe point at least MIN_BLOCK bytes in whose preceding bytes
    # hash to 0 mod BOUNDARY_ODDS, or at the first safe point past MAX_BLOCK. The cuts follow
    # the text's content, so a block that recurs in another text is found again; ~250 bytes
    # on prose, so a 200 KB prompt takes ~800 lookups.
    MIN_BLOCK = 192
    BOUNDARY_ODDS = 4
    MAX_BLOCK = 2048
    # Longer blocks (text with few safe points) are encoded but not cached.
    MAX_CACHED_BLOCK = 16384
    # Misses of at least this many bytes are encoded with the GIL released.
    NOGIL_BYTES = 1024
    # Pretokens scanned, keyed and prefetched ahead of their word-cache lookups.
    SPAN_BATCH = 32
    # What an encode returns (CompiledEngine._output)
    OUT_COUNT = 0  # the number of ids
    OUT_LIST = 1  # a list of ints
    OUT_BUFFER = 2  # bytes: native uint32s
    OUT_VARINTS = 3  # (bytes: protobuf varints, count)


cdef Py_ssize_t _varints_size(const int32_t* ids, Py_ssize_t count) noexcept nogil:
    """Bytes of ``ids`` as protobuf varints (ids are uint32: 1-5 bytes each)."""
    cdef Py_ssize_t size = count, i
    cdef uint32_t v
    for i in range(count):
        v = <uint32_t>ids[i]
        size += (v >= 0x80) + (v >= 0x4000) + (v >= 0x200000) + (v >= 0x10000000)
    return size


cdef void _varints_write(unsigned char* out, const int32_t* ids, Py_ssize_t count) noexcept nogil:
    """Write ``ids`` as protobuf varints (seven bits a byte, low first, high bit: more)."""
    cdef Py_ssize_t i
    cdef uint32_t v
    for i in range(count):
        v = <uint32_t>ids[i]
        while v >= 0x80:
            out[0] = <unsigned char>(v | 0x80)
            out += 1
            v >>= 7
        out[0] = <unsigned char>v
        out += 1


# ------------------------------------------------------------------------------------ hashing

cdef inline uint64_t _mix(uint64_t h) noexcept nogil:
    # murmur3's finalizer: every input bit reaches every output bit
    h ^= h >> 33
    h *= 0xff51afd7ed558ccdULL
    h ^= h >> 33
    h *= 0xc4ceb9fe1a85ec53ULL
    h ^= h >> 33
    return h


cdef inline uint64_t _hash(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """A 64-bit hash of n bytes, 8 at a time."""
    cdef uint64_t h = 0x9e3779b97f4a7c15ULL ^ <uint64_t>n
    cdef uint64_t w
    while n >= 8:
        memcpy(&w, p, 8)
        h = (h ^ w) * 0x100000001b3ULL
        h = (h << 31) | (h >> 33)
        p += 8
        n -= 8
    if n:
        w = 0
        memcpy(&w, p, n)
        h = (h ^ w) * 0x100000001b3ULL
    return _mix(h)


# ------------------------------------------------------------------------------- token table

cdef struct Slot:
    # subtle: a lookup of a token of up to 7 bytes (most pretokens) reads this one slot and
    # nothing else -- its bytes and length are the key; the arrays below are only read for
    # longer tokens. Against a slot of (hash tag, index) plus the token arrays, that took
    # one memory access instead of three per lookup (shakespeare cold count: see docs).
    uint64_t key  # _short_key(bytes) up to 7 bytes; else the hash with LONG_KEY set
    int32_t index  # token index, NO_TOKEN for an empty slot
    int32_t id  # the token's output id


cdef struct Table:
    # Token bytes -> index. Tokens are indexed in merge-priority order, so comparing indices
    # compares ranks; ids[index] is the id the encoding outputs. Read-only once built: lookups
    # need neither a lock nor the GIL.
    Slot* slots
    uint64_t mask
    unsigned char* data  # every token's bytes, back to back
    int64_t* offsets  # index -> start in data; offsets[n] = end of the last
    int32_t* ids
    int32_t n
    int32_t byte_index[256]  # index of each single byte's token, NO_TOKEN if it has none
    # subtle: the rank of every two-byte token by its bytes (NO_RANK where none), 256 KiB:
    # BPE starts by ranking every adjacent byte pair, and an array read beats a hash probe.
    int32_t* pair_rank  # [first byte << 8 | second byte]


cdef enum:
    SHORT_KEY_BYTES = 7


cdef inline uint64_t _short_key(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """Up to 7 bytes and their count in one word (distinct strings, distinct words)."""
    cdef uint64_t w = 0
    memcpy(&w, p, n)
    return w | (<uint64_t>n << 56)


cdef inline uint64_t _slot_hash(const unsigned char* p, Py_ssize_t n, uint64_t* key) noexcept nogil:
    """Where to start probing for p[0:n], and the key its slot holds."""
    cdef uint64_t h
    if n <= SHORT_KEY_BYTES:
        key[0] = _short_key(p, n)
        return _mix(key[0])
    h = _hash(p, n)
    key[0] = h | (0xffULL << 56)  # a length byte no short key has
    return h


cdef inline const Slot* _find(const Table* t, const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """The slot of the token whose bytes are p[0:n], or NULL."""
    cdef uint64_t key
    cdef uint64_t i = _slot_hash(p, n, &key) & t.mask
    cdef const Slot* slot
    while True:
        slot = &t.slots[i]
        if slot.index == NO_TOKEN:
            return NULL
        if slot.key == key and (
            n <= SHORT_KEY_BYTES
            or (
                t.offsets[slot.index + 1] - t.offsets[slot.index] == n
                and memcmp(t.data + t.offsets[slot.index], p, n) == 0
            )
        ):
            return slot
        i = (i + 1) & t.mask


cdef inline int32_t _pair_rank(
    const Table* t, const unsigned char* p, Py_ssize_t start, Py_ssize_t end
) noexcept nogil:
    cdef const Slot* slot
    if end - start == 2:
        return t.pair_rank[p[start] << 8 | p[start + 1]]
    slot = _find(t, p + start, end - start)
    return NO_RANK if slot == NULL else slot.index


cdef inline void _prefetch_pair(
    const Table* t, const unsigned char* p, Py_ssize_t start, Py_ssize_t end
) noexcept nogil:
    """Ask for the table slot that _pair_rank(t, p, start, end) (or _find of those bytes)
    will read first."""
    cdef uint64_t key
    if end - start > 2:
        tokend_prefetch(&t.slots[_slot_hash(p + start, end - start, &key) & t.mask])


# ---------------------------------------------------------------------------------------- BPE

cdef Py_ssize_t _bpe_short(
    const Table* t, const unsigned char* p, Py_ssize_t n, int32_t* out
) noexcept nogil:
    """tiktoken's merge loop for a piece of 2..SHORT_PIECE bytes: scan for the lowest-ranked
    adjacent pair (the leftmost of equals), merge it, re-rank its two neighbours."""
    cdef Py_ssize_t start[SHORT_PIECE + 1]  # start[i]: offset of part i; start[m] = n
    cdef int32_t rank[SHORT_PIECE]  # rank[i]: the index parts i and i + 1 would merge into
    cdef Py_ssize_t m = n, i, best_at
    cdef int32_t best
    for i in range(n):
        start[i] = i
        out[i] = t.byte_index[p[i]]
        if out[i] == NO_TOKEN:
            return -2
    start[n] = n
    for i in range(n - 1):
        rank[i] = _pair_rank(t, p, i, i + 2)
    while m > 1:
        best = NO_RANK
        best_at = -1
        for i in range(m - 1):
            if rank[i] < best:
                best = rank[i]
                best_at = i
        if best_at < 0:
            break
        # part best_at absorbs part best_at + 1
        out[best_at] = best
        memmove(&start[best_at + 1], &start[best_at + 2], (m - best_at - 1) * sizeof(Py_ssize_t))
        memmove(&out[best_at + 1], &out[best_at + 2], (m - best_at - 2) * sizeof(int32_t))
        if m - best_at - 3 > 0:
            memmove(&rank[best_at + 1], &rank[best_at + 2], (m - best_at - 3) * sizeof(int32_t))
        m -= 1
        # subtle: both new pairs' table slots are requested before either is read, so their
        # two memory accesses overlap (the slot reads were 74% of this function's time)
        if best_at < m - 1:
            _prefetch_pair(t, p, start[best_at], start[best_at + 2])
        if best_at > 0:
            _prefetch_pair(t, p, start[best_at - 1], start[best_at + 1])
        if best_at < m - 1:
            rank[best_at] = _pair_rank(t, p, start[best_at], start[best_at + 2])
        if best_at > 0:
            rank[best_at - 1] = _pair_rank(t, p, start[best_at - 1], start[best_at + 1])
    return m


# A 4-ary min-heap of uint64 keys: half the levels of a binary heap, and the four children of
# a node share one cache line. subtle: on a 1 MB piece the heap holds millions of keys, far
# beyond the CPU caches, so every level costs a memory access.
cdef inline void _heap_push(uint64_t* heap, Py_ssize_t* size, uint64_t key) noexcept nogil:
    cdef Py_ssize_t i = size[0], parent
    size[0] += 1
    while i > 0:
        parent = (i - 1) >> 2
        if heap[parent] <= key:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = key


cdef inline void _heap_sift_down(uint64_t* heap, Py_ssize_t n, Py_ssize_t i, uint64_t key) noexcept nogil:
    cdef Py_ssize_t child, best, last
    while True:
        child = 4 * i + 1
        if child >= n:
            break
        best = child
        last = child + 4 if child + 4 <= n else n
        child += 1
        while child < last:
            if heap[child] < heap[best]:
                best = child
            child += 1
        if heap[best] >= key:
            break
        heap[i] = heap[best]
        i = best
    heap[i] = key


cdef inline uint64_t _heap_pop(uint64_t* heap, Py_ssize_t* size) noexcept nogil:
    cdef uint64_t top = heap[0]
    size[0] -= 1
    if size[0] > 0:
        _heap_sift_down(heap, size[0], 0, heap[size[0]])
    return top


cdef struct Part:
    # One part of a long piece, by its start offset (a linked list over the offsets).
    int32_t nxt  # start of the next part (n after the last; DEAD once merged away)
    int32_t prv  # start of the previous part (-1 for the first)
    int32_t tok  # token index of this part
    int32_t cur  # rank of the pair starting here now (NO_RANK: none)


cdef Py_ssize_t _bpe_long(
    const Table* t, const unsigned char* p, Py_ssize_t n, int32_t* out
) noexcept nogil:
    """The same merges for long pieces: a heap of (rank, start) over a linked list of parts.

    ``parts[s].cur`` is the rank of the pair that starts at part ``s`` now; a popped entry whose
    rank differs (its part was merged away or changed) is stale and skipped. Ranks are unique
    per byte string, so an equal rank means exactly the current pair. Keys are ``rank << 32 |
    start``: the smallest is tiktoken's "lowest rank, then leftmost". Returns -1 when memory
    runs out, -2 when a byte has no token.
    """
    cdef Part* parts = <Part*>malloc((n + 1) * sizeof(Part))
    cdef uint64_t* heap = <uint64_t*>malloc((3 * n + 1) * sizeof(uint64_t))
    cdef Py_ssize_t size = 0, i, count = 0, queue_size = 0, queued = 0
    cdef uint64_t* queue = NULL
    cdef int64_t* starts = NULL
    cdef int32_t start, mid, end, before, r
    cdef int32_t dead = <int32_t>(n + 1)
    cdef uint64_t key
    if parts == NULL or heap == NULL or n >= 0x7fffffff:
        count = -1
    else:
        for i in range(n):
            parts[i].nxt = <int32_t>(i + 1)
            parts[i].prv = <int32_t>(i - 1)
            parts[i].tok = t.byte_index[p[i]]
            if parts[i].tok == NO_TOKEN:
                count = -2
                break
        if count == 0:
            # every adjacent byte pair, in position order
            for i in range(n - 1):
                r = _pair_rank(t, p, i, i + 2)
                parts[i].cur = r
                if r != NO_RANK:
                    heap[size] = (<uint64_t>r << 32) | <uint64_t>i
                    size += 1
            parts[n - 1].cur = NO_RANK
            # subtle: the first pairs are sorted by rank into a queue (a counting sort keeps
            # positions ascending within a rank, so the order is the heap's) and only pairs
            # that merges make go into the heap, which stays small: 1 MB of random letters took
            # 0.39 s before, 0.15 s with it (CPU time, /tmp runs of bench_encode's inputs); the
            # counting sort's rank table makes it worth it only for pieces this long.
            queue_size = 0
            if n >= SORTED_PAIRS_BYTES:
                queue = <uint64_t*>malloc(size * sizeof(uint64_t) + 8)
                starts = <int64_t*>calloc(t.n + 1, sizeof(int64_t))
                if queue != NULL and starts != NULL:
                    for i in range(size):
                        starts[(heap[i] >> 32) + 1] += 1
                    for i in range(t.n):
                        starts[i + 1] += starts[i]
                    for i in range(size):
                        r = <int32_t>(heap[i] >> 32)
                        queue[starts[r]] = heap[i]
                        starts[r] += 1
                    queue_size = size
                    size = 0
                free(starts)
            i = (size - 2) >> 2
            while i >= 0:
                _heap_sift_down(heap, size, i, heap[i])
                i -= 1
            while size or queued < queue_size:
                if size and (queued >= queue_size or heap[0] < queue[queued]):
                    key = _heap_pop(heap, &size)
                else:
                    key = queue[queued]
                    queued += 1
                start = <int32_t>(key & 0xffffffffULL)
                r = <int32_t>(key >> 32)
                if parts[start].nxt == dead or parts[start].cur != r:
                    continue  # stale
                mid = parts[start].nxt
                end = parts[mid].nxt
                parts[start].tok = r
                parts[mid].nxt = dead
                parts[mid].cur = NO_RANK
                parts[start].nxt = end
                if end < n:
                    parts[end].prv = start
                    r = _pair_rank(t, p, start, parts[end].nxt)
                    parts[start].cur = r
                    if r != NO_RANK:
                        _heap_push(heap, &size, (<uint64_t>r << 32) | <uint64_t>start)
                else:
                    parts[start].cur = NO_RANK
                before = parts[start].prv
                if before >= 0:
                    r = _pair_rank(t, p, before, end)
                    parts[before].cur = r
                    if r != NO_RANK:
                        _heap_push(heap, &size, (<uint64_t>r << 32) | <uint64_t>before)
            i = 0
            while i < n:
                out[count] = parts[i].tok
                count += 1
                i = parts[i].nxt
    free(parts)
    free(heap)
    free(queue)
    return count


cdef inline Py_ssize_t _encode_pretoken(
    const Table* t, const unsigned char* p, Py_ssize_t n, int32_t* out
) noexcept nogil:
    """Write the output ids of one pretoken to ``out``; the count, or < 0 on failure (see
    _bpe_long)."""
    cdef const Slot* slot = _find(t, p, n)
    cdef Py_ssize_t count, i
    if slot != NULL:  # most pretokens are tokens: no BPE
        out[0] = slot.id
        return 1
    if n <= SHORT_PIECE:
        count = _bpe_short(t, p, n, out)
    else:
        count = _bpe_long(t, p, n, out)
    for i in range(count):
        out[i] = t.ids[out[i]]
    return count


# ------------------------------------------------------------------------------- safe points

cdef inline bint _is_space_cp(uint32_t c) noexcept nogil:
    """str.isspace (a superset of the patterns' \\s, so a safe point found is always safe)."""
    if c < 0x80:
        return c == 0x20 or 0x09 <= c <= 0x0d or 0x1c <= c <= 0x1f
    return (
        c == 0x85 or c == 0xa0 or c == 0x1680 or 0x2000 <= c <= 0x200a or c == 0x2028
        or c == 0x2029 or c == 0x202f or c == 0x205f or c == 0x3000
    )


cdef inline uint32_t _decode_at(const unsigned char* s, Py_ssize_t i) noexcept nogil:
    """The code point whose (valid) UTF-8 starts at s[i]."""
    cdef uint32_t c = s[i]
    if c < 0x80:
        return c
    if c < 0xe0:
        return ((c & 0x1f) << 6) | (s[i + 1] & 0x3f)
    if c < 0xf0:
        return ((c & 0x0f) << 12) | ((s[i + 1] & 0x3f) << 6) | (s[i + 2] & 0x3f)
    return ((c & 0x07) << 18) | ((s[i + 1] & 0x3f) << 12) | ((s[i + 2] & 0x3f) << 6) | (s[i + 3] & 0x3f)


cdef inline bint _is_safe_point(const unsigned char* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """Whether the space at s[i] has non-whitespace on both sides."""
    cdef Py_ssize_t j
    if i == 0 or i + 1 >= n:
        return False
    if _is_space_cp(_decode_at(s, i + 1)):
        return False
    j = i - 1
    while s[j] & 0xc0 == 0x80:  # back to the first byte of the previous character
        j -= 1
    return not _is_space_cp(_decode_at(s, j))


cdef Py_ssize_t _block_end(const unsigned char* s, Py_ssize_t start, Py_ssize_t n) noexcept nogil:
    """Where the block that starts at ``start`` ends: a safe point chosen by content, or n."""
    cdef Py_ssize_t i = start + MIN_BLOCK
    cdef const unsigned char* hit
    while i < n - 1:
        hit = <const unsigned char*>memchr(s + i, 0x20, n - 1 - i)
        if hit == NULL:
            return n
        i = hit - s
        if _is_safe_point(s, i, n) and (
            i - start >= MAX_BLOCK or _hash(s + i - 8, 8) % BOUNDARY_ODDS == 0
        ):
            return i
        i += 1
    return n


# ------------------------------------------------------------------------------- block cache

cdef struct Generation:
    # One generation of the block cache: an open-addressing index over entries whose keys
    # (block bytes) and values (ids) live in two arenas, so dropping it is a few frees.
    uint64_t* hashes  # per slot; 0 = empty (stored hashes are made odd)
    int32_t* slot_entry
    uint64_t mask
    int64_t* key_off
    int32_t* key_len
    int64_t* val_off
    int32_t* val_len
    int32_t count
    int32_t max_count
    unsigned char* keys
    int64_t keys_used
    int64_t keys_cap
    int32_t* vals
    int64_t vals_used
    int64_t vals_cap


cdef int _gen_init(Generation* g, int32_t max_count) noexcept nogil:
    cdef uint64_t capacity = 16
    while capacity < <uint64_t>max_count * 2:
        capacity *= 2
    g.mask = capacity - 1
    g.hashes = <uint64_t*>malloc(capacity * sizeof(uint64_t))
    g.slot_entry = <int32_t*>malloc(capacity * sizeof(int32_t))
    g.key_off = <int64_t*>malloc(max_count * sizeof(int64_t))
    g.key_len = <int32_t*>malloc(max_count * sizeof(int32_t))
    g.val_off = <int64_t*>malloc(max_count * sizeof(int64_t))
    g.val_len = <int32_t*>malloc(max_count * sizeof(int32_t))
    g.count = 0
    g.max_count = max_count
    g.keys = NULL
    g.keys_used = g.keys_cap = 0
    g.vals = NULL
    g.vals_used = g.vals_cap = 0
    if not g.hashes or not g.slot_entry or not g.key_off or not g.key_len or not g.val_off or not g.val_len:
        return -1
    for i in range(capacity):
        g.hashes[i] = 0
    return 0


cdef void _gen_reset(Generation* g) noexcept nogil:
    """Empty a generation, keeping its memory (its arenas are reused as they are)."""
    g.count = 0
    g.keys_used = 0
    g.vals_used = 0
    memset(g.hashes, 0, (g.mask + 1) * sizeof(uint64_t))


cdef void _gen_free(Generation* g) noexcept nogil:
    free(g.hashes)
    free(g.slot_entry)
    free(g.key_off)
    free(g.key_len)
    free(g.val_off)
    free(g.val_len)
    free(g.keys)
    free(g.vals)
    g.hashes = NULL
    g.slot_entry = NULL
    g.key_off = g.val_off = NULL
    g.key_len = g.val_len = NULL
    g.keys = NULL
    g.vals = NULL


cdef int32_t _gen_find(
    const Generation* g, uint64_t h, const unsigned char* p, Py_ssize_t n
) noexcept nogil:
    """The entry holding block p[0:n] (hash h, odd), or -1."""
    cdef uint64_t i = h & g.mask
    cdef int32_t e
    while g.hashes[i]:
        if g.hashes[i] == h:
            e = g.slot_entry[i]
            if g.key_len[e] == n and memcmp(g.keys + g.key_off[e], p, n) == 0:
                return e
        i = (i + 1) & g.mask
    return -1


cdef int _gen_add(
    Generation* g, uint64_t h, const unsigned char* p, Py_ssize_t n, const int32_t* ids,
    Py_ssize_t count,
) noexcept nogil:
    """Append an entry (the caller checked it is absent and that there is room); -1 if out
    of memory."""
    cdef uint64_t i = h & g.mask
    cdef int64_t cap
    cdef void* grown
    cdef int32_t e = g.count
    if g.keys_used + n > g.keys_cap:
        cap = max(g.keys_cap * 2, g.keys_used + n, 1 << 16)
        grown = realloc(g.keys, cap)
        if grown == NULL:
            return -1
        g.keys = <unsigned char*>grown
        g.keys_cap = cap
    if g.vals_used + count > g.vals_cap:
        cap = max(g.vals_cap * 2, g.vals_used + count, 1 << 14)
        grown = realloc(g.vals, cap * sizeof(int32_t))
        if grown == NULL:
            return -1
        g.vals = <int32_t*>grown
        g.vals_cap = cap
    memcpy(g.keys + g.keys_used, p, n)
    memcpy(g.vals + g.vals_used, ids, count * sizeof(int32_t))
    g.key_off[e] = g.keys_used
    g.key_len[e] = <int32_t>n
    g.val_off[e] = g.vals_used
    g.val_len[e] = <int32_t>count
    g.keys_used += n
    g.vals_used += count
    g.count += 1
    while g.hashes[i]:
        i = (i + 1) & g.mask
    g.hashes[i] = h
    g.slot_entry[i] = e
    return 0


cdef class _BlockCache:
    """Bounded two-generation cache of block bytes -> ids (an approximate LRU, like
    ``tokend.core.engine.cache.ChunkCache``): new entries go to the young generation; when it is
    full it becomes the old one and the previous old one is dropped; a hit in the old
    generation is copied back into the young one. So an entry survives as long as it is used
    once per turnover. Callers hold the GIL, which is the cache's lock."""

    cdef Generation young
    cdef Generation old
    cdef int32_t per_generation
    cdef int64_t max_bytes  # per generation: block bytes + 4 bytes per id
    cdef readonly int64_t hits, misses, evictions
    cdef readonly int64_t max_entries

    def __cinit__(self, int64_t max_entries, int64_t max_bytes):
        self.max_entries = max_entries
        self.per_generation = <int32_t>max(1, max_entries // 2)
        self.max_bytes = max(1, max_bytes // 2)
        if _gen_init(&self.young, self.per_generation) or _gen_init(&self.old, self.per_generation):
            raise MemoryError()

    def __dealloc__(self):
        _gen_free(&self.young)
        _gen_free(&self.old)

    @property
    def entries(self):
        return self.young.count + self.old.count

    cdef bint lookup(
        self, uint64_t h, const unsigned char* p, Py_ssize_t n, int32_t* out, Py_ssize_t* count
    ) noexcept:
        """If block p[0:n] is cached, set ``count`` to its number of ids, copy them to ``out``
        (unless it is NULL: counting needs only the number) and count a hit; else count a
        miss. A hit in the old generation is promoted into the young one."""
        cdef Generation* gen = &self.young
        cdef int32_t e = _gen_find(gen, h, p, n)
        cdef int32_t* copy = out
        if e < 0:
            gen = &self.old
            e = _gen_find(gen, h, p, n)
            if e < 0:
                self.misses += 1
                return False
        count[0] = gen.val_len[e]
        self.hits += 1
        if out != NULL:
            memcpy(out, gen.vals + gen.val_off[e], count[0] * sizeof(int32_t))
        if gen == &self.young:
            return True
        # Promote. The ids are copied out first: the insert's turnover may free the old
        # generation that ``gen`` points into.
        if out == NULL:
            copy = <int32_t*>malloc(count[0] * sizeof(int32_t) + 1)
            if copy == NULL:
                return True  # out of memory: a hit all the same, just not promoted
            memcpy(copy, gen.vals + gen.val_off[e], count[0] * sizeof(int32_t))
        self.insert(h, p, n, copy, count[0])
        if out == NULL:
            free(copy)
        return True

    cdef void insert(
        self, uint64_t h, const unsigned char* p, Py_ssize_t n, const int32_t* ids,
        Py_ssize_t count,
    ) noexcept:
        """Add a block to the young generation (turning over first when it is full)."""
        cdef Generation fresh
        if self.max_entries <= 0 or _gen_find(&self.young, h, p, n) >= 0:
            return
        if (
            self.young.count >= self.per_generation
            or self.young.keys_used + self.young.vals_used * 4 + n + 4 * count > self.max_bytes
        ):
            # subtle: the old generation is emptied in place and becomes the young one, its
            # arenas kept: freeing them and growing fresh ones made the kernel fault in and
            # zero every page again at each turnover (the block cache's share of a never-seen
            # count went 29% -> 23%: o200k, 4 KB shakespeare documents, blocks on vs off)
            self.evictions += self.old.count
            _gen_reset(&self.old)
            fresh = self.old
            self.old = self.young
            self.young = fresh
        _gen_add(&self.young, h, p, n, ids, count)


# ------------------------------------------------------------------------------------ engine

cdef struct Block:
    Py_ssize_t start
    Py_ssize_t end
    uint64_t hash
    bint hit
    bint cacheable
    Py_ssize_t offset  # into the hit or the miss buffer
    Py_ssize_t count  # ids


cdef class CompiledEngine:
    """Encodes segments of ordinary text to ids with one encoding's tables (compiled)."""

    cdef Table table
    cdef _BlockCache cache
    cdef WordCache words
    cdef readonly str name
    cdef int kind  # the compiled scanner of a named pattern, PAT_GENERAL, or -1: regex
    cdef object findall  # the regex pretokenizer, for patterns the compiler cannot take
    cdef GeneralScanner general  # a compiled pattern (kind PAT_GENERAL), else None
    cdef const GSet* gset
    cdef bint cut  # whether blocks are cut at safe points (and cached)
    cdef readonly str path  # which pretokenizer runs, for `tokend registry show`
    cdef list ints  # id -> the int object put into output lists (shared, not made per id)
    cdef unsigned char* dec_data
    cdef int64_t* dec_off  # id -> start in dec_data; dec_len[id] < 0 for no such id
    cdef int32_t* dec_len
    cdef Py_ssize_t dec_n

    def __cinit__(self, *, str pat_str, ranks, ids, decoder, Py_ssize_t cache_entries,
                  stages=None, bint blocks=True):
        """``stages``: a ``pattern_compiler.CompiledPatterns`` to pretokenize with instead of
        ``pat_str`` (HF Split stages); ``blocks=False`` turns the block cache off (benchmarks)."""
        self.name = "compiled"
        self._build_table(ranks, ids)
        self._build_decoder(decoder)
        self.ints = list(range(self.dec_n))
        # The named patterns have both the safe-point proof and a hand-written scanner; other
        # patterns go through the compiler, and the regex module if it refuses them.
        self.kind = SCANNER_KINDS.get(pat_str, -1) if stages is None else -1
        self.findall = compile_pattern(pat_str)
        self.cut = True
        self.path = "compiled scanner"
        if self.kind < 0:
            if stages is None:
                stages, reason = findall_scanner(pat_str)
                self.path = f"regex fallback: {reason}"
            if stages is not None:
                self.general = GeneralScanner(*stages.as_tuple(), stages.chunkable)
                self.gset = self.general.ptr()
                self.kind = PAT_GENERAL
                self.cut = stages.chunkable
                self.path = "compiled general pattern" + (
                    "" if self.cut else f" (whole segments: {stages.chunk_reason})")
        # A block holds ~60 ids on prose, so an "entry" budget of cache_entries chunks (the
        # Python engine's unit) would be ~60x the memory: blocks get cache_entries / 8 entries
        # and 64 bytes of text + ids per chunk-entry (16 MiB at the default 262,144).
        self.cache = _BlockCache(cache_entries // 8 if blocks else 0, cache_entries * 64)
        # Words: cache_entries / 4 entries of 32 bytes (2 MiB at the default 262,144), allocated
        # once: its bound holds whatever text streams through.
        _word_cache_init(&self.words, cache_entries // 4)

    def __dealloc__(self):
        _word_cache_free(&self.words)
        free(self.table.slots)
        free(self.table.data)
        free(self.table.offsets)
        free(self.table.ids)
        free(self.table.pair_rank)
        free(self.dec_data)
        free(self.dec_off)
        free(self.dec_len)

    cdef _build_table(self, ranks, ids):
        cdef Table* t = &self.table
        cdef bytes token
        cdef int64_t total = 0
        cdef int32_t k
        cdef uint64_t capacity = 16, h, i, key
        ordered = sorted(ranks, key=ranks.__getitem__)
        t.n = len(ordered)
        for token in ordered:
            total += len(token)
        while capacity < <uint64_t>t.n * 2:
            capacity *= 2
        t.mask = capacity - 1
        t.slots = <Slot*>malloc(capacity * sizeof(Slot))
        t.data = <unsigned char*>malloc(total + 1)
        t.offsets = <int64_t*>malloc((t.n + 1) * sizeof(int64_t))
        t.ids = <int32_t*>malloc((t.n + 1) * sizeof(int32_t))
        t.pair_rank = <int32_t*>malloc(65536 * sizeof(int32_t))
        if not t.slots or not t.data or not t.offsets or not t.ids or not t.pair_rank:
            raise MemoryError()
        for k in range(65536):
            t.pair_rank[k] = NO_RANK
        for i in range(capacity):
            t.slots[i].index = NO_TOKEN
        for k in range(256):
            t.byte_index[k] = NO_TOKEN
        total = 0
        for k in range(t.n):
            token = ordered[k]
            t.offsets[k] = total
            memcpy(t.data + total, PyBytes_AS_STRING(token), len(token))
            total += len(token)
            t.ids[k] = ids[token]
            if len(token) == 1:
                t.byte_index[token[0]] = k
            elif len(token) == 2:
                t.pair_rank[token[0] << 8 | token[1]] = k
        t.offsets[t.n] = total
        for k in range(t.n):
            h = _slot_hash(t.data + t.offsets[k], t.offsets[k + 1] - t.offsets[k], &key)
            i = h & t.mask
            while t.slots[i].index != NO_TOKEN:
                i = (i + 1) & t.mask
            t.slots[i].key = key
            t.slots[i].index = k
            t.slots[i].id = t.ids[k]

    cdef _build_decoder(self, decoder):
        cdef int64_t total = 0
        cdef bytes token
        cdef Py_ssize_t token_id
        self.dec_n = max(decoder) + 1
        for token in decoder.values():
            total += len(token)
        self.dec_data = <unsigned char*>malloc(total + 1)
        self.dec_off = <int64_t*>malloc(self.dec_n * sizeof(int64_t))
        self.dec_len = <int32_t*>malloc(self.dec_n * sizeof(int32_t))
        if not self.dec_data or not self.dec_off or not self.dec_len:
            raise MemoryError()
        for token_id in range(self.dec_n):
            self.dec_len[token_id] = -1
        total = 0
        for token_id, token in decoder.items():
            self.dec_off[token_id] = total
            self.dec_len[token_id] = len(token)
            memcpy(self.dec_data + total, PyBytes_AS_STRING(token), len(token))
            total += len(token)

    # --------------------------------------------------------------------------- public

    def encode(self, str text):
        """The ids of ``text`` (ordinary text; lone surrogates raise UnicodeEncodeError)."""
        return self._run(text, OUT_LIST)

    def count(self, str text):
        """``len(encode(text))`` without building the list."""
        return self._run(text, OUT_COUNT)

    def encode_buffer(self, str text):
        """The ids of ``text`` as native uint32s in a bytes object (for numpy.frombuffer)."""
        return self._run(text, OUT_BUFFER)

    def encode_varints(self, str text):
        """(the ids of ``text`` as protobuf varints back to back, their count)."""
        return self._run(text, OUT_VARINTS)

    def decode_bytes(self, tokens):
        """The bytes of ``tokens`` concatenated; an unknown id raises UnknownTokenId."""
        cdef Py_ssize_t n = len(tokens), i, total = 0
        cdef long long v
        cdef int64_t* at = <int64_t*>malloc(n * sizeof(int64_t) + 1)
        if at == NULL:
            raise MemoryError()
        try:
            for i in range(n):
                token = tokens[i]
                v = -1
                if PyLong_Check(token):
                    try:
                        v = PyLong_AsLongLong(token)
                    except OverflowError:
                        v = -1
                if v < 0 or v >= self.dec_n or self.dec_len[v] < 0:
                    raise UnknownTokenId(token, self.dec_n)
                at[i] = v
                total += self.dec_len[v]
            out = PyBytes_FromStringAndSize(NULL, total)
            buf = <unsigned char*>PyBytes_AS_STRING(out)
            total = 0
            for i in range(n):
                memcpy(buf + total, self.dec_data + self.dec_off[at[i]], self.dec_len[at[i]])
                total += self.dec_len[at[i]]
            return out
        finally:
            free(at)

    def word_cache_info(self):
        """Word cache counters (entries are pretokens; max_entries is fixed at construction)."""
        return CacheInfo(
            hits=self.words.hits,
            misses=self.words.misses,
            evictions=self.words.evictions,
            entries=self.words.used,
            max_entries=self.words.capacity,
        )

    def cache_info(self):
        """Block cache counters (entries are blocks)."""
        return CacheInfo(
            hits=self.cache.hits,
            misses=self.cache.misses,
            evictions=self.cache.evictions,
            entries=self.cache.entries,
            max_entries=self.cache.max_entries,
        )

    # ------------------------------------------------------------------------ internals

    cdef object _output(self, const int32_t* ids, Py_ssize_t count, int mode):
        """``ids[0:count]`` in the form ``mode`` (OUT_*) asks for."""
        cdef list out
        cdef bytes data
        if mode == OUT_COUNT:
            return count
        if mode == OUT_LIST:
            out = PyList_New(count)
            self._fill(out, 0, ids, count)
            return out
        if mode == OUT_BUFFER:
            data = PyBytes_FromStringAndSize(<const char*>ids, count * sizeof(int32_t))
            return data
        data = PyBytes_FromStringAndSize(NULL, _varints_size(ids, count))
        _varints_write(<unsigned char*>PyBytes_AS_STRING(data), ids, count)
        return (data, count)

    cdef object _run(self, str text, int mode):
        cdef Py_ssize_t n
        cdef const unsigned char* s = <const unsigned char*>PyUnicode_AsUTF8AndSize(text, &n)
        if n == 0:
            return self._output(NULL, 0, mode)
        if self.kind < 0:
            return self._run_regex(text, n, mode)
        return self._run_blocks(text, s, n, mode)

    cdef object _run_regex(self, str text, Py_ssize_t n, int mode):
        """Custom patterns: the regex module's pretokens, then the token table and BPE."""
        cdef int32_t* buf = <int32_t*>malloc(n * sizeof(int32_t) + 4)
        cdef Py_ssize_t used = 0, m, got
        cdef const unsigned char* p
        if buf == NULL:
            raise MemoryError()
        try:
            for piece in self.findall(text):
                p = <const unsigned char*>PyUnicode_AsUTF8AndSize(piece, &m)
                got = _encode_pretoken(&self.table, p, m, buf + used)
                if got < 0:
                    self._raise_failure(got)
                used += got
            return self._output(buf, used, mode)
        finally:
            free(buf)

    cdef object _run_blocks(self, str text, const unsigned char* s, Py_ssize_t n, int mode):
        cdef Py_ssize_t max_blocks = n // MIN_BLOCK + 2
        cdef Block* blocks = <Block*>malloc(max_blocks * sizeof(Block))
        cdef bint want_list = mode != OUT_COUNT  # every form but a count needs the ids
        cdef int32_t* hits = <int32_t*>malloc(n * sizeof(int32_t) + 4) if want_list else NULL
        cdef int32_t* joined = NULL
        cdef object result = None
        cdef int32_t* misses = NULL
        cdef Py_ssize_t nblocks = 0, start = 0, end, hits_used = 0, miss_bytes = 0
        cdef Py_ssize_t i, got, total = 0, failed = 0
        cdef Block* b
        cdef list out
        try:
            if blocks == NULL or (want_list and hits == NULL):
                raise MemoryError()
            # 1. cut and look up (GIL held)
            while start < n:
                end = _block_end(s, start, n) if self.cut else n
                b = &blocks[nblocks]
                nblocks += 1
                b.start = start
                b.end = end
                b.hit = False
                b.cacheable = (
                    self.cut and end - start <= MAX_CACHED_BLOCK and self.cache.max_entries > 0)
                if b.cacheable:
                    b.hash = _hash(s + start, end - start) | 1
                    b.hit = self.cache.lookup(
                        b.hash, s + start, end - start, hits + hits_used if want_list else NULL,
                        &b.count,
                    )
                    if b.hit and want_list:
                        b.offset = hits_used
                        hits_used += b.count
                if not b.hit:
                    miss_bytes += end - start
                start = end
            # 2. encode the misses (GIL released for enough work)
            if miss_bytes:
                misses = <int32_t*>malloc(miss_bytes * sizeof(int32_t) + 16)  # WORD_IDS - 1 ids of slack
                if misses == NULL:
                    raise MemoryError()
                if miss_bytes >= NOGIL_BYTES:
                    with nogil:
                        failed = self._encode_misses(s, n, blocks, nblocks, misses)
                else:
                    failed = self._encode_misses(s, n, blocks, nblocks, misses)
                if failed:
                    self._raise_failure(failed)
            # 3. publish (GIL held): the output, then the cache
            for i in range(nblocks):
                total += blocks[i].count
            if mode == OUT_BUFFER or mode == OUT_VARINTS:
                joined = <int32_t*>malloc(total * sizeof(int32_t) + 4)
                if joined == NULL:
                    raise MemoryError()
                total = 0
                for i in range(nblocks):
                    b = &blocks[i]
                    memcpy(joined + total, (hits if b.hit else misses) + b.offset, b.count * sizeof(int32_t))
                    total += b.count
                result = self._output(joined, total, mode)
            elif mode == OUT_LIST:
                out = PyList_New(total)
                total = 0
                for i in range(nblocks):
                    b = &blocks[i]
                    self._fill(out, total, (hits if b.hit else misses) + b.offset, b.count)
                    total += b.count
            for i in range(nblocks):
                b = &blocks[i]
                if not b.hit and b.cacheable:
                    self.cache.insert(b.hash, s + b.start, b.end - b.start, misses + b.offset, b.count)
            if mode == OUT_LIST:
                return out
            return total if mode == OUT_COUNT else result
        finally:
            free(blocks)
            free(hits)
            free(misses)
            free(joined)

    cdef void _fill(self, list out, Py_ssize_t at, const int32_t* ids, Py_ssize_t count):
        """Put the int objects of ``ids`` into ``out[at:at + count]`` (a new list's slots)."""
        cdef PyObject* item
        cdef Py_ssize_t i
        for i in range(count):
            item = PyList_GET_ITEM(self.ints, ids[i])
            Py_INCREF(<object>item)
            PyList_SET_ITEM(out, at + i, <object>item)

    cdef Py_ssize_t _encode_misses(
        self, const unsigned char* s, Py_ssize_t n, Block* blocks, Py_ssize_t nblocks,
        int32_t* out,
    ) noexcept nogil:
        """Encode every missed block into ``out``; 0, or the failure code of a pretoken."""
        cdef Py_ssize_t used = 0, i, got = 0
        cdef Block* b
        cdef bint cached = _word_cache_take(&self.words)
        for i in range(nblocks):
            b = &blocks[i]
            if b.hit:
                continue
            b.offset = used
            got = self._encode_span(s + b.start, b.end - b.start, n - b.start, out + used, cached)
            if got < 0:
                break
            used += got
            b.count = used - b.offset
        if cached:
            _word_cache_give(&self.words)
        return got if got < 0 else 0

    cdef inline Py_ssize_t _pretoken_end(
        self, GState* st, const unsigned char* s, Py_ssize_t pos, Py_ssize_t n
    ) noexcept nogil:
        """The end of the pretoken at s[pos] (the one dispatch over the scanners); a span is
        scanned from pos 0 in order, which is what the general scanner's stages need."""
        if self.kind == PAT_GENERAL:
            return gs_next(self.gset, st, s, pos, n)
        return pretoken_end(self.kind, s, pos, n)

    cdef Py_ssize_t _encode_span(
        self, const unsigned char* s, Py_ssize_t n, Py_ssize_t readable, int32_t* out,
        bint cached,
    ) noexcept nogil:
        """Pretokenize s[0:n] (starting at a pretoken) and write its ids to ``out``: the count,
        or the failure code of a pretoken. ``readable`` (>= n): bytes from s that may be read
        (the text goes on past the span). ``cached``: this thread holds the word cache.

        With the cache, pretokens go SPAN_BATCH at a time: first every end, key and set is
        found and the set prefetched; then each is looked up (its set has arrived by then) and
        the misses are encoded and cached.
        """
        cdef Py_ssize_t used = 0, pos = 0, got, m, k, count
        cdef Py_ssize_t ends[SPAN_BATCH]
        cdef uint64_t k0s[SPAN_BATCH]
        cdef uint64_t k1s[SPAN_BATCH]
        cdef WordEntry* sets[SPAN_BATCH]
        cdef int32_t hit_ids[SPAN_BATCH][WORD_IDS]
        cdef int hit_n[SPAN_BATCH]  # a hit's number of ids; -1: a miss
        cdef WordEntry* e
        cdef Py_ssize_t start
        cdef GState st  # the general scanner's stage pieces (reset at pos 0: a span's start)
        if not cached:
            while pos < n:
                m = self._pretoken_end(&st, s, pos, n) - pos
                got = _encode_pretoken(&self.table, s + pos, m, out + used)
                if got < 0:
                    return got
                used += got
                pos += m
            return used
        while pos < n:
            # subtle: the sets of a whole batch are prefetched before the first is read, so
            # their memory arrives while the scanner runs (each lookup stalled on its set's
            # cache line before: 28% of a hit's time, perf annotate)
            count = 0
            start = pos
            while pos < n and count < SPAN_BATCH:
                ends[count] = pos = self._pretoken_end(&st, s, pos, n)
                count += 1
            pos = start
            for k in range(count):
                m = ends[k] - pos
                if m <= WORD_BYTES:
                    k0s[k] = _word_key(s + pos, m, readable - pos, &k1s[k])
                    sets[k] = _word_set(&self.words, _word_hash(k0s[k], k1s[k]))
                    tokend_prefetch(sets[k])
                    tokend_prefetch(sets[k] + 2)
                pos = ends[k]
            # subtle: all the batch is looked up before any miss is encoded, and each miss's
            # token-table slot is prefetched then, so the misses' table reads overlap instead
            # of stalling one by one; the hits' ids are copied out at once (a miss's insert
            # may replace an entry of a later hit in the same set)
            pos = start
            for k in range(count):
                m = ends[k] - pos
                hit_n[k] = -1
                if m <= WORD_BYTES:
                    e = _word_find(&self.words, sets[k], k0s[k], k1s[k])
                    if e != NULL:
                        hit_n[k] = e.nids
                        hit_ids[k][0] = e.ids[0]
                        hit_ids[k][1] = e.ids[1]
                        hit_ids[k][2] = e.ids[2]
                if hit_n[k] < 0:
                    _prefetch_pair(&self.table, s, pos, ends[k])
                pos = ends[k]
            pos = start
            for k in range(count):
                m = ends[k] - pos
                if hit_n[k] >= 0:
                    out[used] = hit_ids[k][0]
                    out[used + 1] = hit_ids[k][1]
                    out[used + 2] = hit_ids[k][2]
                    used += hit_n[k]
                    pos = ends[k]
                    continue
                got = _encode_pretoken(&self.table, s + pos, m, out + used)
                if got < 0:
                    return got
                if m <= WORD_BYTES:
                    _word_put(&self.words, sets[k], k0s[k], k1s[k], out + used, got)
                used += got
                pos = ends[k]
        return used

    cdef int _raise_failure(self, Py_ssize_t code) except -1:
        if code == -1:
            raise MemoryError()
        raise KeyError("the encoding has no token for a byte of the text")
