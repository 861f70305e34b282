"""Per-call metric writes, cheap: each sample's value bound once, a call's writes under one lock.

prometheus_client's ``Counter.inc`` and ``Histogram.observe`` check the metric, then, in
multiprocess mode, take a global lock, read the process id and write the mmap file, per value:
twelve times for one unary call (~13 µs of a ~200 µs call). A :class:`Cell` is one sample's
value (a labelled counter, a histogram's sum or one bucket) bound at start-up; :func:`write`
adds to several cells at once, under one lock, each a float add and a ``struct.pack_into``
into the same mmap file prometheus_client writes (its ``MmapedDict``): the file, its readers
and every metric's name and labels are unchanged. Without multiprocess mode (in-process tests)
a cell is the value's own ``inc``.

    >>> from prometheus_client import CollectorRegistry, Counter
    >>> calls = Counter("calls", "calls", ["code"], registry=CollectorRegistry())
    >>> ok = counter_cell(calls, "OK")
    >>> write(ok, 1.0, ok, 2.0)
    >>> calls.labels("OK")._value.get()
    3.0
"""

from __future__ import annotations

import bisect
import os
import threading
from typing import Any

from prometheus_client import Counter, Histogram

# subtle: one lock for every cell write of this process (prometheus_client's own lock is a
# closure variable we cannot reach). The two never write the same value: a value bound to a
# cell is written through cells only (the server's per-call families), so the only thing they
# share is the file, whose slots are fixed once allocated.
_LOCK = threading.Lock()


class Cell:
    """One sample's value (``metric.labels(...)``'s ``_value``, or a histogram's ``_sum`` or
    bucket) with a direct write into the multiprocess file when there is one."""

    __slots__ = ("_direct", "_value")
    forked = False  # after a fork the bound files are the parent's: every cell uses inc()

    def __init__(self, value: Any) -> None:
        self._value = value
        # An MmapedValue (multiprocess mode) carries its file and key; a MutexValue does not.
        self._direct = bool(getattr(value, "_multiprocess", False)) and all(
            hasattr(value, name) for name in ("_file", "_key", "_value", "_timestamp"))

    def add(self, amount: float) -> None:
        """Add ``amount`` (call it under ``_LOCK``, as ``write`` does)."""
        value = self._value
        if self._direct and not Cell.forked:
            value._value += amount
            value._timestamp = 0.0
            value._file.write_value(value._key, value._value, 0.0)
        else:
            value.inc(amount)


def _after_fork() -> None:
    Cell.forked = True


os.register_at_fork(after_in_child=_after_fork)


def counter_cell(counter: Counter, *labels: str) -> Cell:
    """The cell of ``counter.labels(*labels)``."""
    child = counter.labels(*labels) if labels else counter
    return Cell(child._value)


class HistogramCells:
    """A labelled histogram's sum and buckets; ``cells(amount)`` are the two an observation
    of ``amount`` adds to (its sum, and the first bucket whose bound holds it: the multiprocess
    files keep buckets uncumulated, as prometheus_client's ``observe`` writes them)."""

    __slots__ = ("_bounds", "_buckets", "_sum")

    def __init__(self, histogram: Histogram, *labels: str) -> None:
        child = histogram.labels(*labels) if labels else histogram
        self._sum = Cell(child._sum)
        self._bounds: list[float] = list(child._upper_bounds)
        self._buckets = [Cell(bucket) for bucket in child._buckets]

    def observe(self, amount: float) -> None:
        """One observation (call it under ``_LOCK``, as ``write`` does)."""
        self._sum.add(amount)
        self._buckets[bisect.bisect_left(self._bounds, amount)].add(1.0)


def write(*cells_and_amounts: Any) -> None:
    """``write(cell, amount, cell, amount, ...)``: every add under one lock acquisition."""
    with _LOCK:
        for i in range(0, len(cells_and_amounts), 2):
            cells_and_amounts[i].add(cells_and_amounts[i + 1])


def observe(histograms: tuple[HistogramCells, ...], amount: float,
            *cells_and_amounts: Any) -> None:
    """``histograms`` each observe ``amount``, and ``write``'s pairs are added, under one
    lock acquisition (a finished call: its latency twice, its counters)."""
    with _LOCK:
        for histogram in histograms:
            histogram.observe(amount)
        for i in range(0, len(cells_and_amounts), 2):
            cells_and_amounts[i].add(cells_and_amounts[i + 1])
