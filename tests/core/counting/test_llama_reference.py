"""Llama 3 and 4 chats counted by tokend equal llama-models 0.3.0's tokens.

tokend reads the ``tokenizer.model`` files the ``llama3`` / ``llama4`` bundles name (from the
installed llama-models wheel) with the bundle's pattern and special tokens, which must equal
llama-models' own ``Tokenizer``; Llama 3 chats are compared with its ``ChatFormat``. Llama 4's
``chat_format`` module imports torch, so its ``encode_dialog_prompt`` is reproduced here step
for step over llama-models' Llama 4 ``Tokenizer`` (no torch needed).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import llama_models
import pytest
from llama_models.datatypes import RawMessage, RawTextItem, StopReason, ToolCall
from llama_models.llama3.chat_format import ChatFormat
from llama_models.llama3.tokenizer import Tokenizer as Llama3Tokenizer
from llama_models.llama4.tokenizer import Tokenizer as Llama4Tokenizer

from tokend.core import Encoding
from tokend.core.counting import count_chat, default_catalogue
from tokend.core.formats import parse_tiktoken_bpe
from tokend.core.install.bundles import BUNDLES

SITE = Path(llama_models.__file__).resolve().parents[1]
CALL = {"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
CHATS: dict[str, list[dict[str, Any]]] = {
    "one-user": [{"role": "user", "content": "hello"}],
    "system-multi-turn": [
        {"role": "system", "content": "You are terse.\n"},
        {"role": "user", "content": "\n\n  Hello there, who are you?  "},
        {"role": "assistant", "content": "A bot."},
        {"role": "user", "content": "What's 2+2? ünïcödé 😀 <|eot_id|> <|eot|>"}],
    "parts": [{"role": "user", "content": [{"type": "text", "text": "one "},
                                           {"type": "text", "text": " two"}]}],
    "tool-call-and-result": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "content": '{"temp": 21}'},
        {"role": "user", "content": "thanks"}],
}


@functools.cache
def tokend_encoding(name: str) -> Encoding:
    bundle = BUNDLES[name]
    assert bundle.pattern is not None and bundle.specials is not None
    ranks = parse_tiktoken_bpe((SITE / bundle.member).read_bytes())
    return Encoding(name, pat_str=bundle.pattern, mergeable_ranks=ranks,
                    special_tokens=bundle.specials(len(ranks)))


@functools.cache
def reference(name: str) -> Llama3Tokenizer | Llama4Tokenizer:
    if name == "llama3":
        return Llama3Tokenizer.get_instance()
    return Llama4Tokenizer.get_instance()


def raw(message: dict[str, Any]) -> RawMessage:
    content = message["content"]
    if isinstance(content, list):
        content = [RawTextItem(text=part["text"]) for part in content]
    calls = [ToolCall(call_id=c["id"], tool_name=c["function"]["name"],
                      arguments=json.loads(c["function"]["arguments"]))
             for c in message.get("tool_calls", [])]
    return RawMessage(role=message["role"], content=content, tool_calls=calls,
                      stop_reason=StopReason.end_of_turn if message["role"] == "assistant"
                      else None)


def llama4_tokens(tok: Llama4Tokenizer, messages: list[dict[str, Any]]) -> list[int]:
    """llama_models/llama4/chat_format.py encode_dialog_prompt, for text messages."""
    from llama_models.datatypes import ToolPromptFormat
    from llama_models.llama3.tool_utils import ToolUtils

    sp = tok.special_tokens

    def header(role: str) -> list[int]:
        return [sp["<|header_start|>"], *tok.encode("ipython" if role == "tool" else role,
                                                    bos=False, eos=False),
                sp["<|header_end|>"], *tok.encode("\n\n", bos=False, eos=False)]

    tokens = [sp["<|begin_of_text|>"]]
    for m in messages:
        message = raw(m)
        tokens += header(message.role)
        contents = message.content if isinstance(message.content, list) else [message.content]
        for c in contents:
            tokens += tok.encode(c if isinstance(c, str) else c.text, bos=False, eos=False)
        for t in message.tool_calls:
            tokens += tok.encode(ToolUtils.encode_tool_call(t, ToolPromptFormat.json),
                                 bos=False, eos=False)
        eom = (message.role == "assistant" and bool(message.tool_calls)) or message.role == "tool"
        tokens.append(sp["<|eom|>" if eom else "<|eot|>"])
    return tokens + header("assistant")


@pytest.mark.parametrize("name", ["llama3", "llama4"])
def test_bundle_reads_the_file_as_llama_models_does(name: str) -> None:
    ref = reference(name)
    ours = tokend_encoding(name)
    assert ours.special_tokens == ref.special_tokens  # ty: same names, same ids
    pattern = ref.pat_str if name == "llama3" else ref.O200K_PATTERN
    assert BUNDLES[name].pattern == pattern
    text = "Hello, wörld! 1234567 tokens\n\n  spaced   out 😀 <|eot_id|>"
    assert ours.encode_ordinary(text) == ref.encode(text, bos=False, eos=False)


@pytest.mark.parametrize("chat", sorted(CHATS))
@pytest.mark.parametrize("model", ["llama-3.1-8b-instruct", "llama-3.3-70b-instruct",
                                   "meta-llama/Llama-3.2-1B-Instruct",
                                   "llama-4-scout-17b-16e-instruct",
                                   "meta-llama/Llama-4-Maverick-17B-128E-Instruct"])
def test_count_equals_llama_models(model: str, chat: str) -> None:
    info = default_catalogue().find(model)
    assert info is not None and info.install == info.tokenizer
    messages = CHATS[chat]
    if info.tokenizer == "llama3":
        tok3 = reference("llama3")
        assert isinstance(tok3, Llama3Tokenizer)
        want = ChatFormat(tok3).encode_dialog_prompt([raw(m) for m in messages]).tokens
    else:
        tok4 = reference("llama4")
        assert isinstance(tok4, Llama4Tokenizer)
        want = llama4_tokens(tok4, messages)
    got = count_chat(messages, model=model, encoding=tokend_encoding(info.tokenizer))
    assert got.total == len(want)
    assert got.exact and got.rule == info.chat_rule
