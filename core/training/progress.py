"""Progress and cancellation for every trainer: report at a steady rate, poll should_stop."""

from __future__ import annotations

import time
from collections.abc import Callable

from tokend.core.errors import Cancelled

ProgressFn = Callable[[str, int, int], None]  # (phase, done, total)
StopFn = Callable[[], bool]

# Minimum seconds between two progress reports of the same phase.
PROGRESS_INTERVAL = 0.1
# Minimum seconds between two calls of should_stop (it may be an RPC context check).
STOP_INTERVAL = 0.05


class Throttle:
    """Call progress at a steady rate (at most every PROGRESS_INTERVAL) and poll should_stop."""

    def __init__(self, progress: ProgressFn | None, should_stop: StopFn | None) -> None:
        self._progress = progress
        self._should_stop = should_stop
        self._last_report = 0.0
        self._last_phase = ""
        self._last_check = 0.0

    def report(self, phase: str, done: int, total: int, *, force: bool = False) -> None:
        """Report now if forced, if the phase changed, or if the interval has passed."""
        if self._progress is None:
            return
        now = time.monotonic()
        if force or phase != self._last_phase or now - self._last_report >= PROGRESS_INTERVAL:
            self._last_report = now
            self._last_phase = phase
            self._progress(phase, done, total)

    def stopped(self) -> bool:
        """Whether should_stop says so now (for trainers that poll at their own pace)."""
        return self._should_stop is not None and self._should_stop()

    def check(self, phase: str) -> None:
        """Raise Cancelled when should_stop says so (polled at most every STOP_INTERVAL)."""
        if self._should_stop is None:
            return
        now = time.monotonic()
        if now - self._last_check >= STOP_INTERVAL:
            self._last_check = now
            if self._should_stop():
                raise Cancelled(f"training was cancelled during the {phase} phase")
