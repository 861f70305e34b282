"""The Python interop program: the scripts/interop.py cases through tokend.client.

Usage: interop.py <target> <tls-target> <ca.pem>; prints "case<TAB>result" lines. Its results
are the reference the other languages' must equal (scripts/interop.py checks them against
tiktoken and the cases' own expectations first).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tokend.client import ChatMessage, Client, RemoteError, TlsConfig
from tokend.client.channel import channel_options
from tokend.v1 import tokenizer_pb2, tokenizer_pb2_grpc

CHUNK_TEXT = "The quick brown fox jumps over the lazy dog. " * 6
# Pieces split 日本 and the two code points of 👍🏽 (one grapheme).
STREAM_PIECES = ["Grüße aus 日", "本", " 👍", "🏽 and more"]


def report(name: str, run: Callable[[], str]) -> None:
    try:
        result = run()
    except Exception as err:  # a failed case is a cell of the table
        result = "ERROR " + str(err).replace("\n", " ")
    print(f"{name}\t{result}", flush=True)


def joined(values: object) -> str:
    return ",".join(str(v) for v in values)  # type: ignore[attr-defined]


def main(target: str, tls_target: str, ca: str) -> None:
    tok = Client(target, timeout=60)
    ids: list[int] = []

    def count() -> str:
        r = tok.count_tokens("gpt-4o", ["hello world", "naïve café — 日本語 🙂"], messages=[
            ChatMessage("system", "Be brief."), ChatMessage("user", "Weather in Oslo?", name="ann"),
        ])
        return f"counts={joined(r.counts)} messages={r.messages_count} total={r.total}"

    def encode() -> str:
        ids.extend(tok.encode("o200k_base", "hello <|endoftext|> world",
                              allowed_special={"<|endoftext|>"}).ids)
        return f"ids={joined(ids)}"

    def decode() -> str:
        return "text=" + tok.decode("o200k_base", ids).text.encode().hex()

    def chunk() -> str:
        chunks = tok.chunk("o200k_base", CHUNK_TEXT, 16)
        return f"counts={joined(c.count for c in chunks)} ends={joined(c.end for c in chunks)}"

    def encode_stream() -> str:
        return "ids=" + joined(tok.encode_stream("o200k_base", iter(STREAM_PIECES)))

    def refused() -> str:
        try:
            tok.encode("o200k_base", "say <|endoftext|> now")
        except RemoteError as err:
            return f"code={err.code.name} field={err.violations[0].field} reason={err.reason}"
        return "ERROR the call was not refused"

    def deadline() -> str:
        never = threading.Event()

        def silent() -> Iterator[str]:  # a stream the client never closes
            never.wait(5)
            yield from ()

        try:
            list(tok.encode_stream("o200k_base", silent(), timeout=0.3))
        except RemoteError as err:
            return f"code={err.code.name}"
        finally:
            never.set()
        return "ERROR the call ended before its deadline"

    channel = grpc.insecure_channel(target, options=channel_options())

    def request_id() -> str:
        stub = tokenizer_pb2_grpc.TokenizerServiceStub(channel)
        _, call = stub.CountTokens.with_call(
            tokenizer_pb2.CountTokensRequest(tokenizer="o200k_base", texts=["hi"]),
            metadata=(("x-request-id", "interop-rid-42"),), timeout=60)
        echoed = dict(call.trailing_metadata() or ())
        return f"id={echoed.get('x-request-id', '')!s}"

    def health() -> str:
        stub = health_pb2_grpc.HealthStub(channel)
        answer = stub.Check(health_pb2.HealthCheckRequest(service="tokend.v1.TokenizerService"),
                            timeout=60)
        return "status=" + str(health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status))

    def tls() -> str:
        secure = Client(tls_target, timeout=60,
                        tls=TlsConfig.from_files(ca, server_name="localhost"))
        with secure:
            return f"total={secure.count_tokens('o200k_base', ['hello world']).total}"

    for name, run in [("count", count), ("encode", encode), ("decode", decode),
                      ("chunk", chunk), ("encode_stream", encode_stream), ("refused", refused),
                      ("deadline", deadline), ("request_id", request_id), ("health", health),
                      ("tls", tls)]:
        report(name, run)
    channel.close()
    tok.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
