"""Service benchmark: requests/s and p50/p99 of CountTokens and Encode on 1 KB and 16 KB texts,
``tokend serve`` against a baseline grpcio server that calls tiktoken directly, in one run.

    .venv/bin/python bench/bench_service.py                 # ~2 minutes, prints a markdown table
    .venv/bin/python bench/bench_service.py --duration 10 --clients 4 --threads 8

Both servers are started by this script with the same shape: ``--workers`` processes sharing the
port (SO_REUSEPORT) with a 16-thread pool each (tokend's defaults; the baseline mirrors them).
Load: ``--clients`` processes x ``--threads`` threads, each a closed loop of blocking calls with
``tokend.client.Client`` over its own channel; a warm-up, then ``--duration`` seconds measured.
Each cell runs ``--repeat`` times per server, alternating which goes first, so drift hits
both; the runs are pooled (req/s over their total time, percentiles over all calls).
Texts are distinct slices of Shakespeare (tests/fixtures), cycled, so caches see realistic
repetition, not one text.
Note: the load generator runs on the same machine and competes with the servers for CPU.
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import multiprocessing.pool
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from tokend.client import Client

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpora" / "shakespeare.txt.gz"
TOKENIZER = "o200k_base"
SIZES = {"1 KB": 1024, "16 KB": 16 * 1024}
RPCS = ("CountTokens", "Encode")


@dataclass(frozen=True)
class Measurement:
    server: str
    rpc: str
    size: str
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


def make_texts(size: int, count: int) -> list[str]:
    """``count`` distinct consecutive slices of ``size`` bytes of the corpus (ASCII-safe cuts)."""
    data = gzip.decompress(CORPUS.read_bytes())
    texts: list[str] = []
    for i in range(count):
        start = (i * size) % max(1, len(data) - size)
        texts.append(data[start : start + size].decode("utf-8", errors="ignore"))
    return texts


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_serving(target: str, timeout: float = 60.0) -> None:
    """Until a CountTokens call succeeds (the server may bind before it loads encodings)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    with Client(target, timeout=5) as client:
        while time.monotonic() < deadline:
            try:
                client.count_tokens(TOKENIZER, "warm up")
                return
            except Exception as err:
                last = err
                time.sleep(0.2)
    raise TimeoutError(f"server at {target} not serving after {timeout}s: {last}")


def start_tokend(port: int, workers: int, registry: Path) -> subprocess.Popen[bytes]:
    tokend = shutil.which("tokend", path=str(Path(sys.executable).parent)) or "tokend"
    cmd = [
        tokend, "serve", "--host", "127.0.0.1", "--port", str(port), "--metrics-port", "0",
        "--registry", str(registry), "--workers", str(workers),
    ]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def start_baseline(port: int, workers: int) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable, str(ROOT / "bench" / "baseline_server.py"), "--port", str(port),
        "--workers", str(workers), "--encodings", TOKENIZER,
    ]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- the load generator (runs in client processes) ----------------------------------------------


def client_process(
    target: str, rpc: str, texts: Sequence[str], *, threads: int, warmup: float, duration: float
) -> tuple[list[float], int]:
    """Closed-loop load from ``threads`` threads; latencies (ms) of calls after the warm-up."""
    start = time.monotonic()
    measure_from = start + warmup
    stop_at = measure_from + duration
    latencies: list[list[float]] = [[] for _ in range(threads)]
    errors = [0] * threads

    def loop(index: int) -> None:
        with Client(target, timeout=30) as client:
            call = client.count_tokens if rpc == "CountTokens" else client.encode
            i = index
            while True:
                text = texts[i % len(texts)]
                i += threads
                t0 = time.monotonic()
                if t0 >= stop_at:
                    return
                try:
                    call(TOKENIZER, text)
                except Exception:
                    if t0 >= measure_from:
                        errors[index] += 1
                    continue
                if t0 >= measure_from:
                    latencies[index].append((time.monotonic() - t0) * 1000)

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return [x for per_thread in latencies for x in per_thread], sum(errors)


@dataclass(frozen=True)
class Sample:
    """One measured run of one cell: latencies (ms) of the calls made, errors, seconds."""

    latencies: list[float]
    errors: int
    seconds: float


def run_cell(
    pool: multiprocessing.pool.Pool,
    *,
    target: str,
    rpc: str,
    texts: Sequence[str],
    args: argparse.Namespace,
) -> Sample:
    # Each client process gets its own share of the texts so they do not move in lockstep.
    shares = [texts[i :: args.clients] or texts for i in range(args.clients)]
    jobs = [
        pool.apply_async(
            client_process,
            (target, rpc, share),
            {"threads": args.threads, "warmup": args.warmup, "duration": args.duration},
        )
        for share in shares
    ]
    results = [job.get() for job in jobs]
    latencies = [x for lat, _ in results for x in lat]
    return Sample(latencies, sum(err for _, err in results), args.duration)


def summarize(server: str, rpc: str, size: str, samples: Sequence[Sample]) -> Measurement:
    """Pool the repetitions: req/s over their total time, percentiles over all their calls."""
    latencies = sorted(x for sample in samples for x in sample.latencies)
    errors = sum(sample.errors for sample in samples)
    if not latencies:
        raise RuntimeError(f"{server} {rpc} {size}: no successful calls ({errors} errors)")
    p99_index = min(len(latencies) - 1, int(0.99 * len(latencies)))
    return Measurement(
        server,
        rpc,
        size,
        requests=len(latencies),
        errors=errors,
        seconds=sum(sample.seconds for sample in samples),
        p50_ms=statistics.median(latencies),
        p99_ms=latencies[p99_index],
    )


def table(results: list[Measurement]) -> str:
    """Markdown: one row per (rpc, size) with both servers and the tokend/baseline ratios."""
    by_key = {(m.server, m.rpc, m.size): m for m in results}
    lines = [
        "| RPC | text | tokend req/s | baseline req/s | req/s ratio | tokend p50 / p99 ms "
        "| baseline p50 / p99 ms | p99 ratio | errors |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    cells = dict.fromkeys((m.rpc, m.size) for m in results)
    for rpc, size in cells:
        t = by_key[("tokend", rpc, size)]
        b = by_key[("baseline", rpc, size)]
        lines.append(
            f"| {rpc} | {size} | {t.rps:,.0f} | {b.rps:,.0f} | {t.rps / b.rps:.2f}x "
            f"| {t.p50_ms:.2f} / {t.p99_ms:.2f} | {b.p50_ms:.2f} / {b.p99_ms:.2f} "
            f"| {t.p99_ms / b.p99_ms:.2f}x | {t.errors} / {b.errors} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="server processes, both servers (default: CPU count, tokend's)",
    )
    parser.add_argument("--clients", type=int, default=2, help="load generator processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per client process")
    parser.add_argument("--duration", type=float, default=5.0, help="measured seconds per cell")
    parser.add_argument("--warmup", type=float, default=1.5, help="unmeasured seconds first")
    parser.add_argument("--texts", type=int, default=256, help="distinct texts per size")
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="runs per cell per server, alternating order; results pooled",
    )
    parser.add_argument("--rpc", choices=RPCS, action="append", help="only this RPC (repeatable)")
    parser.add_argument("--size", choices=SIZES, action="append", help="only this text size")
    args = parser.parse_args(argv)  # fmt: skip
    rpcs = args.rpc or list(RPCS)
    sizes = args.size or list(SIZES)

    texts = {size: make_texts(n, args.texts) for size, n in SIZES.items()}
    results: list[Measurement] = []
    with ExitStack() as stack:
        registry = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tokend-bench-")))
        ports = {"tokend": free_port(), "baseline": free_port()}
        procs = {
            "tokend": start_tokend(ports["tokend"], args.workers, registry),
            "baseline": start_baseline(ports["baseline"], args.workers),
        }
        for proc in procs.values():
            stack.callback(stop, proc)
        for port in ports.values():
            wait_serving(f"127.0.0.1:{port}")
        ctx = multiprocessing.get_context("spawn")
        pool = stack.enter_context(ctx.Pool(args.clients))
        for rpc in rpcs:
            for size in sizes:
                samples: dict[str, list[Sample]] = {"tokend": [], "baseline": []}
                for rep in range(args.repeat):
                    # Alternate who goes first, so neither always runs on a warmer machine.
                    order = ("tokend", "baseline") if rep % 2 == 0 else ("baseline", "tokend")
                    for name in order:
                        sample = run_cell(pool, target=f"127.0.0.1:{ports[name]}", rpc=rpc,
                                          texts=texts[size], args=args)  # fmt: skip
                        samples[name].append(sample)
                        print(f"  {name:<8} {rpc:<11} {size:>5} run {rep + 1}: "
                              f"{len(sample.latencies) / sample.seconds:8,.0f} req/s  "
                              f"errors {sample.errors}", file=sys.stderr, flush=True)  # fmt: skip
                for name, runs in samples.items():
                    results.append(summarize(name, rpc, size, runs))
    print(
        f"\n{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
        f"Python {platform.python_version()}; servers: {args.workers} worker processes x 16 "
        f"threads each; load: {args.clients} processes x {args.threads} threads, "
        f"{args.repeat} x {args.duration:g} s per cell and server (each after {args.warmup:g} s "
        f"warm-up), pooled; tokenizer {TOKENIZER}; {args.texts} distinct texts per size.\n"
    )
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
