"""The bad-input catalogue of the vendors' count-tokens endpoints (server/web/vendors.py).

One row per refusal: the vendor, what is wrong, the path and body sent, the HTTP status, the
vendor's field the answer must name and a fragment of the rule it must state.
``tests/server/test_vendor_bad_inputs.py`` sends every row to a real ``tokend serve`` (the
catalogue's small limits: --max-text-bytes 65536, --max-batch 16, a 1 MiB body) and checks the
vendor's error shape; ``scripts/gen_status_table.py`` renders the rows into docs/service.md
beside the RPC rows of ``bad_inputs.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

ANTHROPIC = "/v1/messages/count_tokens"
RESPONSES = "/v1/responses/input_tokens"
GEMINI = "/v1beta/models/gemini-2.5-flash:countTokens"
VENDOR_OF = {ANTHROPIC: "anthropic", RESPONSES: "openai"}
LONG_MODEL = "m" * 7000  # echoed in full it would be a 7 KB error message


@dataclass(frozen=True)
class VendorCase:
    id: str
    what: str  # the status table's "bad input" column
    path: str
    body: bytes
    status: int
    field: str
    rule: str
    content_type: str = "application/json"

    @property
    def vendor(self) -> str:
        return VENDOR_OF.get(self.path, "gemini")


def _j(value: object) -> bytes:
    return json.dumps(value).encode()


def _claude(**fields: object) -> bytes:
    return _j({"model": "claude-sonnet-4-5", **fields})


USER = [{"role": "user", "content": "hi"}]
PROPERTIES_LIST = {"type": "object", "properties": ["a"]}

VENDOR_CASES: tuple[VendorCase, ...] = (
    # -- Anthropic: POST /v1/messages/count_tokens -------------------------------------------
    VendorCase("anthropic-not-json", "a body that is not JSON", ANTHROPIC, b"{not json", 400,
               "request", "not JSON"),
    VendorCase("anthropic-no-model", "no model", ANTHROPIC, _j({"messages": USER}), 400,
               "model", "is required"),
    VendorCase("anthropic-role", "a role that is not user / assistant", ANTHROPIC,
               _claude(messages=[{"role": "robot", "content": "hi"}]), 400,
               "messages[0].role", "must be one of 'user', 'assistant'"),
    VendorCase("anthropic-text-null", "a text block without text", ANTHROPIC,
               _claude(messages=[{"role": "user", "content": [{"type": "text"}]}]), 400,
               "messages[0].content[0].text", "must be a string, not null"),
    VendorCase("anthropic-image-source", "an image source of an unknown type", ANTHROPIC,
               _claude(messages=[{"role": "user", "content": [
                   {"type": "image", "source": {"type": "ftp"}}]}]), 400,
               "messages[0].content[0].source.type", "must be one of 'base64'"),
    VendorCase("anthropic-document-url", "a document by URL (never fetched)", ANTHROPIC,
               _claude(messages=[{"role": "user", "content": [
                   {"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}}]}]),
               400, "messages[0].content[0].source.type", "never fetches documents"),
    VendorCase("anthropic-surrogate", "a lone surrogate escape (\\ud800) in a text",
               ANTHROPIC, b'{"model": "claude-sonnet-4-5", "messages": [{"role": "user", '
               b'"content": [{"type": "text", "text": "a\\ud800b"}]}]}', 400,
               "messages[0].content[0].text", "must be valid UTF-8"),
    VendorCase("anthropic-base64", "image data that is not base64", ANTHROPIC,
               _claude(messages=[{"role": "user", "content": [{"type": "image", "source": {
                   "type": "base64", "media_type": "image/png", "data": "not*base64"}}]}]),
               400, "messages[0].content[0].source.data", "is not valid base64"),
    VendorCase("anthropic-schema", "a tool's input_schema that is no object", ANTHROPIC,
               _claude(messages=USER, tools=[{"name": "f", "input_schema": []}]), 400,
               "tools[0].input_schema", "must be an object"),
    VendorCase("anthropic-properties", "a tool schema whose properties is a list", ANTHROPIC,
               _claude(messages=USER, tools=[{"name": "f", "input_schema": PROPERTIES_LIST}]),
               400, "tools", "properties must be a JSON object"),
    VendorCase("anthropic-choice", "an unknown tool_choice type", ANTHROPIC,
               _claude(messages=USER, tool_choice={"type": "maybe"}), 400, "tool_choice.type",
               "must be one of 'auto', 'any', 'tool', 'none'"),
    VendorCase("anthropic-unknown-model", "a model not in the catalogue", ANTHROPIC,
               _j({"model": "claude-none", "messages": USER}), 404, "model",
               "unknown model"),
    VendorCase("anthropic-long-model", "a 7,000-character model (echo is cut)", ANTHROPIC,
               _j({"model": LONG_MODEL, "messages": USER}), 404, "model", "unknown model 'mmm"),
    VendorCase("anthropic-text-size", "a message over --max-text-bytes", ANTHROPIC,
               _claude(messages=[{"role": "user", "content": "y" * 70000}]), 413,
               "messages[0]", "--max-text-bytes"),
    VendorCase("anthropic-batch", "messages + blocks over --max-batch", ANTHROPIC,
               _claude(messages=USER * 20), 413, "messages", "--max-batch"),
    VendorCase("anthropic-content-type", "Content-Type text/plain", ANTHROPIC,
               _claude(messages=USER), 400, "content-type", "must be application/json",
               content_type="text/plain"),
    VendorCase("anthropic-body-size", "a body over --max-message-bytes", ANTHROPIC,
               _claude(messages=[{"role": "user", "content": "z" * (2 << 20)}]), 413,
               "request", "--max-message-bytes"),
    # -- OpenAI Responses: POST /v1/responses/input_tokens -----------------------------------
    VendorCase("responses-no-model", "no model", RESPONSES, _j({"input": "hi"}), 400, "model",
               "is required"),
    VendorCase("responses-previous", "previous_response_id (no stored conversations)",
               RESPONSES, _j({"model": "gpt-4o", "previous_response_id": "resp_1"}), 400,
               "previous_response_id", "keeps no conversations"),
    VendorCase("responses-reference", "an item_reference input item", RESPONSES,
               _j({"model": "gpt-4o", "input": [{"type": "item_reference", "id": "x"}]}), 400,
               "input[0].type", "keeps no conversations"),
    VendorCase("responses-part", "a content part of an unknown type", RESPONSES,
               _j({"model": "gpt-4o", "input": [{"role": "user", "content": [
                   {"type": "input_audio"}]}]}), 400, "input[0].content[0].type",
               "must be input_text"),
    VendorCase("responses-detail", "an image detail not auto / low / high", RESPONSES,
               _j({"model": "gpt-4o", "input": [{"role": "user", "content": [
                   {"type": "input_image", "image_url": "https://x/y.png", "detail": "max"}]}]}),
               400, "input[0].content[0].detail", "must be one of 'auto', 'low', 'high'"),
    VendorCase("responses-file-id", "a file by file_id (never fetched)", RESPONSES,
               _j({"model": "gpt-4o", "input": [{"role": "user", "content": [
                   {"type": "input_file", "file_id": "file-1"}]}]}), 400,
               "input[0].content[0].file_data", "never fetches files"),
    VendorCase("responses-arguments", "function_call arguments that are no string", RESPONSES,
               _j({"model": "gpt-4o", "input": [{"type": "function_call", "call_id": "c",
                                                 "name": "f", "arguments": {}}]}), 400,
               "input[0].arguments", "must be a string, not an object"),
    VendorCase("responses-base64", "an image data URL that is not base64", RESPONSES,
               _j({"model": "gpt-4o", "input": [{"role": "user", "content": [
                   {"type": "input_image", "image_url": "data:image/png;base64,@@@@"}]}]}),
               400, "input[0].content[0].image_url", "is not valid base64"),
    VendorCase("responses-unknown-model", "a model not in the catalogue", RESPONSES,
               _j({"model": "gpt-none", "input": "hi"}), 404, "model",
               "unknown model"),
    VendorCase("responses-text-size", "an input over --max-text-bytes", RESPONSES,
               _j({"model": "gpt-4o", "input": "y" * 70000}), 413, "input",
               "--max-text-bytes"),
    # -- Gemini: POST /v1beta/models/{model}:countTokens -------------------------------------
    VendorCase("gemini-no-contents", "no contents", GEMINI, _j({}), 400, "contents",
               "is required"),
    VendorCase("gemini-empty-parts", "a content with parts: []", GEMINI,
               _j({"contents": [{"role": "user", "parts": []}]}), 400, "contents[0].parts",
               "must not be empty"),
    VendorCase("gemini-base64", "inline image data that is not base64", GEMINI,
               _j({"contents": [{"parts": [{"inlineData": {"mimeType": "image/png",
                                                           "data": "%%%%"}}]}]}), 400,
               "contents[0].parts[0].inlineData.data", "is not valid base64"),
    VendorCase("gemini-role", "a role that is not user / model", GEMINI,
               _j({"contents": [{"role": "robot", "parts": [{"text": "hi"}]}]}), 400,
               "contents[0].role", "must be one of"),
    VendorCase("gemini-audio", "inline audio (its duration is not stated)", GEMINI,
               _j({"contents": [{"parts": [{"inlineData": {"mimeType": "audio/wav",
                                                           "data": "AAAA"}}]}]}), 400,
               "contents[0].parts[0].inlineData.mimeType", "audio and video"),
    VendorCase("gemini-both", "contents and generateContentRequest", GEMINI,
               _j({"contents": [], "generateContentRequest": {"contents": []}}), 400,
               "contents", "not both"),
    VendorCase("gemini-mode", "an unknown function calling mode", GEMINI,
               _j({"contents": [], "toolConfig": {"functionCallingConfig": {"mode": "OFTEN"}}}),
               400, "toolConfig.functionCallingConfig.mode", "must be one of"),
    VendorCase("gemini-unknown-model", "a model not in the catalogue",
               "/v1beta/models/gemini-none:countTokens",
               _j({"contents": [{"parts": [{"text": "hi"}]}]}), 404, "model",
               "unknown model"),
    VendorCase("gemini-batch", "contents + parts over --max-batch", GEMINI,
               _j({"contents": [{"parts": [{"text": "a"}]}] * 20}), 413, "contents",
               "--max-batch"),
)
