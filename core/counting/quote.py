"""What a call will cost: its exact (or estimated) input split by the vendor's caching rule,
its output bounded by 0 .. max_output_tokens, each part priced by genai-prices.

:func:`quote_counts` takes the counts (the whole request and the prefix up to each cache
breakpoint, all by the same rule: ``count_chat`` or the server's ``App.count``) and returns a
:class:`Quote`; :func:`quote_chat` and :func:`quote_anthropic` count through ``count_chat``
themselves (the library's way). ``Quote.as_dict`` is the JSON answer (``/quote``,
``tokend quote --json``).

>>> q = quote_chat([{"role": "user", "content": "hello"}], model="gpt-4o", max_output_tokens=10)
>>> q.input_tokens, q.output_tokens_max, q.as_dict()["usd_max"]
(8, 10, '0.00012')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from tokend.core.counting.caching import (
    COLD,
    Breakpoint,
    CacheState,
    anthropic_breakpoints,
    anthropic_prefix,
    rule_for,
    split,
)
from tokend.core.counting.catalogue import ModelCatalogue, ModelInfo, default_catalogue
from tokend.core.counting.chat import ChatCount, count_chat
from tokend.core.counting.prices import NoPrice, Priced, Snapshot, price
from tokend.core.counting.vendor_requests import ChatRequest
from tokend.core.counting.vendor_requests.anthropic import anthropic_request
from tokend.core.errors import InvalidInput

# The largest max_output_tokens a quote takes (no model's limit is near it).
MAX_OUTPUT_LIMIT = 10_000_000


@dataclass(frozen=True)
class QuoteCount:
    """The count a quote stands on: its total, exactness and the model it resolved to."""

    total: int
    exact: bool
    estimate_reason: str
    model: str
    info: ModelInfo | None = None
    # The name the caller gave, priced first (a newer spelling the catalogue resolves to an
    # older entry by prefix has its own price); the catalogue's name when genai-prices lacks it.
    asked: str = ""


@dataclass(frozen=True)
class Quote:
    """A call's token numbers and prices (``as_dict`` has the JSON fields)."""

    model: str
    exact: bool
    estimate_reason: str
    input_tokens: int  # all input, cache parts included (as genai-prices counts it)
    cache_write_tokens: int  # 5-minute and 1-hour writes
    cache_write_1h_tokens: int
    cache_read_tokens: int
    output_tokens_max: int
    cache: str
    cache_rule: str
    priced: Priced
    breakpoints: tuple[Breakpoint, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """The JSON answer; USD as decimal strings (exact, not floats)."""
        return {
            "model": self.model,
            "exact": self.exact,
            "estimate_reason": self.estimate_reason,
            "input_tokens": self.input_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_write_1h_tokens": self.cache_write_1h_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "output_tokens_max": self.output_tokens_max,
            "usd_min": usd_text(self.priced.usd_min),
            "usd_max": usd_text(self.priced.usd_max),
            "cache": self.cache,
            "cache_rule": self.cache_rule,
            "breakpoints": [{"field": b.field, "ttl": b.ttl, "prefix_tokens": b.tokens}
                            for b in self.breakpoints],
            "prices": {**self.priced.source, "provider": self.priced.provider,
                       "model": self.priced.price_model},
            "parts": [{"part": p.name, "tokens": p.tokens,
                       "usd_per_mtok": usd_text(p.usd_per_mtok), "usd": usd_text(p.usd)}
                      for p in self.priced.parts],
        }


def usd_text(value: Decimal) -> str:
    """A USD amount as a plain decimal string (never exponent notation; zero is "0").

    >>> usd_text(Decimal("1E-7")), usd_text(Decimal("0.00")), usd_text(Decimal("2.50"))
    ('0.0000001', '0', '2.50')
    """
    return "0" if value == 0 else format(value, "f")


def check_max_output(value: int | None, info: ModelInfo | None, field: str = "max_output_tokens"
                     ) -> int:
    """The output bound: ``value``, else the model's maximum; refused when negative or
    absurd (over the model's maximum, or MAX_OUTPUT_LIMIT without one)."""
    limit = info.max_output_tokens if info is not None and info.max_output_tokens else None
    if value is None:
        if limit is None:
            raise _invalid(field, "the model's maximum output is not catalogued: give "
                           "max_output_tokens")
        return limit
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _invalid(field, f"must be a non-negative integer, not {value!r}")
    cap = limit if limit is not None else MAX_OUTPUT_LIMIT
    if value > cap:
        whose = f"{info.name}'s maximum output" if limit is not None and info else "the limit"
        raise _invalid(field, f"is {value}, over {whose} ({cap} tokens)")
    return value


def quote_counts(
    count: QuoteCount,
    *,
    breakpoints: Sequence[Breakpoint] = (),
    cache: CacheState = COLD,
    max_output_tokens: int | None = None,
    provider: str | None = None,
    explicit_cache: bool = False,
    notes: Sequence[str] = (),
    snapshot: Snapshot | None = None,
) -> Quote:
    """The quote of a counted request (``breakpoints`` carry their prefixes' counts).

    ``explicit_cache`` (Gemini ``cachedContent``): the cache's own ``prefix_tokens`` are not
    in the request; they are added to the input, read.
    """
    info = count.info
    output = check_max_output(max_output_tokens, info)
    rule = rule_for(info)
    total = count.total
    if explicit_cache:
        if cache.kind != "prefix":
            raise _invalid("cache", "the request names a cachedContent whose tokens tokend "
                           "cannot see: give cache {\"prefix_tokens\": N} (the cache's "
                           "usageMetadata.totalTokenCount)")
        total += cache.prefix_tokens
        cut = split(rule, total, (), cache)
        cut = replace(cut, read=cache.prefix_tokens)
    else:
        cut = split(rule, total, breakpoints, cache)
    writes = cut.write_5m + cut.write_1h
    vendor = info.vendor if info else None
    def priced_as(name: str) -> Priced:
        return price(name, vendor, input_tokens=total, cache_write_tokens=writes,
                     cache_write_1h_tokens=cut.write_1h, cache_read_tokens=cut.read,
                     output_tokens_max=output, provider=provider, snapshot=snapshot)
    try:
        priced = priced_as(count.asked or count.model)
    except NoPrice:
        if not count.asked or count.asked == count.model:
            raise
        priced = priced_as(count.model)
    reasons = [r for r in (count.estimate_reason, *notes) if r]
    return Quote(
        model=count.model, exact=count.exact and not notes, estimate_reason="; ".join(reasons),
        input_tokens=total, cache_write_tokens=writes, cache_write_1h_tokens=cut.write_1h,
        cache_read_tokens=cut.read, output_tokens_max=output, cache=cache.describe(),
        cache_rule=rule.describe(), priced=priced, breakpoints=tuple(breakpoints),
        notes=tuple(notes))


def quote_chat(
    messages: Sequence[Mapping[str, Any]],
    *,
    model: str,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: Any = None,
    cache: CacheState = COLD,
    max_output_tokens: int | None = None,
    provider: str | None = None,
    catalogue: ModelCatalogue | None = None,
) -> Quote:
    """The quote of an OpenAI-style chat request, counted by ``count_chat``."""
    chat = count_chat(messages, model=model, tools=tools, tool_choice=tool_choice,
                      catalogue=catalogue)
    return quote_counts(_count_of(chat, catalogue, model), cache=cache,
                        max_output_tokens=max_output_tokens, provider=provider)


def quote_anthropic(
    body: Mapping[str, Any],
    *,
    cache: CacheState = COLD,
    max_output_tokens: int | None = None,
    provider: str | None = None,
    catalogue: ModelCatalogue | None = None,
) -> Quote:
    """The quote of an Anthropic Messages body: its ``cache_control`` breakpoints' prefixes
    are counted as the body cut after each breakpoint's block, by the same rule."""
    def counted(chat: ChatRequest) -> ChatCount:
        return count_chat(chat.messages, model=chat.model, tools=chat.tools or None,
                          tool_choice=chat.tool_choice or None, catalogue=catalogue)
    asked = body.get("model") if isinstance(body.get("model"), str) else ""
    return quote_vendor_body(body, anthropic_request, counted,
                             lambda c: _count_of(c, catalogue, str(asked)),
                             cache=cache, max_output_tokens=max_output_tokens,
                             provider=provider)


def quote_vendor_body(
    body: Mapping[str, Any],
    translate: Callable[[Mapping[str, Any]], ChatRequest],
    count: Callable[[ChatRequest], Any],
    as_count: Callable[[Any], QuoteCount],
    *,
    cache: CacheState = COLD,
    max_output_tokens: int | None = None,
    provider: str | None = None,
    anthropic: bool = True,
    snapshot: Snapshot | None = None,
) -> Quote:
    """A vendor body's quote, whatever does the counting (``count``: the library's
    ``count_chat`` or the server's ``App.count``; ``as_count`` reads its result)."""
    chat = translate(body)
    whole = as_count(count(chat))
    markers = anthropic_breakpoints(body) if anthropic else []
    points = [Breakpoint(m.field, m.ttl,
                         min(as_count(count(translate(anthropic_prefix(body, m)))).total,
                             whole.total))
              for m in markers]
    return quote_counts(whole, breakpoints=points, cache=cache,
                        max_output_tokens=max_output_tokens, provider=provider,
                        explicit_cache=bool(body.get("cachedContent")), notes=chat.notes,
                        snapshot=snapshot)


def _count_of(chat: ChatCount, catalogue: ModelCatalogue | None, asked: str = ""
              ) -> QuoteCount:
    info = (catalogue or default_catalogue()).find(chat.model) if chat.model else None
    return QuoteCount(chat.total, chat.exact, chat.estimate_reason, chat.model or "", info,
                      asked)


def parts_total(quote: Quote) -> Decimal:
    """The parts' USD summed (equal to ``usd_max``: genai-prices' total)."""
    return sum((p.usd for p in quote.priced.parts), Decimal(0))


def _invalid(field: str, message: str) -> InvalidInput:
    exc = InvalidInput(f"{field}: {message}")
    exc.field = field  # type: ignore[attr-defined]
    return exc
