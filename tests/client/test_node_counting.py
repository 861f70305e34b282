"""The Node.js client's countTokens (model, tools, images), truncate and chunk against a real
``tokend serve``; expected values from tokend.core.counting (proven in tests/core/counting)."""

from __future__ import annotations

from typing import Any

from node_client import run_node

from tokend.core.counting import chunk, count_chat, truncate
from tokend.core.counting.caching import WARM, CacheState
from tokend.core.counting.quote import quote_anthropic, quote_chat

TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look a word up",
    "parameters": {"type": "object", "properties": {"word": {"type": "string"}},
                   "required": ["word"]}}}]
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You define words."},
    {"role": "user", "content": [
        {"type": "text", "text": "What is this? And 'serendipity'?"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "high"},
         "width": 2048, "height": 4096}]},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
     "function": {"name": "lookup", "arguments": "{\"word\": \"serendipity\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "luck in finding good things"},
]
DOC = "Node reads this paragraph. It has two sentences.\n\n" * 6


class TestNodeCounting:
    def test_count_truncate_chunk(self, tokend_service: Any) -> None:
        payload = {
            "tokenizer": "gpt-4o",
            "texts": ["x"],
            "messages": MESSAGES,
            "count": {"tools": TOOLS, "tool_choice": "lookup"},
            "truncate": {"text": DOC, "max_tokens": 11, "keep": "tail"},
            "chunk": {"text": DOC, "max_tokens": 15, "overlap": 3},
        }
        status, out, err = run_node(tokend_service.target, payload)
        assert status == 0, err
        choice = {"type": "function", "function": {"name": "lookup"}}
        expected = count_chat(MESSAGES, model="gpt-4o", tools=TOOLS, tool_choice=choice)
        counted = out["count"]
        assert counted["messages_count"] == counted["total"] == expected.total
        assert counted["images_count"] == 1105 and counted["tools_count"] == expected.tools
        assert counted["exact"] is False and counted["estimate_reason"] == expected.estimate_reason
        assert counted["context_window"] == 128000 and counted["model"] == "gpt-4o"
        assert counted["breakdown"] == expected.breakdown.as_dict()
        assert sum(counted["breakdown"].values()) == counted["total"]
        cut = truncate("o200k_base", DOC, 11, keep="tail")
        assert out["truncate"]["text"] == cut.text and out["truncate"]["ids"] == cut.ids
        pieces = chunk("o200k_base", DOC, 15, overlap=3)
        assert [(c["text"], c["start"], c["end"], c["byte_start"], c["count"])
                for c in out["chunks"]] == [
            (c.text, c.start, c.end, c.byte_start, c.count) for c in pieces]

    def test_quote(self, tokend_service: Any) -> None:
        """Node's quote() answers what the library's quote does (an Anthropic body too)."""
        chat = [{"role": "system", "content": "Cache me. " * 600},
                {"role": "user", "content": "What is cached?"}]
        body = {"model": "claude-sonnet-4-5", "system": [
            {"type": "text", "text": "Cache me. " * 600, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "What is cached?"}]}
        status, out, err = run_node(tokend_service.target, {
            "tokenizer": "gpt-4o", "texts": ["x"], "messages": chat,
            "quote": {"model": "gpt-4o", "cache": "warm", "max_output_tokens": 50}})
        assert status == 0, err
        assert out["quote"] == quote_chat(chat, model="gpt-4o", cache=WARM,
                                          max_output_tokens=50).as_dict()
        status, out, err = run_node(tokend_service.target, {
            "tokenizer": "gpt-4o", "texts": ["x"],
            "quote": {"model": "", "vendor": "anthropic", "vendor_body": body,
                      "cache": {"prefix_tokens": 100000}, "max_output_tokens": 50}})
        assert status == 0, err
        expected = quote_anthropic(body, cache=CacheState("prefix", 100000),
                                   max_output_tokens=50).as_dict()
        assert out["quote"] == expected and expected["cache_read_tokens"] > 0

    def test_error_reaches_node(self, tokend_service: Any) -> None:
        payload = {"tokenizer": "o200k_base", "texts": ["x"],
                   "chunk": {"text": "abc", "max_tokens": 2, "overlap": 2}}
        status, out, _ = run_node(tokend_service.target, payload)
        assert status == 1 and out["error"]["code"] == 3  # INVALID_ARGUMENT
        assert "overlap" in out["error"]["details"]
