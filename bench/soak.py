"""Soak: a steady mixed load on a real ``tokend serve`` for minutes, sampled every few seconds.

    .venv/bin/python bench/soak.py                                  # 10 minutes -> docs/soak.png
    .venv/bin/python bench/soak.py --duration 30 --interval 2 --threads 4 --train-every 8 \
        --cache-entries 4096 --check --max-growth 0.03 --plot /tmp/soak.png   # CI's smoke
    .venv/bin/python bench/soak.py --hostile --check --plot docs/soak_hostile.png

It starts ``tokend serve`` (``--workers`` processes), then ``--threads`` closed-loop client
threads, each on a connection of its own, send a mix of calls: Encode and CountTokens of texts
the server has never seen (random words with a running counter, so every call brings new cache
keys and the caches must evict), CountTokens of chat messages, Decode, and Encode of repeated
texts; the tokenizers alternate between o200k_base, cl100k_base and a trained one. A training
job (streamed corpus) is started every ``--train-every`` seconds and followed to its end.

Every ``--interval`` seconds it samples the RSS of every server process (the supervisor, each
worker, any trainer), the p50/p99 latency and the count of calls and errors in that interval.
At the end it prints a markdown table of the samples and a summary (RSS growth over the second
half of the run, p99 range, total errors), writes them as JSON (``--json``) and draws them with
matplotlib (``--plot``). ``--hostile`` adds the clients of ``soak_hostile.py`` (half-open
streams, stalled HTTP heads and scrapes, malformed input) and counts how the server ended
each. With ``--check`` it exits 1 on any error, or if RSS grows by more than
``--max-growth`` over the second half (RSS must level off: every cache is bounded; a short run
needs a small ``--cache-entries`` to fill the caches early, see tests/test_soak_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from soak_hostile import Hostile

from tokend.core.registry import Registry
from tokend.core.training.byte_bpe import train_bpe
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[1]
SUCCEEDED = "TRAIN_JOB_STATE_SUCCEEDED"
ADMIN_TOKEN = "soak-admin-token"
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "vo", "pe", "zu", "an", "el", "or",
             "ist", "qua", "ber", "dox", "ly", "ent", "ion"]
REPEATED = ["The quick brown fox jumps over the lazy dog. " * 20,
            "To be, or not to be, that is the question. " * 30]


# -- the server -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Server:
    process: subprocess.Popen[str]
    target: str
    registry: Path
    metrics_port: int
    log: list[str] = field(default_factory=list)


def start_server(base: Path, workers: int, *extra: str) -> Server:
    registry = base / "registry"
    metrics_port = free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TOKEND_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    command = [sys.executable, "-m", "tokend.cli", "serve", "--port", "0",
               "--workers", str(workers), "--registry", str(registry),
               "--metrics-port", str(metrics_port), "--admin-token", ADMIN_TOKEN,
               "--reload-seconds", "1", *extra]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env=env)
    server = Server(process, "", registry, metrics_port)
    ready = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            server.log.append(line.rstrip("\n"))
            if '"event": "serving"' in line:
                server.target = json.loads(line)["target"]
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(120):
        process.kill()
        raise SystemExit("tokend serve did not start:\n" + "\n".join(server.log[-20:]))
    return server


def process_tree(root: int) -> dict[int, str]:
    """pid -> short name of ``root`` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(ppid, []).append(int(entry))
        names[int(entry)] = _role(cmdline)
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        tree[pid] = "supervisor" if pid == root else names.get(pid, "?")
        todo += children.get(pid, [])
    return tree


def _role(cmdline: list[bytes]) -> str:
    text = b" ".join(cmdline)
    # subtle: the module name, never the bare word: a checkout path may hold "trainer"
    if b"tokend.server.trainer" in text:
        return "trainer"
    if b"multiprocessing.resource_tracker" in text:
        return "resource-tracker"
    if b"spawn_main" in text or b"multiprocessing" in text:
        return "worker"
    return "other"


def cache_entries(metrics_port: int) -> int | None:
    """Entries in the encoders' caches, all workers and tokenizers (tokend_cache_entries)."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    try:
        body = urllib.request.urlopen(url, timeout=5).read().decode()
    except OSError:
        return None
    return int(sum(float(line.rpartition(" ")[2]) for line in body.splitlines()
                   if line.startswith("tokend_cache_entries{")))


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


# -- the load ---------------------------------------------------------------------------------


@dataclass
class Window:
    """Latencies and errors of the calls that finished in one sampling interval."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    error_codes: dict[str, int] = field(default_factory=dict)


class Load:
    def __init__(self, target: str, tokenizers: list[str], seed: int) -> None:
        self.target = target
        self.tokenizers = tokenizers
        self.lock = threading.Lock()
        self.window = Window()
        self.stop = threading.Event()
        self.counter = 0
        self.seed = seed
        self.train_jobs: list[dict[str, Any]] = []

    def take_window(self) -> Window:
        with self.lock:
            window, self.window = self.window, Window()
        return window

    def _record(self, seconds: float, error: str | None) -> None:
        with self.lock:
            self.window.latencies.append(seconds)
            if error is not None:
                self.window.errors += 1
                self.window.error_codes[error] = self.window.error_codes.get(error, 0) + 1

    def _new_text(self, rng: random.Random, words: int) -> str:
        with self.lock:
            self.counter += 1
            n = self.counter
        parts = ["".join(rng.choices(SYLLABLES, k=rng.randint(1, 4))) for _ in range(words)]
        parts[rng.randrange(words)] += str(n)  # never seen before, whatever the words
        return " ".join(parts) + "."

    def client(self, index: int) -> None:
        rng = random.Random(self.seed + index)
        channel = grpc.insecure_channel(self.target,
                                        options=[("grpc.use_local_subchannel_pool", 1)])
        stub = pb_grpc.TokenizerServiceStub(channel)
        with channel:
            while not self.stop.is_set():
                tokenizer = rng.choice(self.tokenizers)
                kind = rng.random()
                start = time.perf_counter()
                error = None
                try:
                    if kind < 0.35:
                        texts = [self._new_text(rng, rng.randint(20, 200)) for _ in range(4)]
                        stub.Encode(pb.EncodeRequest(tokenizer=tokenizer, texts=texts),
                                    timeout=30)
                    elif kind < 0.65:
                        texts = [self._new_text(rng, rng.randint(20, 400))]
                        stub.CountTokens(pb.CountTokensRequest(tokenizer=tokenizer,
                                                               texts=texts), timeout=30)
                    elif kind < 0.75:
                        messages = [pb.ChatMessage(role="user",
                                                   content=self._new_text(rng, 50)),
                                    pb.ChatMessage(role="assistant", content="ok", name="bot")]
                        stub.CountTokens(pb.CountTokensRequest(
                            tokenizer=tokenizer, messages=messages, max_tokens=4096), timeout=30)
                    elif kind < 0.9:
                        stub.Encode(pb.EncodeRequest(tokenizer=tokenizer,
                                                     texts=[rng.choice(REPEATED)]), timeout=30)
                    else:
                        # (ids below 256, the bytes: valid in every tokenizer of the mix)
                        ids = [rng.randrange(0, 256) for _ in range(rng.randint(10, 500))]
                        stub.Decode(pb.DecodeRequest(tokenizer=tokenizer, ids=ids), timeout=30)
                except grpc.RpcError as exc:
                    error = exc.code().name
                self._record(time.perf_counter() - start, error)

    def trainer(self, every: float) -> None:
        """Start a training job every ``every`` seconds and follow it to its end."""
        rng = random.Random(self.seed - 1)
        channel = grpc.insecure_channel(self.target)
        stub = pb_grpc.TokenizerServiceStub(channel)
        metadata = (("authorization", f"Bearer {ADMIN_TOKEN}"),)
        with channel:
            while not self.stop.is_set():
                started = time.monotonic()
                corpus = "\n".join(self._new_text(rng, 100) for _ in range(600)).encode()
                chunks = [corpus[i:i + 65536] for i in range(0, len(corpus), 65536)]
                requests = [pb.TrainRequest(config=pb.TrainConfig(
                    name="soak", vocab_size=2000, special_tokens=["<|endoftext|>"]))]
                requests += [pb.TrainRequest(corpus_chunk=c) for c in chunks]
                record: dict[str, Any] = {"corpus_bytes": len(corpus)}
                try:
                    job = stub.Train(iter(requests), metadata=metadata, timeout=60).job
                    for update in stub.WatchTrainJob(
                            pb.WatchTrainJobRequest(job_id=job.job_id), timeout=600):
                        job = update.job
                    record.update(state=pb.TrainJobState.Name(job.state),
                                  published=job.published, error=job.error,
                                  seconds=round(time.monotonic() - started, 2))
                except grpc.RpcError as exc:
                    record.update(state="RPC_ERROR", error=exc.code().name)
                with self.lock:
                    self.train_jobs.append(record)
                self.stop.wait(max(every - (time.monotonic() - started), 0.0))


# -- sampling and the report ------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(args: argparse.Namespace) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="tokend-soak-"))
    # A trained tokenizer in the registry before the start, served like the built-ins.
    corpus = (ROOT / "tests" / "fixtures" / "corpora" / "tinystories_sample.txt").read_text()
    trained = train_bpe(iter([corpus]), 1000, ["<|endoftext|>"])
    Registry(base / "registry").publish("soak-base", ranks=trained.mergeable_ranks(),
                                        pat_str=trained.pattern,
                                        special_tokens=trained.special_tokens)
    http_port = free_port() if args.hostile else 0
    extra: tuple[str, ...] = (
        ("--http-port", str(http_port), "--stream-idle-seconds", "10") if args.hostile else ())
    if args.cache_entries is not None:
        extra += ("--cache-entries", str(args.cache_entries))
    server = start_server(base, args.workers, *extra)
    print(f"serving on {server.target}; load for {args.duration:.0f} s", file=sys.stderr)
    load = Load(server.target, ["o200k_base", "cl100k_base", "soak-base"], args.seed)
    threads = [threading.Thread(target=load.client, args=(i,), daemon=True)
               for i in range(args.threads)]
    hostile = Hostile(server.target, http_port, server.metrics_port) if args.hostile else None
    if hostile is not None:
        threads += hostile.threads()
    if args.train_every > 0:
        threads.append(threading.Thread(target=load.trainer, args=(args.train_every,),
                                        daemon=True))
    start = time.monotonic()
    for thread in threads:
        thread.start()
    samples: list[dict[str, Any]] = []
    try:
        while (elapsed := time.monotonic() - start) < args.duration:
            time.sleep(min(args.interval, args.duration - elapsed))
            window = load.take_window()
            tree = process_tree(server.process.pid)
            rss = {f"{role} {pid}": value for pid, role in sorted(tree.items())
                   if (value := rss_mb(pid)) is not None and role != "resource-tracker"}
            sample = {
                "t": round(time.monotonic() - start, 1),
                "calls": len(window.latencies),
                "errors": window.errors,
                "error_codes": window.error_codes,
                "p50_ms": round(percentile(window.latencies, 0.50) * 1000, 2),
                "p99_ms": round(percentile(window.latencies, 0.99) * 1000, 2),
                "rss_mb": {k: round(v, 1) for k, v in rss.items()},
                "cache_entries": cache_entries(server.metrics_port),
                "loadavg_1m": os.getloadavg()[0],
                "hostile": hostile.snapshot() if hostile is not None else {},
            }
            samples.append(sample)
            print(json.dumps(sample), file=sys.stderr)
    finally:
        load.stop.set()
        if hostile is not None:
            hostile.stop.set()
        for thread in threads:
            thread.join(timeout=60)
        server.process.send_signal(signal.SIGTERM)
        try:
            exit_code = server.process.wait(60)
        except subprocess.TimeoutExpired:
            server.process.kill()
            exit_code = -9
    return {"samples": samples, "train_jobs": load.train_jobs, "exit_code": exit_code,
            "workers": args.workers, "threads": args.threads, "duration": args.duration}


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """RSS per server process at the middle and the end (growth over the second half),
    p99 range and totals."""
    samples = result["samples"]
    middle = samples[len(samples) // 2]
    last = samples[-1]
    steady = [k for k in last["rss_mb"] if k in middle["rss_mb"] and not k.startswith("trainer")]
    growth = {k: {"first": samples[0]["rss_mb"].get(k), "middle": middle["rss_mb"][k],
                  "last": last["rss_mb"][k], "max": max(s["rss_mb"].get(k, 0) for s in samples),
                  "growth_second_half": round(last["rss_mb"][k] / middle["rss_mb"][k] - 1, 4)}
              for k in steady}
    p99s = [s["p99_ms"] for s in samples]
    return {
        "calls": sum(s["calls"] for s in samples),
        "errors": sum(s["errors"] for s in samples),
        "p99_ms_median": round(statistics.median(p99s), 2) if p99s else 0.0,
        "p99_ms_max": max(p99s, default=0.0),
        "rss": growth,
        "train_jobs": result["train_jobs"],
        "exit_code": result["exit_code"],
        "hostile": samples[-1].get("hostile", {}) if samples else {},
    }


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib  # noqa: PLC0415 (a dev/bench dependency, only needed for the PNG)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    samples = result["samples"]
    t = [s["t"] for s in samples]
    fig, (ax_rss, ax_lat, ax_err) = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    keys = sorted({k for s in samples for k in s["rss_mb"]})
    for key in keys:
        ax_rss.plot(t, [s["rss_mb"].get(key, float("nan")) for s in samples], label=key,
                    marker="." if key.startswith("trainer") else None)
    ax_rss.set_ylabel("RSS (MB)")
    ax_rss.set_ylim(bottom=0)
    ax_rss.legend(fontsize=7, loc="lower right")
    entries = [s.get("cache_entries") for s in samples]
    if any(e is not None for e in entries):
        ax_cache = ax_rss.twinx()
        ax_cache.plot(t, [float("nan") if e is None else e / 1000 for e in entries],
                      color="gray", linestyle="--", label="cache entries (k, all workers)")
        ax_cache.set_ylabel("cache entries (thousands)", color="gray")
        ax_cache.set_ylim(bottom=0)
        ax_cache.legend(fontsize=7, loc="center right")
    ax_rss.set_title(f"tokend soak: {result['workers']} workers, {result['threads']} client "
                     f"threads, sampled every {t[0]:.0f} s" if t else "tokend soak")
    ax_lat.plot(t, [s["p99_ms"] for s in samples], label="p99")
    ax_lat.plot(t, [s["p50_ms"] for s in samples], label="p50")
    ax_lat.set_ylabel("latency (ms)")
    ax_lat.set_ylim(bottom=0)
    ax_lat.legend(fontsize=8)
    ax_err.plot(t, [s["calls"] for s in samples], label="calls per interval")
    ax_err.plot(t, [s["errors"] for s in samples], label="errors per interval", color="red")
    ax_err.set_ylabel("calls / errors")
    ax_err.set_xlabel("seconds")
    ax_err.set_ylim(bottom=0)
    ax_err.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def markdown(result: dict[str, Any], summary: dict[str, Any]) -> str:
    lines = ["| process | RSS MB first | middle | last | max | growth over 2nd half |",
             "|---|---:|---:|---:|---:|---:|"]
    for key, row in summary["rss"].items():
        lines.append(f"| {key} | {row['first']} | {row['middle']} | {row['last']} | "
                     f"{row['max']} | {row['growth_second_half'] * 100:+.1f}% |")
    lines += ["", f"calls {summary['calls']:,}, errors {summary['errors']}, p99 per interval: "
              f"median {summary['p99_ms_median']} ms, max {summary['p99_ms_max']} ms; "
              f"training jobs: {len(summary['train_jobs'])} "
              f"({sum(j.get('state') == SUCCEEDED for j in summary['train_jobs'])} succeeded); "
              "server exit code after SIGTERM: "
              f"{summary['exit_code']}"]
    if summary["hostile"]:
        lines += ["", "hostile clients: " + ", ".join(
            f"{key} {value:,}" for key, value in sorted(summary["hostile"].items()))]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of load")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4, help="client threads")
    parser.add_argument("--train-every", type=float, default=120.0,
                        help="seconds between training jobs (0: none)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache-entries", type=int,
                        help="the server's cache budget per encoding (default: the server's); "
                             "a small one fills in seconds, so a short run reaches the steady "
                             "state and every later sample shows what stays bounded")
    parser.add_argument("--hostile", action="store_true",
                        help="add hostile clients (soak_hostile.py) beside the load")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "soak.png")
    parser.add_argument("--json", type=Path, help="write samples and summary here")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 on any error or RSS growth over --max-growth")
    parser.add_argument("--max-growth", type=float, default=0.10,
                        help="largest RSS growth of a server process over the second half")
    args = parser.parse_args()
    result = run(args)
    summary = summarize(result)
    if args.plot:
        plot(result, args.plot)
    if args.json:
        args.json.write_text(json.dumps({"result": result, "summary": summary}, indent=1))
    print(markdown(result, summary))
    if not args.check:
        return 0
    failed_jobs = [j for j in summary["train_jobs"] if j.get("state") != SUCCEEDED]
    grown = {k: r["growth_second_half"] for k, r in summary["rss"].items()
             if r["growth_second_half"] > args.max_growth}
    # A malformed request answered OK or INTERNAL, or a half-open stream never ended: failed.
    hostile_bad = {k: v for k, v in summary["hostile"].items()
                   if k in ("malformed OK", "malformed INTERNAL", "streams OK")}
    if summary["errors"] or failed_jobs or grown or summary["exit_code"] != 0 or hostile_bad:
        print(f"soak check failed: errors={summary['errors']} failed_jobs={failed_jobs} "
              f"grown={grown} exit_code={summary['exit_code']} hostile={hostile_bad}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
