"""The vendor catalogue: every family the issue names, aliases and spellings, exactness classes,
and what a count says when a tokenizer is missing or not public."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokend.core import CorruptData, UnknownTokenizer
from tokend.core.counting import ModelCatalogue, count_chat, default_catalogue
from tokend.core.counting.catalogue import CHAT_RULES, EXACTNESS
from tokend.core.counting.estimate import image_estimate, parse_estimate
from tokend.core.counting.spellings import candidates
from tokend.core.engine.builtins import BUILTIN_NAMES
from tokend.core.install.bundles import BUNDLES

CHAT = [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the capital of France?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]

FAMILIES = {
    "anthropic": ["claude-3-haiku-20240307", "claude-3-opus-latest", "claude-3-5-sonnet-20240620",
                  "claude-3-5-sonnet-latest", "claude-3-5-haiku-latest",
                  "claude-3-7-sonnet-latest", "claude-sonnet-4-20250514", "claude-opus-4-0",
                  "claude-opus-4-1", "claude-opus-4-1-20250805", "claude-sonnet-4-5",
                  "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-opus-4-5"],
    "google": ["gemini-1.5-pro", "gemini-1.5-flash-latest", "gemini-1.5-flash-8b",
               "gemini-2.0-flash", "gemini-2.0-flash-lite", "gemini-2.5-pro",
               "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-flash-latest"],
    "meta": ["llama-3.1-8b-instruct", "llama-3.1-405b-instruct", "llama-3.2-3b-instruct",
             "llama-3.2-11b-vision-instruct", "llama-3.3-70b-instruct",
             "llama-4-scout-17b-16e-instruct", "llama-4-maverick-17b-128e-instruct"],
    "mistral": ["mistral-large-2411", "mistral-large-latest", "pixtral-12b-2409",
                "open-mistral-nemo", "codestral-2405", "mistral-small-latest"],
    "deepseek": ["deepseek-chat", "deepseek-reasoner", "deepseek-v3", "deepseek-v3.1",
                 "deepseek-v4"],
    "qwen": ["qwen3-0.6b", "qwen3-32b", "qwen3-235b-a22b", "qwen3-30b-a3b-instruct-2507",
             "qwen3-coder-480b-a35b-instruct"],
}

SPELLINGS = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b-instruct",
    "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo": "llama-3.1-70b-instruct",
    "meta.llama3-1-8b-instruct-v1:0": "llama-3.1-8b-instruct",
    "accounts/fireworks/models/llama-v3p3-70b-instruct": "llama-3.3-70b-instruct",
    "@cf/meta/llama-3.1-8b-instruct": "llama-3.1-8b-instruct",
    "llama-3.3-70b-versatile": "llama-3.3-70b-instruct",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "llama-4-scout-17b-16e-instruct",
    "anthropic/claude-sonnet-4-5": "claude-sonnet-4-5-20250929",
    "us.anthropic.claude-sonnet-4-5-20250929-v1:0": "claude-sonnet-4-5-20250929",
    "anthropic.claude-3-5-sonnet-20240620-v1:0": "claude-3-5-sonnet-20240620",
    "claude-opus-4-1@20250805": "claude-opus-4-1-20250805",
    "models/gemini-2.5-flash": "gemini-2.5-flash",
    "gemini/gemini-2.5-pro-preview-06-05": "gemini-2.5-pro",
    "gemini-1.5-pro-002": "gemini-1.5-pro",
    "mistralai/Mistral-Nemo-Instruct-2407": "open-mistral-nemo-2407",
    "mistral/mistral-large-latest": "mistral-large-2411",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-r1",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "qwen3:32b": "qwen3-32b",
    "GPT-4o": "gpt-4o",
    "openai/gpt-4o-2024-08-06": "gpt-4o",
}


class TestVendorCatalogue:
    @pytest.mark.parametrize("vendor", sorted(FAMILIES))
    def test_every_family_is_catalogued(self, vendor: str) -> None:
        for model in FAMILIES[vendor]:
            info = default_catalogue().find(model)
            assert info is not None, model
            assert info.vendor == vendor, model
            assert info.context_window > 0 and info.max_output_tokens > 0, model

    @pytest.mark.parametrize(("spelling", "name"), sorted(SPELLINGS.items()))
    def test_provider_spellings_resolve(self, spelling: str, name: str) -> None:
        info = default_catalogue().find(spelling)
        assert info is not None and info.name == name, candidates(spelling)

    def test_every_entry_is_well_formed(self) -> None:
        """Rules are known, open models name a bundle of their tokenizer, closed ones a
        built-in base and an estimate; aliases are unique across entries."""
        seen: dict[str, str] = {}
        for info in default_catalogue().entries():
            assert info.exactness in EXACTNESS
            assert info.chat_rule is None or info.chat_rule in CHAT_RULES
            if info.install is not None:
                assert info.install in BUNDLES and info.install == info.tokenizer, info.name
            else:
                assert info.tokenizer in BUILTIN_NAMES, info.name
            if info.chat_rule == "estimate":
                assert info.estimate is not None and info.exactness == "estimate"
            for key in (info.name, *info.aliases):
                assert seen.setdefault(key.lower(), info.name) == info.name, key

    def test_unknown_model_stays_unknown(self) -> None:
        assert default_catalogue().find("not-a-model") is None
        assert default_catalogue().find("claude") is None


class TestCounts:
    def test_open_model_without_its_tokenizer_says_how_to_install(self) -> None:
        with pytest.raises(UnknownTokenizer, match=r"tokend models install qwen3-32b"):
            count_chat(CHAT, model="Qwen/Qwen3-32B")

    @pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gemini-2.5-pro"])
    def test_closed_models_are_estimates_with_the_reason(self, model: str) -> None:
        result = count_chat(CHAT, model=model)
        assert not result.exact and result.rule == "estimate"
        assert "not public" in result.estimate_reason
        assert "tokend calibrate" in result.estimate_reason
        assert result.total > 0 and result.context_window == 1048576 if model.startswith(
            "gemini") else result.context_window == 200000

    def test_claude_tools_add_the_tool_use_prompt(self) -> None:
        """Anthropic's published tool-use system prompt: 346 tokens (auto), 313 (any/tool)."""
        bare = count_chat(CHAT, model="claude-sonnet-4-5")
        auto = count_chat(CHAT, model="claude-sonnet-4-5", tools=TOOLS)
        forced = count_chat(CHAT, model="claude-sonnet-4-5", tools=TOOLS,
                            tool_choice={"type": "tool", "name": "get_weather"})
        assert auto.messages == bare.messages
        assert auto.tools - forced.tools == 346 - 313
        assert auto.tools > 346

    def test_images_follow_the_vendors_formulas(self) -> None:
        """Anthropic: w*h/750 after scaling to 1568 px / 1092² px; Gemini: 258 per tile."""
        part = {"type": "image", "width": 1000, "height": 1000}
        assert image_estimate(part, "p", "anthropic") == 1334
        assert image_estimate({**part, "width": 4000, "height": 4000}, "p", "anthropic") == 1590
        assert image_estimate({**part, "width": 384, "height": 384}, "p", "gemini") == 258
        assert image_estimate({**part, "width": 960, "height": 540}, "p", "gemini") == 6 * 258
        messages = [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                                  part]}]
        assert count_chat(messages, model="claude-3-5-haiku-latest").images == 1334

    def test_registry_entries_parse_the_new_fields(self, tmp_path: Path) -> None:
        entry = {"tokenizer": "o200k_base", "vendor": "acme", "chat_rule": "estimate",
                 "aliases": ["Acme/Big-1"], "estimate": {"factor": 1.5, "fixed": 2}}
        (tmp_path / "models.json").write_text(json.dumps(
            {"format": "tokend-models", "version": 1, "models": {"acme-big-1": entry}}))
        cat = ModelCatalogue.for_registry(tmp_path)
        info = cat.find("acme/big-1")
        assert info is not None and info.name == "acme-big-1" and info.vendor == "acme"
        assert count_chat([{"role": "user", "content": "hi"}], model="acme/big-1",
                          catalogue=cat).total == round(1.5 * 1 + 2)
        del entry["estimate"]
        (tmp_path / "models.json").write_text(json.dumps(
            {"format": "tokend-models", "version": 1, "models": {"acme-big-1": entry}}))
        broken = ModelCatalogue.for_registry(tmp_path)  # a bad file is reported, not served
        assert broken.error is not None and 'chat_rule "estimate" needs' in broken.error
        assert broken.find("acme/big-1") is None
        with pytest.raises(CorruptData, match="estimate factor"):
            parse_estimate({"factor": 0}, "x")
