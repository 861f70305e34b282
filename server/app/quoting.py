"""Quote as a plain call: a count request (or a vendor's body) counted by ``App.count``'s own
path, its input split by the vendor's caching rule and priced (``tokend.core.counting.quote``).

The quote's fields are checked before any counting: ``max_output_tokens`` (not negative, not
over the model's maximum), the cache state, the vendor's name. A vendor body's breakpoint
prefixes are each a count of the body cut after the breakpoint's block, through the same
``App.count`` (so under the same limits); errors about the body name ``vendor_body.<field>``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tokend.core.counting import ModelCatalogue
from tokend.core.counting.caching import parse_cache
from tokend.core.counting.prices import Snapshot
from tokend.core.counting.quote import (
    MAX_OUTPUT_LIMIT,
    Quote,
    QuoteCount,
    quote_counts,
    quote_vendor_body,
)
from tokend.core.counting.vendor_requests import ChatRequest
from tokend.core.counting.vendor_requests.anthropic import anthropic_request
from tokend.core.counting.vendor_requests.chat_completions import chat_completions_request
from tokend.core.counting.vendor_requests.gemini import gemini_request
from tokend.core.counting.vendor_requests.responses import responses_request
from tokend.core.errors import InvalidInput, TokendError, UnknownTokenizer
from tokend.server.app.counting import Counted, CountRequest
from tokend.server.app.fields import with_field
from tokend.server.app.messages import ChatMessage, ContentPart, ImagePart, ToolCall

# The vendor bodies a quote takes, by the name QuoteRequest.vendor gives.
VENDORS = ("anthropic", "openai-responses", "openai-chat", "gemini")


@dataclass(frozen=True, slots=True)
class QuoteRequest:
    """A count request (``count``) or a vendor body (``vendor`` + ``vendor_body``), and what
    the quote needs besides: the output bound, the cache state, the price's provider."""

    count: CountRequest = field(default_factory=CountRequest)
    vendor: str = ""
    # An object (HTTP's vendor_body) or its JSON text (gRPC's vendor_body_json).
    vendor_body: Mapping[str, Any] | str | None = None
    max_output_tokens: int | None = None  # None: the model's maximum
    cache: Any = ""  # "cold", "warm", "prefix_tokens:N" or {"prefix_tokens": N}
    provider: str = ""


def check(request: QuoteRequest) -> None:
    """The quote's own fields, before anything is counted."""
    out = request.max_output_tokens
    if out is not None and (out < 0 or out > MAX_OUTPUT_LIMIT):
        raise with_field(InvalidInput(
            f"max_output_tokens is {out}: it must be from 0 to {MAX_OUTPUT_LIMIT} (and at most "
            "the model's maximum output); leave it unset for the model's maximum"),
            "max_output_tokens")
    if request.vendor_body is not None and request.vendor not in VENDORS:
        raise with_field(InvalidInput(
            f"unknown vendor {request.vendor[:40]!r}: one of {', '.join(VENDORS)} (the shape "
            "of vendor_body)"), "vendor")
    if request.vendor_body is None and request.vendor:
        raise with_field(InvalidInput("vendor names the shape of vendor_body, which is "
                                      "missing"), "vendor_body")


def quote(
    request: QuoteRequest,
    count: Callable[[CountRequest], Counted],
    models: ModelCatalogue,
    snapshot: Snapshot | None = None,
) -> Quote:
    """The quote of ``request``; ``count`` is ``App.count``'s counting (limits, the rule);
    ``snapshot`` the registry's newer prices (``tokend prices update``), else the shipped."""
    check(request)
    cache = parse_cache(request.cache)

    body = _body(request.vendor_body)
    given = body.get("model") if body is not None else None
    asked = request.count.model or (given if isinstance(given, str) else "")

    def as_count(counted: Counted) -> QuoteCount:
        info = models.find(counted.model) if counted.model else None
        return QuoteCount(counted.total, counted.exact, counted.estimate_reason,
                          counted.model or request.count.model, info, asked)

    provider = request.provider or None
    if body is None:
        counted = count(request.count)
        if not counted.model:
            raise with_field(UnknownTokenizer(
                "a quote needs a catalogued model (its prices and caching rule): set model"),
                "model")
        return _priced(lambda: quote_counts(
            as_count(counted), cache=cache,
            max_output_tokens=request.max_output_tokens, provider=provider,
            snapshot=snapshot))
    translate = _translator(request.vendor, request.count.model)

    def counted_chat(chat: ChatRequest) -> Counted:
        return count(count_request(chat))
    try:
        return _priced(lambda: quote_vendor_body(
            body, translate, counted_chat, as_count, cache=cache,
            max_output_tokens=request.max_output_tokens, provider=provider,
            anthropic=request.vendor == "anthropic", snapshot=snapshot))
    except TokendError as exc:
        named = getattr(exc, "field", None)
        if isinstance(named, str) and named not in ("max_output_tokens", "cache", "model"):
            message = str(exc).removeprefix(f"{named}: ")
            exc.args = (message,)
            raise with_field(exc, f"vendor_body.{named}") from None
        raise


def _body(given: Mapping[str, Any] | str | None) -> Mapping[str, Any] | None:
    """The vendor body as an object (parsed from gRPC's JSON text)."""
    if given is None or isinstance(given, Mapping):
        return given
    try:
        parsed = json.loads(given)
    except ValueError as exc:
        raise with_field(InvalidInput(f"vendor_body_json is not JSON: {exc}"),
                         "vendor_body_json") from None
    if not isinstance(parsed, dict):
        raise with_field(InvalidInput("vendor_body_json must be a JSON object"),
                         "vendor_body_json")
    return parsed


def _priced(make: Callable[[], Quote]) -> Quote:
    """A quote whose field-less errors are tagged (no price: ``model``)."""
    try:
        return make()
    except UnknownTokenizer as exc:
        if getattr(exc, "field", None) is None:
            raise with_field(exc, "model") from None
        raise


def _translator(vendor: str, model: str) -> Callable[[Mapping[str, Any]], ChatRequest]:
    if vendor == "anthropic":
        return anthropic_request
    if vendor == "openai-responses":
        return responses_request
    if vendor == "openai-chat":
        return chat_completions_request

    def gemini(body: Mapping[str, Any]) -> ChatRequest:
        name = model or body.get("model")
        if not isinstance(name, str) or not name:
            raise with_field(InvalidInput("a Gemini body names no model: set model (or the "
                                          "body's \"model\")"), "model")
        return gemini_request(name, {k: v for k, v in body.items() if k != "model"})
    return gemini


def count_request(chat: ChatRequest) -> CountRequest:
    """The app's typed count request of a translated vendor request.

    A request with no message at all that its vendor accepts (``empty_ok``: a Responses body
    without ``input`` or ``instructions``) is counted as one empty text: 0 tokens, plus its
    tools.
    """
    return CountRequest(
        model=chat.model,
        texts=("",) if chat.empty_ok and not chat.messages else (),
        messages=[_message(m) for m in chat.messages],
        tools_json=json.dumps(chat.tools, ensure_ascii=False) if chat.tools else "",
        tool_choice=chat.tool_choice,
    )


def _message(m: Mapping[str, Any]) -> ChatMessage:
    given = m.get("content", "")
    parts: tuple[ContentPart, ...] = ()
    if not isinstance(given, str):
        parts = tuple(
            ContentPart(image=ImagePart(p["width"], p["height"], p["image_url"]["detail"]))
            if p["type"] == "image_url" else ContentPart(text=p["text"])
            for p in given)
        given = ""
    calls = tuple(ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"])
                  for c in m.get("tool_calls", ()))
    return ChatMessage(m["role"], given, m.get("name", ""), parts, calls,
                       m.get("tool_call_id", ""))
