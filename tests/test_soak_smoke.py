"""bench/soak.py's short variant: 20 s of the soak's mixed load with its --check (the 10-minute
run is not for CI; its figures are in docs/benchmarks.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_short_soak_has_no_errors_and_draws_its_plot(tmp_path: Path) -> None:
    """Zero failed calls, every training job succeeds, the server exits 0 on SIGTERM, and the
    samples (RSS of each process, p99, errors) are written and drawn."""
    plot, report = tmp_path / "soak.png", tmp_path / "soak.json"
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), "--duration", "20", "--interval", "5",
         "--threads", "2", "--train-every", "8", "--check", "--max-growth", "1.0",
         "--plot", str(plot), "--json", str(report)],
        capture_output=True, text=True, timeout=240, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(report.read_text())
    samples = data["result"]["samples"]
    assert len(samples) == 4
    assert all(s["errors"] == 0 and s["calls"] > 0 for s in samples)
    assert {k.split()[0] for k in samples[-1]["rss_mb"]} >= {"supervisor", "worker"}
    assert data["summary"]["train_jobs"] and data["summary"]["exit_code"] == 0
