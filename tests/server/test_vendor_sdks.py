"""The vendors' own SDKs, pointed at a real ``tokend serve`` by their base URL, get counts.

``anthropic`` (messages.count_tokens), ``openai`` (responses.input_tokens.count) and
``google-genai`` (models.count_tokens) call tokend's vendor endpoints; each count must equal
``POST /count`` for the same chat written in tokend's own API (not a number written here),
say exact=false with the reason for Claude and Gemini and exact for gpt-4o; bad input raises
the SDK's own error with the vendor's shape, naming the field; the HTTP guards still apply.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from http_api import HttpServed, call
from PIL import Image

from tokend.core.counting import count_chat
from tokend.core.counting.calibrate import request_chat

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS_JSON = json.dumps([{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city", "parameters": SCHEMA}}])
SYSTEM = "You are a terse assistant. Answer in one sentence."
QUESTION = "What is the capital of France, and what is it famous for?"
ANSWER = "Paris; the Eiffel Tower."
FOLLOW_UP = "And Italy?"


def png(width: int, height: int) -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def count(server: HttpServed, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /count``'s answer (200 required)."""
    answer = call(server.base, "POST", "/count", body)
    assert answer.status == 200, answer.body
    return dict(answer.body)


CHAT = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": ANSWER}, {"role": "user", "content": FOLLOW_UP}]


@pytest.fixture(scope="module")
def claude(http_server: HttpServed) -> anthropic.Anthropic:
    """The Anthropic SDK on tokend (the key is sent and ignored)."""
    return anthropic.Anthropic(base_url=http_server.base, api_key="sk-ant-ignored",
                               max_retries=0)


@pytest.fixture(scope="module")
def oai(http_server: HttpServed) -> openai.OpenAI:
    return openai.OpenAI(base_url=http_server.base + "/v1", api_key="sk-ignored",
                         max_retries=0)


@pytest.fixture(scope="module")
def gem(http_server: HttpServed) -> genai.Client:
    return genai.Client(api_key="ignored", http_options=genai_types.HttpOptions(
        base_url=http_server.base, api_version="v1beta"))


class TestAnthropic:
    def test_chat_equals_count(self, claude: anthropic.Anthropic,
                               http_server: HttpServed) -> None:
        """A chat with a system prompt: the count /count gives, an estimate with its reason."""
        got = claude.messages.count_tokens(
            model="claude-sonnet-4-5", system=SYSTEM,
            messages=[{"role": "user", "content": QUESTION},
                      {"role": "assistant", "content": ANSWER},
                      {"role": "user", "content": FOLLOW_UP}])
        want = count(http_server, {"model": "claude-sonnet-4-5", "messages": CHAT})
        assert got.input_tokens == want["total"] > 0
        facts = got.model_extra["tokend"]  # type: ignore[index]
        assert facts["exact"] is False and facts["exact"] == want["exact"]
        assert facts["estimate_reason"] == want["estimate_reason"] != ""
        assert "not public" in facts["estimate_reason"]
        assert facts["model"] == want["model"] and facts["model"].startswith("claude-sonnet-4-5")
        assert facts["context_window"] == want["context_window"] > 0

    def test_blocks_tools_and_images(self, claude: anthropic.Anthropic,
                                     http_server: HttpServed) -> None:
        """Text and image blocks, a tool call and its result, tools and tool_choice."""
        got = claude.messages.count_tokens(
            model="claude-sonnet-4-5",
            system=[{"type": "text", "text": SYSTEM}],
            messages=[
                {"role": "user", "content": [
                    {"type": "text", "text": QUESTION},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": png(900, 600)}}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                     "input": {"city": "Paris"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}],
            tools=[{"name": "get_weather", "description": "Weather in a city",
                    "input_schema": SCHEMA}],
            tool_choice={"type": "any"},
            thinking={"type": "enabled", "budget_tokens": 1024})
        want = count(http_server, {
            "model": "claude-sonnet-4-5", "tools_json": TOOLS_JSON, "tool_choice": "required",
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "parts": [{"text": QUESTION},
                                           {"image": {"width": 900, "height": 600}}]},
                {"role": "assistant", "tool_calls": [
                    {"id": "toolu_1", "name": "get_weather", "arguments": '{"city":"Paris"}'}]},
                {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"}]})
        assert got.input_tokens == want["total"]
        facts = got.model_extra["tokend"]  # type: ignore[index]
        assert facts["images_tokens"] == want["images_count"] > 0
        assert facts["tools_tokens"] == want["tools_count"] > 0
        assert facts["breakdown"] == want["breakdown"]
        assert sum(facts["breakdown"].values()) == got.input_tokens

    def test_calibration_reads_bodies_as_the_endpoint_does(self,
                                                          http_server: HttpServed) -> None:
        """``tokend calibrate`` fits what this endpoint counts: a usage line's body read by
        ``request_chat`` counts in process to the endpoint's answer."""
        body = {"model": "claude-sonnet-4-5", "system": SYSTEM, "tool_choice": {"type": "auto"},
                "tools": [{"name": "get_weather", "description": "Weather in a city",
                           "input_schema": SCHEMA}],
                "messages": [{"role": "user", "content": QUESTION},
                             {"role": "assistant", "content": [
                                 {"type": "text", "text": ANSWER},
                                 {"type": "tool_use", "id": "t", "name": "get_weather",
                                  "input": {"city": "Rome"}}]},
                             {"role": "user", "content": [
                                 {"type": "tool_result", "tool_use_id": "t", "content": "rain"},
                                 {"type": "text", "text": FOLLOW_UP}]}]}
        answer = call(http_server.base, "POST", "/v1/messages/count_tokens", body)
        messages, tools, choice = request_chat(body)
        local = count_chat(messages, model="claude-sonnet-4-5", tools=tools, tool_choice=choice)
        assert answer.status == 200 and answer.body["input_tokens"] == local.total

    def test_bad_input_raises_the_sdks_errors(self, claude: anthropic.Anthropic) -> None:
        with pytest.raises(anthropic.BadRequestError) as caught:
            claude.messages.count_tokens(model="claude-sonnet-4-5",
                                         messages=[{"role": "robot", "content": "hi"}])
        assert caught.value.status_code == 400
        body = caught.value.body
        assert body["type"] == "error"  # type: ignore[index]
        assert body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
        assert body["error"]["message"].startswith("messages[0].role: ")  # type: ignore[index]
        with pytest.raises(anthropic.NotFoundError) as missing:
            claude.messages.count_tokens(model="claude-no-such-model" + "x" * 500,
                                         messages=[{"role": "user", "content": "hi"}])
        error = missing.value.body["error"]  # type: ignore[index]
        assert error["type"] == "not_found_error" and error["message"].startswith("model: ")
        assert len(error["message"]) < 1200  # the 520-character name is not echoed whole


class TestOpenAI:
    def test_chat_equals_count_and_is_exact(self, oai: openai.OpenAI,
                                            http_server: HttpServed) -> None:
        got = oai.responses.input_tokens.count(
            model="gpt-4o", instructions=SYSTEM,
            input=[{"role": "user", "content": QUESTION},
                   {"role": "assistant", "content": ANSWER},
                   {"role": "user", "content": [{"type": "input_text", "text": FOLLOW_UP}]}])
        want = count(http_server, {"model": "gpt-4o", "messages": CHAT})
        assert got.object == "response.input_tokens"
        assert got.input_tokens == want["total"] > 0
        facts = got.model_extra["tokend"]  # type: ignore[index]
        assert facts["exact"] is True and want["exact"] is True
        assert facts["estimate_reason"] == "" and facts["tokenizer"] == "o200k_base"
        assert facts["breakdown"] == want["breakdown"]
        assert facts["breakdown"]["system"] > 0 and facts["breakdown"]["framing"] > 0

    def test_function_calls_tools_and_images(self, oai: openai.OpenAI,
                                             http_server: HttpServed) -> None:
        got = oai.responses.input_tokens.count(
            model="gpt-4o",
            input=[
                {"role": "user", "content": [
                    {"type": "input_text", "text": QUESTION},
                    {"type": "input_image", "detail": "high",
                     "image_url": "data:image/png;base64," + png(1024, 768)}]},
                {"type": "function_call", "call_id": "call_1", "name": "get_weather",
                 "arguments": '{"city": "Paris"}'},
                {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}],
            tools=[{"type": "function", "name": "get_weather",
                    "description": "Weather in a city", "parameters": SCHEMA, "strict": True}],
            tool_choice={"type": "function", "name": "get_weather"})
        want = count(http_server, {
            "model": "gpt-4o", "tools_json": TOOLS_JSON, "tool_choice": "get_weather",
            "messages": [
                {"role": "user", "parts": [{"text": QUESTION}, {"image": {
                    "width": 1024, "height": 768, "detail": "high"}}]},
                {"role": "assistant", "tool_calls": [
                    {"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]})
        assert got.input_tokens == want["total"]
        assert got.model_extra["tokend"]["images_tokens"] == want["images_count"] > 0  # type: ignore[index]

    def test_bad_input_raises_the_sdks_errors(self, oai: openai.OpenAI) -> None:
        with pytest.raises(openai.BadRequestError) as caught:
            oai.responses.input_tokens.count(model="gpt-4o", previous_response_id="resp_1")
        assert caught.value.status_code == 400
        assert caught.value.param == "previous_response_id"
        assert caught.value.code == "invalid_argument"
        assert caught.value.body["type"] == "invalid_request_error"  # type: ignore[index]
        with pytest.raises(openai.NotFoundError) as missing:
            oai.responses.input_tokens.count(model="gpt-no-such", input="hi")
        assert missing.value.param == "model"


class TestGemini:
    def test_contents_equal_count(self, gem: genai.Client, http_server: HttpServed) -> None:
        got = gem.models.count_tokens(model="gemini-2.5-flash", contents=[
            genai_types.Content(role="user", parts=[genai_types.Part(text=QUESTION)]),
            genai_types.Content(role="model", parts=[genai_types.Part(text=ANSWER)]),
            genai_types.Content(role="user", parts=[genai_types.Part(text=FOLLOW_UP)])])
        want = count(http_server, {"model": "gemini-2.5-flash", "messages": CHAT[1:]})
        assert got.total_tokens == want["total"] > 0

    def test_images_and_the_facts(self, gem: genai.Client, http_server: HttpServed) -> None:
        image = base64.b64decode(png(1000, 500))
        got = gem.models.count_tokens(model="gemini-2.5-flash", contents=[
            genai_types.Content(role="user", parts=[
                genai_types.Part(text=QUESTION),
                genai_types.Part.from_bytes(data=image, mime_type="image/png")])])
        want = count(http_server, {"model": "gemini-2.5-flash", "messages": [
            {"role": "user", "parts": [{"text": QUESTION},
                                       {"image": {"width": 1000, "height": 500}}]}]})
        assert got.total_tokens == want["total"]
        raw = call(http_server.base, "POST", "/v1beta/models/gemini-2.5-flash:countTokens",
                   {"contents": [{"parts": [{"text": QUESTION}]}]})
        facts = raw.body["tokend"]
        assert raw.body["totalTokens"] > 0 and facts["exact"] is False
        assert "not public" in facts["estimate_reason"]

    def test_system_instruction_and_tools_over_rest(self, http_server: HttpServed) -> None:
        """What the SDK sends only on Vertex (systemInstruction, tools) is read too, as
        given or wrapped in generateContentRequest, under /v1beta and /v1."""
        inner = {"contents": [{"role": "user", "parts": [{"text": QUESTION}]}],
                 "systemInstruction": {"parts": [{"text": SYSTEM}]},
                 "tools": [{"functionDeclarations": [{"name": "get_weather",
                                                      "description": "Weather in a city",
                                                      "parameters": SCHEMA}]}]}
        want = count(http_server, {"model": "gemini-2.5-flash", "tools_json": TOOLS_JSON,
                                   "messages": CHAT[:2]})
        for path, body in [("/v1beta/models/gemini-2.5-flash:countTokens", inner),
                           ("/v1/models/gemini-2.5-flash:countTokens",
                            {"generateContentRequest": inner})]:
            got = call(http_server.base, "POST", path, body,
                       headers={"x-goog-api-key": "ignored"})
            assert got.status == 200 and got.body["totalTokens"] == want["total"], got.body

    def test_bad_input_raises_the_sdks_errors(self, gem: genai.Client) -> None:
        with pytest.raises(genai_errors.ClientError) as caught:
            gem.models.count_tokens(model="gemini-2.5-flash", contents=[
                genai_types.Content(role="robot", parts=[genai_types.Part(text="hi")])])
        assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT"
        assert caught.value.message.startswith("contents[0].role: ")  # type: ignore[union-attr]
        with pytest.raises(genai_errors.ClientError) as missing:
            gem.models.count_tokens(model="gemini-no-such", contents="hi")
        assert missing.value.code == 404 and missing.value.status == "NOT_FOUND"


class TestGuardsAndLimits:
    """The JSON API's guards and the server's limits hold on the vendor paths, answered in
    the vendor's error shape (tests/server/conftest.py: --max-text-bytes 65536,
    --max-batch 16, --max-message-bytes 1 MiB)."""

    def test_content_type_host_and_body_size(self, http_server: HttpServed) -> None:
        small = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}
        path = "/v1/messages/count_tokens"
        plain = call(http_server.base, "POST", path, json.dumps(small).encode(),
                     headers={"content-type": "text/plain"})
        assert plain.status == 400 and plain.body["type"] == "error"
        assert plain.body["error"]["message"].startswith("content-type: ")
        host = call(http_server.base, "POST", path, small, headers={"host": "evil.example"})
        assert host.status == 403 and host.body["error"]["type"] == "permission_error"
        big = call(http_server.base, "POST", "/v1/responses/input_tokens",
                   {"model": "gpt-4o", "input": "x" * (2 << 20)})
        assert big.status == 413 and big.body["error"]["param"] == "request"
        assert "--max-message-bytes" in big.body["error"]["message"]

    def test_text_and_batch_limits_name_the_vendors_field(self,
                                                          http_server: HttpServed) -> None:
        long = call(http_server.base, "POST", "/v1/messages/count_tokens",
                    {"model": "claude-sonnet-4-5", "system": "s",
                     "messages": [{"role": "user", "content": "y" * 70000}]})
        assert long.status == 413, long.body
        assert long.body["error"]["type"] == "request_too_large"
        assert long.body["error"]["message"].startswith("messages[0]: ")
        assert "--max-text-bytes" in long.body["error"]["message"]
        many = call(http_server.base, "POST", "/v1beta/models/gemini-2.5-flash:countTokens",
                    {"contents": [{"parts": [{"text": "a"}]}] * 20})
        assert many.status == 413 and many.body["error"]["status"] == "RESOURCE_EXHAUSTED"
        assert many.body["error"]["message"].startswith("contents: ")
        assert "--max-batch" in many.body["error"]["message"]
