"""Reading the JSON config of a pipeline component: typed fields, and one-line refusals.

Every error names the component and its JSON path in the file (``normalizer.normalizers[2]``),
so a user sees at once which part of a ``tokenizer.json`` tokend cannot serve exactly.
"""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

import regex

from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.formats.oniguruma import from_oniguruma

_T = TypeVar("_T")

# Unicode White_Space (Rust's char::is_whitespace); Python's str.isspace() differs (\x1c-\x1f).
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
WHITESPACE_SET = frozenset(WHITESPACE)


def unsupported(what: str, path: str, why: str = "") -> NoReturn:
    """Refuse a component tokend cannot reproduce exactly (never serve different ids)."""
    detail = f" ({why})" if why else ""
    raise InvalidInput(f"{path}: {what} is not supported{detail}")


def field(obj: dict[str, Any], key: str, kind: type[_T], path: str, default: Any = ...) -> _T:
    """``obj[key]`` checked to be a ``kind``; CorruptData naming ``path.key`` otherwise."""
    if key not in obj or obj[key] is None:
        if default is ...:
            raise CorruptData(f"{path}.{key} is missing")
        return default  # type: ignore[no-any-return]
    value = obj[key]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # type: ignore[return-value]
    if not ok:
        raise CorruptData(f"{path}.{key} is {value!r:.60}, not a {kind.__name__}")
    return value  # type: ignore[no-any-return]


def component_type(obj: object, path: str) -> str:
    """The ``type`` of a component object."""
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise CorruptData(f"{path} is {obj!r:.60}, not a component object with a 'type'")
    return str(obj["type"])


def compile_pattern(spec: object, path: str) -> regex.Pattern[str]:
    """A ``{"String": s}`` (literal) or ``{"Regex": r}`` (Oniguruma syntax) pattern."""
    if isinstance(spec, dict) and isinstance(spec.get("String"), str):
        return regex.compile(regex.escape(spec["String"]))
    if isinstance(spec, dict) and isinstance(spec.get("Regex"), str):
        try:
            return regex.compile(from_oniguruma(spec["Regex"]))
        except (regex.error, InvalidInput) as exc:
            unsupported(f"regex {spec['Regex']!r:.80}", path, str(exc))
    raise CorruptData(f"{path} is {spec!r:.60}, not {{'String': ...}} or {{'Regex': ...}}")
