"""Malformed tool definitions are InvalidInput naming the field, never a crash of the renderer.

Before the schema check, 384 of 1,347 fuzzed schemas raised AttributeError / TypeError (INTERNAL
on the server): ``properties`` a list, ``parameters`` or ``enum`` a number, ``items`` a list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from chat_tokenizers import chat_encoding, template
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokend.core.counting import ModelCatalogue, count_chat
from tokend.core.counting.tools import MAX_SCHEMA_DEPTH, check_tools, parse_tools
from tokend.core.errors import InvalidInput

MESSAGES = [{"role": "user", "content": "What is the weather?"}]
KEYS = ["type", "properties", "enum", "items", "required", "description", "default",
        "nullable", "oneOf", "name", "parameters", "function"]
TYPES = ["string", "number", "integer", "boolean", "null", "object", "array", "any"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(TYPES), st.text(max_size=8))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), inner, max_size=5),
    ),
    max_leaves=30,
)
schemas = st.recursive(
    st.fixed_dictionaries({}, optional={"type": st.sampled_from(TYPES) | json_values,
                                        "enum": json_values, "description": json_values,
                                        "default": json_values, "required": json_values}),
    lambda inner: st.fixed_dictionaries(
        {}, optional={"type": st.sampled_from(TYPES) | json_values,
                      "properties": st.dictionaries(st.text(max_size=4), inner, max_size=3)
                      | json_values,
                      "items": inner | json_values, "required": json_values,
                      "enum": json_values}),
    max_leaves=12,
)
tools = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["f", "get_weather"])},
                          optional={"parameters": schemas | json_values,
                                    "description": json_values})
    .flatmap(lambda fn: st.sampled_from([{"type": "function", "function": fn}, fn])),
    min_size=1, max_size=3,
)


TEMPLATE_CATALOGUE: list[ModelCatalogue] = []  # the module's catalogue of one template model


@pytest.fixture(scope="module", autouse=True)
def template_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A catalogue whose model ``tmpl`` renders tools with Llama 3.1's Jinja template."""
    root = tmp_path_factory.mktemp("tmpl")
    entry = {"tokenizer": "gpt2-chat", "context_window": 4096, "chat_rule": "template",
             "chat_template": template("llama3_1"),
             "special_tokens_map": {"bos_token": "<|begin_of_text|>"}}
    (root / "models.json").write_text(json.dumps(
        {"format": "tokend-models", "version": 1, "models": {"tmpl": entry}}))
    TEMPLATE_CATALOGUE.append(ModelCatalogue.for_registry(root))
    yield
    TEMPLATE_CATALOGUE.clear()


def count_everywhere(defs: list[dict[str, Any]]) -> None:
    """Count under every rule that renders tools: OpenAI's namespace, harmony's, a Jinja
    template (Llama 3.1's)."""
    count_chat(MESSAGES, model="gpt-4o", tools=defs)
    count_chat(MESSAGES, model="gpt-oss-20b", tools=defs)
    count_chat(MESSAGES, model="tmpl", tools=defs, catalogue=TEMPLATE_CATALOGUE[0],
               encoding=chat_encoding())


class TestToolSchemas:
    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(tools)
    def test_fuzzed_schemas_count_or_name_the_field(self, defs: list[dict[str, Any]]) -> None:
        """Every fuzzed definition either counts or is InvalidInput naming ``tools[i]``."""
        try:
            count_everywhere(defs)
        except InvalidInput as exc:
            assert str(exc).startswith("tools["), str(exc)

    @pytest.mark.parametrize("defs, field", [
        ([{"name": "f", "parameters": {"properties": ["a", "b"]}}],
         "tools[0].parameters.properties must be a JSON object"),
        ([{"type": "function", "function": {"name": "f", "parameters": 3}}],
         "tools[0].function.parameters must be a JSON object (a JSON Schema), not a number"),
        ([{"name": "f", "parameters": {"properties": {"u": {"type": "string", "enum": 7}}}}],
         "tools[0].parameters.properties.'u'.enum must be a JSON array, not a number"),
        ([{"name": "f", "parameters": {"properties": {"u": {"type": "array", "items": [1]}}}}],
         "tools[0].parameters.properties.'u'.items must be a JSON object"),
        ([{"name": "f", "parameters": {"properties": {"u": {"type": ["string", 3]}}}}],
         "tools[0].parameters.properties.'u'.type must be a type name"),
        ([{"name": "f", "parameters": {"required": 5, "properties": {"u": {}}}}],
         "tools[0].parameters.required must be a JSON array"),
    ])
    def test_named_cases(self, defs: list[dict[str, Any]], field: str) -> None:
        with pytest.raises(InvalidInput) as caught:
            count_everywhere(defs)
        assert str(caught.value).startswith(field), str(caught.value)

    @pytest.mark.parametrize("depth", [MAX_SCHEMA_DEPTH + 1, 1_000, 100_000])
    def test_deep_schema_is_refused(self, depth: int) -> None:
        """A schema nested 1,000 deep (or deeper than JSON can parse) is refused by name."""
        text = ('[{"name": "f", "parameters": '
                + '{"type": "object", "properties": {"a": ' * depth + "{}" + "}}" * depth
                + "}]")
        with pytest.raises(InvalidInput, match=f"at most {MAX_SCHEMA_DEPTH}|deeper than"):
            count_everywhere(parse_tools(text))

    def test_schema_at_the_depth_limit_counts(self) -> None:
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(MAX_SCHEMA_DEPTH):
            schema = {"type": "object", "properties": {"a": schema}}
        defs = [{"name": "f", "parameters": schema}]
        check_tools(defs)
        assert count_chat(MESSAGES, model="gpt-4o", tools=defs).tools > 0

    def test_every_rule_counts_a_valid_tool(self) -> None:
        """The three renderers above do render tools (so the fuzz reaches their code)."""
        defs = [{"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}]
        assert count_chat(MESSAGES, model="gpt-4o", tools=defs).tools > 0
        assert count_chat(MESSAGES, model="gpt-oss-20b", tools=defs).tools > 0
        assert count_chat(MESSAGES, model="tmpl", tools=defs, catalogue=TEMPLATE_CATALOGUE[0],
                          encoding=chat_encoding()).tools > 0

    def test_parse_tools_names_its_field(self) -> None:
        with pytest.raises(InvalidInput, match=r"^tools_json must be a JSON array"):
            parse_tools(json.dumps({"name": "f"}))
        with pytest.raises(InvalidInput, match=r"^tools_json is not JSON"):
            parse_tools("[{")
