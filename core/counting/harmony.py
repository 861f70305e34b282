"""The harmony format of gpt-oss, as its chat template renders a request for generation.

gpt-oss reads conversations in OpenAI's harmony format (``<|start|>{header}<|message|>{body}
<|end|>``). Its chat template (shipped with the model's tokenizer) always opens with a system
message naming the model, knowledge cutoff, date and reasoning effort, turns a leading
system/developer message into the developer's "# Instructions", renders tools as a TypeScript
namespace in the developer message, and primes the reply with ``<|start|>assistant``. This
module builds the same prompt (tests compare it with the template rendered by transformers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tokend.core.counting.prompt import Prompt
from tokend.core.counting.tools import function_of

IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
KNOWLEDGE_CUTOFF = "2024-06"
DEFAULT_EFFORT = "medium"


def harmony_prompt(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    reasoning_effort: str = DEFAULT_EFFORT,
    today: str | None = None,
) -> Prompt:
    """The prompt gpt-oss's chat template renders (``add_generation_prompt=True``)."""
    p = Prompt()
    date = today or datetime.now().strftime("%Y-%m-%d")  # the template's strftime_now
    system = (
        f"{IDENTITY}\nKnowledge cutoff: {KNOWLEDGE_CUTOFF}\nCurrent date: {date}\n\n"
        f"Reasoning: {reasoning_effort}\n\n"
        "# Valid channels: analysis, commentary, final. Channel must be included for every "
        "message."
    )
    if tools:
        system += "\nCalls to these tools must go to the commentary channel: 'functions'."
    _block(p, "system", system)
    developer = ""
    rest = list(messages)
    if rest and rest[0].get("role") in ("developer", "system"):
        developer = str(rest[0].get("content") or "")
        rest = rest[1:]
    if developer or tools:
        body = f"# Instructions\n\n{developer}\n\n" if developer else ""
        if tools:
            body += "# Tools\n\n" + _namespace(tools)
        _block(p, "developer", body)
    last_call: str | None = None
    for i, message in enumerate(rest):
        role = message.get("role")
        content = str(message.get("content") or "")
        if role == "assistant" and message.get("tool_calls"):
            final_later = any(
                m.get("role") == "assistant" and not m.get("tool_calls") for m in rest[i + 1 :]
            )
            thinking = str(message.get("thinking") or "")
            analysis = content or thinking
            if analysis and not final_later:
                _channel(p, "assistant", "analysis", analysis, "<|end|>")
            call = message["tool_calls"][0]
            call = call.get("function", call)
            last_call = str(call.get("name"))
            p.special("<|start|>")
            p.text(f"assistant to=functions.{last_call}")
            p.special("<|channel|>")
            p.text(f"commentary {call.get('content_type', 'json')}")
            p.special("<|message|>")
            p.text(_tojson(call.get("arguments")))
            p.special("<|call|>")
        elif role == "assistant":
            _channel(p, "assistant", "final", content, "<|end|>")
            last_call = None
        elif role == "tool":
            p.special("<|start|>")
            p.text(f"functions.{last_call} to=assistant")
            p.special("<|channel|>")
            p.text("commentary")
            p.special("<|message|>")
            p.text(_tojson(message.get("content")))
            p.special("<|end|>")
        elif role == "user":
            _block(p, "user", content)
        # The template renders no other role after the first message.
    p.special("<|start|>")
    p.text("assistant")
    return p


def _block(p: Prompt, header: str, body: str) -> None:
    p.special("<|start|>")
    p.text(header)
    p.special("<|message|>")
    p.text(body)
    p.special("<|end|>")


def _channel(p: Prompt, header: str, channel: str, body: str, end: str) -> None:
    p.special("<|start|>")
    p.text(header)
    p.special("<|channel|>")
    p.text(channel)
    p.special("<|message|>")
    p.text(body)
    p.special(end)


def _tojson(value: Any) -> str:
    """transformers' ``tojson`` filter: json.dumps without ASCII escaping."""
    return json.dumps(value, ensure_ascii=False)


def _namespace(tools: Sequence[Mapping[str, Any]]) -> str:
    out = "## functions\n\nnamespace functions {\n\n"
    for i, tool in enumerate(tools):
        function = function_of(tool, i)
        out += f"// {function.get('description', '')}\n"
        out += f"type {function['name']} = "
        parameters = function.get("parameters") or {}
        properties = parameters.get("properties") or {}
        if not properties:
            out += "() => any;\n\n"
            continue
        out += "(_: {\n"
        required = parameters.get("required") or []
        for name, spec in properties.items():
            if spec.get("description"):
                out += f"// {spec['description']}\n"
            out += name + ("" if name in required else "?") + ": " + _ts_type(spec)
            if "default" in spec:
                if spec.get("enum") or spec.get("oneOf"):
                    sep = ", " if spec.get("enum") else ""
                    out += f"{sep}// default: {spec['default']}"
                else:
                    out += f", // default: {_tojson(spec['default'])}"
            out += ",\n"
        out += "}) => any;\n\n"
    return out + "} // namespace functions"


def _ts_type(spec: Mapping[str, Any]) -> str:
    """The template's ``render_typescript_type`` for the common JSON Schema shapes."""
    kind = spec.get("type")
    nullable = " | null" if spec.get("nullable") else ""
    if kind == "array":
        items = spec.get("items")
        if not items:
            return "any[]" + nullable
        simple = {"string": "string[]", "number": "number[]", "integer": "number[]",
                  "boolean": "boolean[]"}
        item_kind = items.get("type")
        if isinstance(item_kind, str) and item_kind in simple:
            return simple[item_kind] + nullable
        inner = _ts_type(items)
        typed = "any[]" if inner == "object | object" or len(inner) > 50 else inner + "[]"
        return typed + nullable
    if isinstance(kind, list) and kind:
        return " | ".join(kind) if len(kind) > 1 else str(kind[0])
    if kind == "string":
        if spec.get("enum"):
            return '"' + '" | "'.join(str(v) for v in spec["enum"]) + '"'
        return "string" + nullable
    if kind in ("number", "integer"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "object":
        properties = spec.get("properties") or {}
        if not properties:
            return "object"
        required = spec.get("required") or []
        parts = []
        for name, prop in properties.items():
            optional = "" if name in required else "?"
            # subtle: the template writes the nested type on a line of its own (a `{{ }}` with no
            # whitespace control after a newline and 16 spaces of indentation).
            parts.append(f"{name}{optional}: \n{' ' * 16}{_ts_type(prop)}")
        return "{\n" + ", ".join(parts) + "}"
    return "any"
