"""Ids in the two compact forms the engines also write directly: uint32 buffers and varints.

The pure-Python forms of ``CompiledEngine.encode_buffer`` / ``encode_varints``: the Python engine
uses them, and ``Encoding`` uses them for text with special tokens (ids from several runs).

>>> varints([1, 300, 200_000])
b'\\x01\\xac\\x02\\xc0\\x9a\\x0c'
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence


def uint32_buffer(ids: Sequence[int]) -> bytes:
    """``ids`` as native-order uint32s (what ``numpy.frombuffer(..., numpy.uint32)`` reads)."""
    return array("I", ids).tobytes()


def varints(ids: Sequence[int]) -> bytes:
    """``ids`` as protobuf varints back to back: the payload of a packed ``repeated uint32``
    (seven bits a byte, lowest first; the high bit says another byte follows)."""
    out = bytearray()
    append = out.append
    for value in ids:
        v = value
        while v >= 0x80:
            append((v & 0x7F) | 0x80)
            v >>= 7
        append(v)
    return bytes(out)
