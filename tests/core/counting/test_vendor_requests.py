"""The vendors' count-tokens bodies as chat requests: each shape maps to the messages, tools
and tool choice count_chat takes, images are sized from their own bytes, and a malformed body
is refused naming the vendor's field."""

from __future__ import annotations

import base64
import doctest
import importlib
import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from tokend.core.counting import count_chat
from tokend.core.counting.vendor_requests import ChatRequest
from tokend.core.counting.vendor_requests.anthropic import anthropic_request
from tokend.core.counting.vendor_requests.gemini import gemini_request
from tokend.core.counting.vendor_requests.media import DEFAULT_SIZE, image_size, pdf_pages
from tokend.core.counting.vendor_requests.responses import responses_request
from tokend.core.errors import InvalidInput

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
FUNCTION = {"type": "function", "function": {"name": "get_weather",
                                             "description": "Weather in a city",
                                             "parameters": SCHEMA}}


def b64_image(fmt: str, size: tuple[int, int]) -> str:
    """A real image file of ``size`` in ``fmt`` (drawn by Pillow), base64."""
    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(out, format=fmt)
    return base64.b64encode(out.getvalue()).decode()


def b64_pdf(pages: int) -> str:
    out = io.BytesIO()
    first, *rest = [Image.new("RGB", (50, 70), "white") for _ in range(pages)]
    first.save(out, format="PDF", save_all=True, append_images=rest)
    return base64.b64encode(out.getvalue()).decode()


@pytest.mark.parametrize("name", ["media", "shapes", "anthropic", "responses", "gemini",
                                  "__init__"])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module("tokend.core.counting.vendor_requests"
                                     + ("" if name == "__init__" else f".{name}"))
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


class TestMedia:
    @pytest.mark.parametrize("fmt", ["PNG", "GIF", "JPEG", "WEBP"])
    @pytest.mark.parametrize("size", [(640, 480), (1, 3000), (1568, 1092)])
    def test_size_from_the_header(self, fmt: str, size: tuple[int, int]) -> None:
        """PNG, GIF, JPEG and WebP sizes are read from the first bytes, as Pillow wrote them."""
        assert image_size(b64_image(fmt, size)) == size

    def test_lossless_webp_and_data_urls(self) -> None:
        out = io.BytesIO()
        Image.new("RGBA", (300, 200), (1, 2, 3, 4)).save(out, format="WEBP", lossless=True)
        data = base64.b64encode(out.getvalue()).decode()
        assert image_size(data) == (300, 200)
        assert image_size("data:image/webp;base64," + data) == (300, 200)

    @pytest.mark.parametrize("size", [(1000, 500), (4095, 4031)])
    def test_url_safe_base64(self, size: tuple[int, int]) -> None:
        """Google's SDK sends the URL-safe alphabet; the header is read all the same."""
        data = base64.urlsafe_b64encode(base64.b64decode(b64_image("PNG", size))).decode()
        assert image_size(data) == size

    def test_unreadable_is_none(self) -> None:
        assert image_size("not base64 at all!") is None
        assert image_size(base64.b64encode(b"BM not a format we read").decode()) is None

    @pytest.mark.parametrize("pages", [1, 3])
    def test_pdf_pages(self, pages: int) -> None:
        assert pdf_pages(b64_pdf(pages)) == pages


class TestAnthropic:
    def test_blocks_tools_and_choice(self) -> None:
        png = b64_image("PNG", (800, 600))
        request = anthropic_request({
            "model": "claude-sonnet-4-5",
            "system": [{"type": "text", "text": "Be brief."}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": png}}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "x"},
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "t1", "name": "get_weather",
                     "input": {"city": "Paris"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]},
            ],
            "tools": [{"name": "get_weather", "description": "Weather in a city",
                       "input_schema": SCHEMA}],
            "tool_choice": {"type": "tool", "name": "get_weather"},
            "thinking": {"type": "enabled", "budget_tokens": 2048},
        })
        assert request.messages == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "width": 800, "height": 600,
                 "image_url": {"url": "", "detail": "auto"}}]},
            {"role": "assistant", "content": "Let me look.", "tool_calls": [
                {"id": "t1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
            {"role": "tool", "tool_call_id": "t1", "content": "sunny"},
        ]
        assert request.origins == ["system", "messages[0]", "messages[1]",
                                   "messages[2].content[0]"]
        assert request.tools == [FUNCTION]
        assert request.tool_choice == "get_weather"
        assert any("thinking" in n for n in request.notes)

    def test_documents(self) -> None:
        request = anthropic_request({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "document", "title": "T", "source": {"type": "text",
                                                          "media_type": "text/plain",
                                                          "data": "body"}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                            "data": b64_pdf(2)}}]}]})
        parts = request.messages[0]["content"]
        assert [p["type"] for p in parts] == ["text", "text", "image_url", "image_url"]
        assert [p.get("text") for p in parts[:2]] == ["T", "body"]
        assert any("PDF" in n for n in request.notes)

    def test_unknown_size_is_the_default_and_said(self) -> None:
        request = anthropic_request({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]}]})
        part = request.messages[0]["content"][0]
        assert (part["width"], part["height"]) == DEFAULT_SIZE
        assert any("could not be read" in n for n in request.notes)

    @pytest.mark.parametrize(("body", "field", "rule"), [
        ({"messages": []}, "model", "is required"),
        ({"model": 3, "messages": []}, "model", "must be a string, not a number"),
        ({"model": "m"}, "messages", "is required"),
        ({"model": "m", "messages": {}}, "messages", "must be an array"),
        ({"model": "m", "messages": [{"role": "bot", "content": "x"}]}, "messages[0].role",
         "must be one of 'user', 'assistant'"),
        ({"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
         "messages[0].content[0].text", "must be a string, not null"),
        ({"model": "m", "system": [{"type": "image"}], "messages": []}, "system[0].type",
         "must be one of 'text'"),
        ({"model": "m", "messages": [], "tools": [{"name": "f", "input_schema": []}]},
         "tools[0].input_schema", "must be an object"),
        ({"model": "m", "messages": [], "tool_choice": {"type": "maybe"}}, "tool_choice.type",
         "must be one of"),
        ({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}}]}]},
         "messages[0].content[0].source.type", "never fetches"),
    ])
    def test_refusals_name_the_field(self, body: dict[str, Any], field: str, rule: str) -> None:
        with pytest.raises(InvalidInput) as caught:
            anthropic_request(body)
        assert caught.value.field == field  # type: ignore[attr-defined]
        assert str(caught.value).startswith(field + ": ") and rule in str(caught.value)

    def test_long_values_are_quoted_short(self) -> None:
        with pytest.raises(InvalidInput) as caught:
            anthropic_request({"model": "m", "messages": [{"role": "r" * 5000, "content": ""}]})
        assert len(str(caught.value)) < 300


class TestResponses:
    def test_items(self) -> None:
        url = "data:image/jpeg;base64," + b64_image("JPEG", (512, 256))
        request = responses_request({
            "model": "gpt-4o", "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Weather?"},
                                             {"type": "input_image", "image_url": url,
                                              "detail": "low"}]},
                {"type": "function_call", "call_id": "c1", "name": "get_weather",
                 "arguments": '{"city": "Paris"}'},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Sunny."}]},
            ],
            "tools": [{"type": "function", "name": "get_weather",
                       "description": "Weather in a city", "parameters": SCHEMA}],
            "tool_choice": "auto",
        })
        assert request.messages == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "Weather?"},
                {"type": "image_url", "width": 512, "height": 256,
                 "image_url": {"url": "", "detail": "low"}}]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
        ]
        assert request.tools == [FUNCTION] and request.tool_choice == "auto"
        assert request.notes == []

    def test_a_string_input_counts_as_the_chat_message(self) -> None:
        """input="..." is one user message: the same count as Chat Completions'."""
        request = responses_request({"model": "gpt-4o", "input": "Hello there"})
        chat = [{"role": "user", "content": "Hello there"}]
        assert request.messages == chat
        assert count_chat(request.messages, model="gpt-4o").exact

    @pytest.mark.parametrize(("body", "field", "rule"), [
        ({"model": "gpt-4o", "previous_response_id": "resp_1"}, "previous_response_id",
         "keeps no conversations"),
        ({"model": "gpt-4o", "input": [{"type": "item_reference", "id": "x"}]}, "input[0].type",
         "keeps no conversations"),
        ({"model": "gpt-4o", "input": 5}, "input", "must be an array"),
        ({"model": "gpt-4o", "input": [{"role": "user", "content": [{"type": "audio"}]}]},
         "input[0].content[0].type", "must be input_text"),
        ({"model": "gpt-4o", "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": "https://x/y.png", "detail": "huge"}]}]},
         "input[0].content[0].detail", "must be one of"),
        ({"model": "gpt-4o", "input": [{"type": "function_call", "name": "f",
                                        "arguments": {}}]},
         "input[0].arguments", "must be a string, not an object"),
        ({"model": "gpt-4o", "tool_choice": "always"}, "tool_choice", "must be one of"),
        ({"input": "hi"}, "model", "is required"),
    ])
    def test_refusals_name_the_field(self, body: dict[str, Any], field: str, rule: str) -> None:
        with pytest.raises(InvalidInput) as caught:
            responses_request(body)
        assert caught.value.field == field  # type: ignore[attr-defined]
        assert rule in str(caught.value)


class TestGemini:
    def test_contents_system_tools(self) -> None:
        png = b64_image("PNG", (300, 200))
        body = {
            "contents": [
                {"role": "user", "parts": [{"text": "Weather?"},
                                           {"inlineData": {"mimeType": "image/png",
                                                           "data": png}}]},
                {"role": "model", "parts": [{"functionCall": {"name": "get_weather",
                                                              "args": {"city": "Paris"}}}]},
                {"role": "user", "parts": [{"functionResponse": {
                    "name": "get_weather", "response": {"sky": "sunny"}}}]},
            ],
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "tools": [{"functionDeclarations": [{"name": "get_weather",
                                                 "description": "Weather in a city",
                                                 "parameters": SCHEMA}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
        }
        request = gemini_request("models/gemini-2.5-flash", body)
        assert request.model == "gemini-2.5-flash"
        assert request.messages == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "Weather?"},
                {"type": "image_url", "width": 300, "height": 200,
                 "image_url": {"url": "", "detail": "auto"}}]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
            {"role": "tool", "tool_call_id": "get_weather", "content": '{"sky":"sunny"}'},
        ]
        assert request.tools == [FUNCTION] and request.tool_choice == "required"
        wrapped = gemini_request("gemini-2.5-flash", {"generateContentRequest": {
            "model": "models/gemini-2.5-flash", **body}})
        assert wrapped.messages == request.messages
        assert wrapped.origins[0] == "generateContentRequest.systemInstruction"
        snake = gemini_request("gemini-2.5-flash", {
            "contents": body["contents"],
            "system_instruction": body["systemInstruction"]})
        assert snake.messages == request.messages

    @pytest.mark.parametrize(("body", "field", "rule"), [
        ({}, "contents", "is required"),
        ({"contents": [{"role": "robot", "parts": []}]}, "contents[0].role", "must be one of"),
        ({"contents": [{"parts": [{"inlineData": {"mimeType": "audio/wav", "data": "AAAA"}}]}]},
         "contents[0].parts[0].inlineData.mimeType", "audio and video"),
        ({"contents": [{"parts": "hi"}]}, "contents[0].parts", "must be an array"),
        ({"contents": [], "generateContentRequest": {"contents": []}}, "contents", "not both"),
        ({"contents": [], "toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}}},
         "toolConfig.functionCallingConfig.mode", "must be one of"),
    ])
    def test_refusals_name_the_field(self, body: dict[str, Any], field: str, rule: str) -> None:
        with pytest.raises(InvalidInput) as caught:
            gemini_request("gemini-2.5-flash", body)
        assert caught.value.field == field  # type: ignore[attr-defined]
        assert rule in str(caught.value)


def test_translations_count_like_their_chat_messages() -> None:
    """The three shapes of one chat give one message list, so one count for a model."""
    chat = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is the capital of France?"}]
    a = anthropic_request({"model": "gpt-4o", "system": "Be brief.",
                           "messages": [{"role": "user", "content": chat[1]["content"]}]})
    o = responses_request({"model": "gpt-4o", "instructions": "Be brief.",
                           "input": chat[1]["content"]})
    g = gemini_request("gpt-4o", {"systemInstruction": {"parts": [{"text": "Be brief."}]},
                                  "contents": [{"parts": [{"text": chat[1]["content"]}]}]})
    for request in (a, o, g):
        assert isinstance(request, ChatRequest) and request.messages == chat


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=8) | st.sampled_from(["user", "assistant", "model", "text", "image",
                                             "tool_use", "tool_result", "document", "base64",
                                             "function_call", "input_image", "message"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["model", "messages", "role", "content", "type", "text", "source",
                         "data", "input", "contents", "parts", "tools", "name", "width",
                         "height", "inlineData", "mimeType", "tool_choice", "system",
                         "input_schema", "functionCall", "args", "output", "call_id"]),
        inner, max_size=5),
    max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(body=st.dictionaries(st.sampled_from(["model", "messages", "system", "tools",
                                             "tool_choice", "input", "instructions",
                                             "contents", "systemInstruction"]),
                            JSON, max_size=5))
def test_any_json_body_is_translated_or_refused_by_field(body: dict[str, Any]) -> None:
    """Whatever JSON a client sends, a translation answers or raises InvalidInput naming a
    field, with a bounded message; never another exception (a 500)."""
    for translate in (anthropic_request, responses_request,
                      lambda b: gemini_request("gemini-2.5-flash", b)):
        try:
            request = translate(body)
        except InvalidInput as exc:
            assert isinstance(getattr(exc, "field", None), str)
            assert len(str(exc)) < 600
        else:
            assert len(request.messages) == len(request.origins)


def test_given_sizes_are_bounded() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "image", "width": 2**40, "height": 10, "source": {"type": "url"}}]}]}
    with pytest.raises(InvalidInput) as caught:
        anthropic_request(body)
    assert caught.value.field == "messages[0].content[0].width"  # type: ignore[attr-defined]
    body["messages"][0]["content"][0].update(width=640, height=480)  # type: ignore[index]
    part = anthropic_request(body).messages[0]["content"][0]
    assert (part["width"], part["height"]) == (640, 480)


class TestVendorSchemas:
    """Where tokend's reading differed from the vendors' documented schemas (issue 32)."""

    def test_lone_surrogate_refused_naming_the_field(self) -> None:
        """A "\\ud800" escape is no UTF-8 text: refused, as POST /count refuses it."""
        body = json.loads('{"model": "claude-sonnet-4-5", "messages": [{"role": "user", '
                          '"content": [{"type": "text", "text": "a\\ud800"}]}]}')
        with pytest.raises(InvalidInput, match=r"^messages\[0\]\.content\[0\]\.text: not valid"):
            anthropic_request(body)
        with pytest.raises(InvalidInput, match=r"^contents\[0\]\.parts\[0\]\.text: not valid"):
            gemini_request("gemini-2.5-flash", {"contents": [{"parts": [{"text": "\ud800"}]}]})

    @pytest.mark.parametrize("data", ["not*base64", "a", "a===", "=aGk="])
    def test_undecodable_base64_refused(self, data: str) -> None:
        """Image data that does not decode is refused, not counted as a default-size image."""
        block = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": data}}
        with pytest.raises(InvalidInput, match=r"^messages\[0\]\.content\[0\]\.source\.data"):
            anthropic_request({"model": "claude-sonnet-4-5",
                               "messages": [{"role": "user", "content": [block]}]})

    def test_valid_base64_variants_still_read(self) -> None:
        """Unpadded and URL-safe base64 (Google's SDK) still decode and size the image."""
        png = b64_image("PNG", (320, 200))
        for data in (png.rstrip("="), png.replace("+", "-").replace("/", "_")):
            request = gemini_request("gemini-2.5-flash", {"contents": [{"parts": [
                {"inlineData": {"mimeType": "image/png", "data": data}}]}]})
            (part,) = request.messages[0]["content"]
            assert (part["width"], part["height"]) == (320, 200)

    def test_gemini_empty_parts_refused(self) -> None:
        """The API refuses a content with no parts ("contents.parts must not be empty")."""
        with pytest.raises(InvalidInput, match=r"^contents\[1\]\.parts: must not be empty"):
            gemini_request("gemini-2.5-flash", {"contents": [
                {"parts": [{"text": "a"}]}, {"role": "model", "parts": []}]})

    def test_responses_without_input_accepted(self) -> None:
        """``input`` is optional in the Responses schema: none is no message, not a refusal."""
        request = responses_request({"model": "gpt-4o"})
        assert request.messages == [] and request.empty_ok
        with_tools = responses_request({"model": "gpt-4o", "tools": [
            {"type": "function", "name": "f", "parameters": {"type": "object"}}]})
        assert with_tools.messages == [] and len(with_tools.tools) == 1
