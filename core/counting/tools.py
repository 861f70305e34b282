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

from tokend.core.errors import InvalidInput, shown

TOOLS_TOKENS = 9
# Deepest nesting of a tool's parameters (objects in properties, arrays in items) that is
# counted; real tool schemas nest a few levels, and the renderers recurse once per level.
MAX_SCHEMA_DEPTH = 32
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


def parse_tools(text: str, field: str = "tools_json") -> list[dict[str, Any]]:
    """Tool definitions from their JSON text (a JSON array of tool objects), checked.

    >>> parse_tools('[{"type": "function", "function": {"name": "f"}}]')[0]["function"]
    {'name': 'f'}
    """
    try:
        tools = json.loads(text)
    except RecursionError:
        raise InvalidInput(f"{field} nests too deep to read; tool schemas may nest at most "
                           f"{MAX_SCHEMA_DEPTH} levels") from None
    except ValueError as exc:
        raise InvalidInput(f"{field} is not JSON: {exc}") from None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise InvalidInput(f"{field} must be a JSON array of tool objects")
    check_tools(tools)
    return tools


def check_tools(tools: Sequence[Any]) -> None:
    """Refuse tool definitions the renderers cannot read, naming the field at fault.

    Each tool is ``{"type": "function", "function": {"name": str, "parameters": schema}}`` (or
    the bare function); a schema is a JSON object whose ``properties`` is an object of schemas,
    ``required`` a list of names, ``type`` a name or a list of names, ``enum`` a list and
    ``items`` a schema, nested at most MAX_SCHEMA_DEPTH deep.

    >>> check_tools([{"name": "f", "parameters": {"properties": []}}])
    Traceback (most recent call last):
    tokend.core.errors.InvalidInput: tools[0].parameters.properties must be a JSON object ...
    """
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise InvalidInput(f"tools[{i}] must be a JSON object, not {_kind(tool)}")
        function = function_of(tool, i)
        where = f"tools[{i}]" + (".function" if "function" in tool else "")
        parameters = function.get("parameters")
        if parameters is not None:
            _check_schema(parameters, f"{where}.parameters", 0)


def _check_schema(schema: Any, where: str, depth: int) -> None:
    if not isinstance(schema, Mapping):
        raise InvalidInput(f"{where} must be a JSON object (a JSON Schema), not {_kind(schema)}")
    if depth > MAX_SCHEMA_DEPTH:
        raise InvalidInput(f"{where} nests deeper than {MAX_SCHEMA_DEPTH} levels, the most a "
                           "tool schema may nest")
    kind = schema.get("type")
    if kind is not None and not isinstance(kind, str) and not (
        isinstance(kind, list) and all(isinstance(k, str) for k in kind)
    ):
        raise InvalidInput(f"{where}.type must be a type name or a list of type names, "
                           f"not {shown(kind, 40)}")
    for key in ("enum", "required"):
        value = schema.get(key)
        if value is not None and not isinstance(value, list):
            raise InvalidInput(f"{where}.{key} must be a JSON array, not {_kind(value)}")
    required = schema.get("required") or []
    if not all(isinstance(name, str) for name in required):
        raise InvalidInput(f"{where}.required must list property names (strings)")
    properties = schema.get("properties")
    if properties is not None:
        if not isinstance(properties, Mapping):
            raise InvalidInput(f"{where}.properties must be a JSON object (property name -> "
                               f"schema), not {_kind(properties)}")
        for name, prop in properties.items():
            _check_schema(prop, f"{where}.properties.{shown(name, 40)}", depth + 1)
    items = schema.get("items")
    if items is not None and items != {}:
        _check_schema(items, f"{where}.items", depth + 1)


def _kind(value: Any) -> str:
    """The JSON kind of a value, for messages: ``a list``, ``a number``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    return "an object"


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
