"""Every chat rule's count splits into system, messages, tools, images and framing exactly.

Differential checks on each rule (OpenAI's, 0301, plain, harmony, a Jinja template, Llama 3
and 4, Mistral v1 to v7, the closed models' estimates): the parts add up to the total, and
changing one thing in a request moves the part it belongs to and no other.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import llama_models
import mistral_common
import pytest
from chat_tokenizers import chat_encoding, template
from mistral_common.tokens.tokenizers.mistral import MODEL_NAME_TO_TOKENIZER_CLS

from tokend.core import Encoding
from tokend.core.counting import ChatCount, ModelCatalogue, count_chat, default_catalogue
from tokend.core.counting.breakdown import Breakdown, own_tokens
from tokend.core.formats import parse_tiktoken_bpe
from tokend.core.formats.files import load_file, sniff_format
from tokend.core.install.bundles import BUNDLES
from tokend.core.tokenizer import Tokenizer

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse and precise."},
    {"role": "user", "content": "Hello there, who are you?"},
    {"role": "assistant", "content": "A bot."},
    {"role": "user", "content": "What is the weather in Paris today?"},
]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Paris"}},
        "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The local time of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
CALL = {"id": "abcdefghi", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
HISTORY: list[dict[str, Any]] = [
    *CHAT[:2],
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "abcdefghi", "name": "get_weather",
     "content": "sunny and warm, " * 20},
    {"role": "assistant", "content": "Sunny and warm."},
    {"role": "user", "content": "And tomorrow?"},
]
MORE_USER = {"role": "user", "content": "And in Rome, and in Madrid, and in Lisbon?"}
IMAGE = {"role": "user", "content": [
    {"type": "text", "text": "what is this?"},
    {"type": "image_url", "image_url": {"url": "x", "detail": "low"}, "width": 512,
     "height": 512}]}
LLAMA_SITE = Path(llama_models.__file__).resolve().parents[1]
MISTRAL_SITE = Path(mistral_common.__file__).resolve().parents[1]
MISTRAL_RULES = ("mistral-v1", "mistral-v2", "mistral-v3", "mistral-v7")


@functools.cache
def llama_encoding(name: str) -> Encoding:
    bundle = BUNDLES[name]
    assert bundle.pattern is not None and bundle.specials is not None
    ranks = parse_tiktoken_bpe((LLAMA_SITE / bundle.member).read_bytes())
    return Encoding(name, pat_str=bundle.pattern, mergeable_ranks=ranks,
                    special_tokens=bundle.specials(len(ranks)))


@functools.cache
def mistral_model(rule: str) -> tuple[str, Tokenizer]:
    """A model of mistral-common's table framed by ``rule``, and its tokenizer file."""
    for model in sorted(MODEL_NAME_TO_TOKENIZER_CLS):
        info = default_catalogue().find(model)
        if info is not None and info.chat_rule == rule:
            data = (MISTRAL_SITE / BUNDLES[info.tokenizer].member).read_bytes()
            fmt = sniff_format(data)
            assert fmt is not None
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return model, load_file(fmt, data, name=info.tokenizer)
    raise AssertionError(f"no model of mistral-common's table uses {rule}")


@functools.cache
def template_catalogue(root: Path) -> ModelCatalogue:
    import json

    entry = {"tokenizer": "gpt2-chat", "context_window": 4096, "chat_rule": "template",
             "chat_template": template("llama3_1"),
             "special_tokens_map": {"bos_token": "<|begin_of_text|>"}}
    (root / "models.json").write_text(json.dumps(
        {"format": "tokend-models", "version": 1, "models": {"tmpl": entry}}))
    return ModelCatalogue.for_registry(root)


Counter = Callable[..., ChatCount]


def counter(rule: str, tmp_path_factory: pytest.TempPathFactory) -> Counter:
    """count_chat with the model (and tokenizer) that ``rule`` applies to."""
    if rule in ("openai", "plain"):
        return functools.partial(count_chat, model="gpt-4o", rule=rule)
    if rule == "openai-0301":
        return functools.partial(count_chat, model="gpt-3.5-turbo-0301")
    if rule == "harmony":
        return functools.partial(count_chat, model="gpt-oss-20b")
    if rule == "template":
        cat = template_catalogue(tmp_path_factory.mktemp("tmpl"))
        return functools.partial(count_chat, model="tmpl", catalogue=cat,
                                 encoding=chat_encoding())
    if rule == "llama3":
        return functools.partial(count_chat, model="llama-3.1-8b-instruct",
                                 encoding=llama_encoding("llama3"))
    if rule == "llama4":
        return functools.partial(count_chat, model="llama-4-scout-17b-16e-instruct",
                                 encoding=llama_encoding("llama4"))
    if rule in MISTRAL_RULES:
        model, enc = mistral_model(rule)
        return functools.partial(count_chat, model=model, encoding=enc)
    return functools.partial(count_chat, model=rule)  # a closed model's estimate


RULES = ["openai", "openai-0301", "plain", "harmony", "template", "llama3", "llama4",
         *MISTRAL_RULES, "claude-sonnet-4-5", "gemini-2.5-pro"]
# Mistral v1 has no tools: mistral-common ignores a tool list and refuses tool calls in the
# history (tests/core/counting/test_mistral_reference.py), and so does tokend.
NO_TOOLS = {"mistral-v1"}
TOOL_RULES = [rule for rule in RULES if rule not in NO_TOOLS]
# Gemini's documented estimate has no per-message or fixed tokens (docs/counting.md).
NO_FRAMING = {"gemini-2.5-pro"}
IMAGES = {"openai", "plain", "llama3", "llama4", "claude-sonnet-4-5", "gemini-2.5-pro"}


def parts_add_up(result: ChatCount) -> None:
    b = result.breakdown
    assert b.total == result.total
    assert (b.system + b.messages + b.framing, b.tools, b.images, b.texts) == (
        result.messages, result.tools, result.images, 0)
    assert min(b.system, b.messages, b.tools, b.images) >= 0


def moved(before: ChatCount, after: ChatCount) -> set[str]:
    old, new = before.breakdown.as_dict(), after.breakdown.as_dict()
    return {part for part in old if old[part] != new[part]}


class TestEveryRule:
    @pytest.mark.parametrize("rule", RULES)
    def test_parts_add_up_to_the_total(self, rule: str,
                                       tmp_path_factory: pytest.TempPathFactory) -> None:
        """With and without tools (a rule with none counts them as nothing), with images where
        the rule takes them."""
        count = counter(rule, tmp_path_factory)
        result = count(CHAT)
        parts_add_up(result)
        assert result.breakdown.system > 0 and result.breakdown.messages > 0
        assert result.breakdown.framing > 0 or (rule in NO_FRAMING
                                                 and result.breakdown.framing == 0)
        with_tools = count(CHAT, tools=[WEATHER, TIME])
        parts_add_up(with_tools)
        if rule in NO_TOOLS:
            assert with_tools.breakdown == result.breakdown
        if rule in IMAGES:
            with_image = count([*CHAT, IMAGE])
            parts_add_up(with_image)
            assert with_image.breakdown.images > 0

    @pytest.mark.parametrize("rule", TOOL_RULES)
    def test_tool_history_leaves_framing_positive(
            self, rule: str, tmp_path_factory: pytest.TempPathFactory) -> None:
        """Tool calls and results are the caller's; what a format drops is not counted as
        theirs (Mistral v2 drops the history before the last user message)."""
        result = counter(rule, tmp_path_factory)(HISTORY, tools=[WEATHER])
        parts_add_up(result)
        assert result.breakdown.framing > 0 or rule in NO_FRAMING
        assert result.breakdown.messages < result.total - result.breakdown.tools

    @pytest.mark.parametrize("rule", TOOL_RULES)
    def test_a_tool_moves_only_tools(self, rule: str,
                                     tmp_path_factory: pytest.TempPathFactory) -> None:
        """The first tool and a second one each move ``tools`` and nothing else."""
        count = counter(rule, tmp_path_factory)
        bare, one, two = count(CHAT), count(CHAT, tools=[WEATHER]), count(CHAT,
                                                                          tools=[WEATHER, TIME])
        assert moved(bare, one) == moved(one, two) == {"tools"}
        assert 0 < one.breakdown.tools < two.breakdown.tools

    @pytest.mark.parametrize("rule", RULES)
    def test_a_user_message_moves_messages_not_system(
            self, rule: str, tmp_path_factory: pytest.TempPathFactory) -> None:
        count = counter(rule, tmp_path_factory)
        before, after = count(CHAT), count([*CHAT, {"role": "assistant", "content": "Sun."},
                                            MORE_USER])
        assert after.breakdown.messages > before.breakdown.messages
        assert after.breakdown.system == before.breakdown.system
        assert after.breakdown.tools == before.breakdown.tools == 0


class TestAttribution:
    def test_openai_counts_each_field_alone(self) -> None:
        """gpt-4o: the caller's strings alone; framing = 3 per message + roles + 3 priming."""
        enc_count = count_chat([{"role": "user", "content": "x"}], model="gpt-4o").breakdown
        assert enc_count == Breakdown(messages=1, framing=3 + 1 + 3)
        named = count_chat([{"role": "user", "name": "bob", "content": "x"}],
                           model="gpt-4o").breakdown
        assert named.messages == 2 and named.framing == 3 + 1 + 1 + 3

    def test_openai_system_padding_with_tools_is_the_tools(self) -> None:
        """With tools, the system message is counted with a newline: what it adds is tools'."""
        bare = count_chat(CHAT, model="gpt-4o")
        padded = count_chat([{**CHAT[0], "content": "Be terse"}, *CHAT[1:]], model="gpt-4o",
                            tools=[WEATHER])
        unpadded = count_chat([{**CHAT[0], "content": "Be terse"}, *CHAT[1:]], model="gpt-4o")
        assert padded.breakdown.system == unpadded.breakdown.system
        assert padded.total - unpadded.total == padded.breakdown.tools
        assert bare.breakdown.tools == 0

    def test_rendered_formats_count_content_alone(self) -> None:
        """harmony: each message's content alone; the framing is the rest of the prompt."""
        result = count_chat(CHAT, model="gpt-oss-20b")
        enc = default_catalogue().get("gpt-oss-20b").tokenizer
        from tokend.core.engine.builtins import get_encoding

        alone = get_encoding(enc).count
        assert result.breakdown.system == alone(CHAT[0]["content"])
        assert result.breakdown.messages == sum(alone(m["content"]) for m in CHAT[1:])

    def test_llama_images_are_their_image_tokens(self) -> None:
        result = count_chat([IMAGE, IMAGE], model="llama-3.1-8b-instruct",
                            encoding=llama_encoding("llama3"))
        assert result.breakdown.images == 2 == result.images
        assert not result.exact

    def test_estimates_split_the_factor_over_system_and_messages(self) -> None:
        info = default_catalogue().get("claude-sonnet-4-5")
        assert info.estimate is not None
        factor = info.estimate.factor
        result = count_chat(CHAT, model="claude-sonnet-4-5")
        from tokend.core.engine.builtins import get_encoding

        base = get_encoding(info.tokenizer).count
        assert result.breakdown.system == round(factor * base(CHAT[0]["content"]))
        assert result.breakdown.messages == round(
            factor * sum(base(m["content"]) for m in CHAT[1:]))

    def test_own_tokens_counts_tool_calls_names_and_arguments(self) -> None:
        call = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function",
             "function": {"name": "f", "arguments": '{"a": 1}'}}]}
        assert own_tokens(call, len) == len("f") + len('{"a": 1}')

    def test_breakdown_with_texts(self) -> None:
        b = Breakdown(system=1, framing=2).with_texts(5, framing=3)
        assert (b.texts, b.framing, b.total) == (5, 5, 11)
        assert set(b.as_dict()) == {f.name for f in dataclasses.fields(Breakdown)}
