"""count_tokens with models and tools, truncate and chunk, through both clients and a real
``tokend serve``; the expected values come from tokend.core.counting (proven in tests/core)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tokend.client import AsyncClient, Client, CountBreakdown, TextChunk, TruncateResult
from tokend.core import errors as core
from tokend.core.counting import chunk, count_chat, truncate

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"},
         "width": 640, "height": 480}]},
]
DOC = "A first paragraph. It has sentences.\n\n" * 12 + "The end."


class TestSyncClient:
    def test_count_tokens_with_model_tools_and_images(self, client: Client) -> None:
        result = client.count_tokens("gpt-4o", messages=MESSAGES, tools=TOOLS,
                                     tool_choice="none")
        expected = count_chat(MESSAGES, model="gpt-4o", tools=TOOLS, tool_choice="none")
        assert result.total == result.messages_count == expected.total
        assert result.images_count == 85 and result.tools_count == expected.tools
        assert not result.exact and result.estimate_reason == expected.estimate_reason
        assert result.context_window == 128000
        assert result.remaining == 128000 - expected.total and result.fits
        assert result.breakdown == CountBreakdown(**expected.breakdown.as_dict())
        assert result.breakdown.total == result.total and result.breakdown.images == 85

    def test_count_breakdown_with_texts(self, client: Client) -> None:
        """Plain texts are their own part; every part sums to the total."""
        result = client.count_tokens("gpt-4o", ["one two three"], messages=MESSAGES[:1])
        expected = count_chat(MESSAGES[:1], model="gpt-4o").breakdown
        assert result.breakdown == CountBreakdown(**expected.with_texts(3).as_dict())
        assert result.breakdown.total == result.total

    def test_exact_count_for_a_verified_model(self, client: Client) -> None:
        result = client.count_tokens("gpt-4", messages=[{"role": "user", "content": "hi"}],
                                     max_tokens=8)
        assert result.exact and result.chat_rule == "openai"
        assert (result.total, result.fits, result.remaining) == (8, True, 0)  # 3 + 1 + 1 + 3

    def test_truncate(self, client: Client) -> None:
        result = client.truncate("o200k_base", DOC, 20, keep="both", marker=" [...] ")
        expected = truncate("o200k_base", DOC, 20, keep="both", marker=" [...] ")
        assert isinstance(result, TruncateResult)
        assert (result.text, result.ids, result.count) == (expected.text, expected.ids,
                                                           expected.count)
        assert result.tokenizer == "o200k_base" and result.truncated

    def test_chunk(self, client: Client) -> None:
        pieces = client.chunk("cl100k_base", DOC, 16, overlap=2)
        expected = chunk("cl100k_base", DOC, 16, overlap=2)
        assert all(isinstance(p, TextChunk) for p in pieces)
        assert [(p.text, p.start, p.end, p.byte_start, p.byte_end, p.count) for p in pieces] == [
            (c.text, c.start, c.end, c.byte_start, c.byte_end, c.count) for c in expected]

    def test_errors_map_to_core_classes(self, client: Client) -> None:
        with pytest.raises(core.InvalidInput, match="marker"):
            client.truncate("o200k_base", DOC, 1, keep="both", marker="<<< cut here >>>")
        with pytest.raises(core.InvalidInput, match="overlap"):
            client.chunk("o200k_base", DOC, 4, overlap=4)


class TestAsyncClient:
    def test_the_same_through_asyncio(self, tokend_service: Any) -> None:
        async def main() -> tuple[Any, Any, Any]:
            async with AsyncClient(tokend_service.target, timeout=30) as tok:
                return (
                    await tok.count_tokens("gpt-4o", messages=MESSAGES, tools=TOOLS),
                    await tok.truncate("o200k_base", DOC, 12, keep="tail"),
                    await tok.chunk("o200k_base", DOC, 16),
                )

        counted, cut, pieces = asyncio.run(main())
        expected = count_chat(MESSAGES, model="gpt-4o", tools=TOOLS)
        assert counted.total == expected.total
        assert counted.breakdown == CountBreakdown(**expected.breakdown.as_dict())
        assert cut.text == truncate("o200k_base", DOC, 12, keep="tail").text
        assert [p.text for p in pieces] == [c.text for c in chunk("o200k_base", DOC, 16)]
        assert "".join(p.text for p in pieces) == DOC
