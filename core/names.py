"""Registry naming rules: tokenizer names, aliases, versions and references (``name@7``).

Every name that reaches the filesystem passes through here first, so no name, alias or version
can ever become a path outside the registry (``../x``, ``/abs``, ``..``, look-alike letters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tokend.core.errors import InvalidName, shown

NAME_RULE = "^[a-z0-9][a-z0-9._-]{0,63}$"
# subtle: \Z, not $ -- `$` also matches before a trailing newline ("abc\n" must be refused).
# The classes are ASCII-only, so Unicode look-alikes (Cyrillic "а", fullwidth "ａ") never match.
_NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}\Z", re.ASCII)
ALIAS_RULE = NAME_RULE + " and not all digits (digits mean a version)"
# Alias names with a fixed meaning in references; they cannot be set explicitly.
RESERVED_ALIASES = frozenset({"latest"})
MAX_VERSION = 10**15


def check_name(name: object, *, what: str = "tokenizer name") -> str:
    """Return ``name`` if it follows the naming rule, else raise InvalidName naming the rule.

    >>> check_name("my-tok.v2")
    'my-tok.v2'
    """
    if not isinstance(name, str) or _NAME_RE.match(name) is None:
        raise InvalidName(
            f"invalid {what} {shown(name)}: names must match {NAME_RULE} "
            "(lowercase ASCII letters, digits, '.', '_' and '-'; starting with a letter or "
            "digit; at most 64 characters)"
        )
    return name


def check_alias(alias: object) -> str:
    """Return ``alias`` if it is a valid, settable alias name (``stable``, ``canary``...)."""
    check_name(alias, what="alias")
    assert isinstance(alias, str)  # narrowed by check_name
    if alias.isdigit():
        raise InvalidName(f"invalid alias {shown(alias)}: aliases must match {ALIAS_RULE}")
    if alias in RESERVED_ALIASES:
        raise InvalidName(
            f"invalid alias {shown(alias)}: {sorted(RESERVED_ALIASES)} are reserved "
            "(`name@latest` always means the newest version)"
        )
    return alias


def check_version(version: object) -> int:
    """Return ``version`` if it is a positive int (not a bool), else raise InvalidName."""
    if isinstance(version, bool) or not isinstance(version, int) or not 0 < version < MAX_VERSION:
        raise InvalidName(
            f"invalid version {shown(version)}: versions are positive integers below {MAX_VERSION}"
        )
    return version


@dataclass(frozen=True)
class ParsedRef:
    """A reference split into its parts: exactly one of ``version`` / ``alias`` may be set."""

    name: str
    version: int | None = None
    alias: str | None = None


def parse_ref(ref: object) -> ParsedRef:
    """Split ``name``, ``name@7`` or ``name@alias``; raise InvalidName for anything else.

    Built-in encodings (``o200k_base``) and model names (``gpt-4o``) follow the same rule.

    >>> parse_ref("tok@7")
    ParsedRef(name='tok', version=7, alias=None)
    >>> parse_ref("tok@stable")
    ParsedRef(name='tok', version=None, alias='stable')
    """
    if not isinstance(ref, str) or not ref:
        raise InvalidName(
            f"invalid reference {shown(ref)}: expected 'name', 'name@VERSION' or 'name@ALIAS'"
        )
    name, sep, suffix = ref.partition("@")
    check_name(name)
    if not sep:
        return ParsedRef(name)
    if suffix.isascii() and suffix.isdigit():
        if len(suffix) > 15 or suffix.startswith("0"):
            raise InvalidName(
                f"invalid version in reference {shown(ref)}: versions are positive integers "
                f"without leading zeros, below {MAX_VERSION}"
            )
        return ParsedRef(name, version=int(suffix))
    if suffix in RESERVED_ALIASES:
        return ParsedRef(name, alias=suffix)
    try:
        check_alias(suffix)
    except InvalidName as exc:
        raise InvalidName(f"invalid reference {shown(ref)}: {exc}") from None
    return ParsedRef(name, alias=suffix)
