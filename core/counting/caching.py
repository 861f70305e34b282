"""Prompt caching as each vendor bills it: which input tokens are written, read, or plain.

A quote's input splits into uncached tokens, cache writes (5-minute and 1-hour) and cache reads
(``docs/counting.md``, "Prompt caching", lists each rule and its source):

* ``anthropic``: explicit ``cache_control`` breakpoints (at most 4, on tools, system and message
  blocks, in that order; ``ttl`` ``5m`` or ``1h``, the longer ones first). The prefix up to each
  breakpoint is cached when it reaches the model's minimum length. With A the prefix read from
  the cache, B the last 1-hour breakpoint's prefix and C the last breakpoint's: A tokens are
  read, B - A written for an hour, C - max(A, B) written for 5 minutes.
* ``openai``: automatic prefix caching of prompts of 1,024 tokens or more, cached in 128-token
  steps; a read costs the cached-input price and a write nothing extra.
* ``gemini``: implicit caching on Gemini 2.5 (1,024 tokens on Flash, 2,048 on Pro), reads at the
  cached price; an explicit ``cachedContent`` adds its own tokens, read, to the request's.
* ``none``: no published rule tokend follows (open models on their hosts): only a caller's
  ``prefix_tokens`` is read.

The cache state says what the cache holds: ``cold`` (a first call), ``warm`` (this very request
was sent before, within the cache's lifetime) or ``prefix_tokens: N`` (the caller knows that N
leading tokens are cached).

>>> split(CacheRule("openai"), 3000, (), WARM)
CacheSplit(read=2944, write_5m=0, write_1h=0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from tokend.core.counting.catalogue import ModelInfo
from tokend.core.errors import InvalidInput, shown

TTLS = ("5m", "1h")
PREFIX = "prefix_tokens:"
MAX_PREFIX_TOKENS = 1_000_000_000  # the largest prefix_tokens taken
MAX_BREAKPOINTS = 4  # Anthropic: "up to 4 cache breakpoints" (prompt caching docs)
# OpenAI: prompts of 1,024 tokens or more; the cached prefix grows in 128-token steps.
OPENAI_MINIMUM = 1024
OPENAI_STEP = 128
# Anthropic's minimum cacheable prompt length per model (prompt caching docs), by name prefix.
ANTHROPIC_MINIMUMS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-5", 4096), ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048), ("claude-3-haiku", 2048),
)
ANTHROPIC_DEFAULT_MINIMUM = 1024  # Sonnet 4.5, Opus 4.1, Opus 4, Sonnet 4, Sonnet 3.7, ...
# Gemini's implicit caching (Gemini 2.5 models only; the May 2025 announcement and docs).
GEMINI_MINIMUMS: tuple[tuple[str, int], ...] = (
    ("gemini-2.5-pro", 2048), ("gemini-2.5-flash", 1024),
)


@dataclass(frozen=True)
class CacheState:
    """What the cache holds before the call: ``cold``, ``warm`` or ``prefix`` (N tokens)."""

    kind: str
    prefix_tokens: int = 0

    def describe(self) -> str:
        return f"prefix_tokens: {self.prefix_tokens}" if self.kind == "prefix" else self.kind


COLD = CacheState("cold")
WARM = CacheState("warm")


def parse_cache(value: Any, field: str = "cache") -> CacheState:
    """A cache state: ``"cold"``, ``"warm"``, ``{"prefix_tokens": N}`` (JSON) or
    ``"prefix_tokens:N"`` (a flag, a proto string).

    >>> parse_cache({"prefix_tokens": 2048}).describe(), parse_cache("prefix_tokens:64").kind
    ('prefix_tokens: 2048', 'prefix')
    """
    if value in (None, "", "cold"):
        return COLD
    if value == "warm":
        return WARM
    if isinstance(value, str) and value.startswith(PREFIX):
        digits = value[len(PREFIX):].strip()
        return prefix_state(int(digits) if digits.isdigit() else digits,
                            f"{field}.prefix_tokens")
    if isinstance(value, Mapping) and set(value) == {"prefix_tokens"}:
        return prefix_state(value["prefix_tokens"], f"{field}.prefix_tokens")
    raise _invalid(field, f"unknown cache state {shown(value, 60)}: one of \"cold\", \"warm\", "
                   "\"prefix_tokens:N\" or {\"prefix_tokens\": N}")


def prefix_state(tokens: Any, field: str) -> CacheState:
    """``prefix_tokens: N``; N an integer from 0 to MAX_PREFIX_TOKENS."""
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise _invalid(field, f"must be a non-negative integer, not {shown(tokens, 40)}")
    if tokens > MAX_PREFIX_TOKENS:
        raise _invalid(field, f"is {tokens}, over {MAX_PREFIX_TOKENS:,} tokens (no model's "
                       "context comes near)")
    return CacheState("prefix", tokens)


@dataclass(frozen=True)
class CacheRule:
    """A vendor's caching rule for one model, and the shortest prefix it caches."""

    kind: str  # anthropic, openai, gemini, none
    minimum: int = 0

    def describe(self) -> str:
        return {"anthropic": f"Anthropic cache_control breakpoints (min {self.minimum} tokens)",
                "openai": "OpenAI automatic prefix caching (1,024+ tokens, 128-token steps)",
                "gemini": (f"Gemini implicit caching (min {self.minimum} tokens)"
                           if self.minimum else "no implicit caching for this Gemini model"),
                "none": "no caching rule: only a given prefix_tokens is read"}[self.kind]


def rule_for(info: ModelInfo | None) -> CacheRule:
    """The caching rule of a catalogued model (by its vendor)."""
    if info is None:
        return CacheRule("none")
    name = info.name.lower()
    if info.vendor == "anthropic":
        return CacheRule("anthropic", _by_prefix(name, ANTHROPIC_MINIMUMS,
                                                 ANTHROPIC_DEFAULT_MINIMUM))
    if info.vendor == "openai":
        return CacheRule("openai", OPENAI_MINIMUM)
    if info.vendor == "google":
        return CacheRule("gemini", _by_prefix(name, GEMINI_MINIMUMS, 0))
    return CacheRule("none")


def _by_prefix(name: str, table: Sequence[tuple[str, int]], default: int) -> int:
    return next((n for prefix, n in table if name.startswith(prefix)), default)


@dataclass(frozen=True)
class Breakpoint:
    """A ``cache_control`` marker: the field it sits on, its ttl and the prefix's tokens."""

    field: str
    ttl: str
    tokens: int = 0


@dataclass(frozen=True)
class CacheSplit:
    """Input tokens read from the cache and written to it (the rest is uncached)."""

    read: int = 0
    write_5m: int = 0
    write_1h: int = 0


def split(rule: CacheRule, total: int, points: Sequence[Breakpoint], state: CacheState
          ) -> CacheSplit:
    """How ``total`` input tokens split under ``rule`` for a cache in ``state``.

    ``points`` (Anthropic) are the breakpoints in request order, their ``tokens`` the prefix
    up to each, counted by the same rule as ``total``.

    >>> points = (Breakpoint("system[0]", "1h", 1500), Breakpoint("messages[0]", "5m", 2500))
    >>> split(CacheRule("anthropic", 1024), 2600, points, COLD)
    CacheSplit(read=0, write_5m=1000, write_1h=1500)
    >>> split(CacheRule("anthropic", 1024), 2600, points, CacheState("prefix", 1600))
    CacheSplit(read=1500, write_5m=1000, write_1h=0)
    """
    given = min(state.prefix_tokens, total)
    if rule.kind == "openai":
        cached = total if state.kind == "warm" else given if state.kind == "prefix" else 0
        return CacheSplit(read=openai_cached(cached))
    if rule.kind == "gemini":
        cached = total if state.kind == "warm" else given if state.kind == "prefix" else 0
        return CacheSplit(read=cached if rule.minimum and cached >= rule.minimum else 0)
    if rule.kind == "none":
        return CacheSplit(read=given if state.kind == "prefix" else 0)
    # Anthropic: only prefixes of the minimum length are cached at all.
    kept = [p for p in points if rule.minimum <= min(p.tokens, total)]
    if not kept:
        return CacheSplit()
    last = min(kept[-1].tokens, total)
    if state.kind == "warm":
        return CacheSplit(read=last)
    hit = 0 if state.kind == "cold" else max(
        (min(p.tokens, total) for p in kept if p.tokens <= given), default=0)
    hour = max((min(p.tokens, total) for p in kept if p.ttl == "1h"), default=0)
    write_1h = max(hour - hit, 0)
    return CacheSplit(read=hit, write_1h=write_1h, write_5m=max(last - max(hit, hour), 0))


def openai_cached(tokens: int) -> int:
    """The tokens OpenAI reads from its cache for a cached prefix of ``tokens``.

    >>> openai_cached(1023), openai_cached(1024), openai_cached(1300)
    (0, 1024, 1280)
    """
    if tokens < OPENAI_MINIMUM:
        return 0
    return tokens // OPENAI_STEP * OPENAI_STEP


# -- Anthropic's breakpoints in a Messages body ---------------------------------------------


@dataclass(frozen=True)
class Marker:
    """Where a breakpoint sits: ``section`` (tools, system, messages), index, block index."""

    field: str
    ttl: str
    section: str
    index: int
    block: int = -1


def anthropic_breakpoints(body: Mapping[str, Any]) -> list[Marker]:
    """The ``cache_control`` markers of an Anthropic Messages body, in cache order (tools,
    system, messages); refused when malformed, over 4, or a 1h one after a 5m one."""
    found: list[Marker] = []
    tools = body.get("tools")
    for i, tool in enumerate(tools if isinstance(tools, list) else ()):
        _marker(found, tool, f"tools[{i}]", "tools", i)
    system = body.get("system")
    for j, block in enumerate(system if isinstance(system, list) else ()):
        _marker(found, block, f"system[{j}]", "system", j)
    messages = body.get("messages")
    for m, message in enumerate(messages if isinstance(messages, list) else ()):
        given = message.get("content") if isinstance(message, Mapping) else None
        for b, block in enumerate(given if isinstance(given, list) else ()):
            at = f"messages[{m}].content[{b}]"
            _marker(found, block, at, "messages", m, sub=b)
            inner = block.get("content") if isinstance(block, Mapping) else None
            for k, item in enumerate(inner if isinstance(inner, list) else ()):
                _marker(found, item, f"{at}.content[{k}]", "messages", m, sub=b)
    if len(found) > MAX_BREAKPOINTS:
        raise _invalid(found[MAX_BREAKPOINTS].field + ".cache_control",
                       f"at most {MAX_BREAKPOINTS} cache_control breakpoints per request "
                       f"(Anthropic's limit); this one is number {MAX_BREAKPOINTS + 1}")
    for earlier, later in pairwise(found):
        if earlier.ttl == "5m" and later.ttl == "1h":
            raise _invalid(later.field + ".cache_control.ttl",
                           "a 1h breakpoint after a 5m one: Anthropic requires longer ttls "
                           f"first (the 5m one is {earlier.field})")
    return found


def _marker(found: list[Marker], block: Any, at: str, section: str, index: int, *,
            sub: int = -1) -> None:
    control = block.get("cache_control") if isinstance(block, Mapping) else None
    if control is None:
        return
    where = f"{at}.cache_control"
    if not isinstance(control, Mapping) or control.get("type") != "ephemeral":
        raise _invalid(where + ".type", "must be {\"type\": \"ephemeral\"} (with an optional "
                       "\"ttl\": \"5m\" or \"1h\")")
    ttl = control.get("ttl", "5m")
    if ttl not in TTLS:
        raise _invalid(where + ".ttl", f"must be \"5m\" or \"1h\", not {shown(ttl, 20)}")
    found.append(Marker(at, str(ttl), section, index, sub))


def anthropic_prefix(body: Mapping[str, Any], marker: Marker) -> dict[str, Any]:
    """The body cut after ``marker``'s block: what Anthropic caches at that breakpoint.

    >>> body = {"model": "m", "system": [{"type": "text", "text": "a"},
    ...                                  {"type": "text", "text": "b"}], "messages": []}
    >>> anthropic_prefix(body, Marker("system[0]", "5m", "system", 0))["system"]
    [{'type': 'text', 'text': 'a'}]
    """
    out = dict(body)
    if marker.section == "tools":
        out["tools"] = list(body["tools"])[: marker.index + 1]
        out.pop("system", None)
        out["messages"] = []
    elif marker.section == "system":
        out["system"] = list(body["system"])[: marker.index + 1]
        out["messages"] = []
    else:
        messages = list(body["messages"])
        last = dict(messages[marker.index])
        last["content"] = list(last["content"])[: marker.block + 1]
        out["messages"] = [*messages[: marker.index], last]
    return out


def _invalid(field: str, message: str) -> InvalidInput:
    exc = InvalidInput(f"{field}: {message}")
    exc.field = field  # type: ignore[attr-defined]
    return exc
