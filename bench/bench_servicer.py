"""Servicer cost without gRPC: tokend's servicer vs a baseline's, called in-process.

Separates "how fast is the work" from "how fast is the service around it": each servicer method
is called directly with a request object and a stand-in context (tokend's through its
interceptor, as in the server: request id, metrics, limits), and the response serialized,
on 1 KB and 16 KB texts; passes of the two servicers are interleaved, medians reported.
Companion to bench_service.py (which measures the whole service over gRPC).

    .venv/bin/python bench/bench_servicer.py
    .venv/bin/python bench/bench_servicer.py --library tokend   # tokend's call path alone
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from baseline_server import BaselineService  # bench/ is the script's directory
from bench_service import SIZES, TOKENIZER, make_texts

from tokend.client.requests import special_policy
from tokend.server.app.service import App
from tokend.server.config import ServerConfig
from tokend.server.interceptors import ServerState, TokendInterceptor
from tokend.server.packed import response_serializer
from tokend.server.servicer import TokenizerService
from tokend.server.serving import make_server
from tokend.v1 import tokenizer_pb2 as pb


class StandInContext:
    """The few ServicerContext methods the servicers and tokend's interceptor call on the
    success path."""

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("user-agent", "grpc-python/bench"),)

    def set_trailing_metadata(self, metadata: Any) -> None:
        pass

    def is_active(self) -> bool:
        return True

    def time_remaining(self) -> float:
        return 60.0

    def add_callback(self, callback: Callable[[], None]) -> bool:
        return True

    def abort(self, code: Any, details: str) -> None:
        raise RuntimeError(f"{code}: {details}")


def time_pass(method: Callable[[Any, Any], Any], requests: list[Any]) -> float:
    """Mean CPU µs per call over one pass of ``requests`` (response serialized too): CPU time,
    so other jobs on a shared machine change it little."""
    context = StandInContext()
    start = time.process_time()
    for request in requests:
        response_serializer(method(request, context))  # Encode's may be bytes already
    return (time.process_time() - start) / len(requests) * 1e6


def compare(
    methods: dict[str, Callable[[Any, Any], Any]], requests: list[Any], repeat: int
) -> dict[str, float]:
    """Median µs per call of each method; passes interleaved (order alternating) so machine
    noise hits every method alike; one warm-up pass each first.
    """
    for method in methods.values():
        time_pass(method, requests)
    passes: dict[str, list[float]] = {name: [] for name in methods}
    names = list(methods)
    for rep in range(repeat):
        for name in names if rep % 2 == 0 else reversed(names):
            passes[name].append(time_pass(methods[name], requests))
    return {name: statistics.median(times) for name, times in passes.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256, help="distinct texts per size")
    parser.add_argument("--repeat", type=int, default=9, help="measured passes per servicer")
    parser.add_argument("--library", default="tiktoken",
                        choices=("tiktoken", "gigatoken", "tokend"),
                        help="the baseline servicer's engine (baseline_server.py --library)")
    args = parser.parse_args(argv)
    policy = special_policy(frozenset(), "all")
    with tempfile.TemporaryDirectory(prefix="tokend-bench-") as tmp:
        config = ServerConfig(port=0, registry=Path(tmp) / "registry", metrics_port=0)
        built = make_server(config)  # bound, never started: only its tokenizer table and jobs
        servicers = {
            "tokend": TokenizerService(App(config, built.tokenizers, built.jobs)),
            "baseline": BaselineService([TOKENIZER], args.library),
        }
        # tokend's calls go through its interceptor, as in the server (request id, metrics).
        interceptor = TokendInterceptor(ServerState(), admin_token=None)
        print("| RPC | text | tokend µs/call | baseline µs/call | tokend / baseline |")
        print("|---|---|---:|---:|---:|")
        for size, n in SIZES.items():
            texts = make_texts(n, args.texts)
            requests = {
                "Encode": [
                    pb.EncodeRequest(tokenizer=TOKENIZER, texts=[t], special_tokens=policy)
                    for t in texts
                ],
                "CountTokens": [
                    pb.CountTokensRequest(tokenizer=TOKENIZER, texts=[t]) for t in texts
                ],
            }
            for rpc, batch in requests.items():
                methods = {name: getattr(servicer, rpc) for name, servicer in servicers.items()}
                labels = ("unary", "tokend.v1.TokenizerService", rpc)
                methods["tokend"] = interceptor._wrap_unary(rpc, labels, methods["tokend"],
                                                            streaming=False)
                us = compare(methods, batch, args.repeat)
                ratio = us["tokend"] / us["baseline"]
                print(
                    f"| {rpc} | {size} | {us['tokend']:.1f} | {us['baseline']:.1f} | {ratio:.2f}x |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
