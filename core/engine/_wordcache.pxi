# The word cache: pretoken bytes -> output ids, bounded, in C (included into _compiled.pyx).
#
# Why: on text never seen before, the block cache misses every block, yet most of its words
# were seen before (prose reuses its vocabulary). Without this, each such word costs a probe
# of the token table (8 MiB for o200k_base: a cache miss of the CPU's own) and, for words that
# are not single tokens, a BPE run. A small hot table of the words actually used answers both.
#
# Layout: a set-associative table of fixed 32-byte entries (two per cache line), WORD_WAYS
# entries per 128-byte set, allocated once at construction: its memory is its bound, whatever
# text streams through (entries * 32 bytes; the engine derives entries from ``cache_entries``).
# A pretoken of up to WORD_BYTES bytes whose encoding has up to WORD_IDS ids may be cached;
# longer ones (rare in prose, unique in base64 or ids) always take the token table and BPE.
# The key is the pretoken's bytes in two words, its length in the top byte of the second
# (so distinct pretokens have distinct keys, and a zero second word marks an empty entry).
# Eviction is CLOCK within a set: a hit sets an entry's ``ref`` bit; an insert into a full set
# takes the first entry whose bit is clear, clearing the bits it passes.
#
# Threads: the engine encodes misses without the GIL, so the cache has its own lock, taken
# without waiting: a thread that finds it taken encodes without the cache (same ids).

from cpython.pythread cimport (
    NOWAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy

from cpython.pythread cimport (
    NOWAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy

cdef enum:
    WORD_BYTES = 15  # the longest pretoken cached (its length fills the key's 16th byte)
    WORD_IDS = 3  # the most ids a cached pretoken may have (98% of prose pretokens: <= 2)
    WORD_WAYS = 4  # entries per set (a set is 128 bytes: two cache lines)


cdef struct WordEntry:
    uint64_t k0  # bytes 0-7 of the pretoken, zero-padded
    uint64_t k1  # bytes 8-14, zero-padded, and the length in the top byte; 0: empty
    int32_t ids[WORD_IDS]
    uint8_t nids
    uint8_t ref  # CLOCK bit
    uint8_t unused0
    uint8_t unused1


cdef struct WordCache:
    WordEntry* entries  # sets * WORD_WAYS, 128-byte aligned; NULL when the cache is off
    void* block  # what was allocated (entries is aligned within it)
    uint64_t set_mask  # sets - 1 (sets is a power of two)
    int64_t capacity  # entries
    int64_t used  # entries filled
    int64_t hits
    int64_t misses
    int64_t evictions
    PyThread_type_lock lock


cdef int _word_cache_init(WordCache* c, int64_t max_entries) except -1:
    """A cache of the largest power-of-two number of sets whose entries fit ``max_entries``
    (none below WORD_WAYS entries: the cache is off)."""
    cdef uint64_t sets = 1
    c.entries = NULL
    c.block = NULL
    c.set_mask = 0
    c.capacity = c.used = c.hits = c.misses = c.evictions = 0
    c.lock = PyThread_allocate_lock()
    if c.lock == NULL:
        raise MemoryError()
    if max_entries < WORD_WAYS:
        return 0
    while sets * 2 * WORD_WAYS <= <uint64_t>max_entries:
        sets *= 2
    c.block = calloc(sets * WORD_WAYS * sizeof(WordEntry) + 128, 1)
    if c.block == NULL:
        raise MemoryError()
    c.entries = <WordEntry*>((<uintptr_t>c.block + 127) & ~(<uintptr_t>127))
    c.set_mask = sets - 1
    c.capacity = <int64_t>(sets * WORD_WAYS)
    return 0


cdef void _word_cache_free(WordCache* c) noexcept:
    free(c.block)
    c.block = NULL
    c.entries = NULL
    if c.lock != NULL:
        PyThread_free_lock(c.lock)
        c.lock = NULL


cdef inline bint _word_cache_take(WordCache* c) noexcept nogil:
    """Take the cache's lock if it is free (never waits); False: encode without the cache."""
    return c.entries != NULL and PyThread_acquire_lock(c.lock, NOWAIT_LOCK) == 1


cdef inline void _word_cache_give(WordCache* c) noexcept nogil:
    PyThread_release_lock(c.lock)


cdef uint64_t _word_masks[16]  # [n]: the bits of the first n bytes of a word (n <= 8)


cdef void _word_masks_init() noexcept:
    cdef int n
    for n in range(16):
        _word_masks[n] = 0xffffffffffffffffULL if n >= 8 else (1ULL << (8 * n)) - 1


_word_masks_init()


cdef inline uint64_t _word_key(
    const unsigned char* p, Py_ssize_t n, Py_ssize_t readable, uint64_t* k1
) noexcept nogil:
    """The key of p[0:n] (1 <= n <= WORD_BYTES): returns its first word, sets ``k1``.
    ``readable``: how many bytes from p may be read.

    subtle: with 16 readable bytes the key is two unaligned 8-byte loads and masks; copying
    n bytes into the key with memcpy was byte stores that the next 8-byte loads had to wait
    for (a failed store-to-load forwarding: 14% of the time of a cache hit, perf annotate).
    """
    cdef uint64_t k0
    cdef unsigned char buf[16]
    if readable < 16:
        memcpy(buf, p, n)
        p = buf
    memcpy(&k0, p, 8)
    memcpy(k1, p + 8, 8)
    k0 &= _word_masks[n]
    k1[0] = (k1[0] & _word_masks[n - 8 if n > 8 else 0] & 0x00ffffffffffffffULL) | (
        <uint64_t>n << 56
    )
    return k0


cdef inline uint64_t _word_hash(uint64_t k0, uint64_t k1) noexcept nogil:
    return _mix(k0 * 0x9e3779b97f4a7c15ULL ^ k1)


cdef inline WordEntry* _word_set(const WordCache* c, uint64_t h) noexcept nogil:
    return c.entries + (h & c.set_mask) * WORD_WAYS


cdef inline WordEntry* _word_find(
    WordCache* c, WordEntry* e, uint64_t k0, uint64_t k1
) noexcept nogil:
    """The entry of key (k0, k1) in set ``e``, or NULL; counts the hit or miss."""
    cdef int i
    for i in range(WORD_WAYS):
        if e[i].k1 == k1 and e[i].k0 == k0:
            e[i].ref = 1
            c.hits += 1
            return &e[i]
    c.misses += 1
    return NULL


cdef inline void _word_put(
    WordCache* c, WordEntry* e, uint64_t k0, uint64_t k1, const int32_t* ids, Py_ssize_t count
) noexcept nogil:
    """Cache the ids of a pretoken just missed in set ``e`` (too many ids: not cached)."""
    cdef WordEntry* victim = NULL
    cdef int i, sweep
    if count > WORD_IDS or count <= 0:
        return
    for i in range(WORD_WAYS):
        if e[i].k1 == 0:
            victim = &e[i]
            c.used += 1
            break
    if victim == NULL:
        # CLOCK: the first entry not used since the hand last passed; two sweeps at most
        for sweep in range(2 * WORD_WAYS):
            i = sweep % WORD_WAYS
            if e[i].ref:
                e[i].ref = 0
            else:
                victim = &e[i]
                break
        c.evictions += 1
    victim.k0 = k0
    victim.k1 = k1
    victim.nids = <uint8_t>count
    victim.ref = 0
    memcpy(victim.ids, ids, count * sizeof(int32_t))
