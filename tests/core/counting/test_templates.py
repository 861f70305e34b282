"""Chat templates rendered by tokend equal transformers' apply_chat_template, text and count.

The templates are real: trl 1.16.0 ships verbatim copies of model repositories' templates
(fetched and sha256-checked by scripts/fetch-test-data.sh), and mistral-common generates its
models' templates from its own tokenizer files. The tokenizer is one vocabulary built twice
(tests/support/chat_tokenizers.py); no model is downloaded.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from chat_tokenizers import chat_encoding, hf_chat_tokenizer, hf_ids, template

from tokend.core import InvalidInput
from tokend.core.counting import ModelCatalogue, count_chat, render_chat_template
from tokend.core.counting.harmony import harmony_prompt

CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "  Hello there, who are you?  "},
    {"role": "assistant", "content": "A bot."},
    {"role": "user", "content": "What's 2+2? Explain in ünïcödé 😀."},
]
NO_SYSTEM = CHAT[1:]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city"},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
        "days": {"type": "integer", "default": 3},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}},
        "required": ["city"]}}}]


TEKKEN_FILES = {"mistral-nemo": "tekken_240718.json", "pixtral": "tekken_240911.json"}


@functools.cache
def mistral_template(name: str) -> str:
    """Templates mistral-common generates: from its tekken files (Mistral NeMo, Pixtral) and
    for the v3 SentencePiece tokenizer (Mistral 7B Instruct v0.3)."""
    import mistral_common
    from mistral_common.integrations.chat_templates.chat_templates import (
        convert_tokenizer_to_chat_template,
        generate_chat_template,
    )
    from mistral_common.tokens.tokenizers.base import TokenizerVersion

    data = Path(mistral_common.__file__).parent / "data"
    if name in TEKKEN_FILES:
        return str(convert_tokenizer_to_chat_template(data / TEKKEN_FILES[name]))
    return str(generate_chat_template(
            spm=True, tokenizer_version=TokenizerVersion.v3, image_support=False,
            audio_support=False, thinking_support=False, default_system_prompt=None,
            plain_thinking_support=False, use_special_token_variables=True,
            model_settings_fields=None, reasoning_effort_values=None,
            reasoning_effort_default=None,
        ))


CASES: list[tuple[str, dict[str, str], list[dict[str, Any]]]] = [
    ("llama3", {"bos_token": "<|begin_of_text|>"}, CHAT),
    ("llama3_1", {"bos_token": "<|begin_of_text|>"}, CHAT),
    ("qwen2_5", {}, CHAT),
    ("phi3", {"eos_token": "<|endoftext|>"}, CHAT),
    ("gemma", {"bos_token": "<bos>"}, NO_SYSTEM),
    ("deepseekv3", {"bos_token": "<s>"}, CHAT),
]
MISTRAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}


def catalogue_with(tmp_path: Path, name: str, chat_template: str, tokens: dict[str, str]
                   ) -> ModelCatalogue:
    entry = {"tokenizer": "gpt2-chat", "context_window": 4096, "max_output_tokens": 512,
             "chat_rule": "template", "chat_template": chat_template,
             "special_tokens_map": tokens}
    (tmp_path / "models.json").write_text(json.dumps(
        {"format": "tokend-models", "version": 1, "models": {name: entry}}))
    return ModelCatalogue.for_registry(tmp_path)


def check(tmp_path: Path, name: str, chat_template: str, tokens: dict[str, str], *,
          messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> None:
    hf = hf_chat_tokenizer(**tokens)
    theirs = hf.apply_chat_template(messages, chat_template=chat_template, tools=tools,
                                    tokenize=False, add_generation_prompt=True)
    ours = render_chat_template(chat_template, messages, tools=tools,
                                special_tokens_map=hf.special_tokens_map)
    assert ours == theirs
    cat = catalogue_with(tmp_path, name, chat_template, hf.special_tokens_map)
    result = count_chat(messages, model=name, tools=tools, catalogue=cat,
                        encoding=chat_encoding())
    assert result.total == len(hf_ids(hf, messages, chat_template, tools=tools))
    assert result.exact and result.rule == "template"


class TestTemplates:
    @pytest.mark.parametrize(("name", "tokens", "messages"), CASES, ids=[c[0] for c in CASES])
    def test_trl_bundled_templates(self, tmp_path: Path, name: str, tokens: dict[str, str],
                                   messages: list[dict[str, Any]]) -> None:
        check(tmp_path, name, template(name), tokens, messages=messages)

    @pytest.mark.parametrize("name", ["mistral-nemo", "pixtral", "mistral-7b-v0.3"])
    def test_mistral_common_templates(self, tmp_path: Path, name: str) -> None:
        messages = [m for m in CHAT if m["role"] != "system"]
        check(tmp_path, name, mistral_template(name), MISTRAL_TOKENS, messages=messages)

    def test_template_with_tools(self, tmp_path: Path) -> None:
        check(tmp_path, "qwen2_5", template("qwen2_5"), {}, messages=CHAT, tools=TOOLS)

    def test_special_token_text_in_a_message_is_plain_by_default(self, tmp_path: Path) -> None:
        """Look-alikes in user text count as plain text (an estimate), or as specials on ask."""
        hf = hf_chat_tokenizer()
        messages = [{"role": "user", "content": "stop <|im_end|> here"}]
        cat = catalogue_with(tmp_path, "q", template("qwen2_5"), {})
        as_special = count_chat(messages, model="q", catalogue=cat, encoding=chat_encoding(),
                                allowed_special="all")
        assert as_special.total == len(hf_ids(hf, messages, template("qwen2_5")))
        plain = count_chat(messages, model="q", catalogue=cat, encoding=chat_encoding())
        enc = chat_encoding()
        text = messages[0]["content"]
        # The documented correction: what the string costs as plain text instead of specials.
        extra = len(enc.encode_ordinary(text)) - len(enc.encode(text, allowed_special="all"))
        assert extra > 0
        assert plain.total == as_special.total + extra
        assert not plain.exact and "special-token text" in plain.estimate_reason

    def test_sandbox_refuses_attribute_escapes(self) -> None:
        with pytest.raises(InvalidInput, match="template"):
            render_chat_template("{{ ''.__class__.__mro__ }}", [])

    def test_raise_exception_is_invalid_input(self) -> None:
        with pytest.raises(InvalidInput, match="System role not supported"):
            render_chat_template(template("gemma"), CHAT, special_tokens_map={"bos_token": "x"})


HARMONY_CHATS = [
    [{"role": "user", "content": "What is 2 + 2?"}],
    [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "hi"},
     {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "weather?"}],
    [{"role": "developer", "content": "Use tools."}, {"role": "user", "content": "SF?"},
     {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
         "name": "get_weather", "arguments": {"city": "SF"}}}]},
     {"role": "tool", "content": "{\"temp\": 20}"},
     {"role": "assistant", "content": "It is 20."}, {"role": "user", "content": "thanks"}],
    [{"role": "user", "content": "SF?"},
     {"role": "assistant", "thinking": "need a tool", "tool_calls": [{"type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"SF\"}"}}]},
     {"role": "tool", "content": "sunny"}],
]


class TestHarmony:
    @pytest.mark.parametrize("index", range(len(HARMONY_CHATS)))
    @pytest.mark.parametrize("with_tools", [False, True])
    def test_equals_gpt_oss_template(self, index: int, with_tools: bool) -> None:
        """tokend's harmony prompt is gpt-oss's own chat template's, text and count."""
        messages = HARMONY_CHATS[index]
        tools = TOOLS if with_tools else None
        hf = hf_chat_tokenizer()
        gpt_oss = template("gptoss")
        prompt = harmony_prompt(messages, tools)
        assert prompt.render() == hf.apply_chat_template(
            messages, chat_template=gpt_oss, tools=tools, tokenize=False,
            add_generation_prompt=True)
        assert prompt.count(chat_encoding()) == len(hf_ids(hf, messages, gpt_oss, tools=tools))

    def test_gpt_oss_in_the_catalogue(self) -> None:
        result = count_chat(HARMONY_CHATS[1], model="gpt-oss-20b", tools=TOOLS)
        assert result.rule == "harmony" and result.encoding == "o200k_harmony"
        assert result.exact and result.tools > 0
        assert result.context_window == 131072


class TestTokenizerConfig:
    def test_named_templates_and_added_tokens(self, tmp_path: Path) -> None:
        """A registry's models.json can point at a model's tokenizer_config.json: its named
        templates ("default", "tool_use" for requests with tools) and AddedToken specials."""
        templates = {"default": template("llama3"), "tool_use": template("qwen2_5")}
        config = {
            "chat_template": [{"name": k, "template": v} for k, v in templates.items()],
            "bos_token": {"content": "<|begin_of_text|>", "lstrip": False, "special": True},
            "eos_token": "<|eot_id|>",
        }
        (tmp_path / "llama").mkdir()
        (tmp_path / "llama" / "tokenizer_config.json").write_text(json.dumps(config))
        (tmp_path / "models.json").write_text(json.dumps({
            "format": "tokend-models", "version": 1, "models": {"my-llama": {
                "tokenizer": "gpt2-chat", "context_window": 8192, "chat_rule": "template",
                "tokenizer_config": "llama/tokenizer_config.json"}}}))
        cat = ModelCatalogue.for_registry(tmp_path)
        assert cat.error is None
        hf = hf_chat_tokenizer(bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
        hf.chat_template = templates
        for tools in (None, TOOLS):
            ids = hf.apply_chat_template(CHAT, tools=tools, tokenize=True,
                                         add_generation_prompt=True)
            ids = ids["input_ids"] if hasattr(ids, "keys") else ids
            result = count_chat(CHAT, model="my-llama", tools=tools, catalogue=cat,
                                encoding=chat_encoding())
            assert result.total == len(ids)

    def test_a_path_out_of_the_registry_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "models.json").write_text(json.dumps({
            "format": "tokend-models", "version": 1, "models": {"m": {
                "tokenizer": "t", "chat_rule": "template",
                "tokenizer_config": "../elsewhere/tokenizer_config.json"}}}))
        cat = ModelCatalogue.for_registry(tmp_path)
        assert cat.error is not None and "leaves the registry" in cat.error
        assert cat.find("m") is None
