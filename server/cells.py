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
import struct
import threading
from typing import Any

from prometheus_client import Counter, Histogram

# subtle: one lock for every cell write of this process (prometheus_client's own lock is a
# closure variable we cannot reach). The two never write the same value: a value bound to a
# cell is written through cells only (the server's per-call families), so the only thing they
# share is the file, whose slots are fixed once allocated.
_LOCK = threading.Lock()
_PACK = struct.Struct("dd").pack_into  # prometheus_client's mmap_dict packs (value, timestamp)


class Cell:
    """One sample's value (``metric.labels(...)``'s ``_value``, or a histogram's ``_sum`` or
    bucket) with a direct write into the multiprocess file when there is one."""

    __slots__ = ("_file", "_pos", "_value")
    forked = False  # after a fork the bound files are the parent's: every cell uses inc()

    def __init__(self, value: Any) -> None:
        self._value = value
        self._file: Any = None
        # An MmapedValue (multiprocess mode) carries its file and key; a MutexValue does not.
        file = getattr(value, "_file", None) if getattr(value, "_multiprocess", False) else None
        if file is not None and hasattr(file, "_positions") and hasattr(file, "_m"):
            file.read_value(value._key)  # allocates the value's slot if it had none
            self._file = file
            # subtle: a slot never moves once allocated (the file only grows; a grown file is
            # mapped again, hence ``_m`` read per write), so its offset is bound here.
            self._pos: int = file._positions[value._key]

    def add(self, amount: float) -> None:
        """Add ``amount`` (call it under ``_LOCK``, as ``write`` does)."""
        value = self._value
        if self._file is not None and not Cell.forked:
            value._value = total = value._value + amount
            _PACK(self._file._m, self._pos, total, 0.0)  # value, timestamp: as inc() writes
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
