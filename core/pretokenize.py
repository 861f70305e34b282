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


def is_chunkable(pat_str: str) -> bool:
    """True when text may be cut at safe points before applying ``pat_str``.

    >>> is_chunkable(O200K_PATTERN), is_chunkable(r"\\w+|\\s+")
    (True, False)
    """
    return pat_str in CHUNKABLE_PATTERNS


def compile_pattern(pat_str: str) -> Callable[[str], list[str]]:
    """The ``findall`` of the compiled pattern: text -> list of pretokens."""
    return regex.compile(pat_str).findall


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
