"""Request decoding that turns a malformed request into INVALID_ARGUMENT naming the field.

grpcio decodes a request before any of our code runs; when protobuf refuses it (a string field
that is not valid UTF-8, truncated or garbled bytes), grpcio answers INTERNAL "Exception
deserializing request!" and the call never reaches the interceptor, so it is not counted
either. The interceptor therefore installs :func:`lenient` as every method's deserializer: a
request that does not decode becomes an :class:`Undecodable` marker, which the interceptor
raises as the error it carries, through the usual status table. To name the field, the raw
bytes are walked with the message's descriptor (the protobuf wire format is five cases).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from tokend.core.errors import InvalidInput, TokendError
from tokend.server.errors import with_field

UTF8_RULE = "string fields must be valid UTF-8"


class Undecodable:
    """Stands in for a request that did not decode; ``error`` says which field and why."""

    __slots__ = ("error",)

    def __init__(self, error: TokendError) -> None:
        self.error = error


def lenient(deserializer: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """Wrap a ``Message.FromString`` so that a bad request yields an :class:`Undecodable`."""
    message_class = getattr(deserializer, "__self__", None)
    descriptor: Descriptor | None = getattr(message_class, "DESCRIPTOR", None)

    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception:  # protobuf's DecodeError, or whatever a deserializer raises
            return Undecodable(explain(descriptor, data))

    return deserialize


def explain(descriptor: Descriptor | None, data: bytes) -> TokendError:
    """The error for request bytes that protobuf refused: the bad string field if there is one.

    >>> from tokend.v1 import tokenizer_pb2 as pb
    >>> str(explain(pb.EncodeRequest.DESCRIPTOR, b"\\x12\\x01\\xff"))
    'texts[0] is not valid UTF-8 (byte 0 of the value): string fields must be valid UTF-8'
    """
    if descriptor is None:
        return with_field(InvalidInput("the request could not be decoded"), "request")
    found = _bad_string(descriptor, data, "")
    if found is None:
        return with_field(
            InvalidInput(
                f"the request is not a valid {descriptor.full_name} message "
                f"({len(data)} bytes): the bytes must be a serialized protobuf of that type"
            ),
            "request",
        )
    path, offset = found
    return with_field(
        InvalidInput(f"{path} is not valid UTF-8 (byte {offset} of the value): {UTF8_RULE}"),
        path,
    )


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode a base-128 varint at ``pos``; returns (value, next position)."""
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _bad_string(descriptor: Descriptor, data: bytes, prefix: str) -> tuple[str, int] | None:
    """(field path, byte offset) of the first string field that is not UTF-8, else None.

    Paths follow the proto's field names: ``texts[3]``, ``messages[1].content``,
    ``config.special_tokens[0]``. Garbled bytes elsewhere give None (no field to blame).
    """
    seen: dict[int, int] = {}  # field number -> occurrences so far (the repeated index)
    pos = 0
    try:
        while pos < len(data):
            key, pos = _varint(data, pos)
            number, wire_type = key >> 3, key & 7
            if wire_type == 0:
                _, pos = _varint(data, pos)
            elif wire_type == 1:
                pos += 8
            elif wire_type == 5:
                pos += 4
            elif wire_type == 2:
                size, pos = _varint(data, pos)
                value = data[pos : pos + size]
                pos += size
                field = descriptor.fields_by_number.get(number)
                if field is None:
                    continue
                index = seen.get(number, 0)
                seen[number] = index + 1
                path = prefix + field.name
                if field.is_repeated:
                    path += f"[{index}]"
                if field.type == FieldDescriptor.TYPE_STRING:
                    try:
                        value.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        return path, exc.start
                elif field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type:
                    found = _bad_string(field.message_type, value, path + ".")
                    if found is not None:
                        return found
            else:
                return None
    except ValueError:
        return None
    return None
