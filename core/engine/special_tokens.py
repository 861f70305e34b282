"""Special tokens in text: tiktoken's allowed / disallowed policy, and splitting text at them.

``Encoding`` applies these before any ordinary text reaches its engine.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Literal, TypeAlias, TypeVar

import regex

from tokend.core.errors import DisallowedSpecialToken

AllowedSpecial: TypeAlias = Literal["all"] | AbstractSet[str]
DisallowedSpecial: TypeAlias = Literal["all"] | Collection[str]
Run: TypeAlias = Sequence[int]  # ids of one piece of a text; a text's runs concatenate


@functools.lru_cache(maxsize=128)
def _special_matcher(tokens: frozenset[str]) -> tuple[str, regex.Pattern[str]]:
    """(common prefix, regex) finding any of ``tokens``; the prefix is a cheap pre-filter."""
    ordered = sorted(tokens, key=lambda t: (-len(t), t))
    prefix = os.path.commonprefix(ordered)  # noqa: RUF071 (strings, not paths)
    return prefix, regex.compile("|".join(regex.escape(t) for t in ordered))


def replace_surrogates(text: str) -> str:
    """tiktoken's fallback for text that is not valid UTF-8: pair surrogates, replace the rest."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


_T = TypeVar("_T")


def fixing_surrogates(encode: Callable[[str], _T], text: str) -> _T:
    """``encode(text)``; if lone surrogates make that fail, of the text as tiktoken fixes it."""
    try:
        return encode(text)
    except UnicodeEncodeError:
        return encode(replace_surrogates(text))


def usable_specials(
    text: str,
    specials: frozenset[str],
    allowed_special: AllowedSpecial,
    disallowed_special: DisallowedSpecial,
) -> frozenset[str] | None:
    """Raise if ``text`` holds disallowed special-token text (tiktoken's rules); return the
    allowed special tokens that may split it, or None when it is all ordinary text."""
    allowed: AbstractSet[str] = specials if allowed_special == "all" else allowed_special
    disallowed: Collection[str]
    if disallowed_special != "all":
        disallowed = disallowed_special
    elif not allowed:  # the default: reuse one frozenset (its hash is kept) for the matcher
        disallowed = specials
    elif allowed is specials:
        disallowed = ()
    else:
        disallowed = specials - allowed
    if disallowed:
        prefix, matcher = _special_matcher(frozenset(disallowed))
        if not prefix or prefix in text:
            match = matcher.search(text)
            if match is not None:
                raise DisallowedSpecialToken(match.group())
    if allowed:
        # "all": no per-call copy of every special
        usable = specials if allowed is specials else frozenset(s for s in allowed if s in specials)
        if usable:
            prefix, _ = _special_matcher(usable)
            if not prefix or prefix in text:
                return usable
    return None


def split_at_specials(
    text: str,
    usable: frozenset[str] | None,
    special_ids: Mapping[str, int],
    encode: Callable[[str], list[int]],
) -> list[Run]:
    """Split ``text`` at the ``usable`` special tokens; ``encode`` the ordinary text between."""
    if not usable:
        return [encode(text)]
    _, matcher = _special_matcher(usable)
    runs: list[Run] = []
    start = 0
    for match in matcher.finditer(text):
        runs.append(encode(text[start : match.start()]))
        runs.append((special_ids[match.group()],))
        start = match.end()
    runs.append(encode(text[start:]))
    return runs
