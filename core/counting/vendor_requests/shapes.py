"""Reading a vendor's request body field by field: each refusal names the vendor's own field.

The vendors' bodies are JSON objects whose fields each have one type; a wrong one is an
``InvalidInput`` whose message starts with the field path (``messages[1].content[0].text``) and
quotes a client value only as a bounded prefix (``errors.shown``). The error carries the path as
``field`` (as ``training/spec.py`` does), which the HTTP adapter reports in the vendor's shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tokend.core.errors import InvalidInput, shown


def invalid(field: str, message: str) -> InvalidInput:
    """An InvalidInput about ``field``, its message starting with the field.

    >>> str(invalid("messages[0].role", "must be 'user' or 'assistant'"))
    "messages[0].role: must be 'user' or 'assistant'"
    """
    exc = InvalidInput(f"{field}: {message}")
    exc.field = field  # type: ignore[attr-defined]
    return exc


def kind(value: object) -> str:
    """The JSON name of a value's type, for messages.

    >>> kind([1]), kind(None), kind(True)
    ('an array', 'null', 'a boolean')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    return "an array" if isinstance(value, Sequence) else type(value).__name__


def obj(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise invalid(field, f"must be an object, not {kind(value)}")
    return value


def array(value: Any, field: str) -> Sequence[Any]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise invalid(field, f"must be an array, not {kind(value)}")
    return value


def text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise invalid(field, f"must be a string, not {kind(value)}")
    return value


def optional_text(body: Mapping[str, Any], key: str, field: str) -> str:
    """``body[key]`` when it is a string, "" when absent or null; refused otherwise."""
    value = body.get(key)
    return "" if value is None else text(value, field)


def one_of(value: Any, choices: Sequence[str], field: str) -> str:
    if value not in choices:
        names = ", ".join(repr(c) for c in choices)
        raise invalid(field, f"must be one of {names}, not {shown(value, 40)}")
    return str(value)


def compact_json(value: Any) -> str:
    """JSON as the vendors' SDKs send arguments: compact, non-ASCII kept.

    >>> compact_json({"city": "Zürich", "days": 2})
    '{"city":"Zürich","days":2}'
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def check_utf8(value: Any, field: str = "") -> None:
    """Refuse a string anywhere in ``value`` that is not UTF-8 text (a lone surrogate from a
    ``"\\ud800"`` escape), naming its field, as ``POST /count`` refuses it and the vendors'
    JSON parsers do.

    >>> try:
    ...     check_utf8({"messages": [{"content": "ok"}, {"content": "\\ud800"}]})
    ... except ValueError as exc:
    ...     print(exc)
    messages[1].content: not valid UTF-8 (a lone surrogate escape, character 0 of ...
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise invalid(field or "request", f"not valid UTF-8 (a lone surrogate escape, "
                          f"character {exc.start} of the value): text must be valid "
                          "UTF-8") from None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_utf8(key, field or "request")
            check_utf8(item, f"{field}.{key}" if field else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_utf8(item, f"{field}[{i}]")
