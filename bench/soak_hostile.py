"""Hostile clients for bench/soak.py (``--hostile``): while the closed-loop load runs they hold
half-open EncodeStream calls, stalled HTTP request heads and stalled ``/metrics`` scrapes, and
send malformed input (broken tool schemas, JSON nested too deep, oversized tool-call
arguments), so the soak shows that none of it starves the load, grows the server or gives
INTERNAL. Each kind reopens what the server closes and counts how it ended.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator

import grpc

from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

DEEP_TOOL = ('[{"type": "function", "function": {"name": "f", "parameters": '
             + '{"type": "object", "properties": {"a": ' * 1000 + "{}" + "}}" * 1000 + "}}]")
MALFORMED_TOOLS = [
    '[{"type": "function", "function": {"name": "f", "parameters": {"properties": [1]}}}]',
    '[{"type": "function", "function": {"name": "f", "parameters": 7}}]',
    '[{"name": "f", "parameters": {"properties": {"u": {"type": "string", "enum": 3}}}}]',
    DEEP_TOOL,
]


class Hostile:
    """Counts, by kind and outcome, what the hostile clients met (``snapshot``)."""

    def __init__(self, target: str, http_port: int, metrics_port: int, *, streams: int = 24,
                 heads: int = 100, scrapes: int = 50) -> None:
        self.target = target
        self.http_port = http_port
        self.metrics_port = metrics_port
        self.sizes = {"streams": streams, "heads": heads, "scrapes": scrapes}
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def _count(self, key: str) -> None:
        with self.lock:
            self.counts[key] += 1

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.counts)

    def threads(self) -> list[threading.Thread]:
        jobs = [self.half_open_streams, self.malformed,
                lambda: self.stalled_sockets("heads", self.http_port,
                                             b"POST /count HTTP/1.1\r\nHost: 127.0.0.1\r\nCont"),
                lambda: self.stalled_sockets("scrapes", self.metrics_port,
                                             b"GET /metrics HTTP/1.1\r\nHost: x\r\n")]
        return [threading.Thread(target=job, daemon=True) for job in jobs]

    def half_open_streams(self) -> None:
        """Keep ``streams`` EncodeStream calls that never half-close; count how each ends."""
        channel = grpc.insecure_channel(self.target)
        stub = pb_grpc.TokenizerServiceStub(channel)
        first = pb.EncodeStreamRequest(tokenizer="o200k_base", text="hello ")

        def never_ends() -> Iterator[pb.EncodeStreamRequest]:
            yield first
            self.stop.wait()

        def one() -> None:
            while not self.stop.is_set():
                try:
                    for _ in stub.EncodeStream(never_ends(), timeout=600):
                        pass
                    self._count("streams OK")
                except grpc.RpcError as exc:
                    flag = next((f for f in ("--max-streams", "--stream-idle-seconds")
                                 if f in (exc.details() or "")), "")
                    self._count(f"streams {exc.code().name} {flag}".strip())
                self.stop.wait(1.0)

        workers = [threading.Thread(target=one, daemon=True)
                   for _ in range(self.sizes["streams"])]
        for worker in workers:
            worker.start()
        self.stop.wait()
        channel.close()

    def stalled_sockets(self, kind: str, port: int, head: bytes) -> None:
        """Keep ``sizes[kind]`` connections that sent half a request head; reopen closed ones."""
        held: list[socket.socket] = []
        while not self.stop.is_set():
            alive = []
            for sock in held:
                try:
                    sock.settimeout(0.001)
                    closed = sock.recv(1) == b""
                except TimeoutError:
                    closed = False
                except OSError:
                    closed = True
                if closed:
                    sock.close()
                    self._count(f"{kind} closed by the server")
                else:
                    alive.append(sock)
            held = alive
            while len(held) < self.sizes[kind]:
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                    sock.sendall(head)
                    held.append(sock)
                    self._count(f"{kind} opened")
                except OSError:
                    self._count(f"{kind} refused")
                    break
            self.stop.wait(1.0)
        for sock in held:
            sock.close()

    def malformed(self) -> None:
        """Malformed tool schemas and an oversized tool-call argument, twice a second."""
        channel = grpc.insecure_channel(self.target)
        stub = pb_grpc.TokenizerServiceStub(channel)
        message = pb.ChatMessage(role="user", content="hi")
        huge = pb.ChatMessage(role="assistant", tool_calls=[
            pb.ToolCall(id="c", name="f", arguments="x" * (9 << 20))])
        requests = [pb.CountTokensRequest(tokenizer="o200k_base", messages=[message],
                                          tools_json=tools) for tools in MALFORMED_TOOLS]
        requests.append(pb.CountTokensRequest(tokenizer="o200k_base", messages=[huge]))
        i = 0
        while not self.stop.is_set():
            try:
                stub.CountTokens(requests[i % len(requests)], timeout=30)
                self._count("malformed OK")
            except grpc.RpcError as exc:
                self._count(f"malformed {exc.code().name}")
            i += 1
            time.sleep(0.5)
        channel.close()
