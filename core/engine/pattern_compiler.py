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
from dataclasses import dataclass

from tokend.core.engine.pattern_classes import (
    Partition,
    class_keys,
    partition,
    release_probe_text,
)
from tokend.core.engine.pattern_syntax import (
    INF,
    OP_CLS,
    OP_JMP,
    OP_MATCH,
    OP_NLA,
    OP_PLA,
    OP_RUNG,
    OP_RUNP,
    OP_SPLIT,
    Alt,
    Anchor,
    Cls,
    Look,
    Node,
    Rep,
    Seq,
    Unsupported,
    parse,
)

MAX_INSTRUCTIONS = 256  # GS_MAX_INST in _general.pxi (the backtrack stack is this deep)
MAX_STAGES = 8  # GS_MAX_STAGES


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
        class_keys(tree, keys)
    try:
        part = partition(keys)
    finally:
        release_probe_text()
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
