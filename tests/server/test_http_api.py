"""The HTTP JSON API against the gRPC answers and the reference implementations.

A real ``tokend serve --http-port`` (two workers sharing the port) answers both transports;
every JSON answer must carry what the matching RPC answers (ids, pieces, offsets, counts,
texts, listings), the ids must be tiktoken's / HF ``tokenizers``' own, and byte-fallback and
special pieces must be flagged as the reference's vocabulary says.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import versioned
from http_api import HttpServed, call, free_port
from tiktoken_reference import reference
from tls_certs import Certs

from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TEXTS = ["Hello, world! Größe 世界 🙂", "  two  spaces\tand a tab\n", "<|endoftext|> as text"]


@pytest.fixture(scope="module")
def stub(http_server: HttpServed) -> Iterator[pb_grpc.TokenizerServiceStub]:
    with grpc.insecure_channel(http_server.process.target) as channel:
        yield pb_grpc.TokenizerServiceStub(channel)


class TestTokenize:
    def test_ids_pieces_and_offsets_equal_grpc_and_tiktoken(self, http_server: HttpServed,
                                                             stub: Any) -> None:
        """Every text's ids are tiktoken's; tokens equal Encode's details field by field."""
        body = {"tokenizer": "o200k_base", "texts": TEXTS,
                "special_tokens": {"disallowed_mode": "none"}}
        answer = call(http_server.base, "POST", "/tokenize", body)
        assert answer.status == 200, answer.body
        grpc_answer = stub.Encode(pb.EncodeRequest(
            tokenizer="o200k_base", texts=TEXTS, include_details=True,
            special_tokens=pb.SpecialTokenPolicy(disallowed_mode=pb.DISALLOWED_SPECIAL_NONE)))
        tiktoken_enc = reference("o200k_base")
        assert answer.body["tokenizer"] == "o200k_base"
        results = answer.body["results"]
        assert len(results) == len(TEXTS)
        for text, result, expected in zip(TEXTS, results, grpc_answer.results, strict=True):
            assert result["ids"] == tiktoken_enc.encode_ordinary(text) == list(expected.ids)
            assert result["count"] == len(result["ids"])
            assert [(t["id"], bytes.fromhex(t["bytes"]), t["start"], t["end"], t["special"])
                    for t in result["tokens"]] == \
                [(d.id, d.piece, d.start, d.end, d.special) for d in expected.details]
            assert b"".join(bytes.fromhex(t["bytes"]) for t in result["tokens"]) == text.encode()
            for token in result["tokens"]:
                piece = bytes.fromhex(token["bytes"])
                whole = piece.decode("utf-8", errors="replace") == piece.decode("utf-8", "ignore")
                assert token["text"] == (piece.decode() if whole else None)
        assert answer.body["total"] == sum(len(r.ids) for r in grpc_answer.results)

    def test_a_single_text_and_the_special_policy(self, http_server: HttpServed) -> None:
        """``texts`` may be one string; allow_all encodes special text as its id, flagged."""
        answer = call(http_server.base, "POST", "/tokenize",
                      {"tokenizer": "cl100k_base", "texts": "a<|endoftext|>",
                       "special_tokens": {"allow_all": True}})
        tiktoken_enc = reference("cl100k_base")
        (result,) = answer.body["results"]
        assert result["ids"] == tiktoken_enc.encode("a<|endoftext|>", allowed_special="all")
        assert [t["special"] for t in result["tokens"]] == [False, True]

    def test_byte_fallback_and_framing_follow_hf(self, http_server: HttpServed,
                                                 bfbpe: Any) -> None:
        """A registry tokenizer: ids with add_special_tokens are HF's; ``<0xNN>`` pieces are
        flagged byte_fallback and <s> </s> special, as HF's vocabulary says."""
        text = "the snowman ☃ stays"
        answer = call(http_server.base, "POST", "/tokenize",
                      {"tokenizer": "bfbpe", "texts": [text], "add_special_tokens": True})
        assert answer.status == 200, answer.body
        assert answer.body["tokenizer"] == "bfbpe@1"
        (result,) = answer.body["results"]
        expected = bfbpe.encode(text)
        assert result["ids"] == expected.ids
        flags = [(t["byte_fallback"], t["special"]) for t in result["tokens"]]
        assert flags == [(tok.startswith("<0x"), tok in ("<s>", "</s>"))
                         for tok in expected.tokens]
        assert sum(f for f, _ in flags) == 3  # ☃ is three bytes no merge covers

    def test_details_can_be_left_out(self, http_server: HttpServed) -> None:
        answer = call(http_server.base, "POST", "/tokenize",
                      {"tokenizer": "gpt2", "texts": ["abc def"], "include_details": False})
        (result,) = answer.body["results"]
        assert result["tokens"] == [] and result["ids"] == reference("gpt2").encode(
            "abc def")


class TestOtherCalls:
    def test_detokenize_equals_decode(self, http_server: HttpServed, stub: Any) -> None:
        """ids and batch (bare lists or {"ids": ...}) give Decode's texts and bytes."""
        tiktoken_enc = reference("o200k_base")
        ids = [tiktoken_enc.encode(t, disallowed_special=()) for t in TEXTS]
        answer = call(http_server.base, "POST", "/detokenize",
                      {"tokenizer": "o200k_base", "ids": ids[0],
                       "batch": [ids[1], {"ids": ids[2]}]})
        assert answer.status == 200, answer.body
        grpc_answer = stub.Decode(pb.DecodeRequest(
            tokenizer="o200k_base", ids=ids[0], batch=[pb.TokenIds(ids=i) for i in ids[1:]]))
        assert answer.body["text"] == TEXTS[0] == grpc_answer.text
        assert bytes.fromhex(answer.body["data"]) == grpc_answer.data
        assert [r["text"] for r in answer.body["results"]] == TEXTS[1:]

    def test_count_equals_count_tokens(self, http_server: HttpServed, stub: Any) -> None:
        """Texts, chat messages, a model and a budget: every field CountTokens answers."""
        body: dict[str, Any] = {
            "model": "gpt-4o", "texts": TEXTS[:2], "max_tokens": 50,
            "messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "Hi there", "name": "ann"}],
            "tools_json": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        }
        answer = call(http_server.base, "POST", "/count", body)
        assert answer.status == 200, answer.body
        expected = stub.CountTokens(pb.CountTokensRequest(
            model="gpt-4o", texts=TEXTS[:2], max_tokens=50,
            messages=[pb.ChatMessage(role="system", content="Be brief."),
                      pb.ChatMessage(role="user", content="Hi there", name="ann")],
            tools_json=json.dumps(body["tools_json"])))
        for field in ("tokenizer", "total", "messages_count", "tools_count", "fits",
                      "remaining", "exact", "chat_rule", "model", "context_window"):
            assert answer.body[field] == getattr(expected, field), field
        assert answer.body["counts"] == list(expected.counts)
        parts = ("system", "messages", "tools", "images", "framing", "texts")
        assert answer.body["breakdown"] == {p: getattr(expected.breakdown, p) for p in parts}
        assert sum(answer.body["breakdown"].values()) == answer.body["total"]
        tiktoken_enc = reference("o200k_base")
        assert answer.body["counts"] == [len(tiktoken_enc.encode_ordinary(t)) for t in TEXTS[:2]]

    def test_tokenizers_equal_the_listing(self, http_server: HttpServed, stub: Any) -> None:
        """Every entry of ListTokenizers, versions and aliases included (what the page's
        version picker offers); vtok's are the ones its fixture published."""
        answer = call(http_server.base, "GET", "/tokenizers")
        listing = stub.ListTokenizers(pb.ListTokenizersRequest())
        fields = ("name", "builtin", "vocab_size", "versions", "latest_version", "aliases")
        assert [tuple(t[f] for f in fields) for t in answer.body["tokenizers"]] == \
            [(t.name, t.builtin, t.vocab_size, list(t.versions), t.latest_version,
              dict(t.aliases)) for t in listing.tokenizers]
        vtok = next(t for t in answer.body["tokenizers"] if t["name"] == versioned.NAME)
        assert (vtok["versions"], vtok["latest_version"], vtok["aliases"], vtok["vocab_size"]) \
            == ([1, 2], 2, dict([versioned.ALIAS]), versioned.VOCAB_SIZES[1])
        for ref, version in (("vtok@stable", 1), ("vtok@2", 2), ("vtok", 2)):
            got = call(http_server.base, "GET", f"/tokenizers/{ref}").body["manifest"]
            assert (got["ref"], got["vocab_size"]) == \
                (f"vtok@{version}", versioned.VOCAB_SIZES[version - 1])
        one = call(http_server.base, "GET", "/tokenizers/cl100k_base").body["manifest"]
        manifest = stub.GetTokenizer(pb.GetTokenizerRequest(tokenizer="cl100k_base")).manifest
        assert (one["ref"], one["vocab_size"], one["special_tokens"]) == \
            (manifest.ref, manifest.vocab_size, dict(manifest.special_tokens))

    def test_get_tokenizer_says_which_engine_path_a_loaded_version_runs_on(
        self, http_server: HttpServed
    ) -> None:
        """A served version's engine path (compiled scanner, general pattern, fallback...)."""
        call(http_server.base, "POST", "/count", {"tokenizer": "r50k_base", "texts": ["a"]})
        got = call(http_server.base, "GET", "/tokenizers/r50k_base").body["manifest"]
        assert got["engine"] == "compiled scanner" or got["engine"].startswith("pure-Python")

    def test_health_request_id_and_page(self, http_server: HttpServed) -> None:
        """/health serves; an x-request-id is echoed; / is the page, its assets served."""
        assert call(http_server.base, "GET", "/health").body == {"status": "serving"}
        answer = call(http_server.base, "POST", "/count",
                      {"tokenizer": "gpt2", "texts": ["a"]}, headers={"x-request-id": "abc-1"})
        assert answer.headers["x-request-id"] == "abc-1"
        with urllib.request.urlopen(http_server.base + "/", timeout=10) as page:
            html = page.read().decode()
        assert "<title>tokend inspector</title>" in html

    def test_http_metrics(self, http_server: HttpServed) -> None:
        """tokend_http_requests_total counts by handler, method and code on /metrics."""
        for _ in range(3):
            call(http_server.base, "POST", "/tokenize", {"tokenizer": "nope", "texts": "a"})
        url = f"http://127.0.0.1:{http_server.process.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as scrape:
            text = scrape.read().decode()
        line = next(line for line in text.splitlines() if line.startswith(
            'tokend_http_requests_total{code="404",handler="tokenize",method="POST"}'))
        assert float(line.split()[-1]) >= 3
        assert 'tokend_http_request_seconds_count{handler="tokenize"}' in text


class TestServerSide:
    def test_draining_answers_503(self, fresh_server: Any) -> None:
        """While a worker drains, the API says UNAVAILABLE (503) and /health too."""
        port = free_port()
        running = fresh_server(http_port=port)
        base = f"http://127.0.0.1:{port}"
        assert call(base, "POST", "/count", {"tokenizer": "gpt2", "texts": ["a"]}).status == 200
        running.server.state.start_draining()
        answer = call(base, "POST", "/count", {"tokenizer": "gpt2", "texts": ["a"]})
        assert answer.status == 503 and answer.body["error"]["status"] == "UNAVAILABLE"
        assert call(base, "GET", "/health").status == 503

    def test_tls_follows_the_grpc_side(self, fresh_server: Any, tmp_path: Path) -> None:
        """With --tls-cert/--tls-key the HTTP port speaks HTTPS with the same certificate."""
        certs = Certs(tmp_path)
        port = free_port()
        fresh_server(http_port=port, tls_cert=certs.server_cert, tls_key=certs.server_key)
        context = ssl.create_default_context(cafile=str(certs.ca))
        answer = call(f"https://127.0.0.1:{port}", "GET", "/tokenizers/gpt2", context=context)
        assert answer.status == 200 and answer.body["manifest"]["ref"] == "gpt2"
        with pytest.raises(OSError):
            call(f"http://127.0.0.1:{port}", "GET", "/health", timeout=5)

    def test_mutual_tls_requires_a_client_certificate(self, fresh_server: Any,
                                                      tmp_path: Path) -> None:
        """With --tls-client-ca, HTTPS wants a client certificate signed by that CA."""
        certs = Certs(tmp_path)
        port = free_port()
        fresh_server(http_port=port, tls_cert=certs.server_cert, tls_key=certs.server_key,
                     tls_client_ca=certs.ca)
        base = f"https://127.0.0.1:{port}"
        anonymous = ssl.create_default_context(cafile=str(certs.ca))
        with pytest.raises(OSError):
            call(base, "GET", "/health", context=anonymous, timeout=5)
        known = ssl.create_default_context(cafile=str(certs.ca))
        known.load_cert_chain(str(certs.client_cert), str(certs.client_key))
        assert call(base, "GET", "/health", context=known).status == 200


class TestProcess:
    def test_every_worker_answers_http(self, http_server: HttpServed) -> None:
        """Each new connection goes to one of the two workers (SO_REUSEPORT): the refusals of
        24 connections are logged by both worker processes."""
        events = http_server.process.events
        after = len(events)
        for i in range(24):
            call(http_server.base, "POST", "/tokenize", {"tokenizer": f"spread-{i}", "texts": "a"})
        deadline = time.monotonic() + 10

        def logged() -> list[dict[str, Any]]:
            return [e for e in events[after:] if e.get("event") == "http_error"
                    and "no tokenizer named 'spread-" in str(e.get("error"))]

        while len(logged()) < 24 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len({e["proc"] for e in logged()}) == 2

    def test_sigterm_stops_http_and_exits_0(self, tokend_factory: Any) -> None:
        """SIGTERM ends a server with HTTP on promptly and cleanly; the port is closed."""
        port = free_port()
        served = tokend_factory("--http-port", str(port), "--drain-delay-seconds", "0.2",
                                workers=1)
        base = f"http://127.0.0.1:{port}"
        assert call(base, "GET", "/health").status == 200
        start = time.monotonic()
        assert served.stop() == 0
        assert time.monotonic() - start < 10
        with pytest.raises(OSError):
            call(base, "GET", "/health", timeout=2)

    def test_a_taken_http_port_stops_start_up(self, tmp_path: Path) -> None:
        """A port another program holds: exit 1 naming --http-port."""
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = str(taken.getsockname()[1])
            result = subprocess.run(
                [sys.executable, "-m", "tokend.cli", "serve", "--port", "0", "--metrics-port",
                 "0", "--registry", str(tmp_path / "reg"), "--http-port", port],
                check=False, capture_output=True, text=True, timeout=60)
        assert result.returncode == 1, result.stderr
        assert "--http-port" in result.stderr and port in result.stderr

    def test_flags_and_environment(self) -> None:
        """--http-port / --http-host, else TOKEND_HTTP_PORT / TOKEND_HTTP_HOST, else off on
        loopback."""
        import argparse

        from tokend.commands.serve import register
        from tokend.server.config import config_from

        parser = argparse.ArgumentParser()
        register(parser.add_subparsers())
        default = config_from(parser.parse_args(["serve"]), {})
        assert (default.http_port, default.http_host) == (0, "127.0.0.1")
        env = {"TOKEND_HTTP_PORT": "8081", "TOKEND_HTTP_HOST": "0.0.0.0"}
        from_env = config_from(parser.parse_args(["serve"]), env)
        assert (from_env.http_port, from_env.http_host) == (8081, "0.0.0.0")
        flagged = config_from(parser.parse_args(["serve", "--http-port", "9000"]), env)
        assert flagged.http_port == 9000
        with pytest.raises(ValueError, match="--http-port"):
            config_from(parser.parse_args(["serve", "--http-port", "70000"]), {})
