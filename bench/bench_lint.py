"""Lint time per built-in: the import depth and the full lint, against tiktoken doing the
reachability check alone (decode each id, encode its text, compare) in the same run.

    .venv/bin/python bench/bench_lint.py [--reps 3] [--names o200k_base cl100k_base r50k_base]
    .venv/bin/python bench/bench_lint.py --rpc   # the Lint RPC against the same lint in-process

Prints a markdown table; times are CPU seconds of this process, best of ``--reps``. With
``--rpc``: wall seconds of the Lint RPC (an in-process server on a loopback port, one worker)
next to ``lint_tokenizer`` in the same run, both depths, partial-UTF-8 tokens listed (the
biggest answer: every finding converted to protobuf).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import tiktoken
from tiktoken_offline import load_tiktoken

from tokend.core import get_encoding
from tokend.core.lint import lint_tokenizer


def tiktoken_unreachable(enc: tiktoken.Encoding) -> int:
    """The peer: tiktoken's reachability loop (the test's reference computation)."""
    count = 0
    for token, token_id in enc._mergeable_ranks.items():
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            continue
        count += enc.encode_ordinary(text) != [token_id]
    return count


def best_cpu(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def best_wall(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def rpc_table(names: list[str], reps: int) -> None:
    """The Lint RPC's wall time over lint_tokenizer's, same run, both depths."""
    import grpc  # noqa: PLC0415 - only this mode needs the server

    from tokend.server.config import ServerConfig  # noqa: PLC0415
    from tokend.server.serving import make_server  # noqa: PLC0415
    from tokend.v1 import tokenizer_pb2 as pb  # noqa: PLC0415
    from tokend.v1 import tokenizer_pb2_grpc as pb_grpc  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        config = ServerConfig(port=0, registry=Path(tmp) / "registry", metrics_port=0,
                              workers=1)
        server = make_server(config)
        server.start()
        try:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                stub = pb_grpc.TokenizerServiceStub(channel)
                print("| encoding | depth | lint_tokenizer (s) | Lint RPC (s) | RPC / in-process "
                      "| findings listed |")
                print("|---|---|---:|---:|---:|---:|")
                for name in names:
                    enc = get_encoding(name)
                    for depth, full in (("import", False), ("full", True)):
                        request = pb.LintRequest(
                            tokenizer=name, list_partial_utf8=True, max_findings=10_000,
                            depth=pb.LINT_DEPTH_FULL if full else pb.LINT_DEPTH_IMPORT)
                        answer = stub.Lint(request, timeout=300)  # warm: loads the encoding
                        local = best_wall(lambda: lint_tokenizer(
                            enc, full=full, list_partial=True), reps)  # noqa: B023
                        remote = best_wall(lambda: stub.Lint(
                            request, timeout=300), reps)  # noqa: B023
                        print(f"| {name} | {depth} | {local:.2f} | {remote:.2f} | "
                              f"{remote / local:.2f}x | {len(answer.findings)} |")
        finally:
            server.drain(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--names", nargs="+", default=["o200k_base", "cl100k_base", "r50k_base"])
    parser.add_argument("--rpc", action="store_true",
                        help="time the Lint RPC against lint_tokenizer in the same run")
    args = parser.parse_args()
    if args.rpc:
        rpc_table(args.names, args.reps)
        return
    print("| encoding | n_vocab | tiktoken reachability loop (s) | tokend lint at import (s) "
          "| tokend full lint (s) | unreachable | partial UTF-8 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.names:
        ours, peer = get_encoding(name), load_tiktoken(name)
        ours.encode("warm up"), peer.encode("warm up")
        t_peer = best_cpu(lambda: tiktoken_unreachable(peer), args.reps)  # noqa: B023
        t_import = best_cpu(lambda: lint_tokenizer(ours, full=False), args.reps)  # noqa: B023
        t_full = best_cpu(lambda: lint_tokenizer(ours), args.reps)  # noqa: B023
        summary = lint_tokenizer(ours, full=False).summary()
        print(f"| {name} | {ours.n_vocab} | {t_peer:.2f} | {t_import:.2f} "
              f"({t_import / t_peer:.1f}x) | {t_full:.2f} ({t_full / t_peer:.1f}x) "
              f"| {summary['unreachable']} | {summary['partial-utf8']} |")


if __name__ == "__main__":
    main()
