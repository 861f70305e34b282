# The general pretokenizer: one table-driven scanner for any pattern that
# tokend.core.engine.pattern_compiler compiles (Llama 3's, Qwen's, DeepSeek's Split stages...).
#
# Included textually into _compiled.pyx, after _pretok.pxi (it uses _decode and _prev). A
# program is a list of instructions for a backtracking matcher that tries what ``regex`` tries,
# in the same order: SPLIT pushes the second branch and runs the first (the leftmost
# alternative wins), a greedy run (RUNG) takes the longest run of its class then gives back one
# character at a time, a possessive one (RUNP) never gives back. Programs have no backward
# jumps, so a path runs each instruction at most once and the backtrack stack never holds more
# entries than the program has instructions. Character classes are one table lookup: the code
# point's equivalence class (at most 64, so an instruction's class is a uint64 mask), probed
# from the regex module itself by the compiler. No Python object is touched: runs without GIL.

from libc.stdint cimport int32_t, uint16_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

cdef enum:
    # opcodes (pattern_syntax.OP_*)
    GOP_CLS = 0     # one character of mask
    GOP_RUNG = 1    # lo..hi characters of mask, greedy (hi < 0: unbounded)
    GOP_RUNP = 2    # the same, possessive
    GOP_SPLIT = 3   # try x, then y (mask != 0: only try x if the next character is in mask)
    GOP_JMP = 4     # go to x
    GOP_NLA = 5     # (?!mask): the end, or a character outside mask
    GOP_PLA = 6     # (?=mask)
    GOP_DOLLAR = 7  # $: the end, or a final "\n"
    GOP_EOS = 8     # \Z: the end
    GOP_EOL = 9     # (?m:$): the end, or a "\n"
    GOP_MATCH = 10
    GS_MAX_INST = 256   # pattern_compiler.MAX_INSTRUCTIONS
    GS_MAX_STAGES = 8   # pattern_compiler.MAX_STAGES
    PAT_GENERAL = 100   # CompiledEngine.kind of a compiled pattern


cdef struct GInst:
    uint64_t mask
    int32_t op
    int32_t x
    int32_t y
    int32_t lo
    int32_t hi


cdef struct GProg:
    GInst* code
    int32_t n
    uint64_t first  # eq classes a match can start with (the gap search skips the others)


cdef struct GSet:
    GProg progs[GS_MAX_STAGES]
    int32_t nstages
    bint split_mode  # HF Split(Isolated): the gaps between matches are pieces too
    unsigned char ascii[128]
    const uint16_t* stage1  # cp >> 8 -> block
    const unsigned char* stage2  # block << 8 | cp & 255 -> eq class


cdef struct GState:
    # where the current piece of each stage ends (pieces nest: stage k+1 cuts stage k's)
    Py_ssize_t end[GS_MAX_STAGES]


cdef struct GBack:
    Py_ssize_t pos  # SPLIT: where to resume; RUNG: where the run ends now
    Py_ssize_t floor  # RUNG: the shortest run allowed (-1 for a SPLIT entry)
    int32_t pc


cdef inline unsigned int _geq(const GSet* g, const unsigned char* s, Py_ssize_t i,
                              Py_ssize_t* nxt) noexcept nogil:
    """Eq class of the character at byte i (< n); nxt = its end."""
    cdef unsigned char b = s[i]
    cdef unsigned int cp
    if b < 0x80:
        nxt[0] = i + 1
        return g.ascii[b]
    cp = _decode(s, i, nxt)
    return g.stage2[(<Py_ssize_t>g.stage1[cp >> 8] << 8) | (cp & 0xFF)]


cdef inline bint _gin(const GSet* g, uint64_t mask, const unsigned char* s, Py_ssize_t i,
                      Py_ssize_t n, Py_ssize_t* nxt) noexcept nogil:
    if i >= n:
        return False
    return (mask >> _geq(g, s, i, nxt)) & 1


cdef Py_ssize_t gs_match(const GSet* g, const GProg* prog, const unsigned char* s,
                         Py_ssize_t pos, Py_ssize_t n) noexcept nogil:
    """End of the match of ``prog`` at byte ``pos`` of s[0:n], as regex finds it, or -1."""
    cdef GBack stack[GS_MAX_INST]
    cdef int sp = 0, pc = 0
    cdef const GInst* ins
    cdef Py_ssize_t nxt, floor, count
    cdef bint ok
    while True:
        ins = &prog.code[pc]
        op = ins.op
        ok = True
        if op == GOP_CLS:
            ok = _gin(g, ins.mask, s, pos, n, &nxt)
            if ok:
                pos = nxt
                pc += 1
        elif op == GOP_RUNG or op == GOP_RUNP:
            count = 0
            floor = pos if ins.lo == 0 else -1
            while count != ins.hi and _gin(g, ins.mask, s, pos, n, &nxt):
                pos = nxt
                count += 1
                if count == ins.lo:
                    floor = pos
            if count < ins.lo:
                ok = False
            else:
                if op == GOP_RUNG and pos > floor:
                    stack[sp].pos = pos
                    stack[sp].floor = floor
                    stack[sp].pc = pc + 1
                    sp += 1
                pc += 1
        elif op == GOP_SPLIT:
            if ins.mask and not _gin(g, ins.mask, s, pos, n, &nxt):
                pc = ins.y  # x cannot start here
            else:
                stack[sp].pos = pos
                stack[sp].floor = -1
                stack[sp].pc = ins.y
                sp += 1
                pc = ins.x
        elif op == GOP_JMP:
            pc = ins.x
        elif op == GOP_NLA:
            ok = not _gin(g, ins.mask, s, pos, n, &nxt)
            pc += 1
        elif op == GOP_PLA:
            ok = _gin(g, ins.mask, s, pos, n, &nxt)
            pc += 1
        elif op == GOP_DOLLAR:
            ok = pos == n or (pos == n - 1 and s[pos] == 0x0A)
            pc += 1
        elif op == GOP_EOS:
            ok = pos == n
            pc += 1
        elif op == GOP_EOL:
            ok = pos == n or s[pos] == 0x0A
            pc += 1
        else:  # GOP_MATCH
            return pos
        if ok:
            continue
        # backtrack: the most recent choice that has another option
        while True:
            if sp == 0:
                return -1
            if stack[sp - 1].floor < 0:
                sp -= 1
                pos = stack[sp].pos
                pc = stack[sp].pc
                break
            # a greedy run gives back one character
            pos = _prev(s, stack[sp - 1].pos)
            pc = stack[sp - 1].pc
            if pos <= stack[sp - 1].floor:
                sp -= 1  # its last option: the entry is spent
            else:
                stack[sp - 1].pos = pos
            break


cdef inline Py_ssize_t _gs_gap_end(const GSet* g, const GProg* prog, const unsigned char* s,
                                   Py_ssize_t pos, Py_ssize_t n) noexcept nogil:
    """Start of the next match after ``pos`` (where no match starts), or n."""
    cdef Py_ssize_t nxt
    _geq(g, s, pos, &pos)
    while pos < n:
        if (prog.first >> _geq(g, s, pos, &nxt)) & 1 and gs_match(g, prog, s, pos, n) > pos:
            return pos
        pos = nxt
    return n


cdef Py_ssize_t gs_next(const GSet* g, GState* st, const unsigned char* s, Py_ssize_t pos,
                        Py_ssize_t n) noexcept nogil:
    """End of the piece that starts at byte ``pos`` of s[0:n] (pos 0 starts a new text).

    One findall stage: the match at pos (the compiler checked one always exists). Split
    stages: stage k cuts each piece of stage k - 1 into its matches and the gaps between them;
    a stage's piece is only recomputed once the pieces inside it are used up.
    """
    cdef Py_ssize_t bound = n, m
    cdef int k
    if not g.split_mode:
        m = gs_match(g, &g.progs[0], s, pos, n)
        if m > pos:
            return m
        _geq(g, s, pos, &m)  # unreachable for a total pattern; never loop forever
        return m
    if pos == 0:
        for k in range(g.nstages):
            st.end[k] = 0
    for k in range(g.nstages):
        if st.end[k] <= pos:
            m = gs_match(g, &g.progs[k], s, pos, bound)
            st.end[k] = m if m > pos else _gs_gap_end(g, &g.progs[k], s, pos, bound)
        bound = st.end[k]
    return bound


cdef class GeneralScanner:
    """The C tables of a ``pattern_compiler.CompiledPatterns`` (keeps them alive)."""

    cdef GSet gset
    cdef bytes _stage1, _stage2
    cdef readonly bint chunkable

    def __cinit__(self, programs, bint split_mode, bytes stage1, bytes stage2, bint chunkable):
        cdef int k, j
        cdef GInst* code
        if not 1 <= len(programs) <= GS_MAX_STAGES:
            raise ValueError(f"{len(programs)} stages (1 to {GS_MAX_STAGES})")
        if len(stage1) != 0x1100 * 2 or len(stage2) % 256:
            raise ValueError("malformed class tables")
        self._stage1 = stage1
        self._stage2 = stage2
        self.chunkable = chunkable
        self.gset.nstages = 0
        self.gset.split_mode = split_mode
        self.gset.stage1 = <const uint16_t*><const char*>self._stage1
        self.gset.stage2 = <const unsigned char*><const char*>self._stage2
        for k in range(len(programs)):
            insts, first = programs[k]
            if not 1 <= len(insts) <= GS_MAX_INST:
                raise ValueError(f"{len(insts)} instructions (1 to {GS_MAX_INST})")
            code = <GInst*>malloc(len(insts) * sizeof(GInst))
            if code == NULL:
                raise MemoryError()
            self.gset.progs[k].code = code
            self.gset.progs[k].n = len(insts)
            self.gset.progs[k].first = first
            self.gset.nstages += 1
            for j in range(len(insts)):
                op, mask, x, y, lo, hi = insts[j]
                if not 0 <= op <= GOP_MATCH or not (0 <= x < len(insts) and 0 <= y < len(insts)):
                    raise ValueError(f"malformed instruction {insts[j]!r}")
                code[j].op = op
                code[j].mask = mask
                code[j].x = x
                code[j].y = y
                code[j].lo = lo
                code[j].hi = hi
            if insts[len(insts) - 1][0] != GOP_MATCH:
                raise ValueError("a program must end in MATCH")
        for k in range(128):
            self.gset.ascii[k] = self.gset.stage2[(<Py_ssize_t>self.gset.stage1[0] << 8) | k]

    def __dealloc__(self):
        cdef int k
        for k in range(self.gset.nstages):
            free(self.gset.progs[k].code)

    cdef const GSet* ptr(self):
        return &self.gset

    def pieces(self, str text):
        """The pieces of ``text`` (for tests: the same cut the engine makes, uncut by blocks)."""
        cdef Py_ssize_t n, pos = 0, end, cpos = 0, cend, i
        cdef const unsigned char* s = <const unsigned char*>PyUnicode_AsUTF8AndSize(text, &n)
        cdef GState st
        cdef list out = []
        while pos < n:
            end = gs_next(&self.gset, &st, s, pos, n)
            i = pos
            cend = cpos
            while i < end:  # characters, from UTF-8 lead bytes
                if (s[i] & 0xC0) != 0x80:
                    cend += 1
                i += 1
            out.append(text[cpos:cend])
            cpos = cend
            pos = end
        return out

    def match_end(self, str text, Py_ssize_t pos=0, int stage=0):
        """Byte end of stage ``stage``'s match at byte ``pos`` of ``text``'s UTF-8, or -1."""
        cdef Py_ssize_t n
        cdef const unsigned char* s = <const unsigned char*>PyUnicode_AsUTF8AndSize(text, &n)
        if not 0 <= stage < self.gset.nstages or not 0 <= pos <= n:
            raise IndexError("no such stage or position")
        return gs_match(&self.gset, &self.gset.progs[stage], s, pos, n)
