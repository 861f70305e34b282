"""A request's special-token policy, and how it becomes tiktoken's two arguments.

``SpecialPolicy`` is the proto's ``SpecialTokenPolicy`` as plain data; ``resolve`` checks that
every named token exists (a typo must not silently change the ids) and gives
``(allowed_special, disallowed_special)``.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal, TypeAlias

from tokend.core.errors import DisallowedSpecialToken, InvalidInput, TokendError, shown
from tokend.core.tokenizer import Tokenizer
from tokend.server.app.fields import with_field

Allowed: TypeAlias = Literal["all"] | AbstractSet[str]
Disallowed: TypeAlias = Literal["all"] | AbstractSet[str]

# disallowed_mode, numbered as the proto's DisallowedSpecial (a transport may pass any number:
# an unknown one is refused here, naming it).
DISALLOWED_UNSPECIFIED = 0
DISALLOWED_ALL = 1
DISALLOWED_NONE = 2
DISALLOWED_LISTED = 3


@dataclass(frozen=True, slots=True)
class SpecialPolicy:
    """Which special tokens in the text are encoded as specials, which are refused."""

    allowed: tuple[str, ...] = ()
    allow_all: bool = False
    disallowed_mode: int = DISALLOWED_UNSPECIFIED
    disallowed: tuple[str, ...] = ()


NO_POLICY = SpecialPolicy()
_NONE: frozenset[str] = frozenset()


def resolve(
    policy: SpecialPolicy, enc: Tokenizer, *, default: Literal["all"] | frozenset[str]
) -> tuple[Allowed, Disallowed]:
    """tiktoken's (allowed_special, disallowed_special) from the request's policy.

    Unknown special token names are refused (a typo must not silently change the ids).
    """
    if policy is NO_POLICY:  # most calls: nothing to check, nothing to build
        return _NONE, default
    for field in ("allowed", "disallowed"):
        names: tuple[str, ...] = getattr(policy, field)
        if not names:
            continue
        known = enc.special_tokens_set
        for i, name in enumerate(names):
            if name not in known:
                raise with_field(
                    InvalidInput(
                        f"special_tokens.{field} names {shown(name)}, which is not a special token "
                        "of "
                        f"{enc.name}; its special tokens are {sorted(known)}"
                    ),
                    f"special_tokens.{field}[{i}]",
                )
    allowed: Allowed = "all" if policy.allow_all else frozenset(policy.allowed)
    mode = policy.disallowed_mode
    disallowed: Disallowed
    if mode == DISALLOWED_UNSPECIFIED:
        disallowed = default
    elif mode == DISALLOWED_ALL:
        disallowed = "all"
    elif mode == DISALLOWED_NONE:
        disallowed = frozenset()
    elif mode == DISALLOWED_LISTED:
        disallowed = frozenset(policy.disallowed)
    else:
        raise with_field(
            InvalidInput(f"unknown disallowed_mode {mode}"), "special_tokens.disallowed_mode"
        )
    return allowed, disallowed


def field_error(exc: TokendError, field: str) -> TokendError:
    """``exc`` tagged with its request field; a disallowed special token is explained in
    terms of the request's fields (core's message advises tiktoken's Python arguments)."""
    if isinstance(exc, DisallowedSpecialToken):
        token = shown(exc.token)
        exc = DisallowedSpecialToken(
            exc.token,
            message=(
                f"{field} contains the special token {token}, which this request does not "
                f"allow: to encode it as its special id, list it in special_tokens.allowed "
                f"(or set special_tokens.allow_all); to encode it as plain text, set "
                f"special_tokens.disallowed_mode to DISALLOWED_SPECIAL_NONE"
            ),
        )
    return with_field(exc, field)
