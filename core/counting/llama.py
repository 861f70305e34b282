"""Llama 3 and Llama 4 chat framing, as llama-models' ``ChatFormat.encode_dialog_prompt`` does.

llama-models 0.3.0 (``llama_models/llama3/chat_format.py``, ``llama4/chat_format.py``)::

    <|begin_of_text|>
    for each message:  <|start_header_id|>{role}<|end_header_id|> "\\n\\n" {content} <|eot_id|>
    <|start_header_id|>assistant<|end_header_id|> "\\n\\n"          # the reply's header

Llama 4 names the tokens ``<|header_start|>``, ``<|header_end|>``, ``<|eot|>`` and ends tool
results and assistant tool calls with ``<|eom|>``. The role ``tool`` is written ``ipython``.
Every text piece (the role, ``"\\n\\n"``, each content item, each tool call) is encoded on
its own, so pieces never merge across a boundary. Tool calls use llama-models' JSON format
(``{"type": "function", "name": ..., "parameters": ...}``). Special-token text in messages is
plain text (``disallowed_special=()``, as there).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tokend.core.errors import InvalidInput

# (header start, header end, end of turn, end of message) per rule.
TOKENS: dict[str, tuple[str, str, str, str]] = {
    "llama3": ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>"),
    "llama4": ("<|header_start|>", "<|header_end|>", "<|eot|>", "<|eom|>"),
}
BEGIN = "<|begin_of_text|>"
IMAGE = "<|image|>"

Piece = tuple[str, bool]  # (text, is_special)


def llama_pieces(messages: Sequence[Mapping[str, Any]], rule: str, reasons: list[str]
                 ) -> list[Piece]:
    """The prompt of ``messages`` as pieces, each encoded on its own (module docstring)."""
    start, end, eot, eom = TOKENS[rule]
    pieces: list[Piece] = [(BEGIN, True)]

    def header(role: str) -> None:
        pieces.extend([(start, True), ("ipython" if role == "tool" else role, False),
                       (end, True), ("\n\n", False)])

    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidInput(f"messages[{i}] must be an object with role and content")
        role = str(message.get("role", ""))
        if role not in ("system", "user", "assistant", "tool"):
            raise InvalidInput(f"messages[{i}].role must be system, user, assistant or tool "
                               f"for this model, not {role[:32]!r}")
        header(role)
        pieces.extend(_content(message.get("content"), f"messages[{i}].content", rule,
                               reasons))
        calls = message.get("tool_calls") or []
        if role == "assistant":
            if not isinstance(calls, Sequence):
                raise InvalidInput(f"messages[{i}].tool_calls must be a list")
            pieces.extend((_tool_call(call, f"messages[{i}].tool_calls[{j}]"), False)
                          for j, call in enumerate(calls))
        ends_message = rule == "llama4" and ((role == "assistant" and calls) or role == "tool")
        pieces.append((eom if ends_message else eot, True))
    header("assistant")
    return pieces


def count_pieces(pieces: Sequence[Piece], specials: frozenset[str] | set[str],
                 count: Callable[[str], int], name: str) -> int:
    """One token per special piece, each text piece counted on its own."""
    total = 0
    for text, special in pieces:
        if special:
            if text not in specials:
                raise InvalidInput(f"the chat format needs the special token {text!r}, which "
                                   f"{name} does not have; count with the model's tokenizer")
            total += 1
        elif text:
            total += count(text)
    return total


def tool_definitions(tools: Sequence[Mapping[str, Any]]) -> str:
    """Tool definitions as llama-stack writes them into the system prompt (JSON, indented)."""
    return "".join(json.dumps(tool, indent=4) + "\n\n" for tool in tools)


def _content(content: Any, where: str, rule: str, reasons: list[str]) -> list[Piece]:
    if content is None:
        return []
    if isinstance(content, str):
        return [(content, False)]
    if not isinstance(content, Sequence):
        raise InvalidInput(f"{where} must be a string or a list of parts")
    pieces: list[Piece] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            pieces.append((str(part.get("text", "")), False))
        elif kind in ("image_url", "image"):
            pieces.append((IMAGE, True))
            reasons.append("an image costs its <|image|> token here plus vision tokens that "
                           "depend on the pixels (not counted)" if rule == "llama3" else
                           "Llama 4 images cost patch tokens that depend on the pixels (only "
                           "the <|image|> token is counted)")
        else:
            raise InvalidInput(f"{where}[{j}]: a part must be {{\"type\": \"text\"|"
                               "\"image_url\", ...}")
    return pieces


def _tool_call(call: Any, where: str) -> str:
    function = call.get("function", call) if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping):
        raise InvalidInput(f"{where} must be an object with a function name and arguments")
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            raise InvalidInput(f"{where}.function.arguments must be a JSON object") from None
    return json.dumps({"type": "function", "name": str(function.get("name", "")),
                       "parameters": arguments})
