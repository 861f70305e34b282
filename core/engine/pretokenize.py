"""Pretokenization: the regex split, and the proof that lets the encoder skip it.

The encoder cuts text at *safe points* -- a single space whose left and right neighbours are
both non-whitespace -- encodes each chunk on its own and caches the result per chunk. This
gives exactly the ids of running the regex over the whole text, for the patterns listed in
:data:`CHUNKABLE_PATTERNS`, because of the following argument.

Let the space be at index ``i``, with ``text[i-1]`` and ``text[i+1]`` not matching ``\\s``.

1. *No match starting before i contains position i.* Every alternative of these patterns is
   one of: a contraction (``'s``, ``'ll``... no space inside); a lone digit (Tekken's
   ``\\p{N}``); "one optional leading
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

from tokend.core.patterns import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN, TEKKEN_PATTERN

# tiktoken's r50k_base / p50k_base pattern: the GPT-2 pattern with possessive quantifiers.
R50K_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)

# Patterns for which the safe-point argument above has been checked alternative by alternative.
CHUNKABLE_PATTERNS: frozenset[str] = frozenset(
    {GPT2_PATTERN, R50K_PATTERN, CL100K_PATTERN, O200K_PATTERN, TEKKEN_PATTERN}
)

# The compiled engine's hand-written scanner for each of them (PAT_* in
# core/engine/_pretok.pxi; ``tokend.core.engine._compiled.pretokenize(kind, text)``).
SCANNER_KINDS: dict[str, int] = {
    GPT2_PATTERN: 0,
    R50K_PATTERN: 1,
    CL100K_PATTERN: 2,
    O200K_PATTERN: 3,
    # subtle: with a scanner (and so the safe points and block cache) Tekken's cold 1 MB of
    # bench/texts.py takes 0.019 s of CPU instead of ~0.18 s with the regex over the whole
    # text (bench/bench_families.py: 0.9x mistral-common before, 6.1-6.5x after)
    TEKKEN_PATTERN: 4,
}


# The same patterns restricted to ASCII input, for the stdlib ``re`` (about 2.5x faster than
# ``regex`` with Unicode property classes). On ASCII text \p{L} is [A-Za-z], \p{N} is [0-9],
# \p{Lu}/\p{Ll} are [A-Z]/[a-z], \p{Lt}, \p{Lm}, \p{Lo}, \p{M} are empty and \s is the six
# ASCII White_Space characters (written out: ``re``'s \s would add U+001C..U+001F). ``$``
# becomes ``\Z``: a possessive ``\s++`` has already eaten any final newline, so they agree.
#
# The o200k twin is possessive (``?+ *+ ++``) wherever giving characters back can never let the
# rest of its alternative match, which makes it ~1.9x faster on prose: the optional prefix class
# excludes letters, so dropping it leaves a non-letter where a letter is required; ``[A-Z]`` and
# ``[a-z]`` are disjoint; the contraction starts with ``'``, which no letter run gives back; and
# ``[\r\n/]*`` after punctuation is optional. The contraction is spelled out case by case:
# its alternatives start with different letters, so their order never mattered.
_WS = r"\t\n\x0b\x0c\r "
_NOT_WS = rf"[^{_WS}]"
_CONTRACTION = r"(?:'(?:[sStTmMdD]|[rR][eE]|[vV][eE]|[lL][lL]))?"
ASCII_PATTERNS: dict[str, str] = {
    O200K_PATTERN: "|".join(
        [
            rf"[^\r\nA-Za-z0-9]?+[A-Z]*+[a-z]++{_CONTRACTION}",
            rf"[^\r\nA-Za-z0-9]?+[A-Z]++[a-z]*+{_CONTRACTION}",
            r"[0-9]{1,3}+",
            rf" ?[^{_WS}A-Za-z0-9]++[\r\n/]*+",
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
    # o200k's twin without the contraction and with one digit (the same possessives hold)
    TEKKEN_PATTERN: "|".join(
        [
            r"[^\r\nA-Za-z0-9]?+[A-Z]*+[a-z]++",
            r"[^\r\nA-Za-z0-9]?+[A-Z]++[a-z]*+",
            r"[0-9]",
            rf" ?[^{_WS}A-Za-z0-9]++[\r\n/]*+",
            rf"[{_WS}]*[\r\n]+",
            rf"[{_WS}]+(?!{_NOT_WS})",
            rf"[{_WS}]+",
        ]
    ),
}


# Code points that the ``regex`` module (Unicode 17 data) assigns to letters, digits or marks but
# tiktoken 0.14's Rust regex (older Unicode data) still treats as unassigned, i.e. like
# punctuation. Found by probing every such code point against tiktoken; the encoder's copies of
# the built-in patterns treat them as tiktoken does, so ids match for every input.
_TIKTOKEN_UNASSIGNED_RANGES = (
    "0x558 0x58b-0x58c 0x5c8-0x5c9 0x88f 0xb53-0xb54 0xc5c 0xcdc 0x1acf-0x1af0 0x208f "
    "0x209d-0x209f 0xa7ce-0xa7cf 0xa7d2 0xa7d4 0xa7dd 0xa7e2 0xa7f1 0xab6c-0xab6d "
    "0x107bb-0x107bf 0x10940-0x10959 0x10ec5-0x10ec7 0x10ecb-0x10ecf 0x10ed9-0x10eee "
    "0x10ef0-0x10efb 0x11b0a 0x11b60-0x11b67 0x11db0-0x11ddb 0x11de0-0x11de9 "
    "0x11df0-0x11df1 0x1246f 0x12475-0x1247f 0x12550-0x12686 0x16ea0-0x16eb8 "
    "0x16ebb-0x16ed3 0x16ff2-0x16ff6 0x187f8-0x187ff 0x18cd6-0x18cda 0x18d09-0x18d20 "
    "0x18d80-0x18df2 0x18e00-0x19191 0x191a0-0x191d2 0x1b123-0x1b128 0x1b168 "
    "0x1d127-0x1d128 0x1d250-0x1d252 0x1d25b-0x1d25c 0x1d25f 0x1d280-0x1d281 0x1d6a6 "
    "0x1df1f-0x1df24 0x1df2b-0x1df81 0x1df90-0x1df96 0x1dfcd-0x1dfff 0x1e6c0-0x1e6de "
    "0x1e6e0-0x1e6f5 0x1e6fe-0x1e6ff 0x2b73a-0x2b73f 0x2b81e 0x2cea2-0x2cead "
    "0x323b0-0x33479 0x3d000-0x3fc3f "
)


def _unassigned_class_body() -> str:
    """The ranges above as the inside of a regex character class."""
    out = []
    for item in _TIKTOKEN_UNASSIGNED_RANGES.split():
        lo, _, hi = item.partition("-")
        out.append(f"\\U{int(lo, 16):08x}")
        if hi:
            out.append(f"-\\U{int(hi, 16):08x}")
    return "".join(out)


_U = _unassigned_class_body()
_L = rf"[^\P{{L}}{_U}]"  # \p{L} minus the unassigned-for-tiktoken code points
_N = rf"[^\P{{N}}{_U}]"
_NOT_WS_L_N = rf"(?:[^\s\p{{L}}\p{{N}}]|[{_U}])"  # [^\s\p{L}\p{N}] plus them
_NOT_CRLF_L_N = rf"(?:[^\r\n\p{{L}}\p{{N}}]|[{_U}])"
# U+0295 LATIN LETTER PHARYNGEAL VOICED FRICATIVE is Lo (so "upper" for o200k too) in regex's
# data but Ll in tiktoken's: a category change, the only one found when every code point was
# probed in each class against tiktoken (tests/core/test_pretok_compiled.py keeps checking).
_UP = rf"(?:(?![{_U}\u0295])[\p{{Lu}}\p{{Lt}}\p{{Lm}}\p{{Lo}}\p{{M}}])"
_LO = rf"(?:(?![{_U}])[\p{{Ll}}\p{{Lm}}\p{{Lo}}\p{{M}}])"
_CONTRACTION_U = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"

# The built-in patterns with \p{L}, \p{N} and \p{M} narrowed to tiktoken's Unicode data; same
# alternatives, same order, same quantifiers otherwise.
TIKTOKEN_COMPATIBLE: dict[str, str] = {
    GPT2_PATTERN: (rf"'(?:[sdmt]|ll|ve|re)| ?{_L}+| ?{_N}+| ?{_NOT_WS_L_N}+|\s+(?!\S)|\s+"),
    R50K_PATTERN: (rf"'(?:[sdmt]|ll|ve|re)| ?{_L}++| ?{_N}++| ?{_NOT_WS_L_N}++|\s++$|\s+(?!\S)|\s"),
    CL100K_PATTERN: (
        rf"'(?i:[sdmt]|ll|ve|re)|{_NOT_CRLF_L_N}?+{_L}++|{_N}{{1,3}}+"
        rf"| ?{_NOT_WS_L_N}++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
    ),
    O200K_PATTERN: "|".join(
        [
            rf"{_NOT_CRLF_L_N}?{_UP}*{_LO}+{_CONTRACTION_U}",
            rf"{_NOT_CRLF_L_N}?{_UP}+{_LO}*{_CONTRACTION_U}",
            rf"{_N}{{1,3}}",
            rf" ?{_NOT_WS_L_N}+[\r\n/]*",
            r"\s*[\r\n]+",
            r"\s+(?!\S)",
            r"\s+",
        ]
    ),
    # Mistral runs Tekken's pattern through tiktoken, so it gets the same narrowing.
    TEKKEN_PATTERN: "|".join(
        [
            rf"{_NOT_CRLF_L_N}?{_UP}*{_LO}+",
            rf"{_NOT_CRLF_L_N}?{_UP}+{_LO}*",
            rf"{_N}",
            rf" ?{_NOT_WS_L_N}+[\r\n/]*",
            r"\s*[\r\n]+",
            r"\s+(?!\S)",
            r"\s+",
        ]
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
    r"""Text -> its pretokens (the whole matches), with the tiktoken-compatible twin of a
    built-in pattern.

    ``findall`` is used when the pattern has no capturing group; with one it would return the
    group's text instead of the match (``(?P<w>[a-z]+)|[^a-z]`` on ``"ab 1"`` would give
    ``['ab', '', '']``), so such patterns take whole matches from ``finditer``.

    A custom pattern may still match the empty string somewhere (``(?=b)|\w+|\s`` does before
    every ``b``; validation can only test it on ``""``). An empty pretoken holds no bytes, so
    such matches are dropped: every character is still encoded exactly once. (tiktoken loses
    the following character there instead.) The built-in patterns never match empty and keep
    the bare ``findall``.

    >>> compile_pattern(r"(?P<w>[a-z]+)|[^a-z]")("ab 1")
    ['ab', ' ', '1']
    >>> compile_pattern(r"(?=b)|\w+|\s")("a b")
    ['a', ' ', 'b']
    """
    builtin = pat_str in TIKTOKEN_COMPATIBLE
    compiled = regex.compile(TIKTOKEN_COMPATIBLE.get(pat_str, pat_str))
    if compiled.groups == 0:
        if builtin:
            return compiled.findall
        findall = compiled.findall
        return lambda text: list(filter(None, findall(text)))

    def whole_matches(text: str) -> list[str]:
        return [m for m in map(regex.Match.group, compiled.finditer(text)) if m]

    return whole_matches


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


# Stands in for a space that is not a safe point, so that ``str.split(" ")`` cuts only at safe
# points. DEL, an ASCII control character text rarely holds: the encoder sends text that does
# hold it past the chunk cache, so in a cache key the marker only ever means a space (and
# ASCII text stays ASCII, one byte per character, when marked).
UNSAFE_SPACE = "\x7f"
_ASCII_SPACES = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"  # str.isspace, ASCII, but " "
_OTHER_SPACES = (
    "\x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)


def mark_unsafe_spaces(text: str) -> str:
    r"""``text`` with every space that is not a safe point replaced by :data:`UNSAFE_SPACE`.

    ``mark_unsafe_spaces(text).split(" ")`` then gives the parts of
    :func:`split_at_safe_points` (with the marker for their inner spaces), at C speed: a
    handful of ``str.replace`` calls instead of a regex match per space. A space is unsafe
    when it is at either end of the text or touches whitespace (``str.isspace``, as for the
    regex): runs of spaces go first, then spaces beside each other whitespace character the
    text holds, then the odd space left at the end of a run (which now touches a marker).
    ``text`` must not hold the marker.

    >>> mark_unsafe_spaces(" a b  c\td \n e ").replace(UNSAFE_SPACE, "_")
    '_a b__c\td_\n_e_'
    """
    mark = UNSAFE_SPACE
    spaces = _ASCII_SPACES if text.isascii() else _ASCII_SPACES + _OTHER_SPACES
    runs = "  " in text
    if runs:
        text = text.replace("  ", mark + mark)
    for space in spaces:
        if space in text:
            text = text.replace(" " + space, mark + space).replace(space + " ", space + mark)
    if runs:
        text = text.replace(mark + " ", mark + mark)
    if text.startswith(" "):
        text = mark + text[1:]
    if text.endswith(" "):
        text = text[:-1] + mark
    return text
