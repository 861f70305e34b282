"""The vendor count-tokens endpoints follow the vendors' documented schemas where tokend's
reading differed (issue 32): Responses' optional ``input``; refusals as the API refuses."""

from __future__ import annotations

from http_api import HttpServed, call

from tokend.core.counting import count_chat

TOOL = {"type": "function", "name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def test_responses_without_input_is_counted(http_server: HttpServed) -> None:
    """No input: 0 tokens; tools alone: what their definitions cost (count_chat's rule)."""
    empty = call(http_server.base, "POST", "/v1/responses/input_tokens", {"model": "gpt-4o"})
    assert empty.status == 200, empty.body
    assert empty.body["input_tokens"] == 0
    tools = call(http_server.base, "POST", "/v1/responses/input_tokens",
                 {"model": "gpt-4o", "tools": [TOOL]})
    assert tools.status == 200, tools.body
    function = {"type": "function", "function": {k: v for k, v in TOOL.items() if k != "type"}}
    expected = count_chat([], model="gpt-4o", tools=[function]).total
    assert tools.body["input_tokens"] == expected > 0
    assert tools.body["tokend"]["breakdown"]["tools"] == expected


def test_anthropic_lone_surrogate_refused_like_count(http_server: HttpServed) -> None:
    """The same "\\ud800" escape is refused by /count and /v1/messages/count_tokens alike."""
    body = (b'{"model": "claude-sonnet-4-5", "messages": [{"role": "user", '
            b'"content": "a\\ud800"}]}')
    vendor = call(http_server.base, "POST", "/v1/messages/count_tokens", body)
    own = call(http_server.base, "POST", "/count", body.replace(b"claude-sonnet-4-5",
                                                                b"gpt-4o"))
    assert vendor.status == own.status == 400
    assert vendor.body["error"]["type"] == "invalid_request_error"
    assert "messages[0].content" in vendor.body["error"]["message"]
    assert "must be valid UTF-8" in vendor.body["error"]["message"]
    assert "must be valid UTF-8" in own.body["error"]["message"]
