# The compiled pretokenizer: hand-written scanners for the four built-in patterns and Tekken's.
#
# Included textually into _compiled.pyx. ``pretoken_end`` gives the end of the pretoken that
# ``regex`` running ``tokend.core.engine.pretokenize.TIKTOKEN_COMPATIBLE[pattern]`` finds at a byte
# offset of valid UTF-8 text, touching no Python object (so it runs without the GIL). Each
# scanner follows its pattern alternative by alternative, in order, and simulates the regex
# engine's backtracking where a quantifier can give characters back; the comments quote the
# alternative being tried. The class of a code point is one lookup in tables probed from the
# ``regex`` module by tools/gen_unicode_tables.py (bits TOK_WS, TOK_L, ... documented there).
#
# Notation below: L, N = \p{L}, \p{N} narrowed to tiktoken's Unicode data; X = [^\s\p{L}\p{N}];
# P = [^\r\n\p{L}\p{N}]; UP, LO = o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], [\p{Ll}\p{Lm}\p{Lo}\p{M}].

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_Substring
from libc.stdint cimport uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL

cdef extern from "_unicode_tables.h":
    const unsigned char TOK_WS, TOK_L, TOK_N, TOK_X, TOK_P, TOK_UP, TOK_LO
    const unsigned int TOK_SHIFT, TOK_MASK, TOK_FOLD_OTHERS
    const unsigned char tok_ascii_bits[128]
    const unsigned char tok_stage1[]
    const unsigned char tok_stage2[]
    const unsigned char tok_fold_ascii[128]
    const unsigned int tok_fold_other_cp[]
    const unsigned char tok_fold_other_letter[]

cdef enum:
    PAT_GPT2 = 0    # tokend.core.patterns.GPT2_PATTERN
    PAT_R50K = 1    # tokend.core.engine.pretokenize.R50K_PATTERN (tiktoken's r50k/p50k)
    PAT_CL100K = 2  # CL100K_PATTERN
    PAT_O200K = 3   # O200K_PATTERN
    PAT_TEKKEN = 4  # tokend.core.patterns.TEKKEN_PATTERN (o200k's without contractions, N once)


cdef inline unsigned int _decode(const unsigned char* s, Py_ssize_t i,
                                 Py_ssize_t* nxt) noexcept nogil:
    """The code point of the (valid, multi-byte) UTF-8 sequence at s[i]; nxt = its end."""
    cdef unsigned int b = s[i]
    if b < 0xE0:
        nxt[0] = i + 2
        return ((b & 0x1F) << 6) | (s[i + 1] & 0x3F)
    if b < 0xF0:
        nxt[0] = i + 3
        return ((b & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)
    nxt[0] = i + 4
    return (((b & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6)
            | (s[i + 3] & 0x3F))


cdef inline unsigned char _cp_bits(unsigned int cp) noexcept nogil:
    return tok_stage2[(<unsigned int>tok_stage1[cp >> TOK_SHIFT] << TOK_SHIFT) + (cp & TOK_MASK)]


cdef inline unsigned char _bits(const unsigned char* s, Py_ssize_t i, Py_ssize_t n,
                                Py_ssize_t* nxt) noexcept nogil:
    """Class bits of the character at byte i (0 at the end of the text); nxt = its end."""
    if i >= n:
        nxt[0] = i
        return 0
    cdef unsigned char b = s[i]
    if b < 0x80:
        nxt[0] = i + 1
        return tok_ascii_bits[b]
    return _cp_bits(_decode(s, i, nxt))


cdef inline Py_ssize_t _run(const unsigned char* s, Py_ssize_t i, Py_ssize_t n,
                            unsigned char mask) noexcept nogil:
    """End of the longest run of characters from byte i that have a bit of ``mask``."""
    cdef Py_ssize_t nxt
    cdef unsigned char b
    while i < n:
        b = s[i]
        if b < 0x80:
            if not (tok_ascii_bits[b] & mask):
                return i
            i += 1
        else:
            if not (_cp_bits(_decode(s, i, &nxt)) & mask):
                return i
            i = nxt
    return i


cdef inline Py_ssize_t _prev(const unsigned char* s, Py_ssize_t i) noexcept nogil:
    """Start of the character that ends at byte i (i > 0)."""
    i -= 1
    while (s[i] & 0xC0) == 0x80:
        i -= 1
    return i


cdef inline unsigned char _fold(const unsigned char* s, Py_ssize_t i, Py_ssize_t n,
                                Py_ssize_t* nxt) noexcept nogil:
    """The contraction letter the character at byte i matches under (?i), or 0."""
    if i >= n:
        nxt[0] = i
        return 0
    cdef unsigned char b = s[i]
    if b < 0x80:
        nxt[0] = i + 1
        return tok_fold_ascii[b]
    cdef unsigned int cp = _decode(s, i, nxt)
    cdef unsigned int k
    for k in range(TOK_FOLD_OTHERS):
        if tok_fold_other_cp[k] == cp:
            return tok_fold_other_letter[k]
    return 0


cdef inline Py_ssize_t _contraction_ci(const unsigned char* s, Py_ssize_t i,
                                       Py_ssize_t n) noexcept nogil:
    """End of ``'(?i:s|t|re|ve|m|ll|d)`` at byte i, or -1 (cl100k and o200k contractions)."""
    cdef Py_ssize_t j, k
    cdef unsigned char a, b
    if i >= n or s[i] != 0x27:  # '
        return -1
    a = _fold(s, i + 1, n, &j)
    if a == b's' or a == b't' or a == b'm' or a == b'd':
        return j
    if a == b'r' or a == b'v' or a == b'l':
        b = _fold(s, j, n, &k)
        if (a == b'l' and b == b'l') or (a != b'l' and b == b'e'):
            return k
    return -1


cdef inline Py_ssize_t _whitespace(const unsigned char* s, Py_ssize_t pos, Py_ssize_t n,
                                   bint end_anchor, bint crlf_run) noexcept nogil:
    """The whitespace alternatives at a whitespace character (or one no class holds).

    ``\\s++$`` (if end_anchor), then ``\\s*[\\r\\n]`` (``\\s*[\\r\\n]+`` if crlf_run), then
    ``\\s+(?!\\S)``, then ``\\s+`` / ``\\s``.
    """
    cdef Py_ssize_t e = _run(s, pos, n, TOK_WS)
    cdef Py_ssize_t j, first
    if end_anchor and (e == n or (e == n - 1 and s[e] == 0x0A)):
        # \s++$: possessive, so $ is only tried at the run's end; regex's $ also matches before
        # a final "\n" (which a maximal whitespace run cannot stop at, but the test is cheap)
        return e
    if end_anchor or crlf_run:
        # \s*[\r\n] / \s*[\r\n]+: \s* gives characters back until a CR or LF follows, so the
        # match ends after the run's last CR/LF; [\r\n]+ then takes just that one (the next
        # character is no CR/LF). CR and LF are ASCII: scanning bytes is safe.
        j = e
        while j > pos:
            j -= 1
            if s[j] == 0x0A or s[j] == 0x0D:
                return j + 1
    # \s+(?!\S): at the end of the text the whole run; else the run minus its last character
    # (which is followed by whitespace) if that leaves one
    if e == n:
        return e
    if e > pos:
        j = _prev(s, e)
        if j > pos:
            return j
        return e  # \s+ / \s: a lone whitespace character
    # no class holds this character (impossible in valid UTF-8): consume it anyway
    _bits(s, pos, n, &first)
    return first


cdef Py_ssize_t _gpt2_end(const unsigned char* s, Py_ssize_t pos, Py_ssize_t n) noexcept nogil:
    """``'(?:[sdmt]|ll|ve|re)| ?L+| ?N+| ?X+|\\s+(?!\\S)|\\s+`` and its possessive r50k twin
    ``...| ?X++|\\s++$|\\s+(?!\\S)|\\s``, which split every text alike: nothing follows the
    possessive runs, and ``\\s++$`` and ``\\s`` take what ``\\s+(?!\\S)`` and ``\\s+`` would."""
    cdef unsigned char c = s[pos], c1, c2, b
    cdef Py_ssize_t p, q
    if c == 0x27 and pos + 1 < n:  # '(?:[sdmt]|ll|ve|re), case-sensitive
        c1 = s[pos + 1]
        if c1 == b's' or c1 == b'd' or c1 == b'm' or c1 == b't':
            return pos + 2
        if pos + 2 < n:
            c2 = s[pos + 2]
            if (c1 == b'l' and c2 == b'l') or ((c1 == b'v' or c1 == b'r') and c2 == b'e'):
                return pos + 3
    # ` ?` is greedy: with the space first; a space is in none of L, N, X, so giving it back
    # never helps
    p = pos + 1 if c == 0x20 else pos
    b = _bits(s, p, n, &q)
    if b & TOK_L:
        return _run(s, q, n, TOK_L)
    if b & TOK_N:
        return _run(s, q, n, TOK_N)
    if b & TOK_X:
        return _run(s, q, n, TOK_X)
    return _whitespace(s, pos, n, False, False)


cdef Py_ssize_t _cl100k_end(const unsigned char* s, Py_ssize_t pos, Py_ssize_t n) noexcept nogil:
    """``'(?i:[sdmt]|ll|ve|re)|P?+L++|N{1,3}+| ?X++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s``"""
    cdef Py_ssize_t q, r, e, p
    cdef unsigned char b, bq
    cdef int k
    r = _contraction_ci(s, pos, n)
    if r >= 0:
        return r
    b = _bits(s, pos, n, &q)
    # P?+L++: the optional P is possessive; P and L never overlap, so with P taken the only
    # way on is L at the next character
    if b & TOK_P:
        bq = _bits(s, q, n, &e)
        if bq & TOK_L:
            return _run(s, e, n, TOK_L)
    elif b & TOK_L:
        return _run(s, q, n, TOK_L)
    if b & TOK_N:  # N{1,3}+
        e = q
        for k in range(2):
            if not (_bits(s, e, n, &p) & TOK_N):
                break
            e = p
        return e
    # ` ?X++[\r\n]*+` (a space is no X, so giving it back never helps)
    if s[pos] == 0x20:
        b = _bits(s, q, n, &e)
    else:
        e = q
    if b & TOK_X:
        e = _run(s, e, n, TOK_X)
        while e < n and (s[e] == 0x0A or s[e] == 0x0D):
            e += 1
        return e
    return _whitespace(s, pos, n, True, False)


cdef inline Py_ssize_t _o200k_word_from(const unsigned char* s, Py_ssize_t p,
                                        Py_ssize_t n, bint tekken) noexcept nogil:
    """``UP*LO+(?i:'s|...)?`` from byte p, as the regex engine matches it, or -1.

    UP* is greedy: it takes the longest UP run, then gives back one character at a time
    until LO+ can start, i.e. LO+ starts at the last position of the run (or just after it)
    holding an LO character; UP and LO overlap in Lm, Lo and marks, so that can be inside.
    LO+ then takes its longest run, since the optional contraction after it always succeeds
    (Tekken's pattern has no contraction: LO+ ends the alternative).
    """
    cdef Py_ssize_t u = _run(s, p, n, TOK_UP)
    cdef Py_ssize_t start = u, nxt, r
    if not (_bits(s, u, n, &nxt) & TOK_LO):
        start = -1
        while u > p:
            u = _prev(s, u)
            if _bits(s, u, n, &nxt) & TOK_LO:
                start = u
                break
        if start < 0:
            return -1
    start = _run(s, start, n, TOK_LO)
    if tekken:
        return start
    r = _contraction_ci(s, start, n)
    return r if r >= 0 else start


cdef Py_ssize_t _o200k_end(const unsigned char* s, Py_ssize_t pos, Py_ssize_t n,
                           bint tekken) noexcept nogil:
    """``P?UP*LO+C?|P?UP+LO*C?|N{1,3}| ?X+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+``
    with C = ``(?i:'s|'t|'re|'ve|'m|'ll|'d)``; with ``tekken``, Mistral's Tekken pattern
    ``P?UP*LO+|P?UP+LO*|N| ?X+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`` (no C, one N)."""
    cdef Py_ssize_t q, r, e, p, qq
    cdef unsigned char b = _bits(s, pos, n, &q), bq = 0
    cdef int k
    qq = q
    if b & TOK_P:
        bq = _bits(s, q, n, &qq)
    if (b | bq) & (TOK_UP | TOK_LO):
        # P?UP*LO+C?: P? greedy, so first with the P character taken, then without it (which
        # matters when it is a mark: marks are P, UP and LO at once)
        if b & TOK_P:
            r = _o200k_word_from(s, q, n, tekken)
            if r >= 0:
                return r
        r = _o200k_word_from(s, pos, n, tekken)
        if r >= 0:
            return r
        # P?UP+LO*C?: the same order; UP+ and LO* take their longest runs, C? always succeeds
        e = -1
        if bq & TOK_UP:
            e = _run(s, qq, n, TOK_UP)
        elif b & TOK_UP:
            e = _run(s, q, n, TOK_UP)
        if e >= 0:
            e = _run(s, e, n, TOK_LO)
            if tekken:
                return e
            r = _contraction_ci(s, e, n)
            return r if r >= 0 else e
    if b & TOK_N:  # N{1,3} (Tekken: N)
        e = q
        if tekken:
            return e
        for k in range(2):
            if not (_bits(s, e, n, &p) & TOK_N):
                break
            e = p
        return e
    # ` ?X+[\r\n/]*` (a space is no X, so giving it back never helps; X+ then [\r\n/]* take
    # their longest runs, nothing follows them)
    if s[pos] == 0x20:
        b = bq if b & TOK_P else _bits(s, q, n, &qq)
        e = qq
    else:
        e = q
    if b & TOK_X:
        e = _run(s, e, n, TOK_X)
        while e < n and (s[e] == 0x0A or s[e] == 0x0D or s[e] == 0x2F):
            e += 1
        return e
    return _whitespace(s, pos, n, False, True)


# -- the ASCII fast path ------------------------------------------------------------------------
#
# Most pretokens of most text are ASCII words, numbers and punctuation. For o200k and cl100k,
# ``_ascii_end`` finds such a pretoken's end from byte classes alone, letter runs 16 bytes at a
# time (_ascii_scan.h), and gives -1 whenever a non-ASCII byte could change the answer (the
# character after a run, after a leading P, ...): the full scanner then decides, as before.

cdef extern from "_ascii_scan.h":
    Py_ssize_t tokend_run_range(const unsigned char* p, Py_ssize_t avail, unsigned char lo,
                                unsigned char hi, int fold) noexcept nogil
    Py_ssize_t tokend_run_range_scalar(const unsigned char* p, Py_ssize_t avail,
                                       unsigned char lo, unsigned char hi, int fold) noexcept nogil
    const int TOKEND_SIMD


cdef inline Py_ssize_t _ascii_digits_end(const unsigned char* s, Py_ssize_t i,
                                         Py_ssize_t n) noexcept nogil:
    """``N{1,3}`` after the ASCII digit ending at byte i, or -1 if a non-ASCII byte follows."""
    cdef int k
    for k in range(2):
        if i >= n:
            return i
        if <unsigned char>(s[i] - 0x30) <= 9:
            i += 1
        elif s[i] >= 0x80:
            return -1
        else:
            return i
    return i


cdef inline Py_ssize_t _ascii_x_end(const unsigned char* s, Py_ssize_t pos, Py_ssize_t n,
                                    bint slash) noexcept nogil:
    """`` ?X+[\r\n/]*`` (o200k, ``slash``) or `` ?X++[\r\n]*+`` (cl100k) at an ASCII byte, or -1."""
    cdef Py_ssize_t i = pos + 1 if s[pos] == 0x20 else pos
    if i >= n or s[i] >= 0x80 or not (tok_ascii_bits[s[i]] & TOK_X):
        return -1
    i += 1
    while i < n and s[i] < 0x80 and (tok_ascii_bits[s[i]] & TOK_X):
        i += 1
    if i < n and s[i] >= 0x80:
        return -1
    while i < n and (s[i] == 0x0A or s[i] == 0x0D or (slash and s[i] == 0x2F)):
        i += 1
    return i


cdef inline Py_ssize_t _ascii_end(int kind, const unsigned char* s, Py_ssize_t pos,
                                  Py_ssize_t n) noexcept nogil:
    """The end of the o200k or cl100k pretoken at ``pos`` when ASCII bytes settle it, or -1.

    o200k: ``P?`` then ``[A-Z]*[a-z]+`` or ``[A-Z]+[a-z]*`` (both are one rule on ASCII: the
    upper-case run, then the lower-case run), then a contraction; ``N{1,3}``; `` ?X+[\r\n/]*``.
    cl100k: ``P?+[A-Za-z]++``; ``N{1,3}+``; `` ?X++[\r\n]*+`` (an apostrophe at ``pos`` may
    start a contraction: left to the full scanner).
    """
    cdef unsigned char c = s[pos], bits
    cdef Py_ssize_t p = pos, i, r
    if c >= 0x80 or (kind != PAT_O200K and kind != PAT_CL100K) or (kind == PAT_CL100K and c == 0x27):
        return -1
    bits = tok_ascii_bits[c]
    if bits & TOK_P and pos + 1 < n:
        if s[pos + 1] >= 0x80:
            return -1  # perhaps a letter: P? would take c
        if tok_ascii_bits[s[pos + 1]] & TOK_L:
            p = pos + 1
    if tok_ascii_bits[s[p]] & TOK_L:
        if kind == PAT_CL100K:
            i = p + tokend_run_range(s + p, n - p, 0x61, 0x7A, 1)
            return -1 if i < n and s[i] >= 0x80 else i
        i = p + tokend_run_range(s + p, n - p, 0x41, 0x5A, 0)
        i += tokend_run_range(s + i, n - i, 0x61, 0x7A, 0)
        if i < n:
            if s[i] >= 0x80:
                return -1
            if s[i] == 0x27:
                r = _contraction_ci(s, i, n)
                if r >= 0:
                    return r
        return i
    if bits & TOK_N:
        return _ascii_digits_end(s, pos + 1, n)
    return _ascii_x_end(s, pos, n, kind == PAT_O200K)


def ascii_run(bytes data, int lo, int hi, bint fold, bint simd):
    """``tokend_run_range`` over ``data`` (``simd``) or its scalar twin, for the tests that
    check the two agree. ``SIMD_BUILT`` says whether the SIMD one was compiled in."""
    cdef const unsigned char* p = data
    if simd:
        return tokend_run_range(p, len(data), <unsigned char>lo, <unsigned char>hi, fold)
    return tokend_run_range_scalar(p, len(data), <unsigned char>lo, <unsigned char>hi, fold)


SIMD_BUILT = bool(TOKEND_SIMD)


cdef inline Py_ssize_t pretoken_end(int kind, const unsigned char* s, Py_ssize_t pos,
                                    Py_ssize_t n) noexcept nogil:
    """End (byte offset, exclusive) of the pretoken the pattern ``kind`` (PAT_*) finds at byte
    ``pos`` < ``n`` of the valid UTF-8 text ``s[0:n]``, scanning it whole from the start.

    Every character belongs to some pretoken, so ``pos = pretoken_end(kind, s, pos, n)`` from
    0 walks the pretokens; the result is always > pos. An unknown ``kind`` gives ``n``.
    """
    cdef Py_ssize_t e = _ascii_end(kind, s, pos, n)
    if e >= 0:
        return e
    return _pretoken_end_full(kind, s, pos, n)


cdef Py_ssize_t _pretoken_end_full(int kind, const unsigned char* s, Py_ssize_t pos,
                                   Py_ssize_t n) noexcept nogil:
    """``pretoken_end`` by the full scanners alone (any text)."""
    if kind == PAT_O200K:
        return _o200k_end(s, pos, n, False)
    if kind == PAT_TEKKEN:
        return _o200k_end(s, pos, n, True)
    if kind == PAT_CL100K:
        return _cl100k_end(s, pos, n)
    if kind == PAT_GPT2 or kind == PAT_R50K:
        return _gpt2_end(s, pos, n)
    return n


def pretokenize(int kind, str text):
    """The pretokens of ``text`` under pattern ``kind`` (0 gpt2, 1 r50k, 2 cl100k, 3 o200k,
    4 tekken),
    exactly as ``tokend.core.engine.pretokenize.compile_pattern(pattern)(text)``.

    Raises UnicodeEncodeError for a lone surrogate (the engine never sees one) and ValueError
    for an unknown ``kind``.
    """
    if kind < PAT_GPT2 or kind > PAT_TEKKEN:
        raise ValueError(f"unknown pattern kind {kind}; expected 0 (gpt2), 1 (r50k), "
                         "2 (cl100k), 3 (o200k) or 4 (tekken)")
    cdef Py_ssize_t n, pos = 0, end
    cdef const unsigned char* s = <const unsigned char*>PyUnicode_AsUTF8AndSize(text, &n)
    cdef list out = []
    cdef Py_ssize_t cpos = 0, cend, i
    if n == len(text):
        # subtle: ASCII text, so byte offsets are str indices: slicing the str skips decoding
        # each pretoken's UTF-8 and gives the cached 1-character strs (spaces, punctuation)
        # for free; 67 vs 59 MB/s with PyUnicode_DecodeUTF8 on shakespeare (o200k)
        while pos < n:
            end = pretoken_end(kind, s, pos, n)
            out.append(PyUnicode_Substring(text, pos, end))
            pos = end
        return out
    while pos < n:
        end = pretoken_end(kind, s, pos, n)
        cend = cpos
        for i in range(pos, end):
            cend += (s[i] & 0xC0) != 0x80
        out.append(PyUnicode_Substring(text, cpos, cend))
        cpos = cend
        pos = end
    return out


def count_pretokens(int kind, str text):
    """How many pretokens ``text`` has under pattern ``kind`` (no str built: the scan alone)."""
    if kind < PAT_GPT2 or kind > PAT_TEKKEN:
        raise ValueError(f"unknown pattern kind {kind}; expected 0 (gpt2), 1 (r50k), "
                         "2 (cl100k), 3 (o200k) or 4 (tekken)")
    cdef Py_ssize_t n, pos = 0, count = 0
    cdef const unsigned char* s = <const unsigned char*>PyUnicode_AsUTF8AndSize(text, &n)
    with nogil:
        while pos < n:
            pos = pretoken_end(kind, s, pos, n)
            count += 1
    return count




# -- counting pretokens in C (training's counting phase) ---------------------------------------

ctypedef struct _Slot:
    uint64_t hash
    Py_ssize_t off     # where the pretoken's bytes start in the arena
    Py_ssize_t length  # 0: the slot is empty (a pretoken is never empty)
    Py_ssize_t count


cdef inline uint64_t _hash_bytes(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """A fast 64-bit hash of n bytes (8 at a time, then a multiply-xorshift finish)."""
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ (<uint64_t>n * 0xFF51AFD7ED558CCDULL), w
    while n >= 8:
        memcpy(&w, p, 8)
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL
        h ^= h >> 31
        p += 8
        n -= 8
    if n > 0:
        w = 0
        memcpy(&w, p, n)
        h = (h ^ w) * 0x94D049BB133111EBULL
    h ^= h >> 32
    h *= 0xD6E8FEB86659FD93ULL
    h ^= h >> 32
    return h


cdef class PretokenCounter:
    """How often each pretoken of pattern ``kind`` occurs in the texts given to ``add``.

    Training's counting phase, all in C: per pretoken one hash and one probe of an
    open-addressing table whose keys are copied once into an arena, instead of a str (or
    bytes) object, a dict lookup and an int object. ``to_dict`` hands the totals over keyed by
    the pretokens' UTF-8 bytes. Not safe to share between threads.

    >>> c = PretokenCounter(3); c.add("the cat, the hat"); c.to_dict()[b" the"]
    6
    1
    """

    cdef int kind
    cdef _Slot* slots
    cdef Py_ssize_t mask, used
    cdef unsigned char* arena
    cdef Py_ssize_t arena_len, arena_cap
    cdef readonly Py_ssize_t pretokens  # pretokens counted so far (with repeats)

    def __cinit__(self, int kind):
        if kind < PAT_GPT2 or kind > PAT_TEKKEN:
            raise ValueError(f"unknown pattern kind {kind}; expected 0 (gpt2), 1 (r50k), "
                             "2 (cl100k), 3 (o200k) or 4 (tekken)")
        self.kind = kind
        self.mask = (1 << 14) - 1
        self.slots = <_Slot*>calloc(self.mask + 1, sizeof(_Slot))
        self.arena_cap = 1 << 16
        self.arena = <unsigned char*>malloc(self.arena_cap)
        if self.slots == NULL or self.arena == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.slots)
        free(self.arena)

    def __len__(self):
        """Distinct pretokens."""
        return self.used

    def add(self, str text):
        """Count the pretokens of ``text``; return how many it has."""
        cdef Py_ssize_t n, pos = 0, end, seen = 0
        cdef const unsigned char* s = <const unsigned char*>PyUnicode_AsUTF8AndSize(text, &n)
        # subtle: each pretoken is hashed and compared straight from the text's UTF-8 buffer
        # and copied only when new: no object per pretoken. A version that made a bytes key
        # and bumped a dict counted shakespeare at 16 MB/s, this one at 48-61 (same load)
        while pos < n:
            end = pretoken_end(self.kind, s, pos, n)
            self._bump(s + pos, end - pos)
            pos = end
            seen += 1
        self.pretokens += seen
        return seen

    cdef int _bump(self, const unsigned char* p, Py_ssize_t n) except -1:
        cdef uint64_t h = _hash_bytes(p, n)
        cdef Py_ssize_t i = <Py_ssize_t>(h & <uint64_t>self.mask)
        cdef _Slot* slot
        while True:
            slot = &self.slots[i]
            if slot.length == 0:
                break
            if (slot.hash == h and slot.length == n
                    and memcmp(self.arena + slot.off, p, n) == 0):
                slot.count += 1
                return 0
            i = (i + 1) & self.mask
        if self.arena_len + n > self.arena_cap:
            self._grow_arena(n)
        memcpy(self.arena + self.arena_len, p, n)
        slot.hash = h
        slot.off = self.arena_len
        slot.length = n
        slot.count = 1
        self.arena_len += n
        self.used += 1
        if 2 * self.used > self.mask:  # keep the table at most half full
            self._grow_table()
        return 0

    cdef int _grow_arena(self, Py_ssize_t need) except -1:
        cdef Py_ssize_t cap = self.arena_cap
        while self.arena_len + need > cap:
            cap *= 2
        cdef unsigned char* grown = <unsigned char*>realloc(self.arena, cap)
        if grown == NULL:
            raise MemoryError()
        self.arena, self.arena_cap = grown, cap
        return 0

    cdef int _grow_table(self) except -1:
        cdef Py_ssize_t mask = 2 * self.mask + 1, k, i
        cdef _Slot* slots = <_Slot*>calloc(mask + 1, sizeof(_Slot))
        if slots == NULL:
            raise MemoryError()
        for k in range(self.mask + 1):
            if self.slots[k].length:
                i = <Py_ssize_t>(self.slots[k].hash & <uint64_t>mask)
                while slots[i].length:
                    i = (i + 1) & mask
                slots[i] = self.slots[k]
        free(self.slots)
        self.slots, self.mask = slots, mask
        return 0

    def to_dict(self):
        """The counts so far: pretoken UTF-8 bytes -> occurrences."""
        cdef dict out = {}
        cdef Py_ssize_t k
        for k in range(self.mask + 1):
            if self.slots[k].length:
                out[PyBytes_FromStringAndSize(<const char*>self.arena + self.slots[k].off,
                                              self.slots[k].length)] = self.slots[k].count
        return out

# The class tables, visible to the tests that hold them against regex and tiktoken.
CLASS_BITS = {"ws": TOK_WS, "L": TOK_L, "N": TOK_N, "X": TOK_X, "P": TOK_P, "UP": TOK_UP,
              "LO": TOK_LO}


def class_bits(unsigned int cp):
    """The scanner's class bits (CLASS_BITS) of code point ``cp``."""
    if cp > 0x10FFFF:
        raise ValueError(f"{cp:#x} is not a code point")
    return tok_ascii_bits[cp] if cp < 128 else _cp_bits(cp)


def contraction_letter(unsigned int cp):
    """The contraction letter (one of "sdmtlvre") ``cp`` matches under (?i), or ""."""
    if cp > 0x10FFFF or 0xD800 <= cp < 0xE000:
        raise ValueError(f"{cp:#x} is not a code point UTF-8 can hold")
    cdef bytes raw = chr(cp).encode("utf-8")
    cdef Py_ssize_t nxt
    cdef unsigned char letter = _fold(<const unsigned char*>raw, 0, len(raw), &nxt)
    return chr(letter) if letter else ""
