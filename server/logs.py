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


def log_enabled(level: int) -> bool:
    """Whether an event at ``level`` would be written (skip building fields that would not)."""
    return _LOGGER.isEnabledFor(level)


def log_event(event: str, *, level: int = logging.INFO, **fields: Any) -> None:
    """Log one event with its fields (values that are not JSON become strings)."""
    if _LOGGER.isEnabledFor(level):
        _LOGGER.log(level, event, extra={"fields": fields})

