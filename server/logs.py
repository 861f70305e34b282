"""Structured logs: one JSON object per line on stderr, one line per significant event.

``log_event("worker_started", pid=123)`` writes
``{"ts": "...", "level": "INFO", "event": "worker_started", "pid": 123, "proc": 123}``.
Tests and operators parse these lines; the key ``event`` is always present.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import sys
from typing import Any

_LOGGER = logging.getLogger("tokend.server")


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": _dt.datetime.fromtimestamp(record.created, _dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "event": record.getMessage(),
            "proc": record.process,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            payload.update(fields)
        return json.dumps(payload, default=str, ensure_ascii=False)


def setup_logging(level: str = "INFO") -> None:
    """Send tokend.server logs to stderr as JSON lines (idempotent)."""
    _LOGGER.setLevel(level.upper())
    _LOGGER.propagate = False
    if not any(getattr(h, "_tokend", False) for h in _LOGGER.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_JsonFormatter())
        handler._tokend = True  # type: ignore[attr-defined]
        _LOGGER.addHandler(handler)


class _RateLimit(logging.Filter):
    """At most ``per_window`` records per ``window`` seconds; the rest are counted, and the
    next record let through says how many were dropped. A traceback becomes one field."""

    def __init__(self, per_window: int = 20, window: float = 10.0) -> None:
        super().__init__()
        self.per_window = per_window
        self.window = window
        self._started = 0.0
        self._seen = 0
        self._dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.created - self._started > self.window:
            self._started, self._seen = record.created, 0
        self._seen += 1
        if self._seen > self.per_window:
            self._dropped += 1
            return False
        fields: dict[str, Any] = {"logger": record.name, "message": record.getMessage()}
        if record.exc_info and record.exc_info[1] is not None:
            fields["error"] = repr(record.exc_info[1])[:500]
        if self._dropped:
            fields["dropped_before"] = self._dropped
            self._dropped = 0
        record.fields = fields
        record.msg, record.args = "library_log", None
        record.exc_info = record.exc_text = None
        return True


def route_library_logs(*names: str) -> None:
    """Send these libraries' logs (asyncio, uvicorn) through the JSON handler, rate limited,
    instead of Python's last-resort handler (plain text, a traceback each)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter())
    handler.addFilter(_RateLimit())
    for name in names:
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.propagate = False


def log_enabled(level: int) -> bool:
    """Whether an event at ``level`` would be written (skip building fields that would not)."""
    return _LOGGER.isEnabledFor(level)


def log_event(event: str, *, level: int = logging.INFO, **fields: Any) -> None:
    """Log one event with its fields (values that are not JSON become strings)."""
    if _LOGGER.isEnabledFor(level):
        _LOGGER.log(level, event, extra={"fields": fields})

