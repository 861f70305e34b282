"""Compile a pretokenization pattern to the general scanner's tables (``_general.pxi``).

One mechanism for every pattern the served families use (Llama 3's, Qwen's, DeepSeek's
``Split`` sequence, GPT-2's, HF ByteLevel's...): the pattern is parsed (the subset of ``regex``
syntax below), every character class in it is *probed from the regex module itself* over all
of Unicode (so the scanner sees exactly the Unicode data the reference sees), code points are
grouped into at most 64 equivalence classes, and the pattern becomes a short program of
instructions for a backtracking matcher that follows ``regex``'s own order: the leftmost
alternative that matches, greedy repeats giving back one character at a time.

Supported: literals and escapes, ``[...]`` classes, ``\\p{..}`` / ``\\P{..}``, ``\\s \\S \\d \\D
\\w \\W``, ``.``; groups ``(...)``, ``(?:...)``, ``(?P<n>...)``, ``(?i:...)``; alternation;
``? * + {m} {m,} {m,n}`` greedy or possessive (``+`` suffix) on a class, greedy bounded on a
group; ``(?>X{m,n})`` on a class; one-class look-aheads ``(?!X)`` ``(?=X)``; ``$``, ``\\Z``,
``(?m:$)``. Anything else raises :class:`Unsupported` with the reason, and the caller falls back
to the ``regex`` module (never a wrong id).

The safe-point proof of ``tokend.core.engine.pretokenize`` is *derived* here from the pattern's
structure (:func:`chunk_safe`): every top-level alternative is either whitespace-only (its
classes hold only ``str.isspace`` characters; look-aheads and ``$`` allowed) or has no
look-around and can hold a space only as its first character (a first item of width 1).
Then no match starting before a safe point reaches it or looks at it, which is steps 1-3 of
that proof; a pattern that fails the check is scanned over the whole segment, uncut.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from typing import Union

import regex

# Instruction opcodes (the OP_* enum of _general.pxi).
OP_CLS, OP_RUNG, OP_RUNP, OP_SPLIT, OP_JMP, OP_NLA, OP_PLA = 0, 1, 2, 3, 4, 5, 6
OP_DOLLAR, OP_EOS, OP_EOL, OP_MATCH = 7, 8, 9, 10
MAX_CLASSES = 64  # equivalence classes: one bit each in a uint64 mask
MAX_INSTRUCTIONS = 256  # GS_MAX_INST in _general.pxi (the backtrack stack is this deep)
MAX_STAGES = 8  # GS_MAX_STAGES
INF = -1  # an unbounded repeat's maximum


class Unsupported(ValueError):
    """The pattern uses a construct outside the compiled subset (the message says which)."""


# -- syntax tree ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Cls:
    key: str  # a regex atom matching exactly one character, e.g. r"\p{L}", "(?i:s)"


@dataclass(frozen=True)
class Rep:
    node: Node
    lo: int
    hi: int  # INF: unbounded
    possessive: bool


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Look:
    negative: bool
    cls: Cls


@dataclass(frozen=True)
class Anchor:
    kind: int  # OP_DOLLAR, OP_EOS or OP_EOL


Node = Union[Cls, Rep, Seq, Alt, Look, Anchor]  # noqa: UP007 - dataclass forward references

_SIMPLE_ESCAPES = set("sSdDwW")
_LITERAL_ESCAPES = set("afnrtv\\.^$|?*+()[]{}-/ '\"#&~<>=!:,@%`;_")


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def fail(self, what: str) -> Unsupported:
        return Unsupported(f"{what} at offset {self.i} of the pattern")

    def parse(self) -> Node:
        node = self.alt(False)
        if self.i != len(self.p):
            raise self.fail("unbalanced ')'")
        return node

    def alt(self, ci: bool) -> Node:
        options = [self.seq(ci)]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            options.append(self.seq(ci))
        if len(options) == 1:
            return options[0]
        if all(isinstance(o, Cls) for o in options):
            # one character from any of them: one class (tiktoken's narrowed [^...]|[...])
            return Cls("(?:" + "|".join(o.key for o in options) + ")")  # type: ignore[union-attr]
        return Alt(tuple(options))

    def seq(self, ci: bool) -> Node:
        items: list[Node] = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            atom = self.atom(ci)
            items.append(self.quantified(atom))
        if len(items) == 2 and isinstance(items[0], Look) and isinstance(items[1], Cls):
            # (?!X)Y: one character of Y that is not an X -- a class too
            look, body = items[0], items[1]
            sign = "!" if look.negative else "="
            return Cls(f"(?:(?{sign}{look.cls.key}){body.key})")
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def quantified(self, atom: Node) -> Node:
        p = self.p
        if self.i >= len(p):
            return atom
        c = p[self.i]
        bounds: tuple[int, int] | None = None
        if c in "?*+":
            bounds = {"?": (0, 1), "*": (0, INF), "+": (1, INF)}[c]
            self.i += 1
        elif c == "{":
            m = regex.match(r"\{(\d*)(,?)(\d*)\}", p[self.i:])
            if m and (m.group(1) or m.group(3)):
                lo = int(m.group(1) or 0)
                hi = (int(m.group(3)) if m.group(3) else INF) if m.group(2) else lo
                bounds = (lo, hi)
                self.i += m.end()
        if bounds is None:
            return atom
        possessive = False
        if self.i < len(p) and p[self.i] == "?":
            raise self.fail("lazy quantifier")
        if self.i < len(p) and p[self.i] == "+":
            possessive = True
            self.i += 1
        if isinstance(atom, (Look, Anchor)):
            raise self.fail("quantified look-around or anchor")
        if self.i < len(p) and p[self.i] in "?*+{":
            raise self.fail("nested quantifier")
        return Rep(atom, bounds[0], bounds[1], possessive)

    def cls(self, text: str, ci: bool) -> Cls:
        return Cls(f"(?i:{text})" if ci else text)

    def atom(self, ci: bool) -> Node:
        p, i = self.p, self.i
        c = p[i]
        if c == "(":
            return self.group(ci)
        if c == "[":
            from tokend.core.formats.oniguruma import _atom_end  # noqa: PLC0415

            end = _atom_end(p, i)
            self.i = end
            return self.cls(p[i:end], ci)
        if c == "\\":
            return self.escape(ci)
        if c == ".":
            self.i += 1
            return Cls(".")
        if c == "$":
            self.i += 1
            return Anchor(OP_DOLLAR)
        if c == "^":
            raise self.fail("'^' anchor")
        if c in "*+?":
            raise self.fail(f"quantifier {c!r} with nothing to repeat")
        self.i += 1
        return self.cls(regex.escape(c), ci)

    def escape(self, ci: bool) -> Node:
        p, i = self.p, self.i
        if i + 1 >= len(p):
            raise self.fail("trailing backslash")
        e = p[i + 1]
        if e in "pP":
            if i + 2 < len(p) and p[i + 2] == "{":
                end = p.find("}", i)
                if end < 0:
                    raise self.fail("unclosed \\p{")
                self.i = end + 1
            else:
                self.i = i + 3
            return self.cls(p[i:self.i], ci)
        if e in _SIMPLE_ESCAPES:
            self.i = i + 2
            return Cls(p[i:i + 2])
        if e == "Z":
            self.i = i + 2
            return Anchor(OP_EOS)
        widths = {"x": 2, "u": 4, "U": 8}
        if e in widths:
            end = i + 2 + widths[e]
            if p[i + 2:i + 3] == "{":
                end = p.find("}", i) + 1
            self.i = end
            return self.cls(p[i:end], ci)
        if e == "N" and p[i + 2:i + 3] == "{":
            self.i = p.find("}", i) + 1
            return self.cls(p[i:self.i], ci)
        if e in _LITERAL_ESCAPES or not e.isalnum():
            self.i = i + 2
            return self.cls(p[i:i + 2], ci)
        raise self.fail(f"escape \\{e}")

    def group(self, ci: bool) -> Node:
        p = self.p
        rest = p[self.i:]
        for prefix, flag_ci in (("(?:", ci), ("(?i:", True), ("(?-i:", False)):
            if rest.startswith(prefix):
                self.i += len(prefix)
                return self.close(self.alt(flag_ci))
        if rest.startswith("(?m:$)"):
            self.i += 6
            return Anchor(OP_EOL)
        if rest.startswith(("(?!", "(?=")):
            negative = rest[2] == "!"
            self.i += 3
            body = self.close(self.alt(ci))
            if not isinstance(body, Cls):
                raise self.fail("look-ahead of more than one character class")
            return Look(negative, body)
        if rest.startswith("(?>"):
            self.i += 3
            body = self.close(self.alt(ci))
            if isinstance(body, Rep) and isinstance(body.node, Cls):
                return Rep(body.node, body.lo, body.hi, True)
            if isinstance(body, Cls):
                return body
            raise self.fail("atomic group over more than a repeated class")
        named = regex.match(r"\(\?P?<[A-Za-z_]\w*>", rest)
        if named:
            self.i += named.end()
            return self.close(self.alt(ci))
        if rest.startswith("(?"):
            raise self.fail(f"group {rest[:4]!r}")
        self.i += 1
        return self.close(self.alt(ci))

    def close(self, node: Node) -> Node:
        if self.i >= len(self.p) or self.p[self.i] != ")":
            raise self.fail("unclosed group")
        self.i += 1
        return node


def parse(pattern: str) -> Node:
    """The syntax tree of ``pattern``; :class:`Unsupported` outside the subset.

    >>> parse(r"a+|\\s")
    Alt(options=(Rep(node=Cls(key='a'), lo=1, hi=-1, possessive=False), Cls(key='\\\\s')))
    """
    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise Unsupported(f"regex cannot compile it ({exc})") from None
    return _Parser(pattern).parse()


# -- character classes ---------------------------------------------------------------------

# Every code point a str can hold in UTF-8 (no surrogates), in order, for probing classes.
_ALL_TEXT: str | None = None


def _all_text() -> str:
    global _ALL_TEXT  # noqa: PLW0603 - built once, ~1.1M characters
    if _ALL_TEXT is None:
        _ALL_TEXT = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))
    return _ALL_TEXT


def _release_all_text() -> None:
    """Drop the probe string (~4 MB) once a compile is done; class_ranges keeps its results."""
    global _ALL_TEXT  # noqa: PLW0603
    _ALL_TEXT = None


def _index_to_cp(i: int) -> int:
    return i if i < 0xD800 else i + 0x800


@functools.lru_cache(maxsize=256)
def class_ranges(key: str) -> tuple[tuple[int, int], ...]:
    """The code-point ranges ``[lo, hi)`` the one-character atom ``key`` matches, by ``regex``."""
    out: list[tuple[int, int]] = []
    for m in regex.finditer(f"(?:{key})+", _all_text()):
        lo, hi = m.span()
        # a run never straddles the surrogate gap: split it where the index jumps
        if lo < 0xD800 < hi:
            out += [(lo, 0xD800), (0xE000, _index_to_cp(hi - 1) + 1)]
        else:
            out.append((_index_to_cp(lo), _index_to_cp(hi - 1) + 1))
    return tuple(out)


# str.isspace (the engine's safe-point test), as code-point ranges [lo, hi).
_ISSPACE = (
    (0x09, 0x0E), (0x1C, 0x21), (0x85, 0x86), (0xA0, 0xA1), (0x1680, 0x1681), (0x2000, 0x200B),
    (0x2028, 0x202A), (0x202F, 0x2030), (0x205F, 0x2060), (0x3000, 0x3001),
)


@dataclass
class Partition:
    """Code points grouped by which classes hold them: ``eq_of(cp)`` and a mask per class."""

    keys: list[str]
    masks: dict[str, int] = field(default_factory=dict)  # class key -> bits of its eq classes
    n_eq: int = 0
    stage1: bytes = b""  # cp >> 8 -> block number (uint16 little-endian)
    stage2: bytes = b""  # block * 256 + (cp & 255) -> eq class
    isspace_mask: int = 0  # eq classes whose code points are all str.isspace
    space_mask: int = 0  # the eq class of U+0020 alone


def partition(keys: list[str]) -> Partition:
    """Group all code points by their membership in ``keys`` (plus str.isspace and U+0020,
    which the safe-point check needs); :class:`Unsupported` past 64 groups. Eq class 0 holds
    the surrogates and nothing else."""
    sets: list[tuple[tuple[int, int], ...]] = [class_ranges(k) for k in keys]
    sets.append(_ISSPACE)
    sets.append(((0x20, 0x21),))
    # subtle: every code point a str can hold, so that eq class 0 is the surrogates alone
    # (never in UTF-8 text) and "every class" below means every real character.
    sets.append(((0, 0xD800), (0xE000, 0x110000)))
    table = bytearray(0x110000)  # cp -> membership signature index (built below)
    # sweep: every boundary of every class; between two, membership is constant
    events: dict[int, list[tuple[int, int]]] = {}
    for bit, ranges in enumerate(sets):
        for lo, hi in ranges:
            events.setdefault(lo, []).append((bit, 1))
            events.setdefault(hi, []).append((bit, -1))
    signature = 0
    sig_ids: dict[int, int] = {0: 0}
    points = sorted(events)
    for k, at in enumerate(points):
        for bit, delta in events[at]:
            signature += delta << bit
        end = points[k + 1] if k + 1 < len(points) else 0x110000
        eq = sig_ids.setdefault(signature, len(sig_ids))
        if eq >= MAX_CLASSES:
            raise Unsupported(f"more than {MAX_CLASSES} distinct character groups")
        if eq:
            table[at:end] = bytes([eq]) * (end - at)
    part = Partition(keys, n_eq=len(sig_ids))
    for bit, key in enumerate(keys):
        part.masks[key] = sum(1 << eq for sig, eq in sig_ids.items() if sig >> bit & 1)
    n = len(keys)
    part.isspace_mask = sum(1 << eq for sig, eq in sig_ids.items() if sig >> n & 1)
    part.space_mask = sum(1 << eq for sig, eq in sig_ids.items() if sig >> (n + 1) & 1)
    blocks: dict[bytes, int] = {}
    stage1 = bytearray()
    for b in range(0x1100):
        block = bytes(table[b << 8:(b + 1) << 8])
        number = blocks.setdefault(block, len(blocks))
        stage1 += number.to_bytes(2, "little")
    part.stage1 = bytes(stage1)
    part.stage2 = b"".join(blocks)
    return part


def _classes(node: Node, out: list[str]) -> None:
    if isinstance(node, Cls):
        if node.key not in out:
            out.append(node.key)
    elif isinstance(node, Rep):
        _classes(node.node, out)
    elif isinstance(node, (Seq, Alt)):
        for child in node.items if isinstance(node, Seq) else node.options:
            _classes(child, out)
    elif isinstance(node, Look):
        _classes(node.cls, out)


# -- analysis ------------------------------------------------------------------------------


def min_width(node: Node) -> int:
    if isinstance(node, Cls):
        return 1
    if isinstance(node, Rep):
        return node.lo * min_width(node.node)
    if isinstance(node, Seq):
        return sum(map(min_width, node.items))
    if isinstance(node, Alt):
        return min(map(min_width, node.options))
    return 0


def _masks_in(node: Node, part: Partition, looks: bool) -> int:
    """Union of the masks of the classes ``node`` consumes with (and look-aheads', if asked)."""
    if isinstance(node, Cls):
        return part.masks[node.key]
    if isinstance(node, Rep):
        return _masks_in(node.node, part, looks)
    if isinstance(node, (Seq, Alt)):
        out = 0
        for child in node.items if isinstance(node, Seq) else node.options:
            out |= _masks_in(child, part, looks)
        return out
    if isinstance(node, Look) and looks:
        return part.masks[node.cls.key]
    return 0


def _has_look(node: Node) -> bool:
    if isinstance(node, (Look, Anchor)):
        return True
    if isinstance(node, Rep):
        return _has_look(node.node)
    if isinstance(node, (Seq, Alt)):
        return any(map(_has_look, node.items if isinstance(node, Seq) else node.options))
    return False


def _options(node: Node) -> tuple[Node, ...]:
    return node.options if isinstance(node, Alt) else (node,)


def _items(node: Node) -> tuple[Node, ...]:
    return node.items if isinstance(node, Seq) else (node,)


def _max_width_one(node: Node) -> bool:
    return isinstance(node, Cls) or (
        isinstance(node, Rep) and isinstance(node.node, Cls) and node.hi == 1
    )


def chunk_safe(tree: Node, part: Partition) -> str | None:
    """None when the safe-point proof holds for the pattern, else why not (see module)."""
    for k, option in enumerate(_options(tree)):
        consumed = _masks_in(option, part, looks=False)
        if consumed & ~part.isspace_mask == 0:
            continue  # whitespace only
        if _has_look(option):
            return f"alternative {k + 1} looks ahead or anchors but is not whitespace-only"
        items = _items(option)
        first, rest = items[0], items[1:]
        if not _max_width_one(first) and _masks_in(first, part, False) & part.space_mask:
            return f"alternative {k + 1} can hold a space past its first character"
        for item in rest:
            if _masks_in(item, part, False) & part.space_mask:
                return f"alternative {k + 1} can hold a space past its first character"
    return None


def covers_spaces(tree: Node, part: Partition) -> bool:
    """Whether some top-level alternative is one space-holding class repeated from once,
    so a space always starts a match (a Split stage then leaves no gap across a safe point)."""
    for option in _options(tree):
        node = option.node if isinstance(option, Rep) and option.lo == 1 else option
        if isinstance(node, Cls) and part.masks[node.key] & part.space_mask:
            return True
    return False


def guaranteed(tree: Node, part: Partition) -> int:
    """The eq classes at which some alternative surely matches (its first mandatory item is
    a class repeated from once, after greedy optional items, before optional ones only)."""
    out = 0
    for option in _options(tree):
        items = _items(option)
        taken = 0  # possessive optional prefixes: they keep what they take
        k = 0
        while k < len(items):
            item = items[k]
            if not (isinstance(item, Rep) and item.lo == 0 and isinstance(item.node, Cls)):
                break
            if item.possessive:
                taken |= part.masks[item.node.key]
            k += 1
        if k == len(items):
            continue
        head = items[k]
        mask = 0
        if isinstance(head, Cls):
            mask = part.masks[head.key]
        elif isinstance(head, Rep) and head.lo == 1 and isinstance(head.node, Cls):
            mask = part.masks[head.node.key]
        if mask and all(min_width(i) == 0 and not _has_look(i) for i in items[k + 1:]):
            out |= mask & ~taken
    return out


def _first(items: tuple[Node, ...], part: Partition) -> int:
    """Eq classes the first character consumed by ``items`` can be in (all if unsure)."""
    full = (1 << part.n_eq) - 1
    out = 0
    for item in items:
        if isinstance(item, Cls):
            return out | part.masks[item.key]
        if isinstance(item, Rep):
            out |= _first(_items(item.node), part) if not isinstance(item.node, Alt) else full
            if item.lo > 0:
                return out
        elif isinstance(item, (Alt, Seq)):
            return full
        # look-aheads and anchors consume nothing: look past them
    return full


def first_mask(tree: Node, part: Partition) -> int:
    """Eq classes a match can start with (all of them if unsure): the gap search skips others."""
    out = 0
    for option in _options(tree):
        out |= _first(_items(option), part)
    return out & ((1 << part.n_eq) - 1)


# -- code generation -----------------------------------------------------------------------

Inst = tuple[int, int, int, int, int, int]  # op, mask, x, y, lo, hi


def _emit(node: Node, part: Partition, code: list[list[int]]) -> None:
    if isinstance(node, Cls):
        code.append([OP_CLS, part.masks[node.key], 0, 0, 1, 1])
    elif isinstance(node, Look):
        code.append([OP_NLA if node.negative else OP_PLA, part.masks[node.cls.key], 0, 0, 0, 0])
    elif isinstance(node, Anchor):
        code.append([node.kind, 0, 0, 0, 0, 0])
    elif isinstance(node, Seq):
        for item in node.items:
            _emit(item, part, code)
    elif isinstance(node, Alt):
        jumps = []
        full = (1 << part.n_eq) - 1
        for k, option in enumerate(node.options):
            last = k == len(node.options) - 1
            split_at = len(code)
            if not last:
                # subtle: the SPLIT skips an alternative whose first character cannot be the
                # one at hand without pushing it (Llama 3's seven contractions cost one test
                # instead of seven failed tries per word); every alternative consumes a first
                # character (min width >= 1, checked), so the filter never drops a match.
                first = _first(_items(option), part) & full
                code.append([OP_SPLIT, 0 if first == full else first, 0, 0, 0, 0])
            _emit(option, part, code)
            if not last:
                jumps.append(len(code))
                code.append([OP_JMP, 0, 0, 0, 0, 0])
                code[split_at][2] = split_at + 1
                code[split_at][3] = len(code)
        for at in jumps:
            code[at][2] = len(code)
    elif isinstance(node, Rep):
        if isinstance(node.node, Cls):
            op = OP_RUNP if node.possessive else OP_RUNG
            code.append([op, part.masks[node.node.key], 0, 0, node.lo, node.hi])
            return
        if node.possessive:
            raise Unsupported("possessive repeat of a group")
        if node.hi == INF:
            raise Unsupported("unbounded repeat of a group")
        for _ in range(node.lo):
            _emit(node.node, part, code)
        # greedy optional copies: (X(X(X)?)?)?
        splits = []
        for _ in range(node.hi - node.lo):
            splits.append(len(code))
            code.append([OP_SPLIT, 0, 0, 0, 0, 0])
            _emit(node.node, part, code)
        for at in splits:
            code[at][2] = at + 1
            code[at][3] = len(code)
    else:  # pragma: no cover - the parser makes no other node
        raise Unsupported(f"node {node!r}")


@dataclass(frozen=True)
class Program:
    """One compiled pattern: its instructions and what the engine needs to know about it."""

    pattern: str
    code: tuple[Inst, ...]
    first: int  # eq classes a match can start with
    total: bool  # some alternative matches at every character (findall drops nothing)
    chunk_reason: str | None  # None: the safe-point proof holds
    covers_spaces: bool


@dataclass(frozen=True)
class CompiledPatterns:
    """Patterns applied in stages (a ``Sequence`` of ``Split``s; one stage for tiktoken's
    ``findall``), over one shared partition of code points."""

    programs: tuple[Program, ...]
    split_mode: bool  # gaps between matches are pieces (HF Split, Isolated); else dropped
    n_eq: int
    stage1: bytes
    stage2: bytes

    @property
    def chunkable(self) -> bool:
        """Whether the engine may cut text at safe points (see :func:`chunk_safe`)."""
        return self.chunk_reason is None

    @property
    def chunk_reason(self) -> str | None:
        for k, prog in enumerate(self.programs):
            if prog.chunk_reason is not None:
                return f"stage {k + 1}: {prog.chunk_reason}" if self.split_mode else \
                    prog.chunk_reason
        if self.split_mode and not self.programs[-1].covers_spaces:
            return "the last stage may leave a space unmatched (a gap could cross a safe point)"
        return None

    def as_tuple(self) -> tuple[object, ...]:
        """What ``_compiled.GeneralScanner`` is built from."""
        return (
            [(list(p.code), p.first) for p in self.programs],
            self.split_mode,
            self.stage1,
            self.stage2,
        )


def compile_patterns(patterns: list[str], *, split_mode: bool) -> CompiledPatterns:
    """Compile ``patterns`` (regex-module syntax) for the general scanner.

    ``split_mode`` False: tiktoken's ``findall`` (one pattern, which must match at every
    character, since ``findall`` drops what it skips); True: HF ``Split(Isolated)`` stages,
    matches and the gaps between them are pieces. Raises :class:`Unsupported` with the reason.
    """
    if not patterns or len(patterns) > MAX_STAGES:
        raise Unsupported(f"{len(patterns)} stages (the scanner runs 1 to {MAX_STAGES})")
    if len(patterns) > 1 and not split_mode:
        raise Unsupported("several findall patterns")
    trees = [parse(p) for p in patterns]
    for p, tree in zip(patterns, trees, strict=True):
        if min_width(tree) == 0:
            raise Unsupported(f"pattern {p!r:.60} can match the empty string")
    keys: list[str] = []
    for tree in trees:
        _classes(tree, keys)
    try:
        part = partition(keys)
    finally:
        _release_all_text()
    full = (1 << part.n_eq) - 2  # eq class 0: surrogates
    programs = []
    for p, tree in zip(patterns, trees, strict=True):
        code: list[list[int]] = []
        _emit(tree, part, code)
        code.append([OP_MATCH, 0, 0, 0, 0, 0])
        if len(code) > MAX_INSTRUCTIONS:
            raise Unsupported(f"{len(code)} instructions (the scanner runs {MAX_INSTRUCTIONS})")
        total = guaranteed(tree, part) == full
        if not split_mode and not total:
            raise Unsupported(
                "the pattern may match nothing at some character, which findall would skip"
            )
        programs.append(
            Program(p, tuple(tuple(i) for i in code), first_mask(tree, part), total,  # type: ignore[misc]
                    chunk_safe(tree, part), covers_spaces(tree, part))
        )
    return CompiledPatterns(tuple(programs), split_mode, part.n_eq, part.stage1, part.stage2)


_log = logging.getLogger("tokend.engine")


@functools.lru_cache(maxsize=64)
def findall_scanner(pat_str: str) -> tuple[CompiledPatterns | None, str]:
    """``(compiled, "")`` for a tiktoken-style pattern the compiler takes, else ``(None,
    reason)`` -- logged once per pattern; the engine then runs the ``regex`` module."""
    try:
        return compile_patterns([pat_str], split_mode=False), ""
    except Unsupported as exc:
        _log.warning("pattern %r runs on the regex module, not compiled: %s", pat_str[:80], exc)
        return None, str(exc)
