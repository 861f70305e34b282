"""The Locust load test runs headless for a few seconds against the test server, cleanly."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LOCUSTFILE = ROOT / "loadtest" / "locustfile.py"
SCENARIOS = {"CountTokens 1KB", "Encode 1KB", "CountTokens 16KB", "Encode 16KB"}


class TestLocustSmoke:
    def test_headless_run_makes_requests_without_failures(
        self, tokend_service: Any, tmp_path: Path
    ) -> None:
        """4 users for 4 s: requests in the scenarios, zero failures, exit status 0."""
        locust = shutil.which("locust", path=str(Path(sys.executable).parent))
        assert locust is not None, "locust is not installed in the venv (a dev dependency)"
        prefix = tmp_path / "run"
        cmd = [
            locust, "-f", str(LOCUSTFILE), "--headless", "-u", "4", "-r", "4", "-t", "4s",
            "--host", tokend_service.target, "--csv", str(prefix), "--only-summary",
            "--stop-timeout", "5",
        ]  # fmt: skip
        result = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=90,
            cwd=tmp_path,
            check=False,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        with (tmp_path / "run_stats.csv").open(newline="") as f:
            rows = {row["Name"]: row for row in csv.DictReader(f)}
        total = rows["Aggregated"]
        assert int(total["Request Count"]) > 0
        assert int(total["Failure Count"]) == 0, result.stderr[-3000:]
        assert set(rows) - {"Aggregated"} <= SCENARIOS
        assert {"CountTokens 1KB", "Encode 1KB"} <= set(rows)
