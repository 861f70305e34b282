"""The vendors' count-tokens request bodies as the chat request ``count_chat`` counts.

One module per vendor turns its body into OpenAI-style message dicts, function tools and a
tool choice (:class:`ChatRequest`), refusing what is malformed with the vendor's field name:
``anthropic`` (``POST /v1/messages/count_tokens``), ``responses`` (OpenAI's
``POST /v1/responses/input_tokens``), ``gemini`` (``models/{model}:countTokens``). The model
is resolved later, through the catalogue, as for any count; nothing is fetched (``media``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ChatRequest:
    """A vendor request as tokend counts it.

    ``messages`` are OpenAI-style dicts (``role``, ``content`` as a string or text and
    ``image_url`` parts with ``width`` / ``height``, ``tool_calls``, ``tool_call_id``), ``tools``
    function definitions (``{"type": "function", "function": {...}}``), ``tool_choice`` ""
    (none given), ``auto``, ``none``, ``required`` or a function's name. ``origins[i]`` is the
    vendor's field that ``messages[i]`` came from (errors about a message name it); ``notes``
    say what made the translation approximate (they join the count's estimate reason).
    """

    model: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: str = ""
    origins: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The vendor accepts a request with no message at all (OpenAI's Responses input_tokens
    # without input): it is counted, as 0 tokens plus its tools, instead of refused.
    empty_ok: bool = False

    def add(self, message: dict[str, Any], origin: str) -> None:
        self.messages.append(message)
        self.origins.append(origin)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A message's content: one text part as a plain string (counted exactly by the OpenAI
    rules), anything else as its parts.

    >>> content([{"type": "text", "text": "hi"}]), content([])
    ('hi', '')
    """
    if not parts:
        return ""
    if len(parts) == 1 and parts[0].get("type") == "text":
        return str(parts[0]["text"])
    return parts
