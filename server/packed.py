"""Encode's response written as protobuf wire bytes, its ids straight from the engine.

An ``EncodeResponse`` is a string and a list of ``EncodeResult``s, each a packed ``repeated
uint32 ids`` (and details, when asked for). When the tokenizer gives its ids as the varint
payload of that packed field (``encode_varints``: tokend's built-in encodings), the response is
the tags and lengths around those bytes: no list of ints, no protobuf conversion. The bytes
are exactly what ``EncodeResponse.SerializeToString()`` writes for the same message
(tests/server/test_packed.py holds the two equal under hypothesis), so clients see nothing.

``response_serializer`` is Encode's gRPC serializer: it passes such bytes through and
serializes a message as grpcio would.

    >>> encode_response_bytes("gpt2", [(b"\\x01\\xac\\x02", 2)])
    b'\\n\\x04gpt2\\x12\\x05\\n\\x03\\x01\\xac\\x02'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

# Field tags (number << 3 | wire type 2, length-delimited): EncodeResponse.tokenizer = 1,
# EncodeResponse.results = 2, EncodeResult.ids = 1 (packed).
_TOKENIZER = b"\x0a"
_RESULT = b"\x12"
_IDS = b"\x0a"
# Lengths below 128 are one byte: the common case, looked up rather than computed.
_SHORT = [bytes((n,)) for n in range(128)]


def varint(value: int) -> bytes:
    """``value`` (>= 0) as a protobuf base-128 varint.

    >>> varint(1), varint(300)
    (b'\\x01', b'\\xac\\x02')
    """
    if value < 128:
        return _SHORT[value]
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def pack_ids(ids: Iterable[int]) -> bytes:
    """The varint payload of a packed ``repeated uint32`` holding ``ids`` (the slow path: the
    engine's ``encode_varints`` writes these bytes itself).

    >>> pack_ids([1, 300])
    b'\\x01\\xac\\x02'
    """
    return b"".join(varint(i) for i in ids)


def result_bytes(packed: bytes) -> bytes:
    """One ``EncodeResult`` with ids only (its field within the response included).

    An empty packed field is left out, as protobuf leaves it out: the result is then empty.
    """
    if not packed:
        return b"\x12\x00"
    body = _IDS + varint(len(packed)) + packed
    return _RESULT + varint(len(body)) + body


def encode_response_bytes(tokenizer: str, results: Sequence[tuple[bytes, int]]) -> bytes:
    """A whole ``EncodeResponse`` from the packed ids of each result (``(payload, count)``)."""
    parts = []
    if tokenizer:
        name = tokenizer.encode("utf-8")
        parts.append(_TOKENIZER + varint(len(name)) + name)
    parts.extend(result_bytes(packed) for packed, _ in results)
    return b"".join(parts)


def response_serializer(response: Any) -> bytes:
    """Encode's serializer: bytes written by ``encode_response_bytes`` as they are, a
    protobuf message serialized."""
    if response.__class__ is bytes:
        return response
    data: bytes = response.SerializeToString()
    return data
