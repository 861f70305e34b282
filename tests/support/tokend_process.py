"""A real ``tokend serve`` (supervisor + workers) in a subprocess, for service and client tests.

Used by the fixtures in tests/conftest.py and by test modules that need a server of their own
with other flags for a whole module.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class ServedProcess:
    """A running ``tokend serve``; ``events`` are its parsed JSON log lines, in order."""

    target: str
    registry: Path
    admin_token: str
    metrics_port: int
    train_dir: Path
    process: subprocess.Popen[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def wait_event(
        self, event: str, *, after: int = 0, timeout: float = 60.0, **match: object
    ) -> dict[str, Any]:
        """The first log event named ``event`` (index >= ``after``) whose fields match."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for item in self.events[after:]:
                if item.get("event") == event and all(item.get(k) == v for k, v in match.items()):
                    return item
            if self.process.poll() is not None:
                raise AssertionError(f"tokend serve exited: {self.lines[-20:]}")
            time.sleep(0.05)
        raise AssertionError(f"no {event!r} event within {timeout} s: {self.lines[-20:]}")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def start_tokend(
    base: Path, *args: str, workers: int = 2, python: str = sys.executable
) -> ServedProcess:
    """Start ``tokend serve`` on a free loopback port with its registry under ``base``
    (``python``: the interpreter of the install to serve, the test's own by default)."""
    registry = base / "registry"
    train_dir = base / "train"
    train_dir.mkdir(parents=True, exist_ok=True)
    with socket.socket() as probe:  # a free port for /metrics (the gRPC port is picked by it)
        probe.bind(("127.0.0.1", 0))
        metrics_port = probe.getsockname()[1]
    admin_token = "test-admin-token"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TOKEND_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    command = [
        python, "-m", "tokend.cli", "serve", "--port", "0",
        "--workers", str(workers), "--registry", str(registry),
        "--metrics-port", str(metrics_port), "--admin-token", admin_token,
        "--train-dir", str(train_dir), "--reload-seconds", "0.2", "--grace-seconds", "10",
        *args,
    ]
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env=env,
    )
    served = ServedProcess("", registry, admin_token, metrics_port, train_dir, process)

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            served.lines.append(line.rstrip("\n"))
            with contextlib.suppress(json.JSONDecodeError):
                served.events.append(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    try:
        ready = served.wait_event("serving", timeout=90)
    except AssertionError:
        served.stop()
        raise
    served.target = ready["target"]
    return served
