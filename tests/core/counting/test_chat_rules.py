"""count_chat against published figures: the OpenAI cookbook and API-measured tool counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tokend.core import InvalidInput, get_encoding
from tokend.core.counting import count_chat
from tokend.core.counting.images import ImageRule, image_tokens

# OpenAI cookbook, "How to count tokens with tiktoken", section 6: these messages and the
# prompt_tokens the API reported for each model (both notebook versions agree).
COOKBOOK_MESSAGES = [
    {"role": "system", "content": "You are a helpful, pattern-following assistant that "
     "translates corporate jargon into plain English."},
    {"role": "system", "name": "example_user",
     "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant",
     "content": "Things working well together will increase revenue."},
    {"role": "system", "name": "example_user", "content": "Let's circle back when we have more "
     "bandwidth to touch base on opportunities for increased leverage."},
    {"role": "system", "name": "example_assistant",
     "content": "Let's talk later when we're less busy about how to do better."},
    {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for "
     "the client deliverable."},
]
COOKBOOK_FIGURES = [
    ("gpt-3.5-turbo-0301", 127),
    ("gpt-3.5-turbo-0613", 129),
    ("gpt-3.5-turbo", 129),
    ("gpt-4-0314", 129),
    ("gpt-4-0613", 129),
    ("gpt-4", 129),
    ("gpt-4o", 124),
    ("gpt-4o-mini", 124),
]
# Section 7: the same rule with a tool definition.
COOKBOOK_TOOLS = [{"type": "function", "function": {
    "name": "get_current_weather",
    "description": "Get the current weather in a given location",
    "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
        "unit": {"type": "string", "description": "The unit of temperature to return",
                 "enum": ["celsius", "fahrenheit"]}},
        "required": ["location"]}}}]
COOKBOOK_TOOL_MESSAGES = [
    {"role": "system",
     "content": "You are a helpful assistant that can answer to questions about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]
COOKBOOK_TOOL_FIGURES = [("gpt-3.5-turbo", 105), ("gpt-4", 105), ("gpt-4o", 101),
                         ("gpt-4o-mini", 101)]


def measured_cases() -> list[dict[str, Any]]:
    path = Path(__file__).parents[2] / "fixtures" / "counting" / "openai_chat_tokens_cases.json"
    cases: list[dict[str, Any]] = json.loads(path.read_text())["cases"]
    return cases


class TestOpenAIRules:
    @pytest.mark.parametrize(("model", "expected"), COOKBOOK_FIGURES)
    def test_cookbook_figures(self, model: str, expected: int) -> None:
        """The cookbook's API figures, 0301's 4/-1 rule included; verified models are exact."""
        result = count_chat(COOKBOOK_MESSAGES, model=model)
        assert result.total == expected
        assert result.exact, result.estimate_reason
        assert result.estimate_reason == ""

    @pytest.mark.parametrize(("model", "expected"), COOKBOOK_TOOL_FIGURES)
    def test_cookbook_tool_figures(self, model: str, expected: int) -> None:
        """Tools by the community rule give the cookbook's API figures, flagged as estimates."""
        result = count_chat(COOKBOOK_TOOL_MESSAGES, model=model, tools=COOKBOOK_TOOLS)
        assert result.total == expected
        assert result.tools > 0
        assert not result.exact
        assert "community" in result.estimate_reason

    @pytest.mark.parametrize("case", measured_cases(), ids=lambda c: str(c["tokens"]))
    def test_api_measured_cases(self, case: dict[str, Any]) -> None:
        """prompt_tokens the API reported for gpt-3.5-turbo (hmarr/openai-chat-tokens' data)."""
        result = count_chat(case["messages"], model="gpt-3.5-turbo", tools=case.get("functions"))
        assert result.total == case["tokens"]

    def test_unverified_model_is_an_estimate_naming_why(self) -> None:
        result = count_chat(COOKBOOK_MESSAGES, model="gpt-4.1-2025-04-14")
        assert result.total == 124  # same rule and encoding as gpt-4o
        assert not result.exact
        assert "cookbook" in result.estimate_reason and "gpt-4.1" in result.estimate_reason
        assert result.context_window == 1047576

    def test_special_token_text_counts_as_plain_text(self) -> None:
        """User text holding <|endoftext|> never fails; it is ordinary text unless allowed."""
        enc = get_encoding("o200k_base")
        text = "a <|endoftext|> b"
        plain = count_chat([{"role": "user", "content": text}], model="gpt-4o")
        assert plain.total == 3 + 1 + len(enc.encode_ordinary(text)) + 3
        special = count_chat([{"role": "user", "content": text}], model="gpt-4o",
                             allowed_special="all")
        assert special.total == 3 + 1 + len(enc.encode(text, allowed_special="all")) + 3

    def test_tool_choice(self) -> None:
        """LiteLLM's rule: "none" adds 1; a named function adds 7 + its name's tokens."""
        enc = get_encoding("o200k_base")
        msgs = COOKBOOK_TOOL_MESSAGES
        base = count_chat(msgs, model="gpt-4o", tools=COOKBOOK_TOOLS).total
        assert count_chat(msgs, model="gpt-4o", tools=COOKBOOK_TOOLS,
                          tool_choice="auto").total == base
        assert count_chat(msgs, model="gpt-4o", tools=COOKBOOK_TOOLS,
                          tool_choice="none").total == base + 1
        named = {"type": "function", "function": {"name": "get_current_weather"}}
        assert count_chat(msgs, model="gpt-4o", tools=COOKBOOK_TOOLS,
                          tool_choice=named).total == (
            base + 7 + len(enc.encode("get_current_weather"))
        )

    def test_no_model_uses_the_rule_as_an_estimate(self) -> None:
        result = count_chat([{"role": "user", "content": "hi"}], encoding="cl100k_base")
        assert result.rule == "openai" and not result.exact
        assert result.total == 3 + 1 + 1 + 3

    def test_plain_rule_counts_values_only(self) -> None:
        enc = get_encoding("cl100k_base")
        msgs = [{"role": "user", "content": "hello there", "name": "bob"}]
        result = count_chat(msgs, model="gpt-4", rule="plain")
        assert result.total == sum(len(enc.encode(v)) for v in ("user", "hello there", "bob"))
        assert result.exact

    def test_bad_input_is_invalid_input(self) -> None:
        with pytest.raises(InvalidInput, match="rule"):
            count_chat([{"role": "user", "content": "x"}], model="gpt-4o", rule="nope")
        with pytest.raises(InvalidInput, match=r"messages\[0\]\.content\[0\]"):
            count_chat([{"role": "user", "content": [{"type": "audio"}]}], model="gpt-4o")


class TestImages:
    """OpenAI's published examples ("Images and vision", calculating costs)."""

    TILES = ImageRule("tiles", base=85, tile=170)

    @pytest.mark.parametrize(("w", "h", "detail", "tokens"), [
        (1024, 1024, "high", 765),
        (2048, 4096, "high", 1105),
        (4096, 8192, "low", 85),
        (500, 500, "high", 255),
        (513, 500, "high", 425),
    ])
    def test_tiles(self, w: int, h: int, detail: str, tokens: int) -> None:
        assert image_tokens(w, h, detail, self.TILES) == tokens

    @pytest.mark.parametrize(("w", "h", "patches"), [(1024, 1024, 1024), (1800, 2400, 1452)])
    def test_patches(self, w: int, h: int, patches: int) -> None:
        assert image_tokens(w, h, "auto", ImageRule("patches", multiplier=1.0)) == patches

    def test_image_part_in_a_message(self) -> None:
        """A part carries its own size; gpt-4o-mini's constants come from the catalogue."""
        part = {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "high"},
                "width": 1024, "height": 1024}
        msgs = [{"role": "user", "content": [{"type": "text", "text": "what is this"}, part]}]
        result = count_chat(msgs, model="gpt-4o-mini")
        assert result.images == 2833 + 5667 * 4
        assert not result.exact and "image" in result.estimate_reason

    def test_size_is_required_and_never_fetched(self) -> None:
        part = {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}}
        with pytest.raises(InvalidInput, match="width and height"):
            count_chat([{"role": "user", "content": [part]}], model="gpt-4o")
