"""Chat messages for CountTokens: ``ChatMessage`` or OpenAI-shaped dicts -> ``pb.ChatMessage``.

A dict may carry ``name``, ``tool_calls`` and ``tool_call_id``; its ``content`` is a str or a
list of content parts (text, or an image_url with its size: images are never fetched).

>>> chat_message({"role": "user", "content": "hi"}).content
'hi'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeAlias

from tokend.client.results import ChatMessage
from tokend.core.errors import InvalidInput
from tokend.v1 import tokenizer_pb2 as pb

MessageLike: TypeAlias = ChatMessage | Mapping[str, Any]

_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})


def as_message(item: object) -> MessageLike:
    """``item`` if it is a chat message, else the error saying what count_tokens takes."""
    if isinstance(item, ChatMessage | Mapping):
        return item
    raise InvalidInput(
        "count_tokens takes a str, a list of str, or a list of chat messages "
        f"(ChatMessage or {{'role': ..., 'content': ...}}); got an item {item!r}"
    )


def chat_message(message: MessageLike) -> pb.ChatMessage:
    if isinstance(message, ChatMessage):
        return pb.ChatMessage(role=message.role, content=message.content, name=message.name or "")
    unknown = set(message) - _MESSAGE_KEYS
    if unknown or "role" not in message:
        raise InvalidInput(
            "a chat message needs 'role' and 'content' (and optionally 'name', 'tool_calls', "
            f"'tool_call_id'); got keys {sorted(message)}"
        )
    out = pb.ChatMessage(role=str(message["role"]), name=str(message.get("name") or ""),
                         tool_call_id=str(message.get("tool_call_id") or ""))
    content: Any = message.get("content")
    if isinstance(content, str) or content is None:
        out.content = content or ""
    else:
        out.parts.extend(_content_part(part) for part in content)
    for call in message.get("tool_calls") or ():
        function = call.get("function", call)
        arguments = function.get("arguments", "")
        out.tool_calls.add(id=str(call.get("id", "")), name=str(function.get("name", "")),
                           arguments=arguments if isinstance(arguments, str)
                           else json.dumps(arguments))
    return out


def _content_part(part: Any) -> pb.ContentPart:
    """An OpenAI content part: text, or an image_url with its width/height (never fetched)."""
    kind = part.get("type") if isinstance(part, Mapping) else None
    if kind == "text":
        return pb.ContentPart(text=str(part.get("text", "")))
    if kind == "image_url":
        url = part.get("image_url") or {}
        return pb.ContentPart(image=pb.ImagePart(
            width=int(part.get("width") or url.get("width") or 0),
            height=int(part.get("height") or url.get("height") or 0),
            detail=str(part.get("detail") or url.get("detail") or ""),
            url=str(url.get("url", "")),
        ))
    raise InvalidInput(
        f'a content part must be {{"type": "text"|"image_url", ...}}, got {part!r}'[:200]
    )
