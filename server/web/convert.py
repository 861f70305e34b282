"""JSON bodies -> the app layer's typed requests, checked against the proto's schemas.

The HTTP API speaks the proto's own field names, so a refusal names the same field on both
transports (``texts[1]``, ``special_tokens.allowed[0]``) and the app does the work once.
A body is checked against its message's schema (``schema.py``, read from the descriptors) into
plain values, then built into the typed request; every problem is an ``InvalidInput`` naming
its field path, as ``wire.py`` does for gRPC requests that do not decode. Conveniences, each
with one meaning: a single value where a list is expected is a list of one (TEI's ``inputs``
takes a string or a list), a bare list stands for a message with one repeated field
(``batch: [[1, 2]]`` is ``batch: [{"ids": [1, 2]}]``), an enum is given by its name
(``"DISALLOWED_SPECIAL_NONE"`` or ``"none"``) or its number, a ``*_json`` field also takes the
JSON value itself, and ``null`` means "not set".
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from tokend.core.errors import InvalidInput, shown
from tokend.server.app.fields import with_field
from tokend.server.web.schema import BOOL, ENUM, INT, MESSAGE, STRING, Enum, Field, Schema
from tokend.server.wire import UTF8_RULE

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
        value = _DECODER.decode(text)
    except RecursionError:
        raise invalid("request", "the body nests deeper than JSON is read here (about 900 "
                      "levels); no request field nests that deep") from None
    except ValueError as exc:
        raise invalid("request", f"the body is not JSON ({exc}); send a JSON object "
                      "with the request's fields") from None
    if not isinstance(value, dict):
        raise invalid("request", f"the body must be a JSON object, not {_kind(value)}")
    return value


def parse_query(raw: bytes, schema: Schema) -> dict[str, Any]:
    """A GET request's query string as the JSON object of ``schema``'s message, for
    ``checked``: each parameter at most once, integers and booleans from their text
    (``top=5``, ``list_partial_utf8=true``), enums by name or number; bytes that are not UTF-8
    survive as surrogates so the field holding them can be named.

    >>> from tokend.server.web.schema import DIFF
    >>> parse_query(b"a=vtok%401&top=5", DIFF)
    {'a': 'vtok@1', 'top': 5}
    """
    out: dict[str, Any] = {}
    text = raw.decode("latin-1")
    for key, value in parse_qsl(text, keep_blank_values=True, errors="surrogateescape"):
        if key in out:
            raise invalid(_text(key, "request"), "is given twice in the query")
        field = schema.fields.get(key)
        kind = field.kind if field is not None else None
        if kind in (INT, ENUM) and value.isdigit() and value.isascii():
            out[key] = int(value)
        elif kind == BOOL and value.lower() in ("true", "false", "1", "0"):
            out[key] = value.lower() in ("true", "1")
        else:
            out[key] = value  # a string; a wrong one is named by ``checked``
    return out


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


# One decoder for every body (json.loads with a hook builds a new one per call).
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def checked(value: dict[str, Any], schema: Schema, path: str = "") -> dict[str, Any]:
    """The fields of a JSON object checked against ``schema``: plain values by field name
    (only those set; a nested message only when one of its fields is set, as in protobuf;
    setting one member of a oneof drops the others)."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        field_path = f"{path}{key}"
        field = schema.fields.get(key) if isinstance(key, str) else None
        if field is None:
            known = sorted(schema.fields)
            raise invalid(_text(field_path, "request"),
                          f"unknown field of {schema.name}; its fields are {known}")
        if item is None:
            continue
        if field.repeated:
            out[key] = out.get(key, []) + _repeated(field, item, field_path)
            continue
        if field.kind == MESSAGE:
            assert field.message is not None
            if not isinstance(item, dict):
                raise invalid(field_path, f"must be a JSON object, not {_kind(item)}")
            inner = checked(item, field.message, f"{field_path}.")
            if not inner:
                continue  # nothing set: the message stays unset
            out[key] = {**out.get(key, {}), **inner}
        else:
            out[key] = _scalar(field, item, field_path)
        for other in field.oneof:
            out.pop(other, None)
    return out


def _repeated(field: Field, item: Any, path: str) -> list[Any]:
    items = item if isinstance(item, list) else [item]
    out: list[Any] = []
    for i, element in enumerate(items):
        where = f"{path}[{i}]"
        if field.kind != MESSAGE:
            out.append(_scalar(field, element, where))
            continue
        assert field.message is not None
        value = _bare_list(field.message, element, where) \
            if isinstance(element, list) else element
        if not isinstance(value, dict):
            raise invalid(where, f"must be a JSON object, not {_kind(value)}")
        out.append(checked(value, field.message, f"{where}."))
    return out


def _bare_list(schema: Schema, element: list[Any], where: str) -> dict[str, Any]:
    """``[1, 2]`` for a message whose only field is repeated: ``{"ids": [1, 2]}``."""
    only = schema.only_repeated
    if only is None:
        raise invalid(where, f"must be a JSON object, not {_kind(element)}")
    return {only.name: element}


def _scalar(field: Field, value: Any, path: str) -> Any:
    kind = field.kind
    if kind == STRING:
        if field.name.endswith("_json") and not isinstance(value, str):
            return json.dumps(value)
        if not isinstance(value, str):
            raise invalid(path, f"must be a string, not {_kind(value)}")
        return _utf8(value, path)
    if kind == BOOL:
        if not isinstance(value, bool):
            raise invalid(path, f"must be true or false, not {_kind(value)}")
        return value
    if kind == ENUM:
        assert field.enum is not None
        return _enum(field.enum, value, path)
    if kind == INT:
        low, high = field.low, field.high
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            shown_high = _RANGE_NAMES.get(high, str(high))
            raise invalid(path, f"must be an integer from {low} to {shown_high}, not "
                          f"{shown(value) if isinstance(value, int | str) else _kind(value)}")
        return value
    raise invalid(path, "this field cannot be set over HTTP")  # bytes, floats: none in requests


def _enum(enum: Enum, value: Any, path: str) -> int:
    """An enum value by number (unknown numbers pass: the app names them) or by name,
    full (``DISALLOWED_SPECIAL_NONE``) or without the type's prefix (``none``)."""
    names = [name for name, _ in enum.values]
    if isinstance(value, int) and not isinstance(value, bool):
        if -(2**31) <= value < 2**31:  # an enum is an int32 on the wire
            return value
        raise invalid(path, f"unknown {enum.name} {shown(value)}: enum numbers are int32; one "
                      f"of {[n.removeprefix(_common_prefix(names)).lower() for n in names]}")
    prefix = _common_prefix(names)
    if isinstance(value, str):
        wanted = _utf8(value, path).upper()
        for name, number in enum.values:
            if wanted in (name, name.removeprefix(prefix)):
                return number
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
