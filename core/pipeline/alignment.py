"""Alignment tracking: where each normalized character came from in the original text.

HF's ``NormalizedString`` keeps, for every byte of the normalized text, the original range it
came from, and every normalizer edits text through ``transform`` with a change per new
character (``0`` replaces the next original character, ``1`` inserts one, ``-N`` replaces and
drops N more). tokend keeps the same thing per *character*: an ``Align`` list of
``(start, end)`` character offsets into the original text, one entry per normalized character.
It is built only when a request asks for offsets; plain encoding never pays for it.

Unicode normalization is done here the way Rust's ``unicode-normalization-alignments`` does it
(decompose each character, stable-sort combining marks, recompose), because that crate's
change tags decide which original character a decomposed mark is aligned to.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from typing import Literal

Span = tuple[int, int]
Align = list[Span]
Change = tuple[str, int]  # a new character and its change tag (see the module docstring)


def identity(text: str, base: int = 0) -> Align:
    """The alignment of text that is the original from offset ``base`` on."""
    return [(i, i + 1) for i in range(base, base + len(text))]


def transform(
    align: Align, dest: Iterable[Change], initial_offset: int = 0, base: int = 0
) -> tuple[str, Align]:
    """HF's ``NormalizedString::transform`` on characters: the new text and its alignment.

    An inserted character shares the alignment of the last original character consumed (or the
    empty span at ``base`` before any); a replacing one takes the one it replaces.

    >>> transform([(0, 1), (1, 2)], [("a", 0), ("b", 1), ("c", -0)])
    ('abc', [(0, 1), (0, 1), (1, 2)])
    """
    chars: list[str] = []
    out: Align = []
    pos = initial_offset
    for char, change in dest:
        if change > 0:
            span = align[pos - 1] if pos >= 1 else (base, base)
        else:
            span = align[pos]
            pos += 1 - change
        chars.append(char)
        out.append(span)
    return "".join(chars), out


def keep(text: str, align: Align, predicate_keep: Iterable[bool]) -> tuple[str, Align]:
    """Drop characters (HF's ``filter``): the kept ones keep their own alignment."""
    chars: list[str] = []
    out: Align = []
    for char, span, kept in zip(text, align, predicate_keep, strict=True):
        if kept:
            chars.append(char)
            out.append(span)
    return "".join(chars), out


def expand_each(text: str, align: Align, convert: Callable[[str], str]) -> tuple[str, Align]:
    """Replace each character by a string (``c -> c.lower()``...): every new character keeps
    the alignment of the character it came from (change 0 then 1s, as HF's ``lowercase``)."""
    chars: list[str] = []
    out: Align = []
    for char, span in zip(text, align, strict=True):
        new = convert(char)
        chars.append(new)
        out += [span] * len(new)
    return "".join(chars), out


def expand(align: Align, start: int, end: int, fallback: int) -> Span:
    """Original span of normalized characters ``[start, end)`` (HF's ``expand_alignments``);
    an empty range maps to an empty span where it sits."""
    if end > start:
        return align[start][0], align[end - 1][1]
    if start < len(align):
        return align[start][0], align[start][0]
    return (align[-1][1], align[-1][1]) if align else (fallback, fallback)


# -- Unicode normalization with change tags (unicode-normalization-alignments) -------------------


def decompose(text: str, compat: bool, opaque: AbstractSet[str] = frozenset()) -> list[Change]:
    """NFD / NFKD as (char, change) pairs: the first character of each decomposition replaces
    its source (0), the others are inserted (1); marks are stable-sorted by combining class.
    ``opaque`` characters are starters without a decomposition (unassigned to HF's tables)."""
    form: Literal["NFD", "NFKD"] = "NFKD" if compat else "NFD"
    out: list[Change] = []
    pending: list[tuple[int, str, int]] = []
    combining = unicodedata.combining
    for char in text:
        parts = char if char.isascii() or char in opaque else unicodedata.normalize(form, char)
        for k, part in enumerate(parts):
            ccc = 0 if part in opaque else combining(part)
            if ccc == 0 and pending:
                pending.sort(key=lambda item: item[0])
                out += [(c, tag) for _ccc, c, tag in pending]
                pending = []
            pending.append((ccc, part, 0 if k == 0 else 1))
    pending.sort(key=lambda item: item[0])
    out += [(c, tag) for _ccc, c, tag in pending]
    return out


_S_BASE, _L_BASE, _V_BASE, _T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
_L_COUNT, _V_COUNT, _T_COUNT = 19, 21, 28


@functools.cache
def _composition_table() -> dict[tuple[str, str], str]:
    """Primary composites: canonical pairs whose NFC is the composite (not excluded)."""
    table: dict[tuple[str, str], str] = {}
    for code in range(0x110000):
        decomposition = unicodedata.decomposition(chr(code))
        if not decomposition or decomposition.startswith("<"):
            continue
        parts = decomposition.split()
        if len(parts) != 2:
            continue
        char = chr(code)
        if unicodedata.normalize("NFC", char) != char:
            continue  # a composition exclusion or a non-starter decomposition
        table[(chr(int(parts[0], 16)), chr(int(parts[1], 16)))] = char
    return table


def compose(a: str, b: str) -> str | None:
    """The primary composite of ``a`` + ``b`` (Hangul algorithmically), or None."""
    ca, cb = ord(a), ord(b)
    if _L_BASE <= ca < _L_BASE + _L_COUNT and _V_BASE <= cb < _V_BASE + _V_COUNT:
        return chr(_S_BASE + ((ca - _L_BASE) * _V_COUNT + (cb - _V_BASE)) * _T_COUNT)
    if (_S_BASE <= ca < _S_BASE + _L_COUNT * _V_COUNT * _T_COUNT
            and (ca - _S_BASE) % _T_COUNT == 0 and _T_BASE < cb < _T_BASE + _T_COUNT):
        return chr(ca + cb - _T_BASE)
    return _composition_table().get((a, b))


def recompose(pairs: list[Change], opaque: AbstractSet[str] = frozenset()) -> list[Change]:
    """Canonical composition of decomposed (char, change) pairs, the crate's state machine: a
    composed character's change is ``k + change - 1`` (it also consumes the mark)."""
    out: list[Change] = []
    buffer: list[Change] = []
    composee: Change | None = None
    last_ccc: int | None = None
    combining = unicodedata.combining
    for char, change in pairs:
        ccc = 0 if char in opaque else combining(char)
        if composee is None:
            if ccc != 0:
                out.append((char, change))
                continue
            composee = (char, change)
            continue
        if last_ccc is None:
            composed = compose(composee[0], char)
            if composed is not None:
                composee = (composed, composee[1] + change - 1)
                continue
            if ccc == 0:
                out.append(composee)
                composee = (char, change)
                continue
            buffer.append((char, change))
            last_ccc = ccc
            continue
        if last_ccc >= ccc:  # blocked from the composee
            if ccc == 0:
                out.append(composee)
                out += buffer
                buffer = []
                composee = (char, change)
                last_ccc = None
                continue
            buffer.append((char, change))
            last_ccc = ccc
            continue
        composed = compose(composee[0], char)
        if composed is not None:
            composee = (composed, composee[1] + change - 1)
            continue
        buffer.append((char, change))
        last_ccc = ccc
    if composee is not None:
        out.append(composee)
    out += buffer
    return out


def unicode_changes(
    text: str, form: str, opaque: AbstractSet[str] = frozenset()
) -> list[Change]:
    """(char, change) pairs of ``form`` (NFC, NFD, NFKC, NFKD) applied to ``text``."""
    pairs = decompose(text, compat=form in ("NFKC", "NFKD"), opaque=opaque)
    return recompose(pairs, opaque) if form in ("NFC", "NFKC") else pairs


def byte_offsets(text: str, offsets: Iterable[Span]) -> list[Span]:
    """Character offsets into ``text`` as UTF-8 byte offsets (the Encode RPC's unit)."""
    if text.isascii():
        return list(offsets)
    starts = [0]
    total = 0
    for char in text:
        total += len(char.encode("utf-8", "surrogatepass"))
        starts.append(total)
    return [(starts[s], starts[e]) for s, e in offsets]
