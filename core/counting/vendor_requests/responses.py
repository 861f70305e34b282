"""OpenAI's ``POST /v1/responses/input_tokens`` body (the Responses API) as a
:class:`ChatRequest`.

``instructions`` becomes a system message; ``input`` is a string (one user message) or items:
``message`` items (role user / assistant / system / developer; content a string or parts:
``input_text`` / ``output_text`` / ``refusal`` text, ``input_image`` an image part sized from a
base64 data URL's header, ``input_file`` a base64 PDF's pages as images), ``function_call``
items a tool call of the assistant message before them (or of a new one), ``function_call_output``
a ``tool`` message; ``reasoning`` items nothing (not part of a gpt-4o prompt; encrypted
otherwise); other items their JSON. ``tools``: function tools as Chat Completions writes them,
OpenAI's hosted tools (web search, file search, ...) by their JSON. ``previous_response_id``,
``conversation`` and ``item_reference`` items are refused: tokend keeps no conversations.
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

ROLES = ("user", "assistant", "system", "developer")
DETAILS = ("auto", "low", "high")
TEXT_PARTS = {"input_text": "text", "output_text": "text", "refusal": "refusal"}
PAGE_SIZE = (1024, 1024)
PDF_NOTE = ("a PDF's pages are counted as one 1024x1024 image each; the text OpenAI also "
            "extracts from each page is not counted")
HOSTED_NOTE = "OpenAI's hosted tools are counted by their definition's JSON (no rule published)"
STORED = "tokend keeps no conversations: send the whole input instead"


def responses_request(body: Mapping[str, Any]) -> ChatRequest:
    """The chat request of a Responses API input_tokens body.

    >>> r = responses_request({"model": "gpt-4o", "instructions": "Be brief.", "input": "Hi"})
    >>> r.messages
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}]
    """
    check_utf8(body)
    for key in ("previous_response_id", "conversation"):
        if body.get(key) is not None:
            raise invalid(key, f"is not counted: {STORED}")
    if "model" not in body:
        raise invalid("model", "is required (e.g. \"gpt-4o\")")
    # ``input`` is optional in OpenAI's schema for input_tokens: none counts as nothing.
    request = ChatRequest(model=text(body["model"], "model"), empty_ok=True)
    instructions = optional_text(body, "instructions", "instructions")
    if instructions:
        request.add({"role": "system", "content": instructions}, "instructions")
    given = body.get("input")
    if isinstance(given, str):
        request.add({"role": "user", "content": given}, "input")
    elif given is not None:
        for i, item in enumerate(array(given, "input")):
            _item(request, obj(item, f"input[{i}]"), f"input[{i}]")
    if body.get("tools") is not None:
        request.tools = [_tool(request, obj(t, f"tools[{i}]"), f"tools[{i}]")
                         for i, t in enumerate(array(body["tools"], "tools"))]
    if body.get("tool_choice") is not None:
        request.tool_choice = _choice(body["tool_choice"])
    return request


def _item(request: ChatRequest, item: Mapping[str, Any], at: str) -> None:
    kind = item.get("type", "message")
    if kind == "message":
        role = one_of(item.get("role"), ROLES, f"{at}.role")
        given = item.get("content")
        if isinstance(given, str):
            request.add({"role": role, "content": given}, at)
            return
        request.add({"role": role, "content": content(_parts(request, given, f"{at}.content"))},
                    at)
    elif kind == "function_call":
        call = {"id": optional_text(item, "call_id", f"{at}.call_id"), "type": "function",
                "function": {"name": text(item.get("name"), f"{at}.name"),
                             "arguments": text(item.get("arguments"), f"{at}.arguments")}}
        last = request.messages[-1] if request.messages else None
        if last is not None and last["role"] == "assistant":
            last.setdefault("tool_calls", []).append(call)
        else:
            request.add({"role": "assistant", "content": "", "tool_calls": [call]}, at)
    elif kind == "function_call_output":
        output = item.get("output")
        if isinstance(output, str):
            body: str | list[dict[str, Any]] = output
        else:
            body = content(_parts(request, output, f"{at}.output"))
        request.add({"role": "tool", "tool_call_id": text(item.get("call_id"), f"{at}.call_id"),
                     "content": body}, at)
    elif kind == "reasoning":
        request.note("reasoning items are left out (not part of the prompt tokend counts)")
    elif kind == "item_reference":
        raise invalid(f"{at}.type", f"an item_reference is not counted: {STORED}")
    else:
        kind = text(kind, f"{at}.type")
        request.note(f"{kind[:40]} items are counted as their JSON")
        request.add({"role": "assistant", "content": compact_json(dict(item))}, at)


def _parts(request: ChatRequest, given: Any, at: str) -> list[dict[str, Any]]:
    """The parts of a content (or output) array."""
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(array(given, at)):
        parts += _part(request, obj(part, f"{at}[{j}]"), f"{at}[{j}]")
    return parts


def _part(request: ChatRequest, part: Mapping[str, Any], at: str) -> list[dict[str, Any]]:
    kind = text(part.get("type"), f"{at}.type")
    if kind in TEXT_PARTS:
        key = TEXT_PARTS[kind]
        return [{"type": "text", "text": text(part.get(key), f"{at}.{key}")}]
    if kind == "input_image":
        detail = one_of(part.get("detail") or "auto", DETAILS, f"{at}.detail")
        url = optional_text(part, "image_url", f"{at}.image_url")
        size = given_size(part, at) or (
            image_size(checked_base64(url, f"{at}.image_url")) if url.startswith("data:")
            else None)
        return [image_part(size, detail, request.notes)]
    if kind == "input_file":
        data = optional_text(part, "file_data", f"{at}.file_data")
        if not data:
            raise invalid(f"{at}.file_data", "a file given by file_id or file_url is not "
                          "counted: tokend never fetches files; send it as file_data (base64)")
        request.note(PDF_NOTE)
        pages = pdf_pages(checked_base64(data, f"{at}.file_data"))
        return [image_part(PAGE_SIZE, "high", request.notes) for _ in range(pages)]
    raise invalid(f"{at}.type", "must be input_text, input_image, input_file, output_text or "
                  f"refusal, not {shown(kind, 40)}")


def _tool(request: ChatRequest, tool: Mapping[str, Any], where: str) -> dict[str, Any]:
    kind = text(tool.get("type"), f"{where}.type")
    if kind == "function":
        function: dict[str, Any] = {"name": text(tool.get("name"), f"{where}.name")}
        if tool.get("description") is not None:
            function["description"] = text(tool["description"], f"{where}.description")
        if tool.get("parameters") is not None:
            function["parameters"] = obj(tool["parameters"], f"{where}.parameters")
        return {"type": "function", "function": function}
    request.note(HOSTED_NOTE)
    name = tool.get("name") if isinstance(tool.get("name"), str) else kind
    return {"type": "function", "function": {"name": name, "description": compact_json(
        {k: v for k, v in tool.items() if k != "name"})}}


def _choice(choice: Any) -> str:
    if isinstance(choice, str):
        return one_of(choice, ("auto", "none", "required"), "tool_choice")
    choice = obj(choice, "tool_choice")
    kind = text(choice.get("type"), "tool_choice.type")
    if kind == "function":
        return text(choice.get("name"), "tool_choice.name")
    if kind == "allowed_tools":
        return one_of(choice.get("mode", "auto"), ("auto", "required"), "tool_choice.mode")
    return "required"  # a hosted tool forced
