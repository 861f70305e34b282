"""Chat messages as plain data, and the OpenAI-style dicts tokend.core.counting reads.

``ChatMessage`` mirrors the proto's ``ChatMessage`` (content, or parts of text and images; tool
calls); ``message_dict`` checks each text field against --max-text-bytes as it converts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokend.core.counting.tools import parse_tools
from tokend.core.errors import InvalidInput
from tokend.server import limits
from tokend.server.app.fields import with_field


@dataclass(frozen=True, slots=True)
class ImagePart:
    width: int = 0
    height: int = 0
    detail: str = ""
    url: str = ""


@dataclass(frozen=True, slots=True)
class ContentPart:
    """A part of a message: text, or an image when ``image`` is set."""

    text: str = ""
    image: ImagePart | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: str = ""
    content: str = ""
    name: str = ""
    parts: tuple[ContentPart, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""


def message_dict(message: ChatMessage, field: str, max_bytes: int) -> dict[str, Any]:
    """An OpenAI-style message dict (text fields size-checked, each naming its field)."""
    out: dict[str, Any] = {"role": message.role}
    limits.check_text(message.role, max_bytes, f"{field}.role")
    if message.parts:
        parts: list[dict[str, Any]] = []
        for j, part in enumerate(message.parts):
            image = part.image
            if image is not None:
                parts.append({"type": "image_url", "width": image.width, "height": image.height,
                              "image_url": {"url": image.url, "detail": image.detail or "auto"}})
            else:
                limits.check_text(part.text, max_bytes, f"{field}.parts[{j}].text")
                parts.append({"type": "text", "text": part.text})
        out["content"] = parts
    else:
        limits.check_text(message.content, max_bytes, f"{field}.content")
        out["content"] = message.content
    if message.name:
        limits.check_text(message.name, max_bytes, f"{field}.name")
        out["name"] = message.name
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}}
            for call in message.tool_calls
        ]
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


def tools_list(tools_json: str, max_bytes: int) -> list[dict[str, Any]] | None:
    """The tool definitions of a request (a JSON array, schemas checked), or None."""
    if not tools_json:
        return None
    limits.check_text(tools_json, max_bytes, "tools_json")
    try:
        return parse_tools(tools_json)
    except InvalidInput as exc:
        raise with_field(exc, "tools_json") from None


def tool_choice(value: str) -> str | dict[str, Any] | None:
    """``auto``/``none``/``required`` as they are, a function's name as OpenAI's object form."""
    if not value:
        return None
    if value in ("auto", "none", "required"):
        return value
    return {"type": "function", "function": {"name": value}}
