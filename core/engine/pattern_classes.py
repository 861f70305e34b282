"""Character classes of a pattern, probed from the ``regex`` module over all of Unicode.

:func:`class_ranges` gives the code point ranges one class atom matches (so the general scanner
sees exactly the reference's Unicode data); :func:`partition` groups the code points of every
class of a pattern into at most 64 equivalence classes, one bit each in the scanner's masks.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import regex

from tokend.core.engine.pattern_syntax import Alt, Cls, Look, Node, Rep, Seq, Unsupported

MAX_CLASSES = 64  # equivalence classes: one bit each in a uint64 mask

# Every code point a str can hold in UTF-8 (no surrogates), in order, for probing classes.
_ALL_TEXT: str | None = None


def _all_text() -> str:
    global _ALL_TEXT  # noqa: PLW0603 - built once, ~1.1M characters
    if _ALL_TEXT is None:
        _ALL_TEXT = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))
    return _ALL_TEXT


def release_probe_text() -> None:
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


def class_keys(node: Node, out: list[str]) -> None:
    if isinstance(node, Cls):
        if node.key not in out:
            out.append(node.key)
    elif isinstance(node, Rep):
        class_keys(node.node, out)
    elif isinstance(node, (Seq, Alt)):
        for child in node.items if isinstance(node, Seq) else node.options:
            class_keys(child, out)
    elif isinstance(node, Look):
        class_keys(node.cls, out)
