"""Request limits: each check raises LimitExceeded naming the value, the limit and its flag.

Every hit is also counted (``tokend_limit_hits_total{limit=...}``) and logged, so an operator
sees which limit clients run into before they complain.
"""

from __future__ import annotations

import logging

from tokend.core.errors import LimitExceeded
from tokend.server import metrics
from tokend.server.app.fields import with_field
from tokend.server.logs import log_event


def check(what: str, value: int, limit: int, flag: str, *, field: str | None = None) -> None:
    """Raise LimitExceeded (RESOURCE_EXHAUSTED) if ``value > limit``.

    >>> check("batch", 3, 2, "--max-batch")
    Traceback (most recent call last):
    tokend.core.errors.LimitExceeded: batch is 3, over the limit of 2 (raise it with --max-batch)
    """
    if value <= limit:
        return
    raise hit(LimitExceeded(what, value, limit, flag), field)


def hit(exc: LimitExceeded, field: str | None) -> LimitExceeded:
    """Count and log a limit hit (one core found too), tagged with its request field."""
    flag = exc.flag or "unknown"
    metrics.LIMIT_HITS.labels(flag.lstrip("-")).inc()
    log_event("limit_hit", level=logging.WARNING, limit=flag, value=exc.value, max=exc.limit,
              field=field)
    if field is not None:
        with_field(exc, field)
    return exc


def utf8_len(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (a lone surrogate counts as 3 bytes instead of raising)."""
    return len(text.encode("utf-8", errors="surrogatepass"))


def check_text(text: str, limit: int, field: str) -> None:
    """A single text must fit in --max-text-bytes (UTF-8)."""
    if len(text) * 4 <= limit:  # subtle: at most 4 UTF-8 bytes per code point
        return
    check(f"{field} size in bytes", utf8_len(text), limit, "--max-text-bytes", field=field)

