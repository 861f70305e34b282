"""Anthropic's ``POST /v1/messages/count_tokens`` body as a :class:`ChatRequest`.

``system`` (a string or text blocks) becomes a system message; each of ``messages`` a user or
assistant message whose blocks map as follows: ``text`` a text part, ``image`` an image part
sized from its base64 header (``media.py``), ``document`` its text (``text`` / ``content``
sources; ``title`` and ``context`` too) or, for a base64 PDF, one full-size image per page;
``tool_use`` a tool call (its ``input`` as compact JSON); ``tool_result`` a ``tool`` message
answering that call; ``thinking`` / ``redacted_thinking`` nothing (Anthropic drops earlier
turns' thinking from the prompt); any other block its JSON. ``tools`` become function tools
(``input_schema`` their parameters), ``tool_choice`` auto / any / tool / none. ``thinking``,
``mcp_servers`` and fields Anthropic adds later are read past, unchecked (docs/http.md).
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

ROLES = ("user", "assistant")
CHOICES = ("auto", "any", "tool", "none")
# A PDF page is counted as the largest image Anthropic sends the model (1092x1092 px).
PAGE_SIZE = (1092, 1092)
PDF_NOTE = ("a PDF's pages are counted as one full-size image each (1092x1092 px); the text "
            "Anthropic also extracts from each page is not counted")
THINKING_NOTE = "thinking blocks of earlier turns are left out, as Anthropic leaves them out"
SERVER_TOOL_NOTE = ("Anthropic's server tools (web search, bash, ...) are counted by their "
                    "definition's JSON; their system prompt is not published")


def anthropic_request(body: Mapping[str, Any]) -> ChatRequest:
    """The chat request of an Anthropic count_tokens body.

    >>> r = anthropic_request({"model": "claude-sonnet-4-5", "system": "Be brief.",
    ...                        "messages": [{"role": "user", "content": "Hi"}]})
    >>> r.messages, r.origins
    ([{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}], \
['system', 'messages[0]'])
    """
    check_utf8(body)
    if "model" not in body:
        raise invalid("model", "is required (e.g. \"claude-sonnet-4-5\")")
    request = ChatRequest(model=text(body["model"], "model"))
    system = body.get("system")
    if system is not None:
        parts = [_text_block(b, f"system[{i}]") for i, b in enumerate(array(system, "system"))] \
            if not isinstance(system, str) else [{"type": "text", "text": system}]
        request.add({"role": "system", "content": content(parts)}, "system")
    if "messages" not in body:
        raise invalid("messages", "is required: a list of {\"role\", \"content\"} messages")
    for i, message in enumerate(array(body["messages"], "messages")):
        _message(request, obj(message, f"messages[{i}]"), f"messages[{i}]")
    if body.get("tools") is not None:
        request.tools = [_tool(request, obj(t, f"tools[{i}]"), f"tools[{i}]")
                         for i, t in enumerate(array(body["tools"], "tools"))]
    if body.get("tool_choice") is not None:
        request.tool_choice = _choice(obj(body["tool_choice"], "tool_choice"))
    return request


def _text_block(block: Any, where: str) -> dict[str, Any]:
    block = obj(block, where)
    one_of(block.get("type"), ("text",), f"{where}.type")
    return {"type": "text", "text": text(block.get("text"), f"{where}.text")}


def _message(request: ChatRequest, message: Mapping[str, Any], where: str) -> None:
    role = one_of(message.get("role"), ROLES, f"{where}.role")
    given = message.get("content")
    if isinstance(given, str):
        request.add({"role": role, "content": given}, where)
        return
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    results = 0
    for j, raw in enumerate(array(given, f"{where}.content")):
        at = f"{where}.content[{j}]"
        block = obj(raw, at)
        kind = text(block.get("type"), f"{at}.type")
        if kind == "tool_result":
            request.add(_tool_result(request, block, at), at)
            results += 1
        elif kind in ("tool_use", "server_tool_use"):
            arguments = block.get("input", {})
            calls.append({"id": optional_text(block, "id", f"{at}.id"), "type": "function",
                          "function": {"name": text(block.get("name"), f"{at}.name"),
                                       "arguments": compact_json(obj(arguments, f"{at}.input"))}})
        elif kind in ("thinking", "redacted_thinking"):
            request.note(THINKING_NOTE)
        else:
            parts += _blocks(request, block, kind, at)
    if parts or calls or not results:  # a message of tool results only is those results
        out: dict[str, Any] = {"role": role, "content": content(parts)}
        if calls:
            out["tool_calls"] = calls
        request.add(out, where)


def _blocks(request: ChatRequest, block: Mapping[str, Any], kind: str, at: str
            ) -> list[dict[str, Any]]:
    """The parts of one content block (text, image, document, or another block's JSON)."""
    if kind == "text":
        return [{"type": "text", "text": text(block.get("text"), f"{at}.text")}]
    if kind == "image":
        return [_image(request, block, at)]
    if kind == "document":
        return _document(request, block, at)
    rest = {k: v for k, v in block.items() if k not in ("type", "cache_control")}
    request.note(f"{kind} blocks are counted as their JSON")
    return [{"type": "text", "text": compact_json(rest)}]


def _image(request: ChatRequest, block: Mapping[str, Any], at: str) -> dict[str, Any]:
    source = obj(block.get("source"), f"{at}.source")
    kind = one_of(source.get("type"), ("base64", "url", "file"), f"{at}.source.type")
    size = given_size(block, at) or given_size(source, f"{at}.source")
    if size is None and kind == "base64":
        data = text(source.get("data"), f"{at}.source.data")
        size = image_size(checked_base64(data, f"{at}.source.data"))
    return image_part(size, "auto", request.notes)


def _document(request: ChatRequest, block: Mapping[str, Any], at: str) -> list[dict[str, Any]]:
    parts = [{"type": "text", "text": optional_text(block, key, f"{at}.{key}")}
             for key in ("title", "context") if block.get(key) is not None]
    source = obj(block.get("source"), f"{at}.source")
    kind = one_of(source.get("type"), ("base64", "text", "content", "url", "file"),
                  f"{at}.source.type")
    if kind == "text":
        parts.append({"type": "text", "text": text(source.get("data"), f"{at}.source.data")})
    elif kind == "content":
        inner = source.get("content")
        if isinstance(inner, str):
            parts.append({"type": "text", "text": inner})
        else:
            for k, raw in enumerate(array(inner, f"{at}.source.content")):
                where = f"{at}.source.content[{k}]"
                item = obj(raw, where)
                sub = one_of(item.get("type"), ("text", "image"), f"{where}.type")
                parts += _blocks(request, item, sub, where)
    elif kind == "base64":
        data = text(source.get("data"), f"{at}.source.data")
        pages = pdf_pages(checked_base64(data, f"{at}.source.data"))
        request.note(PDF_NOTE)
        parts += [image_part(PAGE_SIZE, "auto", request.notes) for _ in range(pages)]
    else:
        raise invalid(f"{at}.source.type", f"a {kind} document is not counted: tokend never "
                      "fetches documents; send its text (a \"text\" source) or the PDF as base64")
    return parts


def _tool_result(request: ChatRequest, block: Mapping[str, Any], at: str) -> dict[str, Any]:
    given = block.get("content")
    parts: list[dict[str, Any]] = []
    if isinstance(given, str):
        parts.append({"type": "text", "text": given})
    elif given is not None:
        for k, raw in enumerate(array(given, f"{at}.content")):
            where = f"{at}.content[{k}]"
            item = obj(raw, where)
            parts += _blocks(request, item, text(item.get("type"), f"{where}.type"), where)
    return {"role": "tool", "tool_call_id": text(block.get("tool_use_id"), f"{at}.tool_use_id"),
            "content": content(parts)}


def _tool(request: ChatRequest, tool: Mapping[str, Any], where: str) -> dict[str, Any]:
    name = text(tool.get("name"), f"{where}.name")
    function: dict[str, Any] = {"name": name}
    if tool.get("description") is not None:
        function["description"] = text(tool["description"], f"{where}.description")
    if tool.get("type") not in (None, "custom") and "input_schema" not in tool:
        request.note(SERVER_TOOL_NOTE)
        function["description"] = compact_json(
            {k: v for k, v in tool.items() if k not in ("name", "cache_control")})
        return {"type": "function", "function": function}
    function["parameters"] = obj(tool.get("input_schema"), f"{where}.input_schema")
    return {"type": "function", "function": function}


def _choice(choice: Mapping[str, Any]) -> str:
    kind = one_of(choice.get("type"), CHOICES, "tool_choice.type")
    if kind == "tool":
        return text(choice.get("name"), "tool_choice.name")
    return {"any": "required"}.get(kind, kind)

