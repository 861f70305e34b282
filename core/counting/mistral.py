"""Mistral chat framing, as mistral-common 1.13.1's ``encode_chat_completion`` does it.

The request is first normalized as ``InstructRequestNormalizer`` (v1-v3) or
``InstructRequestNormalizerV7`` does: consecutive messages of one role merge (texts joined by
``"\\n\\n"``), tool-call arguments and (before v7) tool results are re-serialized as JSON, and
a conversation that does not start with a user message gets an empty one (v7: only when
empty). Then the instruct tokenizer of the version encodes it (``InstructTokenizerV1`` ...
``V7``), every text piece on its own (SentencePiece adds its dummy prefix per piece)::

    v1:  <s> "[INST] {system}\\n\\n{user} [/INST]" "{assistant}" </s> ...   (plain text markers)
    v2:  <s> [INST] {user} [/INST] {assistant} </s> ... [AVAILABLE_TOOLS] {tools json}
         [/AVAILABLE_TOOLS] [INST] {system}\\n\\n{last user} [/INST]
         tool calls: [TOOL_CALLS] {json list} </s>; results: [TOOL_RESULTS] {json} [/TOOL_RESULTS]
         (calls and results before the last user message are dropped)
    v3:  as v2, history kept, calls carry their id, a result is {"content", "call_id"}
    v7:  system messages in place: [SYSTEM_PROMPT] {system} [/SYSTEM_PROMPT]; a result is
         [TOOL_RESULTS] {call id} [TOOL_CONTENT] {content} [/TOOL_RESULTS]

The tests compare the count with mistral-common's for every model of its table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokend.core.counting.llama import Piece
from tokend.core.errors import InvalidInput

VERSIONS = {"mistral-v1": 1, "mistral-v2": 2, "mistral-v3": 3, "mistral-v7": 7}
JOIN = "\n\n"


@dataclass
class _Message:
    role: str
    content: str | list[Any] = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


def mistral_pieces(messages: Sequence[Mapping[str, Any]],
                   tools: Sequence[Mapping[str, Any]] | None, rule: str,
                   reasons: list[str]) -> list[Piece]:
    """The prompt of a chat request as pieces (module docstring)."""
    version = VERSIONS[rule]
    system, normalized = _normalize(messages, version)
    users = [i for i, m in enumerate(normalized) if m.role == "user"]
    first_user, last_user = (users[0], users[-1]) if users else (-1, -1)
    pieces: list[Piece] = [("<s>", True)]
    for i, m in enumerate(normalized):
        before_last = i < last_user
        if m.role == "user":
            pieces += _user(m, version, tools, is_first=i == first_user,
                            is_last=i == last_user, system=system, reasons=reasons)
        elif m.role == "system":
            pieces += [("[SYSTEM_PROMPT]", True), *_chunks(m.content, reasons),
                       ("[/SYSTEM_PROMPT]", True)]
        elif m.role == "assistant":
            pieces += _assistant(m, version, before_last)
        else:
            pieces += _tool(m, version, before_last)
    return pieces


def shown_messages(messages: Sequence[Mapping[str, Any]], rule: str
                   ) -> list[Mapping[str, Any]]:
    """The messages whose text reaches the prompt (for the breakdown): v2 drops tool results,
    and assistant messages with tool calls, before the last user message."""
    if VERSIONS[rule] != 2:
        return list(messages)
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    last = users[-1] if users else -1
    return [m for i, m in enumerate(messages) if i > last or not (
        m.get("role") == "tool" or (m.get("role") == "assistant" and m.get("tool_calls")))]


def _user(m: _Message, version: int, tools: Sequence[Mapping[str, Any]] | None, *,
          is_first: bool, is_last: bool, system: str | None, reasons: list[str]) -> list[Piece]:
    if version == 1:
        if not isinstance(m.content, str):
            raise InvalidInput("this Mistral model (tokenizer v1) takes text messages only")
        content = f"{system}{JOIN}{m.content}" if is_first and system else m.content
        return [(f"[INST] {content} [/INST]", False)]
    pieces: list[Piece] = []
    if is_last and tools:
        pieces += [("[AVAILABLE_TOOLS]", True), (_tools_json(tools), False),
                   ("[/AVAILABLE_TOOLS]", True)]
    pieces.append(("[INST]", True))
    prefix = f"{system}{JOIN}" if is_last and system and version < 7 else ""
    if isinstance(m.content, str):
        pieces.append((prefix + m.content, False))
    else:
        if prefix:
            pieces.append((prefix, False))
        pieces += _chunks(_image_first(m.content), reasons)
    pieces.append(("[/INST]", True))
    return pieces


def _assistant(m: _Message, version: int, before_last: bool) -> list[Piece]:
    if m.tool_calls and version == 1:
        raise InvalidInput("this Mistral model (tokenizer v1) has no tool calls")
    if m.tool_calls and m.content and version < 7:
        raise InvalidInput("an assistant message with tool calls cannot have content for "
                           "this Mistral model (tokenizer before v7)")
    pieces: list[Piece] = []
    if m.content:
        text = m.content if isinstance(m.content, str) else "".join(
            str(c.get("text", "")) for c in m.content)
        pieces.append((text if version == 1 else text.rstrip(" "), False))
    if m.tool_calls:
        if version == 2 and before_last:
            return []
        calls = [_call(c, with_id=version >= 3) for c in m.tool_calls]
        pieces += [("[TOOL_CALLS]", True), (json.dumps(calls, ensure_ascii=False), False)]
    if not pieces:
        raise InvalidInput("an assistant message needs content or tool calls")
    return [*pieces, ("</s>", True)]


def _tool(m: _Message, version: int, before_last: bool) -> list[Piece]:
    if version == 1:
        raise InvalidInput("this Mistral model (tokenizer v1) has no tool results")
    content = m.content if isinstance(m.content, str) else ""
    if version == 7:
        return [("[TOOL_RESULTS]", True), (m.tool_call_id or "null", False),
                ("[TOOL_CONTENT]", True), (content, False), ("[/TOOL_RESULTS]", True)]
    if version == 2 and before_last:
        return []
    parsed = _parsed(content)
    result: Any = ([{"name": m.name, "content": parsed}] if version == 2
                   else {"content": parsed, "call_id": m.tool_call_id})
    return [("[TOOL_RESULTS]", True), (json.dumps(result, ensure_ascii=False), False),
            ("[/TOOL_RESULTS]", True)]


def _chunks(content: str | list[Any], reasons: list[str]) -> list[Piece]:
    if isinstance(content, str):
        return [(content, False)]
    pieces: list[Piece] = []
    for chunk in content:
        if chunk.get("type") == "text":
            pieces.append((str(chunk.get("text", "")), False))
        else:
            reasons.append("images are not counted for Mistral models (their [IMG] tokens "
                           "depend on the pixels)")
    return pieces


def _image_first(content: list[Any]) -> list[Any]:
    """mistral-common moves a trailing image before text-only chunks."""
    if len(content) >= 2 and content[-1].get("type") != "text" and all(
            c.get("type") == "text" for c in content[:-1]):
        return [content[-1], *content[:-1]]
    return content


def _tools_json(tools: Sequence[Mapping[str, Any]]) -> str:
    dumped = []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise InvalidInput(f'tools[{i}] must be {{"type": "function", "function": '
                               '{"name": ..., "parameters": {...}}}')
        dumped.append({"type": "function", "function": {
            "name": function["name"], "description": function.get("description") or "",
            "parameters": function.get("parameters") or {}}})
    return json.dumps(dumped, ensure_ascii=False)


def _call(call: Mapping[str, Any], *, with_id: bool) -> dict[str, Any]:
    function = call.get("function") or {}
    out: dict[str, Any] = {"name": function.get("name", ""),
                           "arguments": _parsed(_normalized_json(function.get("arguments")))}
    call_id = call.get("id")
    if with_id and call_id and call_id != "null":
        out["id"] = call_id
    return out


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _normalized_json(value: Any) -> str:
    if value is None or value == "":
        return "{}"
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    try:
        return json.dumps(json.loads(value), ensure_ascii=False)
    except ValueError:
        return value


# -- the request normalizer -------------------------------------------------------------------


def _normalize(messages: Sequence[Mapping[str, Any]], version: int
               ) -> tuple[str | None, list[_Message]]:
    """(system prompt before v7, the merged messages), as mistral-common normalizes."""
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in (
                "system", "user", "assistant", "tool"):
            raise InvalidInput(f"messages[{i}] must be an object whose role is system, user, "
                               "assistant or tool")
    system = None
    if version < 7:
        prompts = [_aggregate([m.get("content")]) for m in messages
                   if m["role"] == "system" and m.get("content")]
        system = JOIN.join(p if isinstance(p, str) else "" for p in prompts) or None
    out: list[_Message] = []
    group: list[Mapping[str, Any]] = []
    for message in [*messages, {"role": None}]:
        if group and message["role"] != group[0]["role"]:
            out += _merge(group, version)
            group = []
        group.append(message)
    if not out or (version < 7 and out[0].role != "user"):
        out.insert(0, _Message("user", ""))
    return system, out


def _merge(group: list[Mapping[str, Any]], version: int) -> list[_Message]:
    role = group[0]["role"]
    if role == "user":
        return [_Message("user", _aggregate([m.get("content") for m in group]))]
    if role == "assistant":
        calls = [c for m in group for c in (m.get("tool_calls") or [])]
        return [_Message("assistant", _aggregate([m.get("content") for m in group]), calls)]
    if role == "tool":
        out = []
        for m in group:
            content = _aggregate([m.get("content")])
            text = content if isinstance(content, str) else ""
            out.append(_Message("tool", text if version == 7 else _normalized_json(text),
                                tool_call_id=m.get("tool_call_id"), name=m.get("name")))
        return out
    if version < 7:
        return []  # system messages went into the system prompt
    return [_Message("system", _aggregate([m.get("content")])) for m in group]


def _aggregate(contents: list[Any]) -> str | list[Any]:
    """Contents merged as mistral-common's ``_aggregate_content_chunks_impl``: texts joined by
    ``"\\n\\n"`` across messages and chunks; other chunks kept in place."""
    out: list[Any] = []
    texts: list[str] = []
    for content in contents:
        new_message = bool(texts)
        if not content:
            continue
        if isinstance(content, str):
            texts.append((JOIN if new_message else "") + content)
            continue
        for chunk in content:
            if isinstance(chunk, Mapping) and chunk.get("type") == "text":
                if not chunk.get("text"):
                    continue
                texts.append(("" if not texts else JOIN) + str(chunk["text"]))
                new_message = False
            else:
                if texts:
                    out.append({"type": "text", "text": "".join(texts)})
                    texts = []
                out.append(chunk)
    if not out:
        return "".join(texts)
    if texts:
        out.append({"type": "text", "text": "".join(texts)})
    return out
