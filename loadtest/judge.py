"""Run the Locust load test headless against a tokend server and judge it.

    .venv/bin/python loadtest/judge.py --host 127.0.0.1:50051 --duration 60s --users 20 \\
        --p95-ms 250 --p99-ms 1000 --out out/load [--metrics-url URL] [--train-during-load]

Writes ``OUT/locust_stats.csv`` (and Locust's other CSVs), ``OUT/report.html`` and
``OUT/server_quantiles.csv``: with --metrics-url, the server's own grpc_server_handling_seconds
quantiles over the run window, per method and for "all" but the training admin calls (Locust
rounds to whole milliseconds). Exits 1 when any request failed or the aggregated p95/p99
exceed the budgets, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

HERE = Path(__file__).resolve().parent
LOCUSTFILE = HERE / "locustfile.py"
HISTOGRAM = "grpc_server_handling_seconds_bucket"
# Long-lived admin calls (a WatchTrainJob stream lasts the whole job): not in the "all" row.
ADMIN = frozenset({"Train", "WatchTrainJob", "GetTrainJob", "ListTrainJobs", "CancelTrainJob"})
Buckets = dict[str, dict[float, float]]  # method -> upper bound -> cumulative count


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", required=True, help="the gRPC target, HOST:PORT")
    parser.add_argument("--duration", default="30s", help="Locust --run-time (e.g. 30s, 2m)")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--spawn-rate", type=float, default=10.0)
    parser.add_argument("--p95-ms", type=float, required=True, help="budget for the p95")
    parser.add_argument("--p99-ms", type=float, required=True, help="budget for the p99")
    parser.add_argument("--out", type=Path, default=Path("out/load"), help="report folder")
    parser.add_argument("--metrics-url", help="the server's /metrics, for its own quantiles")
    parser.add_argument("--train-during-load", action="store_true",
                        help="start a training job a third of the way into the run")
    parser.add_argument("--admin-token", default=os.environ.get("TOKEND_ADMIN_TOKEN"),
                        help="bearer token for Train (default: $TOKEND_ADMIN_TOKEN)")
    return parser.parse_args(argv)


def seconds(duration: str) -> float:
    """Locust's run-time syntax, in seconds.

    >>> seconds("1m30s"), seconds("45s"), seconds("2m"), seconds("10")
    (90.0, 45.0, 120.0, 10.0)
    """
    total, number = 0.0, ""
    for char in duration:
        if char.isdigit() or char == ".":
            number += char
        else:
            total += float(number) * {"h": 3600, "m": 60, "s": 1}[char]
            number = ""
    return total + (float(number) if number else 0.0)


def scrape(url: str) -> Buckets:
    body = urllib.request.urlopen(url, timeout=10).read().decode()
    buckets: Buckets = defaultdict(lambda: defaultdict(float))
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name == HISTOGRAM:
                method = sample.labels["grpc_method"]
                le = float(sample.labels["le"])
                buckets[method][le] += sample.value
                if method not in ADMIN:
                    buckets["all"][le] += sample.value
    return buckets


def quantile(q: float, cumulative: dict[float, float]) -> float:
    """Prometheus's histogram_quantile: linear inside the bucket that holds rank q * count.

    >>> quantile(0.5, {0.001: 0, 0.002: 10, float("inf"): 10})
    0.0015
    """
    bounds = sorted(cumulative)
    total = cumulative[bounds[-1]]
    if total <= 0:
        return float("nan")
    rank = q * total
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = cumulative[bound]
        if count >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = bound, count
    return lower


def server_quantiles(before: Buckets, after: Buckets) -> list[list[str]]:
    """Rows (method, calls, p50/p95/p99 ms) of the histogram's growth over the run."""
    rows = []
    for method in sorted(after):
        delta = {le: after[method][le] - before.get(method, {}).get(le, 0.0)
                 for le in after[method]}
        calls = delta.get(float("inf"), 0.0)
        if calls <= 0:
            continue
        rows.append([method, f"{calls:.0f}",
                     *(f"{quantile(q, delta) * 1000:.3f}" for q in (0.5, 0.95, 0.99))])
    return rows


def train_midway(host: str, token: str | None, delay: float, out: list[str]) -> None:
    """After ``delay`` s start a training job on a generated corpus; note its final state."""
    from tokend.client import Client  # noqa: PLC0415  (only this option needs it)

    time.sleep(delay)
    corpus = "".join(f"load test corpus line {i} with words {i * 7919 % 1000}\n"
                     for i in range(20_000))
    with Client(host, timeout=60, token=token) as client:
        handle = client.train("loadtest-train", corpus, vocab_size=600)
        out.append(f"training job {handle.job_id} started at +{delay:.0f}s")
        try:
            ref = handle.result(timeout=600)
            out.append(f"training job {handle.job_id} published {ref}")
        except Exception as exc:  # reported, not fatal: the load run is what is judged
            out.append(f"training job {handle.job_id} did not finish: {exc}")


def judge(stats: Path, p95_ms: float, p99_ms: float) -> list[str]:
    """The reasons the run fails (empty: it passed), from Locust's aggregated row."""
    with stats.open(newline="") as f:
        rows = {row["Name"]: row for row in csv.DictReader(f)}
    total = rows["Aggregated"]
    problems = []
    if int(total["Request Count"]) == 0:
        problems.append("no request was made")
    if int(total["Failure Count"]) > 0:
        problems.append(f"{total['Failure Count']} of {total['Request Count']} requests failed")
    for column, budget in (("95%", p95_ms), ("99%", p99_ms)):
        if total[column] == "N/A":  # Locust has no percentile without a completed request
            problems.append(f"p{column[:-1]} is unknown: no request completed")
            continue
        got = float(total[column])
        if got > budget:
            problems.append(f"p{column[:-1]} is {got:.0f} ms, over the budget of {budget:.0f} ms")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.train_during_load and not args.admin_token:
        print("--train-during-load needs --admin-token (or TOKEND_ADMIN_TOKEN)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    before = scrape(args.metrics_url) if args.metrics_url else {}
    notes: list[str] = []
    trainer = None
    if args.train_during_load:
        trainer = threading.Thread(
            target=train_midway,
            args=(args.host, args.admin_token, seconds(args.duration) / 3, notes), daemon=True,
        )
        trainer.start()
    command = [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
        "-u", str(args.users), "-r", str(args.spawn_rate), "-t", args.duration,
        "--host", args.host, "--csv", str(args.out / "locust"),
        "--html", str(args.out / "report.html"), "--only-summary", "--stop-timeout", "10",
    ]  # fmt: skip
    print("$", " ".join(command), flush=True)
    started = time.monotonic()
    result = subprocess.run(command, check=False)
    elapsed = time.monotonic() - started
    if trainer is not None:
        trainer.join(timeout=5)
    stats = args.out / "locust_stats.csv"
    if not stats.exists():
        print(f"locust wrote no statistics (exit status {result.returncode})", file=sys.stderr)
        return 1
    if args.metrics_url:
        rows = server_quantiles(before, scrape(args.metrics_url))
        with (args.out / "server_quantiles.csv").open("w", newline="") as f:
            csv.writer(f).writerows([["method", "calls", "p50_ms", "p95_ms", "p99_ms"], *rows])
        print(f"\nserver-side latency over the run ({elapsed:.0f} s), from its histogram:")
        print(f"{'method':<16}{'calls':>10}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
        for row in rows:
            print(f"{row[0]:<16}{row[1]:>10}{row[2]:>10}{row[3]:>10}{row[4]:>10}")
    for note in notes:
        print(note)
    problems = judge(stats, args.p95_ms, args.p99_ms)
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    if not problems:
        print(f"PASS: no failures, p95 <= {args.p95_ms:.0f} ms, p99 <= {args.p99_ms:.0f} ms "
              f"(reports in {args.out})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
