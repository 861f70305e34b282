"""Pretokenization: the regex split, and the proof that lets the encoder skip it.

The encoder cuts text at *safe points* -- a single space whose left and right neighbours are
both non-whitespace -- encodes each chunk on its own and caches the result per chunk. This
gives exactly the ids of running the regex over the whole text, for the patterns listed in
:data:`CHUNKABLE_PATTERNS`, because of the following argument.

Let the space be at index ``i``, with ``text[i-1]`` and ``text[i+1]`` not matching ``\\s``.

1. *No match starting before i contains position i.* Every alternative of these patterns is
   one of: a contraction (``'s``, ``'ll``... no space inside); "one optional leading
   character, then letters / digits / non-space punctuation" (`` ?\\p{L}+``,
   ``[^\\r\\n\\p{L}\\p{N}]?\\p{L}+``, `` ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*``...), where the only
   character that can be a space is the first one; or whitespace only (``\\s+(?!\\S)``,
   ``\\s*[\\r\\n]``, ``\\s++$``, ``\\s+``). A match starting before ``i`` that reached ``i``
   would hold the space at a non-first position -- impossible for the first two kinds -- or,
   for the whitespace kinds, would also hold ``text[i-1]``, which is not whitespace.
2. *No match starting before i looks at position i.* The only look-arounds are ``(?!\\S)`` and
   ``$``; both are evaluated right after a run of whitespace, which never ends at ``i`` because
   ``text[i-1]`` is not whitespace. (Were ``(?!\\S)`` evaluated at ``i`` it would still agree:
   neither a space nor the end of text is ``\\S``.) Possessive quantifiers and backtracking
   only ever consume characters, so by (1) they too never see position ``i``.
3. *Scanning restarts exactly at i.* Matches are found left to right; by (1) the next match
   after those ending at or before ``i`` starts at ``i`` or later, and there are no
   look-behinds or ``^``/``\\b`` anchors, so scanning from ``i`` in the full text is scanning
   the suffix from its start.
4. The same argument at the *next* safe point bounds the chunk on the right, so the matches
   of a chunk do not depend on anything outside it. (For ``\\s++$`` at the end of a chunk:
   it would need whitespace just before the cut, which a safe point excludes.)

Python's ``str.isspace`` is a superset of ``\\s`` in these patterns (it adds U+001C..U+001F),
so deciding safe points with it is conservative: it can only find fewer of them.
Any other pattern falls back to the plain regex over the whole text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import regex

from tokend.core.patterns import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN

# tiktoken's r50k_base / p50k_base pattern: the GPT-2 pattern with possessive quantifiers.
R50K_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)

# Patterns for which the safe-point argument above has been checked alternative by alternative.
CHUNKABLE_PATTERNS: frozenset[str] = frozenset(
    {GPT2_PATTERN, R50K_PATTERN, CL100K_PATTERN, O200K_PATTERN}
)


# The same patterns restricted to ASCII input, for the stdlib ``re`` (about 2.5x faster than
# ``regex`` with Unicode property classes). On ASCII text \p{L} is [A-Za-z], \p{N} is [0-9],
# \p{Lu}/\p{Ll} are [A-Z]/[a-z], \p{Lt}, \p{Lm}, \p{Lo}, \p{M} are empty and \s is the six
# ASCII White_Space characters (written out: ``re``'s \s would add U+001C..U+001F). ``$``
# becomes ``\Z``: a possessive ``\s++`` has already eaten any final newline, so they agree.
_WS = r"\t\n\x0b\x0c\r "
_NOT_WS = rf"[^{_WS}]"
_CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
ASCII_PATTERNS: dict[str, str] = {
    O200K_PATTERN: "|".join(
        [
            rf"[^\r\nA-Za-z0-9]?[A-Z]*[a-z]+{_CONTRACTION}",
            rf"[^\r\nA-Za-z0-9]?[A-Z]+[a-z]*{_CONTRACTION}",
            r"[0-9]{1,3}",
            rf" ?[^{_WS}A-Za-z0-9]+[\r\n/]*",
            rf"[{_WS}]*[\r\n]+",
            rf"[{_WS}]+(?!{_NOT_WS})",
            rf"[{_WS}]+",
        ]
    ),
    CL100K_PATTERN: (
        r"'(?i:[sdmt]|ll|ve|re)|[^\r\nA-Za-z0-9]?+[A-Za-z]++|[0-9]{1,3}+"
        rf"| ?[^{_WS}A-Za-z0-9]++[\r\n]*+|[{_WS}]++\Z|[{_WS}]*[\r\n]|[{_WS}]+(?!{_NOT_WS})|[{_WS}]"
    ),
    R50K_PATTERN: (
        r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]++| ?[0-9]++"
        rf"| ?[^{_WS}A-Za-z0-9]++|[{_WS}]++\Z|[{_WS}]+(?!{_NOT_WS})|[{_WS}]"
    ),
    GPT2_PATTERN: (
        r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+"
        rf"| ?[^{_WS}A-Za-z0-9]+|[{_WS}]+(?!{_NOT_WS})|[{_WS}]+"
    ),
}


def compile_ascii_pattern(pat_str: str) -> Callable[[str], list[str]] | None:
    """``findall`` of the ASCII-only equivalent of ``pat_str``, if one is known.

    Only valid on text for which ``str.isascii()`` is true.
    """
    ascii_pattern = ASCII_PATTERNS.get(pat_str)
    return None if ascii_pattern is None else re.compile(ascii_pattern).findall


def is_chunkable(pat_str: str) -> bool:
    """True when text may be cut at safe points before applying ``pat_str``.

    >>> is_chunkable(O200K_PATTERN), is_chunkable(r"\\w+|\\s+")
    (True, False)
    """
    return pat_str in CHUNKABLE_PATTERNS


def compile_pattern(pat_str: str) -> Callable[[str], list[str]]:
    """The ``findall`` of the compiled pattern: text -> list of pretokens."""
    return regex.compile(pat_str).findall


# A space with a non-whitespace character on both sides. ``re``'s \s (Unicode str patterns)
# is str.isspace, a superset of White_Space, so this finds a subset of the safe points: fine.
_SAFE_POINT = re.compile(r" (?=\S)(?<=\S )")


def split_at_safe_points(text: str) -> list[str]:
    """Cut ``text`` at every safe-point space, dropping the space itself.

    Chunk 0 is ``parts[0]``; chunk k > 0 is ``" " + parts[k]``; each chunk's pretokens do not
    depend on anything outside it.

    >>> split_at_safe_points("a b  c\nd e ")
    ['a', 'b  c\nd', 'e ']
    """
    return _SAFE_POINT.split(text)


def last_safe_point(text: str, lo: int = 0) -> int:
    """Index of the last safe-point space in ``text[lo:]`` or -1.

    A safe point needs a known right neighbour, so the last character never qualifies.

    >>> last_safe_point("ab cd  ef"), last_safe_point("ab  ")
    (2, -1)
    """
    i = len(text) - 1
    lo = max(lo, 1)
    while True:
        i = text.rfind(" ", lo, i)
        if i < 0:
            return -1
        if not text[i - 1].isspace() and not text[i + 1].isspace():
            return i
