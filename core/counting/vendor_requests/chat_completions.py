"""OpenAI's Chat Completions body (``POST /v1/chat/completions``) as a :class:`ChatRequest`.

The body's ``messages`` already are the OpenAI-style dicts ``count_chat`` reads; each is checked
field by field (refusals name the body's field) and kept: ``role`` (system, developer, user,
assistant, tool, function), ``content`` a string, null or parts (``text``, ``image_url``: sized
by tokend's ``width`` / ``height`` when given, from a base64 data URL's header, else the
default size; ``input_audio`` / ``file`` refused: not counted), ``name``, ``tool_calls``,
``tool_call_id``. ``tools`` are function tools; ``tool_choice`` a string or
``{"type": "function", "function": {"name"}}``. Sampling fields are read past.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokend.core.counting.vendor_requests import ChatRequest
from tokend.core.counting.vendor_requests.media import (
    checked_base64,
    given_size,
    image_part,
    image_size,
)
from tokend.core.counting.vendor_requests.shapes import (
    array,
    check_utf8,
    invalid,
    obj,
    one_of,
    optional_text,
    text,
)

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
DETAILS = ("auto", "low", "high")
DATA_URL = "data:"


def chat_completions_request(body: Mapping[str, Any]) -> ChatRequest:
    """The chat request of a Chat Completions body.

    >>> r = chat_completions_request({"model": "gpt-4o",
    ...                               "messages": [{"role": "user", "content": "Hi"}]})
    >>> r.messages, r.origins
    ([{'role': 'user', 'content': 'Hi'}], ['messages[0]'])
    """
    check_utf8(body)
    if "model" not in body:
        raise invalid("model", "is required (e.g. \"gpt-4o\")")
    request = ChatRequest(model=text(body["model"], "model"))
    if "messages" not in body:
        raise invalid("messages", "is required: a list of {\"role\", \"content\"} messages")
    for i, raw in enumerate(array(body["messages"], "messages")):
        request.add(_message(request, obj(raw, f"messages[{i}]"), f"messages[{i}]"),
                    f"messages[{i}]")
    if body.get("tools") is not None:
        for i, raw in enumerate(array(body["tools"], "tools")):
            tool = obj(raw, f"tools[{i}]")
            one_of(tool.get("type"), ("function",), f"tools[{i}].type")
            function = obj(tool.get("function"), f"tools[{i}].function")
            text(function.get("name"), f"tools[{i}].function.name")
            request.tools.append({"type": "function", "function": dict(function)})
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        request.tool_choice = one_of(choice, ("auto", "none", "required"), "tool_choice")
    elif choice is not None:
        function = obj(obj(choice, "tool_choice").get("function"), "tool_choice.function")
        request.tool_choice = text(function.get("name"), "tool_choice.function.name")
    return request


def _message(request: ChatRequest, message: Mapping[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {"role": one_of(message.get("role"), ROLES, f"{where}.role")}
    given = message.get("content")
    if given is None or isinstance(given, str):
        out["content"] = given or ""
    else:
        out["content"] = [_part(request, obj(p, f"{where}.content[{j}]"),
                                f"{where}.content[{j}]")
                          for j, p in enumerate(array(given, f"{where}.content"))]
    for key in ("name", "tool_call_id"):
        if message.get(key) is not None:
            out[key] = optional_text(message, key, f"{where}.{key}")
    if message.get("tool_calls") is not None:
        calls = []
        for k, raw in enumerate(array(message["tool_calls"], f"{where}.tool_calls")):
            at = f"{where}.tool_calls[{k}]"
            function = obj(obj(raw, at).get("function"), f"{at}.function")
            calls.append({"id": optional_text(raw, "id", f"{at}.id"), "type": "function",
                          "function": {"name": text(function.get("name"), f"{at}.function.name"),
                                       "arguments": optional_text(function, "arguments",
                                                                  f"{at}.function.arguments")}})
        out["tool_calls"] = calls
    return out


def _part(request: ChatRequest, part: Mapping[str, Any], at: str) -> dict[str, Any]:
    kind = one_of(part.get("type"), ("text", "image_url"), f"{at}.type")
    if kind == "text":
        return {"type": "text", "text": text(part.get("text"), f"{at}.text")}
    url = obj(part.get("image_url"), f"{at}.image_url")
    address = text(url.get("url"), f"{at}.image_url.url")
    detail = one_of(url.get("detail", "auto"), DETAILS, f"{at}.image_url.detail")
    size = given_size(part, at) or given_size(url, f"{at}.image_url")
    if size is None and address.startswith(DATA_URL) and "," in address:
        size = image_size(checked_base64(address, f"{at}.image_url.url"))
    return image_part(size, detail, request.notes)
