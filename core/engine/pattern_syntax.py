"""The subset of ``regex`` syntax the pattern compiler takes, as a syntax tree.

:func:`parse` turns a pretokenization pattern into nested :class:`Cls` / :class:`Rep` /
:class:`Seq` / :class:`Alt` / :class:`Look` / :class:`Anchor` nodes, or raises
:class:`Unsupported` naming the construct outside the subset (``pattern_compiler`` documents the
subset and compiles the tree for the general scanner).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import regex

# Instruction opcodes (the OP_* enum of _general.pxi); an Anchor's kind is its opcode.
OP_CLS, OP_RUNG, OP_RUNP, OP_SPLIT, OP_JMP, OP_NLA, OP_PLA = 0, 1, 2, 3, 4, 5, 6
OP_DOLLAR, OP_EOS, OP_EOL, OP_MATCH = 7, 8, 9, 10
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
