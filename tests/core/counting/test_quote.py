"""Price quotes: the input split by each vendor's caching rule (from the vendors' documented
examples), each part priced exactly as genai_prices.calc_price prices the same token numbers,
and bad quote arguments refused naming the field."""

from __future__ import annotations

import base64
import doctest
import importlib
import io
from decimal import Decimal
from typing import Any

import genai_prices
import pytest
from PIL import Image

from tokend.core.counting import count_chat
from tokend.core.counting.caching import (
    COLD,
    WARM,
    Breakpoint,
    CacheRule,
    CacheSplit,
    CacheState,
    anthropic_breakpoints,
    openai_cached,
    parse_cache,
    rule_for,
    split,
)
from tokend.core.counting.catalogue import default_catalogue
from tokend.core.counting.prices import NoPrice, price
from tokend.core.counting.quote import (
    Quote,
    QuoteCount,
    quote_anthropic,
    quote_chat,
    quote_counts,
    quote_vendor_body,
)
from tokend.core.counting.vendor_requests.anthropic import anthropic_request
from tokend.core.counting.vendor_requests.gemini import gemini_request
from tokend.core.errors import InvalidInput

TOLERANCE = Decimal("1e-9")
LONG = "The quick brown fox jumps over the lazy dog. " * 400  # ~4,000 tokens
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def b64_png(size: tuple[int, int]) -> str:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 200, 10)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def usage_price(model: str, provider: str, **usage: int) -> Decimal:
    """genai-prices' own price of a usage (the reference each part is checked against)."""
    kept = {k: v for k, v in usage.items() if v}
    total: Decimal = genai_prices.calc_price(genai_prices.Usage(**kept), model,
                                             provider_id=provider).total_price
    return total


def check_prices(quote: Quote) -> None:
    """Each part equals calc_price on that part's tokens alone; the totals calc_price on the
    whole usage; the parts add up to the total (prompts here are below every price tier)."""
    model, provider = quote.priced.price_model, quote.priced.provider
    parts = {p.name: p for p in quote.priced.parts}
    alone = {
        "input": {"input_tokens": parts["input"].tokens},
        "cache_write": {"input_tokens": parts["cache_write"].tokens,
                        "cache_write_tokens": parts["cache_write"].tokens},
        "cache_write_1h": {"input_tokens": parts["cache_write_1h"].tokens,
                           "cache_write_tokens": parts["cache_write_1h"].tokens,
                           "cache_write_1h_tokens": parts["cache_write_1h"].tokens},
        "cache_read": {"input_tokens": parts["cache_read"].tokens,
                       "cache_read_tokens": parts["cache_read"].tokens},
        "output": {"output_tokens": parts["output"].tokens},
    }
    for name, usage in alone.items():
        assert abs(parts[name].usd - usage_price(model, provider, **usage)) <= TOLERANCE, name
    whole = {"input_tokens": quote.input_tokens, "cache_write_tokens": quote.cache_write_tokens,
             "cache_write_1h_tokens": quote.cache_write_1h_tokens,
             "cache_read_tokens": quote.cache_read_tokens}
    assert abs(quote.priced.usd_min - usage_price(model, provider, **whole)) <= TOLERANCE
    high = usage_price(model, provider, **whole, output_tokens=quote.output_tokens_max)
    assert abs(quote.priced.usd_max - high) <= TOLERANCE
    assert abs(sum(p.usd for p in quote.priced.parts) - high) <= TOLERANCE
    assert sum(p.tokens for p in quote.priced.parts if p.name != "output") == quote.input_tokens


class TestDocumentedRules:
    def test_openai_cached_tokens_in_128_steps(self) -> None:
        """OpenAI's docs: prompts of 1,024+ tokens, cached in 128-token steps; their example
        usage reports 1,920 cached of a 2,006-token prompt."""
        assert split(CacheRule("openai", 1024), 2006, (), WARM) == CacheSplit(read=1920)
        assert [openai_cached(n) for n in (1023, 1024, 1151, 1152)] == [0, 1024, 1024, 1152]
        assert split(CacheRule("openai", 1024), 2006, (), COLD) == CacheSplit()

    def test_anthropic_mixed_ttls(self) -> None:
        """Anthropic's docs, mixing TTLs: A read, B - A written for 1h, C - B for 5m."""
        points = (Breakpoint("tools[0]", "1h", 2000), Breakpoint("system[0]", "1h", 5000),
                  Breakpoint("messages[0].content[0]", "5m", 9000))
        rule = CacheRule("anthropic", 1024)
        assert split(rule, 9100, points, COLD) == CacheSplit(0, 4000, 5000)
        assert split(rule, 9100, points, CacheState("prefix", 2000)) == \
            CacheSplit(2000, 4000, 3000)
        assert split(rule, 9100, points, WARM) == CacheSplit(read=9000)

    def test_anthropic_prefix_below_minimum_is_not_cached(self) -> None:
        """A prefix shorter than the model's minimum is neither written nor read."""
        rule = rule_for(default_catalogue().find("claude-haiku-4-5"))
        assert rule.minimum == 4096
        assert split(rule, 5000, (Breakpoint("system[0]", "5m", 3000),), COLD) == CacheSplit()
        assert rule_for(default_catalogue().find("claude-sonnet-4-5")).minimum == 1024

    def test_gemini_implicit_minimums(self) -> None:
        """Gemini 2.5 Flash caches from 1,024 tokens, 2.5 Pro from 2,048; 1.5 not at all."""
        flash = rule_for(default_catalogue().find("gemini-2.5-flash"))
        pro = rule_for(default_catalogue().find("gemini-2.5-pro"))
        assert split(flash, 1500, (), WARM).read == 1500
        assert split(pro, 1500, (), WARM).read == 0
        assert split(rule_for(default_catalogue().find("gemini-1.5-pro")), 9000, (), WARM) \
            == CacheSplit()

    def test_cache_states(self) -> None:
        assert parse_cache("cold") == COLD and parse_cache(None) == COLD
        assert parse_cache({"prefix_tokens": 7}) == CacheState("prefix", 7)
        for bad in ("hot", {"prefix_tokens": -1}, {"prefix_tokens": "9"}, {"n": 1}):
            with pytest.raises(InvalidInput, match=r"^cache"):
                parse_cache(bad)


class TestAnthropicBreakpoints:
    def body(self, *, tools: bool = False, image: bool = False, ttl: str = "5m"
             ) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": LONG,
                                         "cache_control": {"type": "ephemeral", "ttl": ttl}}]
        if image:
            blocks.insert(0, {"type": "image", "source": {
                "type": "base64", "media_type": "image/png", "data": b64_png((800, 600))}})
        body: dict[str, Any] = {
            "model": "claude-sonnet-4-5",
            "system": [{"type": "text", "text": "You answer briefly. " * 300,
                        "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            "messages": [{"role": "user", "content": blocks},
                         {"role": "assistant", "content": "Noted."},
                         {"role": "user", "content": "What does the fox do?"}]}
        if tools:
            body["tools"] = [{"name": "get_weather", "description": "Weather in a city",
                              "input_schema": {"type": "object", "properties": {}}}]
        return body

    def counted(self, body: dict[str, Any]) -> int:
        chat = anthropic_request(body)
        return count_chat(chat.messages, model=chat.model, tools=chat.tools or None).total

    def test_prefix_is_the_count_of_the_cut_request(self) -> None:
        """Each breakpoint's prefix is the count of the body cut after its block."""
        body = self.body(tools=True)
        quote = quote_anthropic(body)
        system_cut = {**body, "system": body["system"], "messages": []}
        message_cut = {**body, "messages": [body["messages"][0]]}
        assert [b.tokens for b in quote.breakpoints] == [self.counted(system_cut),
                                                         self.counted(message_cut)]
        assert quote.cache_write_1h_tokens == quote.breakpoints[0].tokens
        assert quote.cache_write_tokens == quote.breakpoints[1].tokens
        assert quote.input_tokens == self.counted(body)

    def test_limits(self) -> None:
        body = self.body()
        body["messages"][2] = {"role": "user", "content": [
            {"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}}
            for i in range(4)]}
        fifth = r"^messages\[2\]\.content\[2\]\.cache_control: at most 4"
        with pytest.raises(InvalidInput, match=fifth):
            anthropic_breakpoints(body)
        with pytest.raises(InvalidInput, match=r"ttl: a 1h breakpoint after a 5m"):
            anthropic_breakpoints(self.body(ttl="5m") | {"tools": [
                {"name": "t", "input_schema": {}, "cache_control": {"type": "ephemeral"}}]})
        with pytest.raises(InvalidInput, match=r"ttl: must be"):
            anthropic_breakpoints(self.body(ttl="2h"))


CASES = [(m, c, t, i) for m in ("gpt-4o", "gpt-4.1", "o3", "claude-sonnet-4-5",
                                "claude-opus-4-1", "gemini-2.5-pro", "gemini-2.5-flash")
         for c in ("cold", "warm") for t in (False, True) for i in (False, True)]


def _quote(model: str, cache: str, tools: bool, image: bool) -> Quote:
    state = parse_cache(cache)
    if model.startswith("claude"):
        body = TestAnthropicBreakpoints().body(tools=tools, image=image)
        return quote_anthropic(body, cache=state, max_output_tokens=1000)
    if model.startswith("gemini"):
        parts: list[dict[str, Any]] = [{"text": LONG}]
        if image:
            parts.append({"inlineData": {"mimeType": "image/png", "data": b64_png((800, 600))}})
        gbody: dict[str, Any] = {"contents": [{"role": "user", "parts": parts}]}
        if tools:
            gbody["tools"] = [{"functionDeclarations": [{"name": "get_weather",
                                                         "description": "Weather"}]}]
        def counted(chat: Any) -> Any:
            return count_chat(chat.messages, model=chat.model, tools=chat.tools or None)
        return quote_vendor_body(
            gbody, lambda b: gemini_request(model, b), counted,
            lambda c: QuoteCount(c.total, c.exact, c.estimate_reason, c.model,
                                 default_catalogue().find(c.model)),
            cache=state, max_output_tokens=1000, anthropic=False)
    content: Any = LONG
    if image:
        content = [{"type": "text", "text": LONG},
                   {"type": "image_url", "image_url": {"url": "x", "width": 800, "height": 600}}]
    return quote_chat([{"role": "system", "content": "Be brief."},
                       {"role": "user", "content": content}], model=model,
                      tools=TOOLS if tools else None, cache=state, max_output_tokens=1000)


@pytest.mark.parametrize(("model", "cache", "tools", "image"), CASES)
def test_parts_priced_as_genai_prices(model: str, cache: str, tools: bool, image: bool) -> None:
    """Each part's USD is calc_price on the same tokens (1e-9), the split follows the rule."""
    quote = _quote(model, cache, tools, image)
    check_prices(quote)
    rule = rule_for(default_catalogue().find(model))
    if cache == "cold":
        assert quote.cache_read_tokens == 0
    elif rule.kind == "openai":
        assert quote.cache_read_tokens == openai_cached(quote.input_tokens) > 0
    elif rule.kind == "gemini":
        assert quote.cache_read_tokens == quote.input_tokens
    else:
        assert quote.cache_read_tokens == quote.breakpoints[-1].tokens > 0
        assert quote.cache_write_tokens == 0
    if model.startswith("claude"):
        assert not quote.exact and "estimate" in quote.estimate_reason
        if cache == "cold":
            assert quote.cache_write_tokens == quote.breakpoints[-1].tokens
            assert quote.cache_write_1h_tokens == quote.breakpoints[0].tokens


class TestQuoteFields:
    def test_json_fields(self) -> None:
        """The JSON answer's documented fields, USD as decimal strings."""
        answer = quote_chat([{"role": "user", "content": "hi"}], model="gpt-4o").as_dict()
        for key in ("model", "exact", "input_tokens", "cache_write_tokens",
                    "cache_write_1h_tokens", "cache_read_tokens", "output_tokens_max",
                    "usd_min", "usd_max", "prices", "parts"):
            assert key in answer
        assert isinstance(answer["usd_max"], str) and Decimal(answer["usd_max"]) > 0
        assert answer["prices"]["source"] == "genai-prices"
        assert answer["prices"]["version"] == genai_prices.__version__
        assert answer["output_tokens_max"] == default_catalogue().get("gpt-4o").max_output_tokens

    @pytest.mark.parametrize("bad", [-1, 10**12, True])
    def test_bad_max_output(self, bad: int) -> None:
        with pytest.raises(InvalidInput, match=r"^max_output_tokens"):
            quote_chat([{"role": "user", "content": "hi"}], model="gpt-4o",
                       max_output_tokens=bad)

    def test_no_price(self) -> None:
        """A model genai-prices does not price is a NOT_FOUND naming the model."""
        with pytest.raises(NoPrice, match="no price for model 'gpt2'"):
            price("gpt2", "openai", input_tokens=10)

    def test_explicit_cached_content_needs_prefix(self) -> None:
        """Gemini cachedContent: its tokens are read on top of the request's."""
        count = QuoteCount(100, False, "e", "gemini-2.5-flash",
                           default_catalogue().find("gemini-2.5-flash"))
        with pytest.raises(InvalidInput, match=r"^cache: the request names a cachedContent"):
            quote_counts(count, explicit_cache=True, max_output_tokens=0)
        quote = quote_counts(count, explicit_cache=True, cache=CacheState("prefix", 5000),
                             max_output_tokens=0)
        assert (quote.input_tokens, quote.cache_read_tokens) == (5100, 5000)
        check_prices(quote)


@pytest.mark.parametrize("name", ["caching", "prices", "quote"])
def test_docstrings(name: str) -> None:
    module = importlib.import_module(f"tokend.core.counting.{name}")
    assert doctest.testmod(module).failed == 0
