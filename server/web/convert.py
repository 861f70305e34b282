"""JSON bodies -> the RPCs' protobuf requests, and protobuf responses -> JSON.

The HTTP API speaks the proto's own field names, so a refusal names the same field on both
transports (``texts[1]``, ``special_tokens.allowed[0]``) and the servicer does the work once.
Conversion is driven by the message descriptors; every problem is an ``InvalidInput`` naming
its field path, as ``wire.py`` does for gRPC requests that do not decode. Conveniences, each
with one meaning: a single value where a list is expected is a list of one (TEI's ``inputs``
takes a string or a list), a bare list stands for a message with one repeated field
(``batch: [[1, 2]]`` is ``batch: [{"ids": [1, 2]}]``), an enum is given by its name
(``"DISALLOWED_SPECIAL_NONE"`` or ``"none"``) or its number, a ``*_json`` field also takes the
JSON value itself, and ``null`` means "not set".
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from tokend.core.errors import InvalidInput, shown
from tokend.server.errors import with_field
from tokend.server.wire import UTF8_RULE

M = TypeVar("M", bound=Message)

_INT_RANGES = {
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
}
_RANGE_NAMES = {2**32 - 1: "2^32 - 1", 2**64 - 1: "2^64 - 1", 2**31 - 1: "2^31 - 1",
                2**63 - 1: "2^63 - 1"}


def invalid(field: str, message: str) -> InvalidInput:
    """An InvalidInput about ``field`` whose message starts with it."""
    exc = with_field(InvalidInput(f"{field}: {message}"), field)
    assert isinstance(exc, InvalidInput)
    return exc


def parse_body(data: bytes) -> dict[str, Any]:
    """The JSON object of a request body; bytes that are not UTF-8 survive as surrogates, so
    the field holding them can be named (``to_message`` refuses them there).

    >>> parse_body(b'{"texts": ["a"]}')
    {'texts': ['a']}
    """
    text = data.decode("utf-8", errors="surrogateescape")
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise invalid("request", "the body nests deeper than JSON is read here (about 900 "
                      "levels); no request field nests that deep") from None
    except ValueError as exc:
        raise invalid("request", f"the body is not JSON ({exc}); send a JSON object "
                      "with the request's fields") from None
    if not isinstance(value, dict):
        raise invalid("request", f"the body must be a JSON object, not {_kind(value)}")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (which a last-wins reader would hide)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {shown(key)} is given twice in one object")
            seen.add(key)
    return value


def to_message(value: dict[str, Any], message: M, path: str = "") -> M:
    """Fill ``message`` from a JSON object (fields by their proto names); returns it."""
    descriptor: Any = message.DESCRIPTOR
    for key, item in value.items():
        field_path = f"{path}{key}"
        field = descriptor.fields_by_name.get(key) if isinstance(key, str) else None
        if field is None:
            known = sorted(descriptor.fields_by_name)
            raise invalid(_text(field_path, "request"),
                          f"unknown field of {descriptor.name}; its fields are {known}")
        if item is None:
            continue
        if field.is_repeated:
            _set_repeated(message, field, item, field_path)
        elif field.message_type is not None:
            if not isinstance(item, dict):
                raise invalid(field_path, f"must be a JSON object, not {_kind(item)}")
            to_message(item, getattr(message, key), f"{field_path}.")
        else:
            setattr(message, key, _scalar(field, item, field_path))
    return message


def _set_repeated(message: Message, field: Any, item: Any, path: str) -> None:
    items = item if isinstance(item, list) else [item]
    target = getattr(message, field.name)
    for i, element in enumerate(items):
        where = f"{path}[{i}]"
        if field.message_type is None:
            target.append(_scalar(field, element, where))
            continue
        value = _bare_list(field.message_type, element, where) \
            if isinstance(element, list) else element
        if not isinstance(value, dict):
            raise invalid(where, f"must be a JSON object, not {_kind(value)}")
        to_message(value, target.add(), f"{where}.")


def _bare_list(descriptor: Any, element: list[Any], where: str) -> dict[str, Any]:
    """``[1, 2]`` for a message whose only field is repeated: ``{"ids": [1, 2]}``."""
    fields = descriptor.fields
    if len(fields) != 1 or not fields[0].is_repeated:
        raise invalid(where, f"must be a JSON object, not {_kind(element)}")
    return {fields[0].name: element}


def _scalar(field: Any, value: Any, path: str) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        if field.name.endswith("_json") and not isinstance(value, str):
            return json.dumps(value)
        if not isinstance(value, str):
            raise invalid(path, f"must be a string, not {_kind(value)}")
        return _utf8(value, path)
    if kind == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise invalid(path, f"must be true or false, not {_kind(value)}")
        return value
    if kind == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type is not None
        return _enum(field.enum_type, value, path)
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            shown_high = _RANGE_NAMES.get(high, str(high))
            raise invalid(path, f"must be an integer from {low} to {shown_high}, not "
                          f"{shown(value) if isinstance(value, int | str) else _kind(value)}")
        return value
    raise invalid(path, "this field cannot be set over HTTP")  # bytes, floats: none in requests


def _enum(enum: Any, value: Any, path: str) -> int:
    """An enum value by number (unknown numbers pass: the servicer names them) or by name,
    full (``DISALLOWED_SPECIAL_NONE``) or without the type's prefix (``none``)."""
    names = [v.name for v in enum.values]
    if isinstance(value, int) and not isinstance(value, bool):
        if -(2**31) <= value < 2**31:  # an enum is an int32 on the wire
            return value
        raise invalid(path, f"unknown {enum.name} {shown(value)}: enum numbers are int32; one "
                      f"of {[n.removeprefix(_common_prefix(names)).lower() for n in names]}")
    prefix = _common_prefix(names)
    if isinstance(value, str):
        wanted = _utf8(value, path).upper()
        for v in enum.values:
            if wanted in (v.name, v.name.removeprefix(prefix)):
                return int(v.number)
    short = [name.removeprefix(prefix).lower() for name in names]
    raise invalid(path, f"unknown {enum.name} {shown(value)}; one of {short} (or their numbers)")


def _common_prefix(names: list[str]) -> str:
    """``DISALLOWED_SPECIAL_`` for the names of DisallowedSpecial (up to the last ``_``)."""
    first = names[0]
    end = 0
    for i, char in enumerate(first):
        if any(len(n) <= i or n[i] != char for n in names):
            break
        if char == "_":
            end = i + 1
    return first[:end]


def _utf8(value: str, path: str) -> str:
    """``value`` if it is valid UTF-8 text (no surrogates: raw bytes or ``\\ud800`` escapes)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        offset = len(value[: exc.start].encode("utf-8", "surrogateescape"))
        raise invalid(path, f"not valid UTF-8 (byte {offset} of the value): "
                      f"{UTF8_RULE}") from None
    return value


def _text(key: str, fallback: str) -> str:
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return fallback
    return shown(key)[1:-1] if len(key) > 200 else key


def _kind(value: Any) -> str:
    """JSON's name for the type of ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def to_json(message: Message) -> dict[str, Any]:
    """Every field of ``message`` by its proto name (defaults included, so the shape is fixed;
    bytes as hex, enums by name, an unset optional as null)."""
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            out[field.name] = dict(value)
        elif field.is_repeated:
            out[field.name] = [_json_value(field, v) for v in value]
        elif field.has_presence and not message.HasField(field.name):
            out[field.name] = None
        else:
            out[field.name] = _json_value(field, value)
    return out


def _json_value(field: Any, value: Any) -> Any:
    if field.message_type is not None:
        return to_json(value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return bytes(value).hex()
    if field.type == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type is not None
        item = field.enum_type.values_by_number.get(value)
        return item.name if item is not None else value
    return value
