"""The regex dialect of tokenizer.json: tiktoken patterns <-> Oniguruma (what HF runs)."""

from __future__ import annotations

import re

from tokend.core.errors import InvalidInput
from tokend.core.patterns import NAMED_PATTERNS

# -- regex dialect ----------------------------------------------------------------------
#
# tiktoken patterns are written for the ``regex`` module; HF runs them with Oniguruma (Ruby
# syntax). Where the two read the same text differently, the pattern is rewritten:
#
#   regex module          Oniguruma                 why
#   X{n,m}+ (possessive)  (?>X{n,m})                Ruby reads X{n,m}+ as (X{n,m})+
#   $  (end, or before    \Z                        Ruby's $ is end of *line*
#       a final newline)
#   ^  (start of string)  \A                        Ruby's ^ is start of *line*
#   \Z (end of string)    \z
#
# ``?+``, ``*+``, ``++``, lazy quantifiers, ``\p{..}`` classes, ``(?i:..)`` and lookarounds
# mean the same in both and pass through unchanged.

_BOUNDED = re.compile(r"\{\d+(?:,\d*)?\}")
_GROUP_PREFIX = re.compile(r"\?(?:P?<[A-Za-z_]\w*>|<=|<!|[:>=!]|[a-zA-Z-]*[:)])")
_TO_ONIG = {"$": r"\Z", "^": r"\A", r"\Z": r"\z"}
_FROM_ONIG = {"$": "(?m:$)", "^": "(?m:^)", r"\Z": "$", r"\z": r"\Z"}


def _translate(pat: str, *, to_onig: bool) -> str:
    """Rewrite anchors and bounded possessive quantifiers, recursing into groups."""
    anchors = _TO_ONIG if to_onig else _FROM_ONIG
    out: list[str] = []  # one entry per atom, so a quantifier can wrap the previous atom
    i = 0
    while i < len(pat):
        bounded = _BOUNDED.match(pat, i)
        if bounded and out and bounded.end() < len(pat) and pat[bounded.end()] == "+":
            atom = out.pop()
            quantifier = bounded.group()
            # subtle: the same text means "possessive" to regex and "repeat" to Oniguruma.
            if to_onig:
                out.append(f"(?>{atom}{quantifier})")
            else:
                out.append(f"(?:{atom}{quantifier})+")
            i = bounded.end() + 1
            continue
        end = _atom_end(pat, i)
        atom = pat[i:end]
        if atom in anchors:
            out.append(anchors[atom])
        elif atom.startswith("(") and atom.endswith(")"):
            prefix = _GROUP_PREFIX.match(atom, 1)
            head = 1 + (len(prefix.group()) if prefix else 0)
            flags = prefix.group()[1:-1] if prefix and prefix.group()[-1] in ":)" else ""
            if flags and not flags.startswith(("<", "P")) and ("m" in flags or "s" in flags):
                # Ruby's (?m) is Python's (?s); Python's (?m) has no Ruby flag at all.
                if to_onig:
                    raise InvalidInput(
                        f"pattern flag group {atom[:head]!r} (multiline/dotall) has no exact "
                        "Oniguruma equivalent; rewrite the pattern without it for HF export"
                    )
                atom = "(" + atom[1:head].replace("m", "s") + atom[head:]
            if to_onig and atom.startswith("(?P<"):
                atom = "(?<" + atom[4:]  # Oniguruma spells named groups without the P
                head -= 1
            if prefix and prefix.group().endswith(")"):
                out.append(atom)  # a global flag group such as (?i): no body
            else:
                body = _translate(atom[head:-1], to_onig=to_onig)
                out.append(f"{atom[:head]}{body})")
        else:
            out.append(atom)
        i = end
    return "".join(out)


def to_oniguruma(pat_str: str) -> str:
    r"""Rewrite a ``regex``-module pattern so Oniguruma (HF's engine) reads it the same way.

    >>> to_oniguruma(r"\p{N}{1,3}+|\s+$")
    '(?>\\p{N}{1,3})|\\s+\\Z'
    """
    return _translate(pat_str, to_onig=True)


def from_oniguruma(regex_text: str) -> str:
    """The ``regex``-module equivalent of a pattern read from a tokenizer.json.

    A pattern that :func:`to_oniguruma` made from a built-in maps back to that built-in.
    """
    for named in NAMED_PATTERNS.values():
        if regex_text == to_oniguruma(named):
            return named
    return _translate(regex_text, to_onig=False)


def _atom_end(pat: str, i: int) -> int:
    """End index of the regex atom starting at ``i`` (escape, class, group or one char)."""
    ch = pat[i]
    if ch == "\\":
        if i + 2 < len(pat) and pat[i + 1] in "pPxN" and pat[i + 2] == "{":
            close = pat.find("}", i)
            return len(pat) if close < 0 else close + 1
        return min(i + 2, len(pat))
    if ch == "[":
        j = i + 1
        if j < len(pat) and pat[j] == "^":
            j += 1
        if j < len(pat) and pat[j] == "]":
            j += 1
        depth = 1
        while j < len(pat) and depth:
            if pat[j] == "\\":
                j += 2
                continue
            if pat[j] == "[":
                depth += 1
            elif pat[j] == "]":
                depth -= 1
            j += 1
        return min(j, len(pat))
    if ch == "(":
        depth = 0
        j = i
        while j < len(pat):
            if pat[j] == "\\":
                j += 2
                continue
            if pat[j] == "[":
                j = _atom_end(pat, j)
                continue
            if pat[j] == "(":
                depth += 1
            elif pat[j] == ")":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return len(pat)
    return i + 1
