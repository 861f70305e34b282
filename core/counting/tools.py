"""Tool (function) definitions as OpenAI's chat models see them: a TypeScript namespace.

OpenAI does not publish how tool definitions are counted. The community rule (measured against
the API by hmarr/openai-chat-tokens and used by LiteLLM's ``token_counter``) renders the JSON
Schemas as TypeScript type declarations and adds fixed overheads::

    namespace functions {

    // Get the weather
    type get_weather = (_: {
    // The city
    location: string,
    unit?: "celsius" | "fahrenheit",
    }) => any;

    } // namespace functions

``tools_overhead`` gives the tokens the tools and ``tool_choice`` add to a chat prompt: the
namespace's tokens + 9, 4 fewer when the request has a system message, +1 for
``tool_choice="none"``, +7 + the name's tokens for a named function.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tokend.core.errors import InvalidInput

TOOLS_TOKENS = 9
SYSTEM_MESSAGE_DISCOUNT = 4
TOOL_CHOICE_NONE_TOKENS = 1
TOOL_CHOICE_NAMED_TOKENS = 7


def function_of(tool: Mapping[str, Any], index: int) -> Mapping[str, Any]:
    """The function definition of a tool: ``{"type": "function", "function": {...}}`` or bare."""
    function = tool.get("function", tool)
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise InvalidInput(
            f"tools[{index}] is not a function definition: expected "
            '{"type": "function", "function": {"name": ..., "parameters": {...}}}'
        )
    return function


def format_function_definitions(tools: Sequence[Mapping[str, Any]]) -> str:
    """The TypeScript namespace the tools are rendered as (see the module docstring)."""
    lines = ["namespace functions {", ""]
    for i, tool in enumerate(tools):
        function = function_of(tool, i)
        description = function.get("description")
        if description:
            lines.append(f"// {description}")
        parameters = function.get("parameters") or {}
        if parameters.get("properties"):
            lines.append(f"type {function['name']} = (_: {{")
            lines.append(_format_properties(parameters, 0))
            lines.append("}) => any;")
        else:
            lines.append(f"type {function['name']} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def _format_properties(schema: Mapping[str, Any], indent: int) -> str:
    required = schema.get("required") or []
    lines = []
    for name, prop in (schema.get("properties") or {}).items():
        if prop.get("description"):
            lines.append(f"// {prop['description']}")
        optional = "" if name in required else "?"
        lines.append(f"{name}{optional}: {_format_type(prop, indent)},")
    return "\n".join(" " * indent + line for line in lines)


def _format_type(prop: Mapping[str, Any], indent: int) -> str:
    kind = prop.get("type")
    if kind == "string":
        if prop.get("enum"):
            return " | ".join(f'"{value}"' for value in prop["enum"])
        return "string"
    if kind in ("number", "integer"):
        if prop.get("enum"):
            return " | ".join(json.dumps(value) for value in prop["enum"])
        return "number"
    if kind in ("boolean", "null"):
        return str(kind)
    if kind == "object":
        return "\n".join(["{", _format_properties(prop, indent + 2), "}"])
    if kind == "array":
        items = prop.get("items")
        return f"{_format_type(items, indent)}[]" if items else "any[]"
    return "any"


def tool_choice_name(tool_choice: str | Mapping[str, Any] | None) -> str | None:
    """The function a ``tool_choice`` names, or None for ``auto``/``none``/``required``/unset."""
    if tool_choice is None or isinstance(tool_choice, str):
        return None
    function = tool_choice.get("function")
    name = function.get("name") if isinstance(function, Mapping) else tool_choice.get("name")
    if not isinstance(name, str):
        raise InvalidInput('tool_choice must be "auto", "none", "required" or '
                           '{"type": "function", "function": {"name": ...}}')
    return name
