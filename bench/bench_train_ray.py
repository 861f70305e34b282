"""Training's counting phase on a two-node Ray cluster beside the local worker pool.

Prints one table: wall time per phase, CPU seconds, peak RSS of the process that trains (and of
its counting processes: the local pool's workers, or the Ray workers that ran the tasks), and
whether the merges are identical. Both runs train the same files, each in a fresh process.

    .venv/bin/python bench/bench_train_ray.py                  # 1 GB in 16 files, vocab 32,000
    .venv/bin/python bench/bench_train_ray.py --mb 64 --files 4 --vocab 4000   # a quick look

The corpus is generated in a temporary directory from shuffled words of
``../shared/data/corpora`` (bench/bench_train.py's generator, one seed per file) and deleted
after. The cluster is a head and a second node started here (``ray start --block``, one CPU
each, as many as the local run's workers) and stopped by their ids at the end. On one machine
this measures Ray's overhead against the same CPUs, not a speed-up: on a real cluster the
counting phase divides by the number of nodes, the merge phase does not (docs/scaling.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_train import SPECIAL, cpu_seconds, generate_corpus

RAY = Path(sys.executable).parent / "ray"


def run_one(counter: str, files: list[str], vocab: int, address: str) -> dict[str, object]:
    """Train once in this process; timings, CPU and peak RSS (MB) as JSON-ready values."""
    from tokend.core.training.byte_bpe import train_bpe  # noqa: PLC0415 (RSS of the trainer only)

    start = time.perf_counter()
    cpu = cpu_seconds()
    result = train_bpe(files, vocab, [SPECIAL], pattern="gpt2", workers=2, counter=counter,
                       ray_address=address or None)  # fmt: skip
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": cpu_seconds() - cpu,
        "phases": result.stats.seconds,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "child_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "merges_sha": hash_merges(result.merges),
        "bytes": result.stats.bytes_read,
        "distinct": result.stats.distinct_pretokens,
        "tasks": result.stats.workers,
    }


def hash_merges(merges: list[tuple[bytes, bytes]]) -> str:
    import hashlib  # noqa: PLC0415

    digest = hashlib.sha256()
    for a, b in merges:
        digest.update(len(a).to_bytes(4, "big") + a + len(b).to_bytes(4, "big") + b)
    return digest.hexdigest()


class RaySampler:
    """Peak RSS and CPU time of Ray's worker processes (``ray::`` names) while a run lasts."""

    def __init__(self) -> None:
        self.peak_one = 0.0
        self.peak_sum = 0.0
        self.cpu: dict[str, float] = {}  # pid -> CPU seconds, last seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> RaySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            workers = [p for p in processes() if p[1].startswith("ray::")
                       and "Agent" not in p[1]]  # fmt: skip
            rss = [mb for _, _, mb, _ in workers]
            for pid, _, _, cpu in workers:
                self.cpu[pid] = cpu
            if rss:
                self.peak_one = max(self.peak_one, *rss)
                self.peak_sum = max(self.peak_sum, sum(rss))


def processes() -> list[tuple[str, str, float, float]]:
    """(pid, command line, RSS MB, CPU seconds) of every process this user can read."""
    tick = os.sysconf("SC_CLK_TCK")
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            status = Path(f"/proc/{pid}/status").read_text()
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu = (int(stat[11]) + int(stat[12])) / tick  # utime + stime
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                out.append((pid, cmd, int(line.split()[1]) / 1024, cpu))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_cluster(base: Path, nodes: int) -> tuple[str, list[subprocess.Popen[bytes]]]:
    """A head and ``nodes - 1`` more nodes, one CPU each; (address, their processes)."""
    base.mkdir(parents=True, exist_ok=True)
    port = free_port()
    address = f"127.0.0.1:{port}"
    procs = []
    for i in range(nodes):
        role = (["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={base}"]
                if i == 0 else [f"--address={address}"])  # fmt: skip
        ports = [f"--{name}={free_port()}" for name in (
            "ray-client-server-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
            "metrics-export-port", "runtime-env-agent-port")]  # fmt: skip
        log = (base / f"node{i}.log").open("wb")
        procs.append(subprocess.Popen(
            [str(RAY), "start", *role, "--num-cpus=1", "--node-ip-address=127.0.0.1",
             "--disable-usage-stats", "--block", *ports],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        ))  # fmt: skip
        deadline = time.monotonic() + 120
        while True:
            status = subprocess.run([str(RAY), "status", "--address", address],
                                    capture_output=True, text=True, check=False)  # fmt: skip
            active = status.stdout.split("Active:", 1)[-1].split("Pending:", 1)[0]
            if status.returncode == 0 and active.count("node_") > i:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"node {i} did not join:\n{status.stdout}{status.stderr}")
            time.sleep(1)
    return address, procs


def stop_cluster(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in reversed(procs):
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def measure(counter: str, files: list[str], vocab: int, address: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, __file__, "--one", counter, "--vocab", str(vocab),
         "--address", address, *files],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    run: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=1024, help="corpus size in MB")
    parser.add_argument("--files", type=int, default=16, help="files the corpus is cut into")
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--address", default="", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.paths, args.vocab, args.address)))
        return 0
    os.environ.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
                       "RAY_USAGE_STATS_ENABLED": "0"})  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="tokend-ray-bench-") as tmp:
        base = Path(tmp)
        files = []
        for i in range(args.files):
            path = base / f"part-{i:04d}.txt"
            generate_corpus(max(1, args.mb // args.files), path, seed=i)
            files.append(str(path))
        size = sum(Path(f).stat().st_size for f in files)
        local = measure("local", files, args.vocab, "")
        address, procs = start_cluster(base / "ray", 2)
        try:
            idle = sum(mb for _, name, mb, _ in processes()
                       if "ray" in name and "bench" not in name)  # fmt: skip
            with RaySampler() as sampler:
                on_ray = measure("ray", files, args.vocab, address)
        finally:
            stop_cluster(procs)
    load = os.getloadavg()
    print(f"{size / 1e6:,.0f} MB in {args.files} files -> vocab {args.vocab:,} (gpt2 pattern), "
          f"{local['distinct']:,} distinct pretokens; load average {load[0]:.1f} at the end; "
          f"{os.cpu_count()} CPUs\n")  # fmt: skip
    print("| counting | wall s | count / index / merge s | CPU s, trainer (+ counting "
          "processes) | peak RSS MB, trainer | peak RSS MB, counting processes | merges |")
    print("|---|---:|---|---:|---:|---|---|")
    ray_cpu = sum(sampler.cpu.values())
    rows = (
        ("local: 2 worker processes", local, "",
         f"{float(local['child_rss_mb']):,.0f} (largest worker)"),
        ("Ray: 2 nodes x 1 CPU", on_ray, f" (+{ray_cpu:.1f} in Ray workers)",
         f"{sampler.peak_one:,.0f} largest task worker, {sampler.peak_sum:,.0f} all workers "
         f"(+{idle:,.0f} Ray's own processes, idle)"),
    )  # fmt: skip
    for name, run, extra_cpu, counting in rows:
        p = run["phases"]
        assert isinstance(p, dict)
        same = "same" if run["merges_sha"] == local["merges_sha"] else "DIFFERENT"
        print(f"| {name} | {float(run['seconds']):.1f} | {p['count']:.1f} / {p['index']:.1f} / "
              f"{p['merge']:.1f} | {float(run['cpu_seconds']):.1f}{extra_cpu} | "
              f"{float(run['rss_mb']):,.0f} | {counting} | {same} |")  # fmt: skip
    print(f"\nRay: {on_ray['tasks']} tasks; ratio Ray/local wall "
          f"{float(on_ray['seconds']) / float(local['seconds']):.2f}x, count phase "
          f"{on_ray['phases']['count'] / local['phases']['count']:.2f}x")  # type: ignore[index]
    return 0


if __name__ == "__main__":
    sys.exit(main())
