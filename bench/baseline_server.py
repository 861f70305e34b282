"""The benchmark's baseline: a minimal grpcio server of tokend's proto that calls tiktoken directly.

It serves Encode, CountTokens (texts only) and Decode for the shipped built-in encodings, built
offline from ``core/data`` with tiktoken. To be a fair peer of ``tokend serve`` it uses the same
shape: ``--workers`` processes sharing the port with SO_REUSEPORT, each a synchronous
``grpc.server`` with a ``--threads`` thread pool (tokend's defaults: CPU count and 16).
No registry, metrics, auth, limits or interceptors: only the work itself.

    .venv/bin/python bench/baseline_server.py --port 50061 --workers 2
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import threading
from concurrent import futures
from typing import Any

import grpc
import tiktoken
from tiktoken_offline import load_tiktoken  # bench/ is the script's directory

from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc


class BaselineService(pb_grpc.TokenizerServiceServicer):
    """Encode / CountTokens / Decode straight on tiktoken; the other RPCs are UNIMPLEMENTED."""

    def __init__(self, names: list[str]) -> None:
        self.encodings = {name: load_tiktoken(name) for name in names}

    def _encoding(self, ref: str, context: grpc.ServicerContext) -> tiktoken.Encoding:
        encoding = self.encodings.get(ref)
        if encoding is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown tokenizer {ref!r}")
        return encoding

    def Encode(self, request: pb.EncodeRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802  (proto method name)
        enc = self._encoding(request.tokenizer, context)
        try:
            batch = [enc.encode(text) for text in request.texts]
        except ValueError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        return pb.EncodeResponse(
            tokenizer=request.tokenizer, results=[pb.EncodeResult(ids=ids) for ids in batch]
        )

    def CountTokens(self, request: pb.CountTokensRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802  (proto method name)
        enc = self._encoding(request.tokenizer, context)
        # tokend counts special-token text as plain text by default: the same here.
        counts = [len(enc.encode(text, disallowed_special=())) for text in request.texts]
        total = sum(counts)
        return pb.CountTokensResponse(
            tokenizer=request.tokenizer, counts=counts, total=total, fits=True
        )

    def Decode(self, request: pb.DecodeRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802  (proto method name)
        enc = self._encoding(request.tokenizer, context)
        data = enc.decode_bytes(list(request.ids))
        return pb.DecodeResponse(
            tokenizer=request.tokenizer, text=data.decode("utf-8", errors="replace"), data=data
        )


def serve_one(host: str, port: int, threads: int, names: list[str], reuse_port: bool) -> None:
    """One worker process: a sync grpc.server with a thread pool, until SIGTERM/SIGINT."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=threads),
        options=[
            ("grpc.so_reuseport", 1 if reuse_port else 0),
            ("grpc.max_receive_message_length", 64 << 20),
            ("grpc.max_send_message_length", -1),
        ],
    )
    pb_grpc.add_TokenizerServiceServicer_to_server(BaselineService(names), server)
    if server.add_insecure_port(f"{host}:{port}") == 0:
        raise OSError(f"baseline: could not bind {host}:{port}")
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop(grace=1).wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=50061)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--encodings", default="o200k_base,cl100k_base")
    args = parser.parse_args(argv)
    if args.port == 0:
        parser.error("--port 0 cannot be shared by several workers; pick a port")
    names = [n for n in args.encodings.split(",") if n]
    if args.workers == 1:
        serve_one(args.host, args.port, args.threads, names, reuse_port=False)
        return 0
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(
            target=serve_one,
            args=(args.host, args.port, args.threads, names, True),
            name=f"baseline-worker-{i}",
        )
        for i in range(args.workers)
    ]
    for proc in procs:
        proc.start()

    def forward(signum: int, _frame: object) -> None:
        for proc in procs:
            if proc.pid is not None and proc.is_alive():
                os.kill(proc.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for proc in procs:
        proc.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
