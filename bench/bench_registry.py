"""Registry latency and S3 request counts: a local folder vs S3 (SeaweedFS on loopback).

Publishes, loads (sha256-checked, parsed) and polls ``Registry.generation()`` on both backends
in the same run and counts the S3 requests each operation makes (for the 100-replica arithmetic
in docs/scaling.md). SeaweedFS is started as the tests start it (tests/support/seaweed.py).

    .venv/bin/python bench/bench_registry.py [--reps 15] [--table cl100k_base]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
import boto3
import seaweed

from tokend.core import get_encoding
from tokend.core.registry import Registry


def median_ms(fn: Callable[[], object], reps: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def count_requests(reg: Registry, fn: Callable[[], object]) -> dict[str, int]:
    """S3 operations (ListObjectsV2, GetObject, ...) that one call of ``fn`` makes."""
    counts: collections.Counter[str] = collections.Counter()
    client: Any = getattr(reg.store, "client", None)
    if client is None:
        fn()
        return {}

    def seen(event_name: str, **_: object) -> None:
        counts[event_name.rsplit(".", 1)[1]] += 1

    client.meta.events.register("before-call.s3.*", seen)
    try:
        fn()
    finally:
        client.meta.events.unregister("before-call.s3.*", seen)
    return dict(counts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--table", default="cl100k_base", help="built-in whose ranks are stored")
    args = parser.parse_args()
    enc = get_encoding(args.table)
    ranks, pat, specials = enc.mergeable_ranks, enc.pat_str, dict(enc.special_tokens)
    with tempfile.TemporaryDirectory() as tmp:
        server = seaweed.start(Path(tmp) / "seaweed")
        try:
            os.environ.update(server.env())
            boto3.client("s3").create_bucket(Bucket="bench")
            backends = {"local": Registry(Path(tmp) / "reg", include_builtins=False),
                        "s3": Registry("s3://bench/reg", include_builtins=False)}
            rows = []
            for kind, reg in backends.items():
                reg.publish("tok", ranks=ranks, pat_str=pat, special_tokens=specials)
                ops: dict[str, Callable[[], object]] = {
                    "publish": lambda reg=reg: reg.publish(
                        "tok", ranks=ranks, pat_str=pat, special_tokens=specials),
                    "load (sha256 + parse)": lambda reg=reg: reg.load_data("tok@1"),
                    "resolve name@alias": lambda reg=reg: reg.resolve("tok@stable"),
                    "poll (generation)": reg.generation,
                    "set alias": lambda reg=reg: reg.set_alias("tok", "stable", 1),
                    "list": reg.list,
                }
                reg.set_alias("tok", "stable", 1)
                for op, fn in ops.items():
                    reps = max(3, args.reps // 3) if op == "publish" else args.reps
                    rows.append((op, kind, median_ms(fn, reps), count_requests(reg, fn)))
        finally:
            server.stop()
    print(f"table: {args.table} ({len(ranks):,} ranks), median of {args.reps} (publish: "
          f"{max(3, args.reps // 3)}); SeaweedFS {seaweed.weed_binary()} on loopback\n")
    print(f"| {'operation':<22} | {'local ms':>9} | {'s3 ms':>9} | {'s3/local':>8} | "
          f"{'S3 requests':<40} |")
    print(f"|{'-' * 24}|{'-' * 11}|{'-' * 11}|{'-' * 10}|{'-' * 42}|")
    by_op: dict[str, dict[str, tuple[float, dict[str, int]]]] = collections.defaultdict(dict)
    for op, kind, ms, req in rows:
        by_op[op][kind] = (ms, req)
    for op, kinds in by_op.items():
        local_ms, s3_ms = kinds["local"][0], kinds["s3"][0]
        requests = ", ".join(f"{n} {name}" for name, n in sorted(kinds["s3"][1].items()))
        print(f"| {op:<22} | {local_ms:>9.2f} | {s3_ms:>9.2f} | {s3_ms / local_ms:>7.1f}x | "
              f"{requests:<40} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
