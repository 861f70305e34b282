"""loadtest/judge.py runs the Locust load test headless against a real server, with a training
job started mid-run, and judges it: reports written, zero failures, budgets enforced."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
JUDGE = ROOT / "loadtest" / "judge.py"
SCENARIOS = {"CountTokens chat", "Encode document", "CountTokens document", "Decode",
             "ListTokenizers"}


def load_judge() -> ModuleType:
    spec = importlib.util.spec_from_file_location("loadtest_judge", JUDGE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestJudgedLoadRun:
    def test_headless_run_with_training_passes_and_writes_reports(
        self, tokend_factory, tmp_path: Path
    ) -> None:
        """4 users for 5 s, a training job mid-run: exit 0, every scenario ran without
        failure, Locust's CSV + HTML and the server's own quantiles are written."""
        served = tokend_factory(workers=1)
        out = tmp_path / "load"
        cmd = [
            sys.executable, str(JUDGE), "--host", served.target, "--duration", "5s",
            "--users", "4", "--spawn-rate", "4", "--p95-ms", "20000", "--p99-ms", "30000",
            "--out", str(out), "--metrics-url",
            f"http://127.0.0.1:{served.metrics_port}/metrics",
            "--train-during-load", "--admin-token", served.admin_token,
        ]  # fmt: skip
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                                cwd=tmp_path, check=False)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        assert "PASS" in result.stdout
        assert "training job" in result.stdout and "started" in result.stdout
        with (out / "locust_stats.csv").open(newline="") as f:
            rows = {row["Name"]: row for row in csv.DictReader(f)}
        assert int(rows["Aggregated"]["Failure Count"]) == 0
        assert {"CountTokens chat", "Decode"} <= set(rows) <= SCENARIOS | {"Aggregated"}
        # most calls are short chat counts
        chat = int(rows["CountTokens chat"]["Request Count"])
        assert chat > int(rows["Aggregated"]["Request Count"]) / 3
        assert (out / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
        with (out / "server_quantiles.csv").open(newline="") as f:
            server = {row["method"]: row for row in csv.DictReader(f)}
        assert float(server["all"]["calls"]) >= int(rows["Aggregated"]["Request Count"])
        assert 0 < float(server["all"]["p50_ms"]) <= float(server["all"]["p99_ms"])

    def test_budgets_and_failures_fail_the_run(self, tmp_path: Path) -> None:
        """The verdict: over-budget percentiles and any failed request are reasons to fail."""
        judge = load_judge()
        stats = tmp_path / "locust_stats.csv"
        header = "Type,Name,Request Count,Failure Count,95%,99%\n"
        stats.write_text(header + ",Aggregated,100,0,40,90\n")
        assert judge.judge(stats, 50, 100) == []
        assert judge.judge(stats, 30, 100) == ["p95 is 40 ms, over the budget of 30 ms"]
        assert judge.judge(stats, 50, 80) == ["p99 is 90 ms, over the budget of 80 ms"]
        stats.write_text(header + ",Aggregated,100,3,40,90\n")
        assert judge.judge(stats, 50, 100) == ["3 of 100 requests failed"]
        stats.write_text(header + ",Aggregated,0,0,N/A,N/A\n")  # what Locust writes then
        assert judge.judge(stats, 50, 100) == [
            "no request was made",
            "p95 is unknown: no request completed",
            "p99 is unknown: no request completed",
        ]

    def test_a_usage_error_exits_2(self, tmp_path: Path) -> None:
        result = subprocess.run(
            [sys.executable, str(JUDGE), "--host", "127.0.0.1:1", "--p95-ms", "1",
             "--p99-ms", "1", "--train-during-load", "--out", str(tmp_path)],
            capture_output=True, text=True, timeout=60, check=False,
            env={"PATH": "/usr/bin:/bin"},
        )
        assert result.returncode == 2, result.stderr
        assert "--admin-token" in result.stderr

    def test_docstring_examples(self) -> None:
        """judge.py's worked examples (run-time parsing, histogram quantiles) hold."""
        import doctest

        result = doctest.testmod(load_judge())
        assert result.attempted >= 2 and result.failed == 0
