"""Service benchmark: requests/s, p50/p99 and server CPU per call of CountTokens and Encode on
1, 4 and 16 KB texts, ``tokend serve`` against baseline grpcio servers of the same proto, in one
run.

    .venv/bin/python bench/bench_service.py --mode new      # ~20 minutes, prints markdown tables
    .venv/bin/python bench/bench_service.py --duration 3 --repeat 2 --rpc Encode --size "1 KB"
    .venv/bin/python bench/bench_service.py --servers tokend,bare-tokend --mode new

Servers (``--servers``, default all; the first baseline listed is the one ratios are to):
``tokend`` (``tokend serve``), ``gigatoken``, ``tiktoken`` and ``bare-tokend``: the baseline
server (``baseline_server.py --library ...``, a bare grpcio servicer calling the library) over
gigatoken 0.10.0, tiktoken 0.14 and tokend's own engine. The last one makes the same engine calls
as tokend serve, so tokend against it is tokend's call path alone (interceptor, request ids,
metrics in multiprocess mode, the app layer, logging).

All servers are started by this script with the same shape: ``--workers`` processes sharing the
port (SO_REUSEPORT) with a ``--threads`` pool each (tokend's defaults; the baselines mirror
them). tokend also runs at most ``--busy-calls`` calls at once per worker (its default, 2); the
baselines are the stock ``grpc.server`` thread pool.

Load: ``--clients`` processes, each an asyncio loop holding ``--connections`` gRPC channels (one
TCP connection each) with ``--inflight`` calls in flight per connection, closed loop. Requests
are serialized once up front and sent as bytes; responses are not parsed (their contents are
checked once per server before measuring: same ids and counts from both). This keeps the load
generator cheap, since it shares the CPUs with the servers, and identical for both servers.
subtle: the kernel spreads SO_REUSEPORT connections over the worker processes by a hash of the
connection, and gRPC channels in one process share one connection unless told otherwise; with
only a couple of connections, both can land on one worker and leave the other idle, which
halves a server's throughput at random between runs (the earlier bench did exactly that). So
every channel has its own connection (``grpc.use_local_subchannel_pool``) and there are many.

Each cell runs ``--repeat`` times per server, alternating which goes first, after a priming pass
that sends every text to both servers (caches warm, as in a long-running service). Reported:
req/s and percentiles pooled over the runs, the min-max of the per-run req/s ratio, and server
CPU time per call (user + system of all server processes over the measured window, from /proc),
which varies much less than req/s when something else takes CPU. Each run's line on stderr also
gives the busiest server process's share of that CPU (a balance check), the load's CPU per call
and the CPUs left idle, stolen by the hypervisor or taken by other jobs; a pair of runs during
which other jobs took more than ``--max-other`` CPUs is redone (up to ``--retries`` times).
Texts are distinct slices of Shakespeare (tests/fixtures), cycled (``replay`` mode). In
``new`` mode every request carries a text no earlier request carried: random words of the same
corpus, made by each load process before its run (a service meets new documents all day; the
caches still hold the replay texts from the priming pass). ``--mode`` picks one or both.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import multiprocessing
import multiprocessing.pool
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from tokend.client import Client
from tokend.client.requests import special_policy
from tokend.server.config import ServerConfig
from tokend.v1 import tokenizer_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpora" / "shakespeare.txt.gz"
TOKENIZER = "o200k_base"
SIZES = {"1 KB": 1024, "4 KB": 4 * 1024, "16 KB": 16 * 1024}
RPCS = ("CountTokens", "Encode")


MODES = ("replay", "new")


@dataclass(frozen=True)
class Measurement:
    server: str
    mode: str
    rpc: str
    size: str
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float
    cpu_us: float  # server CPU (all its processes) per call
    run_rps: tuple[float, ...]  # req/s of each run
    other: float  # the most CPUs other jobs took during one of the runs

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


def make_new_texts(size: int, count: int, seed: int) -> list[str]:
    """``count`` texts of about ``size`` bytes of random corpus words (lines of ~12 words):
    new to every cache, with the corpus's words and spacing."""
    words = gzip.decompress(CORPUS.read_bytes()).decode("utf-8", errors="ignore").split()
    rng = random.Random(seed)
    per_text = max(1, size // 6)  # ~6 bytes per word with its space
    texts = []
    for _ in range(count):
        picked = rng.choices(words, k=per_text)
        lines = [" ".join(picked[i : i + 12]) for i in range(0, per_text, 12)]
        texts.append("\n".join(lines))
    return texts


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


def start_tokend(
    port: int, workers: int, registry: Path, threads: int | None = None
) -> subprocess.Popen[bytes]:
    tokend = shutil.which("tokend", path=str(Path(sys.executable).parent)) or "tokend"
    cmd = [
        tokend, "serve", "--host", "127.0.0.1", "--port", str(port), "--metrics-port", "0",
        "--registry", str(registry), "--workers", str(workers),
    ]  # fmt: skip
    if threads is not None:
        cmd += ["--threads", str(threads)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


# server name -> the baseline server's --library (tokend is ``tokend serve``)
BASELINES = {"gigatoken": "gigatoken", "tiktoken": "tiktoken", "bare-tokend": "tokend"}
SERVERS = ("tokend", *BASELINES)


def start_baseline(
    port: int, workers: int, threads: int, library: str = "tiktoken"
) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable, str(ROOT / "bench" / "baseline_server.py"), "--port", str(port),
        "--workers", str(workers), "--threads", str(threads), "--encodings", TOKENIZER,
        "--library", library,
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


def method_path(rpc: str) -> str:
    return f"/tokend.v1.TokenizerService/{rpc}"


def make_request(rpc: str, text: str) -> bytes:
    """One serialized request: tokend.client's defaults (Encode refuses special-token text,
    CountTokens counts it as plain text), built once so the load loop does no protobuf work."""
    if rpc == "CountTokens":
        return pb.CountTokensRequest(tokenizer=TOKENIZER, texts=[text]).SerializeToString()
    policy = special_policy(frozenset(), "all")
    return pb.EncodeRequest(
        tokenizer=TOKENIZER, texts=[text], special_tokens=policy
    ).SerializeToString()


def channel_options(index: int) -> list[tuple[str, Any]]:
    """Own subchannel pool: this channel opens its own TCP connection (see the module doc)."""
    return [
        ("grpc.use_local_subchannel_pool", 1),
        ("grpc.max_receive_message_length", 64 << 20),
        ("tokend.bench.connection", index),  # distinct args: never merged with another channel
    ]


async def closed_loop(
    target: str,
    rpc: str,
    requests: Sequence[bytes],
    *,
    connections: int,
    inflight: int,
    measure_from: float,
    stop_at: float,
) -> tuple[list[float], int]:
    """``connections x inflight`` callers, each sending its next request when the last one is
    answered; latencies (ms) of calls started in [measure_from, stop_at) (monotonic clock)."""
    channels = [
        grpc.aio.insecure_channel(target, options=channel_options(i)) for i in range(connections)
    ]
    latencies: list[float] = []
    errors = 0

    async def caller(index: int, call: Any) -> None:
        nonlocal errors
        i = index
        clock = time.monotonic
        while True:
            request = requests[i % len(requests)]
            i += connections * inflight
            t0 = clock()
            if t0 >= stop_at:
                return
            try:
                await call(request, timeout=30)
            except grpc.RpcError:
                if t0 >= measure_from:
                    errors += 1
                continue
            if t0 >= measure_from:
                latencies.append((clock() - t0) * 1000)

    try:
        for channel in channels:
            await channel.channel_ready()
        calls = [channel.unary_unary(method_path(rpc)) for channel in channels]
        await asyncio.gather(
            *(caller(i, calls[i % connections]) for i in range(connections * inflight))
        )
    finally:
        for channel in channels:
            await channel.close()
    return latencies, errors


def client_process(
    target: str,
    rpc: str,
    texts: Sequence[str],
    *,
    connections: int,
    inflight: int,
    measure_from: float,
    stop_at: float,
) -> tuple[list[float], int]:
    """Entry point of one load process (see closed_loop)."""
    requests = [make_request(rpc, text) for text in texts]
    return asyncio.run(
        closed_loop(
            target, rpc, requests, connections=connections, inflight=inflight,
            measure_from=measure_from, stop_at=stop_at,
        )
    )  # fmt: skip


def prime(target: str, texts: Sequence[str], connections: int) -> None:
    """Send every text, for both RPCs, over each of ``connections`` connections: every worker
    (each connection is hashed to one) has seen every text before anything is measured."""

    async def run() -> None:
        channels = [
            grpc.aio.insecure_channel(target, options=channel_options(i))
            for i in range(connections)
        ]
        try:
            for rpc in RPCS:
                requests = [make_request(rpc, text) for text in texts]
                for channel in channels:
                    call = channel.unary_unary(method_path(rpc))
                    for start in range(0, len(requests), 8):
                        batch = requests[start : start + 8]
                        await asyncio.gather(*(call(r, timeout=60) for r in batch))
        finally:
            for channel in channels:
                await channel.close()

    asyncio.run(run())


def check_same_answers(targets: Sequence[str], texts: Sequence[str]) -> None:
    """Both servers must give the same ids and counts, or the comparison means nothing."""
    answers: dict[str, list[tuple[list[int], int]]] = {}
    for target in targets:
        with grpc.insecure_channel(target) as channel:
            encode = channel.unary_unary(method_path("Encode"))
            count = channel.unary_unary(method_path("CountTokens"))
            answers[target] = []
            for text in texts:
                encoded = pb.EncodeResponse.FromString(encode(make_request("Encode", text)))
                counted = pb.CountTokensResponse.FromString(
                    count(make_request("CountTokens", text))
                )
                answers[target].append((list(encoded.results[0].ids), counted.total))
    first, *rest = answers.values()
    for target, other in zip(targets[1:], rest, strict=True):
        if other != first:
            raise RuntimeError(f"{target} answers differently from {targets[0]}: not comparable")
    if any(len(ids) != total or not ids for ids, total in first):
        raise RuntimeError("Encode and CountTokens disagree (or return nothing)")


def process_cpu_seconds(pid: int) -> dict[int, float]:
    """User + system CPU seconds so far of ``pid`` and of each of its child processes (Linux
    /proc): a server's supervisor and its workers."""
    pids = [pid]
    with suppress(OSError):
        pids.extend(int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
    seconds: dict[int, float] = {}
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited
        seconds[p] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return seconds


def machine_cpu() -> tuple[float, float]:
    """(idle, steal) jiffies of the whole machine so far (/proc/stat): a run that left CPUs
    idle or lost them to the hypervisor says so."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    return float(fields[3]) + float(fields[4]), float(fields[7])


@dataclass(frozen=True)
class Sample:
    """One measured run of one cell: latencies (ms) of the calls made, errors, seconds, and the
    server processes' CPU seconds over the measured window."""

    latencies: list[float]
    errors: int
    seconds: float
    server_cpu: float
    busiest_share: float  # the busiest server process's part of server_cpu (balance check)
    idle: float  # CPUs left idle over the window (0-ncpu), and lost to the hypervisor
    steal: float
    load_cpu: float  # CPU seconds of the load processes over the window
    other: float  # CPUs busy with anything but the server and the load (other jobs)

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds


def run_cell(
    pool: multiprocessing.pool.Pool,
    *,
    target: str,
    server_pid: int,
    other_server_pids: Sequence[int],
    rpc: str,
    texts: Sequence[str],
    args: argparse.Namespace,
) -> Sample:
    # Every load process starts at once and measures the same window of the monotonic clock
    # (system-wide on Linux), so the server CPU read here covers exactly the measured calls.
    # time for the processes to build their requests
    start = time.monotonic() + 0.5 + len(texts) / 20_000
    measure_from = start + args.warmup
    stop_at = measure_from + args.duration
    # Each client process gets its own share of the texts so they do not move in lockstep.
    shares = [texts[i :: args.clients] or texts for i in range(args.clients)]
    jobs = [
        pool.apply_async(
            client_process,
            (target, rpc, share),
            {
                "connections": args.connections,
                "inflight": args.inflight,
                "measure_from": measure_from,
                "stop_at": stop_at,
            },
        )
        for share in shares
    ]
    time.sleep(max(0.0, measure_from - time.monotonic()))
    cpu_before, machine_before = process_cpu_seconds(server_pid), machine_cpu()
    load_before = process_cpu_seconds(os.getpid())  # this process and the load processes
    time.sleep(max(0.0, stop_at - time.monotonic()))
    cpu_after, machine_after = process_cpu_seconds(server_pid), machine_cpu()
    load_after = process_cpu_seconds(os.getpid())
    ticks = os.sysconf("SC_CLK_TCK") * args.duration
    idle, steal = ((a - b) / ticks for a, b in zip(machine_after, machine_before, strict=True))
    used = [cpu_after[p] - cpu_before.get(p, 0.0) for p in cpu_after]
    servers = {server_pid, *other_server_pids}
    load = sum(t - load_before.get(p, 0.0) for p, t in load_after.items() if p not in servers)
    results = [job.get() for job in jobs]
    latencies = [x for lat, _ in results for x in lat]
    errors = sum(err for _, err in results)
    total = sum(used)
    busiest = max(used) / total if total > 0 else 0.0
    busy = (os.cpu_count() or 1) - idle - steal
    other = busy - (total + load) / args.duration
    return Sample(latencies, errors, args.duration, total, busiest, idle, steal, load, other)


def describe(sample: Sample) -> str:
    """One run for the progress log: throughput, CPU per call, and what else used the CPUs."""
    calls = max(1, len(sample.latencies))
    return (
        f"{sample.rps:8,.0f} req/s  server CPU {sample.server_cpu / calls * 1e6:6,.0f} µs/call "
        f"(busiest process {sample.busiest_share:.0%}), load {sample.load_cpu / calls * 1e6:,.0f} "
        f"µs/call; CPUs idle {sample.idle:.2f}, stolen {sample.steal:.2f}, other jobs "
        f"{sample.other:.2f}; errors {sample.errors}"
    )


def summarize(
    server: str, mode: str, rpc: str, size: str, samples: Sequence[Sample]
) -> Measurement:
    """Pool the repetitions: req/s over their total time, percentiles over all their calls."""
    latencies = sorted(x for sample in samples for x in sample.latencies)
    errors = sum(sample.errors for sample in samples)
    if not latencies:
        raise RuntimeError(f"{server} {rpc} {size}: no successful calls ({errors} errors)")
    p99_index = min(len(latencies) - 1, int(0.99 * len(latencies)))
    return Measurement(
        server,
        mode,
        rpc,
        size,
        requests=len(latencies),
        errors=errors,
        seconds=sum(sample.seconds for sample in samples),
        p50_ms=statistics.median(latencies),
        p99_ms=latencies[p99_index],
        cpu_us=sum(s.server_cpu for s in samples) / len(latencies) * 1e6,
        run_rps=tuple(sample.rps for sample in samples),
        other=max(sample.other for sample in samples),
    )


def table(results: list[Measurement], servers: Sequence[str]) -> str:
    """Markdown: one row per (texts, rpc, size, server), with each server's ratios to
    ``servers[1]`` (the reference baseline) measured in the same run."""
    by_key = {(m.server, m.mode, m.rpc, m.size): m for m in results}
    ref_name = servers[1] if len(servers) > 1 else servers[0]
    lines = [
        f"| texts | RPC | size | server | req/s | req/s / {ref_name} | per-run ratio min-max "
        f"| p50 / p99 ms | server CPU µs/call | CPU / {ref_name} | errors "
        "| other jobs (max CPUs) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    cells = dict.fromkeys((m.mode, m.rpc, m.size) for m in results)
    for mode, rpc, size in cells:
        ref = by_key[(ref_name, mode, rpc, size)]
        for name in servers:
            m = by_key[(name, mode, rpc, size)]
            # Run k of each server are neighbours in time: pair them.
            ratios = [x / y for x, y in zip(m.run_rps, ref.run_rps, strict=True)]
            lines.append(
                f"| {mode} | {rpc} | {size} | {name} | {m.rps:,.0f} | {m.rps / ref.rps:.2f}x "
                f"| {min(ratios):.2f}-{max(ratios):.2f}x | {m.p50_ms:.2f} / {m.p99_ms:.2f} "
                f"| {m.cpu_us:,.0f} | {m.cpu_us / ref.cpu_us:.2f}x | {m.errors} "
                f"| {m.other:.2f} |"
            )
    return "\n".join(lines)


def overhead_table(results: list[Measurement]) -> str:
    """tokend's own call path: its server CPU per call above the bare servicer on its engine."""
    by_key = {(m.server, m.mode, m.rpc, m.size): m for m in results}
    lines = ["| texts | RPC | size | tokend µs/call | bare-tokend µs/call | above the bare "
             "servicer |", "|---|---|---|---:|---:|---:|"]
    for mode, rpc, size in dict.fromkeys((m.mode, m.rpc, m.size) for m in results):
        t, b = by_key.get(("tokend", mode, rpc, size)), by_key.get(("bare-tokend", mode, rpc, size))
        if t is None or b is None:
            continue
        lines.append(f"| {mode} | {rpc} | {size} | {t.cpu_us:,.0f} | {b.cpu_us:,.0f} "
                     f"| {t.cpu_us - b.cpu_us:+,.0f} µs ({t.cpu_us / b.cpu_us - 1:+.0%}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="server processes, both servers (default: CPU count, tokend's)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="handler threads per server process, both servers (default: tokend's default)",
    )
    parser.add_argument("--clients", type=int, default=2, help="load generator processes")
    parser.add_argument(
        "--connections", type=int, default=8, help="connections per load process (own channels)"
    )
    parser.add_argument("--inflight", type=int, default=1, help="calls in flight per connection")
    parser.add_argument("--duration", type=float, default=5.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=1.5, help="unmeasured seconds first")
    parser.add_argument("--texts", type=int, default=256, help="distinct texts per size")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per cell per server, alternating order; results pooled",
    )
    parser.add_argument(
        "--max-other",
        type=float,
        default=0.15,
        help="redo a pair of runs if other jobs used more CPUs than this during either",
    )
    parser.add_argument("--retries", type=int, default=3, help="redos per pair at most")
    parser.add_argument("--retry-wait", type=float, default=5.0, help="seconds before a redo")
    parser.add_argument(
        "--servers", default=",".join(SERVERS),
        help=f"comma-separated, from {', '.join(SERVERS)}; ratios are to the second one",
    )  # fmt: skip
    parser.add_argument("--rpc", choices=RPCS, action="append", help="only this RPC (repeatable)")
    parser.add_argument("--size", choices=SIZES, action="append", help="only this text size")
    parser.add_argument("--mode", choices=MODES, action="append", help="only these texts")
    parser.add_argument(
        "--new-texts", type=int, default=32_000,
        help="new 1 KB texts per run (fewer for larger sizes; more than a run can send)",
    )  # fmt: skip
    args = parser.parse_args(argv)  # fmt: skip
    rpcs = args.rpc or list(RPCS)
    servers = [name for name in args.servers.split(",") if name]
    unknown = sorted(set(servers) - set(SERVERS))
    if unknown or not servers:
        parser.error(f"--servers: unknown {unknown}; choose from {', '.join(SERVERS)}")
    # The baselines mirror tokend's shape: its default thread pool size unless told otherwise.
    threads = args.threads if args.threads is not None else ServerConfig().threads
    sizes = args.size or list(SIZES)

    texts = {size: make_texts(n, args.texts) for size, n in SIZES.items()}
    results: list[Measurement] = []
    with ExitStack() as stack:
        registry = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tokend-bench-")))
        ports = {name: free_port() for name in servers}
        procs = {
            name: start_tokend(ports[name], args.workers, registry, args.threads)
            if name == "tokend" else
            start_baseline(ports[name], args.workers, threads, BASELINES[name])
            for name in servers
        }
        for proc in procs.values():
            stack.callback(stop, proc)
        targets = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
        for target in targets.values():
            wait_serving(target)
        check_same_answers(
            list(targets.values()),
            texts["1 KB"][:8] + texts["16 KB"][:4] + make_new_texts(1024, 8, seed=-1),
        )
        for name, target in targets.items():
            t0 = time.monotonic()
            for size in sizes:
                prime(target, texts[size], args.connections)
            print(f"  primed {name} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        ctx = multiprocessing.get_context("spawn")
        pool = stack.enter_context(ctx.Pool(args.clients))
        run_id = 0
        cells = [(m, r, s) for m in args.mode or MODES for r in rpcs for s in sizes]
        for mode, rpc, size in cells:
            samples: dict[str, list[Sample]] = {name: [] for name in servers}
            for rep in range(args.repeat):
                # Rotate who goes first, so none always runs on a warmer machine.
                order = servers[rep % len(servers):] + servers[:rep % len(servers)]
                for attempt in range(args.retries + 1):
                    group = {}
                    for name in order:
                        run_id += 1
                        run_texts = texts[size]
                        if mode == "new":  # made before the run; a new seed every run
                            count = max(500, args.new_texts * 1024 // SIZES[size])
                            specs = [(SIZES[size], count // args.clients, run_id * 100 + i)
                                     for i in range(args.clients)]  # fmt: skip
                            run_texts = [t for part in pool.starmap(make_new_texts, specs)
                                         for t in part]  # fmt: skip
                        group[name] = sample = run_cell(
                            pool, target=targets[name], server_pid=procs[name].pid,
                            other_server_pids=[p.pid for p in procs.values()], rpc=rpc,
                            texts=run_texts, args=args,
                        )  # fmt: skip
                        print(f"  {name:<11} {mode:<6} {rpc:<11} {size:>5} run {rep + 1}: "
                              f"{describe(sample)}", file=sys.stderr, flush=True)  # fmt: skip
                    if max(x.other for x in group.values()) <= args.max_other:
                        break
                    if attempt < args.retries:
                        print(f"  other jobs took over {args.max_other} CPUs: run {rep + 1} "
                              f"again in {args.retry_wait:g} s", file=sys.stderr)  # fmt: skip
                        time.sleep(args.retry_wait)
                for name, sample in group.items():
                    samples[name].append(sample)
            for name, runs in samples.items():
                results.append(summarize(name, mode, rpc, size, runs))
    print(
        f"\n{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
        f"Python {platform.python_version()}, grpcio {grpc.__version__}; load average "
        f"{os.getloadavg()[0]:.2f}; servers: {args.workers} "
        f"worker processes x {threads} threads each; load: {args.clients} asyncio processes x "
        f"{args.connections} connections x {args.inflight} in flight, {args.repeat} x "
        f"{args.duration:g} s per cell and server (each after {args.warmup:g} s warm-up), "
        f"pooled; tokenizer {TOKENIZER}; {args.texts} distinct texts per size.\n"
    )
    print(table(results, servers))
    if {"tokend", "bare-tokend"} <= set(servers):
        print()
        print(overhead_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
