"""HTTP guards (Hardening II): stalled request heads are closed and capped per worker while
probes keep answering, a body must be JSON-typed and arrive in time, the Host must be one the
server answers to, and a huge detailed answer is refused before it is built."""

from __future__ import annotations

import socket
import time

import grpc
from http_api import HttpServed, call, free_port

from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

STALLED = 600


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.01)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


class TestStalledHeads:
    def test_600_stalled_heads_are_held_probes_answer_and_they_are_closed(
            self, tokend_factory) -> None:
        """600 connections that send half a request head (the issue's slow-head attack):
        gRPC and HTTP probes answer within 2 s, and the server closes every stalled
        connection within --http-head-seconds (here 5 s; the issue asks for 60 s)."""
        port = free_port()
        served = tokend_factory("--http-port", str(port), "--http-head-seconds", "5",
                                workers=2)
        base = f"http://127.0.0.1:{port}"
        stalled = []
        try:
            started = time.monotonic()
            for _ in range(STALLED):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                sock.sendall(b"POST /count HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
                stalled.append(sock)
            for _ in range(5):
                t0 = time.monotonic()
                answer = call(base, "POST", "/count",
                              {"tokenizer": "o200k_base", "texts": ["still here"]}, timeout=2)
                assert answer.status == 200 and answer.body["total"] == 2
                with grpc.insecure_channel(served.target) as channel:
                    got = pb_grpc.TokenizerServiceStub(channel).CountTokens(
                        pb.CountTokensRequest(tokenizer="o200k_base", texts=["still here"]),
                        timeout=2)
                    assert got.total == 2
                assert time.monotonic() - t0 < 2
            deadline = started + 60
            while time.monotonic() < deadline:
                open_ones = [s for s in stalled if not closed_by_server(s)]
                if not open_ones:
                    break
                time.sleep(0.5)
            assert not open_ones, f"{len(open_ones)} stalled connections still open"
            assert time.monotonic() - started < 30
        finally:
            for sock in stalled:
                sock.close()
        errors = [e for e in served.events if e.get("level") == "ERROR"]
        assert errors == []


class TestRequestGuards:
    def test_a_body_must_be_declared_json(self, http_server: HttpServed) -> None:
        answer = call(http_server.base, "POST", "/count",
                      b'{"tokenizer": "gpt2", "texts": ["a"]}',
                      headers={"content-type": "text/plain"})
        assert answer.status == 400, answer.body
        assert answer.body["error"]["field"] == "content-type"
        assert "application/json" in answer.body["error"]["message"]

    def test_a_foreign_host_is_refused(self, http_server: HttpServed) -> None:
        """A rebound name (evil.example resolving to 127.0.0.1) gets 403 naming the flag."""
        answer = call(http_server.base, "POST", "/count", {"tokenizer": "gpt2", "texts": ["a"]},
                      headers={"host": "evil.example"})
        assert answer.status == 403, answer.body
        assert answer.body["error"]["field"] == "host"
        assert "--http-allowed-hosts" in answer.body["error"]["message"]
        ok = call(http_server.base, "POST", "/count", {"tokenizer": "gpt2", "texts": ["a"]},
                  headers={"host": "localhost:1234"})
        assert ok.status == 200, ok.body

    def test_a_huge_detailed_answer_is_refused_by_name(self, tokend_factory) -> None:
        """The issue's /tokenize (2 x 2,000,000 tokens with details, ~438 MB of JSON) is a 413
        naming --max-detail-tokens under the default limits."""
        port = free_port()
        tokend_factory("--http-port", str(port), workers=1)
        answer = call(f"http://127.0.0.1:{port}", "POST", "/tokenize",
                      {"tokenizer": "o200k_base", "texts": [" a" * 2_000_000] * 2}, timeout=120)
        assert answer.status == 413, answer.body
        assert "--max-detail-tokens" in answer.body["error"]["message"]
