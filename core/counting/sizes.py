"""Size limits over every string a chat request carries, and its content parts.

A server bounds each text it counts (``--max-text-bytes``) and the items of a request
(``--max-batch``); a chat request hides strings and items deeper than texts and messages: tool
call arguments and ids, a tool result's ``tool_call_id``, names, content parts. The limit values
are the caller's (the server's config); this module only walks the OpenAI-style messages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tokend.core.errors import LimitExceeded

Message = Mapping[str, Any]


def message_strings(messages: Sequence[Message]) -> Iterator[tuple[str, str]]:
    """``(field, text)`` for every string of ``messages`` a client chose, field paths included.

    >>> list(message_strings([{"role": "tool", "content": "ok", "tool_call_id": "c1"}]))
    [('messages[0].role', 'tool'), ('messages[0].content', 'ok'), \
('messages[0].tool_call_id', 'c1')]
    """
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        for key, value in message.items():
            if isinstance(value, str):
                yield f"{where}.{key}", value
            elif key == "content" and isinstance(value, Sequence):
                for j, part in enumerate(value):
                    if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                        yield f"{where}.content[{j}].text", part["text"]
            elif key == "tool_calls" and isinstance(value, Sequence):
                for j, call in enumerate(value):
                    yield from _call_strings(call, f"{where}.tool_calls[{j}]")


def _call_strings(call: Any, where: str) -> Iterator[tuple[str, str]]:
    if not isinstance(call, Mapping):
        return
    if isinstance(call.get("id"), str):
        yield f"{where}.id", call["id"]
    function = call.get("function")
    if isinstance(function, Mapping):
        for key in ("name", "arguments"):
            if isinstance(function.get(key), str):
                yield f"{where}.function.{key}", function[key]


def content_parts(messages: Sequence[Message]) -> int:
    """How many content parts ``messages`` hold (a string content counts as none)."""
    return sum(
        len(m["content"]) for m in messages
        if isinstance(m.get("content"), Sequence) and not isinstance(m.get("content"), str)
    )


def check_chat_sizes(
    messages: Sequence[Message],
    *,
    max_text_bytes: int,
    max_items: int,
    text_flag: str = "--max-text-bytes",
    items_flag: str = "--max-batch",
) -> None:
    """Raise LimitExceeded naming the field if any string or the item count is over its limit.

    Items are the messages plus their content parts (a part costs what a message does).

    >>> check_chat_sizes([{"role": "user", "content": "hi", "tool_call_id": "x" * 9}],
    ...                  max_text_bytes=8, max_items=4)
    Traceback (most recent call last):
    tokend.core.errors.LimitExceeded: messages[0].tool_call_id size in bytes is 9, over the \
limit of 8 (raise it with --max-text-bytes)
    """
    items = len(messages) + content_parts(messages)
    if items > max_items:
        raise LimitExceeded("messages + content parts", items, max_items, items_flag,
                            field="messages")
    for field, text in message_strings(messages):
        # subtle: at most 4 UTF-8 bytes per code point, so short texts skip the encoding
        if len(text) * 4 > max_text_bytes:
            size = len(text.encode("utf-8", errors="surrogatepass"))
            if size > max_text_bytes:
                raise LimitExceeded(f"{field} size in bytes", size, max_text_bytes,
                                    text_flag, field=field)
