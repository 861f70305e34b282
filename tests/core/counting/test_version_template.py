"""A registry version's own chat template: kept in its manifest, chosen for its messages, and
counted exactly as transformers' apply_chat_template + encode counts (same vocabulary, built
twice by tests/support/chat_tokenizers.py; real templates shipped by trl, no download)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chat_tokenizers import chat_encoding, hf_chat_tokenizer, hf_ids, template

from tokend.core import InvalidInput
from tokend.core.counting import (
    ModelInfo,
    count_chat,
    read_chat_metadata,
    version_chat_model,
)
from tokend.core.registry import Registry

CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "  Hello there, who are you?  "},
    {"role": "assistant", "content": "A bot."},
    {"role": "user", "content": "What's 2+2? Explain in ünïcödé 😀."},
]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
# As Llama 3's tokenizer_config.json writes them: an AddedToken object and a plain string.
TOKENS = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}


def write_config(path: Path, chat_template: Any) -> Path:
    path.write_text(json.dumps({
        "chat_template": chat_template,
        "bos_token": {"content": TOKENS["bos_token"], "lstrip": False, "special": True},
        "eos_token": TOKENS["eos_token"],
        "model_max_length": 8192,
    }))
    return path


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    """One registry holding the chat vocabulary as llama@1 (list of templates) and bare@1."""
    root = tmp_path_factory.mktemp("reg")
    enc = chat_encoding()
    config = write_config(root.parent / "tokenizer_config.json", [
        {"name": "default", "template": template("llama3")},
        {"name": "tool_use", "template": template("qwen2_5")},
    ])
    reg = Registry(root)
    for name, chat in (("llama", read_chat_metadata(config)), ("bare", None)):
        reg.publish(name, ranks=enc.mergeable_ranks, pat_str=enc.pat_str,
                    special_tokens=enc.special_tokens, chat=chat)
    return reg


class TestVersionTemplate:
    def test_metadata_round_trip(self, registry: Registry) -> None:
        """The manifest keeps both templates and the tokens transformers would pass them."""
        chat = Registry(registry.location).manifest("llama")["chat"]
        assert chat == {"chat_template": template("llama3"),
                        "tool_chat_template": template("qwen2_5"),
                        "special_tokens_map": TOKENS, "source": "tokenizer_config.json"}
        assert "chat" not in registry.manifest("bare")

    def test_counts_equal_transformers(self, registry: Registry) -> None:
        ref, enc = registry.load("llama")
        info = version_chat_model(ref.ref, registry.manifest("llama"))
        assert info is not None and info.chat_rule == "template"
        hf = hf_chat_tokenizer(**TOKENS)
        result = count_chat(CHAT, model_info=info, encoding=enc)
        assert result.rule == "template" and result.exact
        assert result.total == len(hf_ids(hf, CHAT, template("llama3")))
        # With tools, the tool_use template renders the request, as transformers picks it.
        with_tools = count_chat(CHAT, model_info=info, encoding=enc, tools=TOOLS)
        assert with_tools.total == len(hf_ids(hf, CHAT, template("qwen2_5"), tools=TOOLS))
        assert with_tools.tools > 0

    def test_a_catalogue_rule_wins_and_windows_are_kept(self, registry: Registry) -> None:
        manifest = registry.manifest("llama")
        openai = ModelInfo(name="m", tokenizer="llama@1", context_window=100,
                           max_output_tokens=10, chat_rule="openai")
        assert version_chat_model("llama@1", manifest, openai) is openai
        ruleless = ModelInfo(name="m", tokenizer="llama@1", context_window=100,
                             max_output_tokens=10)
        merged = version_chat_model("llama@1", manifest, ruleless)
        assert merged is not None and merged.chat_rule == "template"
        assert merged.context_window == 100 and merged.special_tokens_map == TOKENS
        assert version_chat_model("bare@1", registry.manifest("bare")) is None

    def test_a_template_that_does_not_compile_is_refused(self, tmp_path: Path) -> None:
        path = write_config(tmp_path / "broken_config.json", "{% for m in messages %}")
        with pytest.raises(InvalidInput, match=r"broken_config\.json.*does not parse"):
            read_chat_metadata(path)
        with pytest.raises(InvalidInput, match=r"none_config\.json has no chat_template"):
            read_chat_metadata(write_config(tmp_path / "none_config.json", None))
