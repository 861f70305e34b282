"""Where a never-seen 1 KB call's time goes: py-spy on one server worker's GIL-holding thread.

    .venv/bin/pip install py-spy                          # once (not a project dependency)
    .venv/bin/python bench/profile_service.py              # tokend, ~30 s, prints a table
    .venv/bin/python bench/profile_service.py --server baseline

Starts one server process (``tokend serve --workers 1``, or ``bench/baseline_server.py
--workers 1``: tiktoken behind a bare grpcio server), loads it as ``bench_service.py`` does
(one asyncio load process, ``--connections`` channels of their own, one call in flight each,
closed loop, CountTokens of texts no earlier call carried, 1 KB of Shakespeare's words each),
and after ``--warmup`` seconds samples the worker for ``--seconds`` with
``py-spy record --gil`` (only the thread holding the GIL, ``--rate`` samples a second).

Each sample's stack is put in one bucket, by its innermost frame from a known place: tokend's
``core/`` (the engine and what it calls), ``server/executor.py`` (handing a call to a handler
thread), ``server/interceptors.py`` / ``server/metrics.py`` / ``server/cells.py`` /
prometheus_client (the interceptor and metrics), the rest of ``server/`` (the servicer:
catalogue, policy, limits, response), tiktoken, grpc's Python (its server machinery: the
polling thread ``_serve``, the request and status batches); "other" is what none of these
holds (threading, protobuf alone).
Compiled code shows as the Python frame that called it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench_service import (
    client_process,
    free_port,
    make_new_texts,
    start_baseline,
    start_tokend,
    stop,
    wait_serving,
)

# (bucket, how a frame's file starts as py-spy prints it), tried on each frame from the
# innermost out.
BUCKETS = [
    ("engine and core (tokend core/)", ("tokend/core/",)),
    ("tiktoken", ("tiktoken/",)),
    ("handing to a handler thread (server/executor.py)", ("tokend/server/executor.py",)),
    ("interceptor and metrics", ("tokend/server/interceptors.py", "tokend/server/metrics.py",
                                 "tokend/server/cells.py", "prometheus_client/")),
    ("servicer (catalogue, policy, limits, response)", ("tokend/server/",)),
    ("grpcio's server machinery (grpc/)", ("grpc/",)),
]


def bucket(stack: str) -> str:
    """The bucket of one collapsed stack (``frame (file:line);...``, outermost first)."""
    for frame in reversed(stack.split(";")):
        file = frame.rpartition("(")[2]
        for name, starts in BUCKETS:
            if file.startswith(starts):
                return name
    return "other (threading, protobuf, ...)"


def worker_pid(root: int, server: str, timeout: float = 30.0) -> int:
    """The pid serving calls: tokend's one worker (a child of the supervisor), or the
    baseline's own process."""
    if server == "baseline":
        return root
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == root and b"spawn_main" in cmdline:
                return int(entry)
        time.sleep(0.2)
    raise SystemExit("tokend's worker process was not found")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("tokend", "baseline"), default="tokend")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of load first")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds sampled")
    parser.add_argument("--rate", type=int, default=500, help="py-spy samples per second")
    parser.add_argument("--texts", type=int, default=60_000, help="distinct 1 KB texts")
    parser.add_argument("--keep", action="store_true",
                        help="keep py-spy's raw (collapsed stacks) output and print its path")
    args = parser.parse_args()
    py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which(
        "py-spy")
    if py_spy is None:
        raise SystemExit("py-spy not found: .venv/bin/pip install py-spy")

    port = free_port()
    base = Path(tempfile.mkdtemp(prefix="tokend-profile-"))
    proc = (start_tokend(port, 1, base / "registry") if args.server == "tokend"
            else start_baseline(port, 1, 16))
    target = f"127.0.0.1:{port}"
    try:
        wait_serving(target)
        pid = worker_pid(proc.pid, args.server)
        texts = make_new_texts(1024, args.texts, seed=int(time.time()))
        start = time.monotonic()
        stop_at = start + args.warmup + args.seconds + 2.0
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            load = pool.apply_async(client_process, (target, "CountTokens", texts), dict(
                connections=args.connections, inflight=1,
                measure_from=start + args.warmup, stop_at=start + args.warmup + args.seconds))
            time.sleep(max(0.0, start + args.warmup - time.monotonic()))
            raw = base / "profile.txt"
            subprocess.run([py_spy, "record", "--gil", "--rate", str(args.rate),
                            "--duration", str(int(args.seconds)), "--format", "raw",
                            "--output", str(raw), "--pid", str(pid), "--nonblocking"],
                           check=True, capture_output=True)
            latencies, errors = load.get(timeout=max(60.0, stop_at - time.monotonic() + 60))
    finally:
        stop(proc)
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack:
            counts[bucket(stack)] += int(n)
    total = sum(counts.values())
    print(f"\n{args.server}, one worker: {len(latencies) / args.seconds:,.0f} never-seen 1 KB "
          f"CountTokens calls/s over {args.connections} connections, {errors} errors; "
          f"{total:,} samples of the GIL-holding thread ({args.rate}/s for {args.seconds:.0f} s; "
          f"load average {os.getloadavg()[0]:.1f})\n")
    print("| where the GIL-holding thread was | samples | share |")
    print("|---|---:|---:|")
    for name, n in counts.most_common():
        print(f"| {name} | {n:,} | {n / total:.0%} |")
    if args.keep:
        print(f"\npy-spy's samples: {raw}")
    else:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
