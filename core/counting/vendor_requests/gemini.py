"""Gemini's ``POST /v1beta/models/{model}:countTokens`` body as a :class:`ChatRequest`.

The body holds ``contents`` (and ``systemInstruction``, ``tools``, ``toolConfig``) itself or in
``generateContentRequest``; field names are read in either spelling the REST API accepts
(``systemInstruction`` or ``system_instruction``). A content's role ``user`` stays, ``model``
becomes ``assistant``; its parts: ``text`` a text part, ``inlineData`` an image sized from its
base64 header or a base64 PDF's pages (one 384x384 image each: 258 tokens, Gemini's page cost),
``fileData`` an image of the default size (never fetched), ``functionCall`` a tool call,
``functionResponse`` a ``tool`` message, anything else its JSON. Audio and video are refused: their
cost depends on a duration the request does not state. ``tools``' ``functionDeclarations`` become
function tools; Google's built-in tools (search, code execution, ...) count by their JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokend.core.counting.vendor_requests import ChatRequest, content
from tokend.core.counting.vendor_requests.media import (
    checked_base64,
    given_size,
    image_part,
    image_size,
    pdf_pages,
)
from tokend.core.counting.vendor_requests.shapes import (
    array,
    check_utf8,
    compact_json,
    invalid,
    obj,
    one_of,
    optional_text,
    text,
)
from tokend.core.errors import shown

ROLES = {"user": "user", "model": "assistant", "function": "tool"}
PAGE_SIZE = (384, 384)
MODES = {"AUTO": "auto", "ANY": "required", "NONE": "none", "VALIDATED": "auto",
         "MODE_UNSPECIFIED": "auto"}
BUILT_IN_NOTE = "Google's built-in tools (search, code execution, ...) are counted by their JSON"
PDF_NOTE = ("a PDF's pages are counted as 258 tokens each (Gemini's per-page image cost); the "
            "text Gemini also extracts from each page is not counted")


def field(body: Mapping[str, Any], camel: str) -> Any:
    """``body[camel]``, or the same field in snake case.

    >>> field({"system_instruction": 1}, "systemInstruction")
    1
    """
    if camel in body:
        return body[camel]
    return body.get("".join(f"_{c.lower()}" if c.isupper() else c for c in camel))


def gemini_request(model: str, body: Mapping[str, Any]) -> ChatRequest:
    """The chat request of a countTokens body for ``model`` (the path's model name).

    >>> r = gemini_request("gemini-2.5-flash", {"contents": [{"parts": [{"text": "Hi"}]}]})
    >>> r.model, r.messages
    ('gemini-2.5-flash', [{'role': 'user', 'content': 'Hi'}])
    """
    check_utf8(body)
    request = ChatRequest(model=model.removeprefix("models/"))
    wrapped = field(body, "generateContentRequest")
    where = ""
    if wrapped is not None:
        if body.get("contents") is not None:
            raise invalid("contents", "give contents or generateContentRequest, not both")
        body = obj(wrapped, "generateContentRequest")
        where = "generateContentRequest."
    system = field(body, "systemInstruction")
    if system is not None:
        at = f"{where}systemInstruction"
        parts = _parts(request, obj(system, at), at, calls=[], results=[])
        request.add({"role": "system", "content": content(parts)}, at)
    contents = body.get("contents")
    if contents is None:
        raise invalid(f"{where}contents", "is required: a list of {\"role\", \"parts\"} contents")
    for i, item in enumerate(array(contents, f"{where}contents")):
        _content(request, obj(item, f"{where}contents[{i}]"), f"{where}contents[{i}]")
    if body.get("tools") is not None:
        for i, tool in enumerate(array(body["tools"], f"{where}tools")):
            request.tools += _tools(request, obj(tool, f"{where}tools[{i}]"), f"{where}tools[{i}]")
    config = field(body, "toolConfig")
    if config is not None:
        calling = field(obj(config, f"{where}toolConfig"), "functionCallingConfig") or {}
        mode = obj(calling, f"{where}toolConfig.functionCallingConfig").get("mode")
        if mode is not None:
            at = f"{where}toolConfig.functionCallingConfig.mode"
            request.tool_choice = MODES[one_of(mode, tuple(MODES), at)]
    return request


def _content(request: ChatRequest, item: Mapping[str, Any], at: str) -> None:
    role = ROLES[one_of(item.get("role") or "user", tuple(ROLES), f"{at}.role")]
    if isinstance(item.get("parts"), list) and not item["parts"]:
        # The API refuses it ("contents.parts must not be empty"), so tokend does too.
        raise invalid(f"{at}.parts", "must not be empty: a content has at least one part")
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    parts = _parts(request, item, at, calls=calls, results=results)
    for result in results:
        request.add(result, at)
    if parts or calls or not results:
        out: dict[str, Any] = {"role": "user" if role == "tool" else role,
                               "content": content(parts)}
        if calls:
            out["tool_calls"] = calls
        request.add(out, at)


def _parts(request: ChatRequest, item: Mapping[str, Any], at: str, *,
           calls: list[dict[str, Any]], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The text and image parts of a content; its function calls and responses go to
    ``calls`` and ``results``."""
    parts: list[dict[str, Any]] = []
    for j, raw in enumerate(array(item.get("parts"), f"{at}.parts")):
        where = f"{at}.parts[{j}]"
        part = obj(raw, where)
        if "text" in part:
            parts.append({"type": "text", "text": text(part["text"], f"{where}.text")})
        elif field(part, "inlineData") is not None:
            parts += _inline(request, obj(field(part, "inlineData"), f"{where}.inlineData"),
                             f"{where}.inlineData")
        elif field(part, "fileData") is not None:
            data = obj(field(part, "fileData"), f"{where}.fileData")
            _media_type(data, f"{where}.fileData")
            parts.append(image_part(given_size(data, f"{where}.fileData"), "auto", request.notes))
        elif field(part, "functionCall") is not None:
            call = obj(field(part, "functionCall"), f"{where}.functionCall")
            name = text(call.get("name"), f"{where}.functionCall.name")
            args = obj(call.get("args") or {}, f"{where}.functionCall.args")
            calls.append({"id": optional_text(call, "id", f"{where}.functionCall.id"),
                          "type": "function",
                          "function": {"name": name, "arguments": compact_json(args)}})
        elif field(part, "functionResponse") is not None:
            answer = obj(field(part, "functionResponse"), f"{where}.functionResponse")
            name = text(answer.get("name"), f"{where}.functionResponse.name")
            response = obj(answer.get("response") or {}, f"{where}.functionResponse.response")
            results.append({"role": "tool", "tool_call_id": name,
                            "content": compact_json(response)})
        else:
            request.note("parts other than text, data and function calls are counted as "
                         "their JSON")
            parts.append({"type": "text", "text": compact_json(dict(part))})
    return parts


def _media_type(data: Mapping[str, Any], at: str) -> str:
    mime = text(field(data, "mimeType"), f"{at}.mimeType")
    if not (mime.startswith("image/") or mime == "application/pdf"):
        raise invalid(f"{at}.mimeType", f"{shown(mime, 40)} is not counted: tokend counts "
                      "text, images and PDFs; audio and video cost by a duration the request "
                      "does not state")
    return mime


def _inline(request: ChatRequest, data: Mapping[str, Any], at: str) -> list[dict[str, Any]]:
    mime = _media_type(data, at)
    payload = checked_base64(text(data.get("data"), f"{at}.data"), f"{at}.data")
    if mime == "application/pdf":
        request.note(PDF_NOTE)
        return [image_part(PAGE_SIZE, "auto", request.notes)
                for _ in range(pdf_pages(payload))]
    return [image_part(given_size(data, at) or image_size(payload), "auto", request.notes)]


def _tools(request: ChatRequest, tool: Mapping[str, Any], at: str) -> list[dict[str, Any]]:
    out = []
    declarations = field(tool, "functionDeclarations")
    for k, raw in enumerate(array(declarations or [], f"{at}.functionDeclarations")):
        where = f"{at}.functionDeclarations[{k}]"
        declaration = obj(raw, where)
        function: dict[str, Any] = {"name": text(declaration.get("name"), f"{where}.name")}
        if declaration.get("description") is not None:
            function["description"] = text(declaration["description"], f"{where}.description")
        schema = declaration.get("parameters", field(declaration, "parametersJsonSchema"))
        if schema is not None:
            function["parameters"] = obj(schema, f"{where}.parameters")
        out.append({"type": "function", "function": function})
    rest = {k: v for k, v in tool.items() if k not in ("functionDeclarations",
                                                        "function_declarations")}
    if rest:
        request.note(BUILT_IN_NOTE)
        out.append({"type": "function", "function": {"name": next(iter(rest)),
                                                      "description": compact_json(rest)}})
    return out
