"""Quotes through the server: POST /quote and the Quote RPC answer the same numbers as the
library's quote, for count-shaped requests and vendor bodies; the client (sync and async) and
``tokend quote`` (in process and with --target) read them back equal."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import genai_prices
import grpc
import pytest
from http_api import HttpServed, call
from prometheus_client import REGISTRY

from tokend.client import AsyncClient, Client
from tokend.client.responses import quote_result
from tokend.core.counting.caching import parse_cache
from tokend.core.counting.quote import quote_anthropic, quote_chat
from tokend.core.errors import InvalidInput
from tokend.server.app.quoting import QuoteRequest
from tokend.server.app.service import App
from tokend.server.config import ServerConfig
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

LONG = "Prompt caching keeps a long shared prefix. " * 300
CHAT = [{"role": "system", "content": LONG}, {"role": "user", "content": "What is cached?"}]
ANTHROPIC = {
    "model": "claude-sonnet-4-5",
    "system": [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral",
                                                                "ttl": "1h"}}],
    "messages": [{"role": "user", "content": [
        {"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Which parts are cached?"}]}],
}


@pytest.fixture(scope="module")
def stub(http_server: HttpServed) -> Iterator[pb_grpc.TokenizerServiceStub]:
    with grpc.insecure_channel(http_server.process.target) as channel:
        yield pb_grpc.TokenizerServiceStub(channel)


def grpc_json(response: pb.QuoteResponse) -> dict[str, Any]:
    """The Quote RPC's answer in /quote's JSON shape (read by the client's reader)."""
    return quote_result(response).as_dict()


class TestHttpAndGrpc:
    def test_chat_request_equal_on_both_and_to_the_library(self, http_server: HttpServed,
                                                           stub: Any) -> None:
        """/quote with /count's fields answers what the RPC and quote_chat answer."""
        body = {"model": "gpt-4o", "messages": CHAT, "cache": "warm",
                "max_output_tokens": 700}
        answer = call(http_server.base, "POST", "/quote", body)
        assert answer.status == 200, answer.body
        response = stub.Quote(pb.QuoteRequest(
            count=pb.CountTokensRequest(model="gpt-4o", messages=[
                pb.ChatMessage(role=m["role"], content=m["content"]) for m in CHAT]),
            cache="warm", max_output_tokens=700))
        library = quote_chat(CHAT, model="gpt-4o", cache=parse_cache("warm"),
                             max_output_tokens=700).as_dict()
        assert answer.body == grpc_json(response) == library
        assert answer.body["cache_read_tokens"] == answer.body["input_tokens"] // 128 * 128
        assert answer.body["prices"]["version"] == genai_prices.__version__

    def test_anthropic_body_breakpoints(self, http_server: HttpServed, stub: Any) -> None:
        """An Anthropic body's breakpoints: the same split over HTTP, gRPC and the library."""
        body = {"vendor": "anthropic", "vendor_body": ANTHROPIC, "max_output_tokens": 1000}
        answer = call(http_server.base, "POST", "/quote", body)
        assert answer.status == 200, answer.body
        response = stub.Quote(pb.QuoteRequest(vendor="anthropic",
                                              vendor_body_json=json.dumps(ANTHROPIC),
                                              max_output_tokens=1000))
        library = quote_anthropic(ANTHROPIC, max_output_tokens=1000).as_dict()
        assert answer.body == grpc_json(response) == library
        assert answer.body["exact"] is False and answer.body["estimate_reason"]
        first, second = answer.body["breakpoints"]
        assert answer.body["cache_write_1h_tokens"] == first["prefix_tokens"]
        assert answer.body["cache_write_tokens"] == second["prefix_tokens"]

    @pytest.mark.parametrize(("vendor", "model", "body"), [
        ("openai-responses", "", {"model": "gpt-4.1", "input": LONG}),
        ("openai-chat", "", {"model": "o3", "messages": CHAT}),
        ("gemini", "gemini-2.5-flash", {"contents": [{"parts": [{"text": LONG}]}]}),
    ])
    def test_other_vendor_bodies(self, http_server: HttpServed, stub: Any, vendor: str,
                                 model: str, body: dict[str, Any]) -> None:
        """Responses, Chat Completions and generateContent bodies: equal on both transports,
        and the count equals the vendor count-tokens endpoint's (Responses, Gemini)."""
        request = {"vendor": vendor, "vendor_body": body, "cache": "warm",
                   "max_output_tokens": 100}
        if model:
            request["model"] = model
        answer = call(http_server.base, "POST", "/quote", request)
        assert answer.status == 200, answer.body
        response = stub.Quote(pb.QuoteRequest(
            count=pb.CountTokensRequest(model=model), vendor=vendor,
            vendor_body_json=json.dumps(body), cache="warm", max_output_tokens=100))
        assert answer.body == grpc_json(response)
        assert answer.body["cache_read_tokens"] > 0
        if vendor == "openai-responses":
            counted = call(http_server.base, "POST", "/v1/responses/input_tokens", body)
            assert counted.body["input_tokens"] == answer.body["input_tokens"]
        if vendor == "gemini":
            counted = call(http_server.base, "POST",
                           f"/v1beta/models/{model}:countTokens", body)
            assert counted.body["totalTokens"] == answer.body["input_tokens"]


class TestClient:
    def test_sync_and_async_equal_http(self, http_server: HttpServed) -> None:
        """client.quote (sync and async) reads the same numbers /quote answers."""
        target = http_server.process.target
        with Client(target) as client:
            got = client.quote("claude-opus-4-1", vendor="anthropic",
                               vendor_body={**ANTHROPIC, "model": "claude-opus-4-1"},
                               cache={"prefix_tokens": 10**6}, max_output_tokens=10)

        async def run() -> Any:
            async with AsyncClient(target) as aclient:
                return await aclient.quote("gpt-4o", CHAT, max_output_tokens=10)
        agot = asyncio.run(run())
        answer = call(http_server.base, "POST", "/quote", {
            "vendor": "anthropic", "vendor_body": {**ANTHROPIC, "model": "claude-opus-4-1"},
            "cache": {"prefix_tokens": 10**6}, "max_output_tokens": 10})
        assert got.as_dict() == answer.body
        assert got.cache_read_tokens == got.breakpoints[-1]["prefix_tokens"]
        assert got.usd_max == sum((p.usd for p in got.parts), Decimal(0))
        plain = call(http_server.base, "POST", "/quote",
                     {"model": "gpt-4o", "messages": CHAT, "max_output_tokens": 10})
        assert agot.as_dict() == plain.body


def _tokend(*args: str | Path, registry: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "tokend"), *map(str, args)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={"TOKEND_REGISTRY": str(registry), "PATH": "/usr/bin:/bin"})


class TestCli:
    def test_table_and_json_in_process_and_remote(self, http_server: HttpServed,
                                                  tmp_path: Path) -> None:
        """`tokend quote --model claude-sonnet-4-5 --messages chat.json`: a table of part,
        tokens, $/MTok, $; --json the same numbers, in process and with --target."""
        chat = tmp_path / "chat.json"
        chat.write_text(json.dumps(CHAT))
        registry = tmp_path / "registry"
        table = _tokend("quote", "--model", "claude-sonnet-4-5", "--messages", chat,
                        "--max-output-tokens", "2000", registry=registry)
        assert table.returncode == 0, table.stderr
        as_json = _tokend("quote", "--model", "claude-sonnet-4-5", "--messages", chat,
                          "--max-output-tokens", "2000", "--json", registry=registry)
        remote = _tokend("quote", "--model", "claude-sonnet-4-5", "--messages", chat,
                         "--max-output-tokens", "2000", "--json", "--target",
                         http_server.process.target, registry=registry)
        answer = json.loads(as_json.stdout)
        assert answer == json.loads(remote.stdout)
        assert answer == quote_chat(CHAT, model="claude-sonnet-4-5",
                                    max_output_tokens=2000).as_dict()
        lines = table.stdout.splitlines()
        assert lines[1].split() == ["part", "tokens", "$/MTok", "$"]
        rows = {line.split()[0]: line.split() for line in lines[2:4]}
        for part in answer["parts"]:
            if part["part"] in rows:
                assert rows[part["part"]][1:] == [f"{part['tokens']:,}", part["usd_per_mtok"],
                                                  part["usd"]]
        assert f"${answer['usd_max']}" in table.stdout
        assert "estimate:" in table.stdout

    def test_bad_cache_state_names_the_field(self, tmp_path: Path) -> None:
        chat = tmp_path / "chat.json"
        chat.write_text(json.dumps(CHAT))
        done = _tokend("quote", "--model", "gpt-4o", "--messages", chat, "--cache", "hot",
                       registry=tmp_path / "registry")
        assert done.returncode == 1
        assert "INVALID_ARGUMENT: cache: unknown cache state 'hot'" in done.stderr


class TestAppQuote:
    def test_metrics_once_per_quote(self, tmp_path: Path) -> None:
        """A quote records its input tokens once, as Quote, however many prefixes it counted;
        a refused one records nothing."""
        def counted(method: str) -> float:
            return REGISTRY.get_sample_value("tokend_tokens_encoded_total",
                                             {"method": method}) or 0.0

        app = App.from_config(ServerConfig(registry=str(tmp_path / "registry")),
                              in_process=True)
        before = {m: counted(m) for m in ("Quote", "CountTokens")}
        quoted = app.quote(QuoteRequest(vendor="anthropic", vendor_body=ANTHROPIC,
                                        max_output_tokens=10))
        assert len(quoted.breakpoints) == 2  # three counts: the body and two prefixes
        assert counted("Quote") - before["Quote"] == quoted.input_tokens
        assert counted("CountTokens") == before["CountTokens"]
        with pytest.raises(InvalidInput, match=r"^cache"):
            app.quote(QuoteRequest(vendor="anthropic", vendor_body=ANTHROPIC, cache="hot"))
        assert counted("Quote") - before["Quote"] == quoted.input_tokens
