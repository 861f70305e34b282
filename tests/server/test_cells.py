"""Per-call metric cells (server/cells.py) write what prometheus_client's own calls write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram

from tokend.server import cells

BUCKETS = (0.001, 0.01, 0.1, 1.0)
AMOUNTS = st.lists(st.floats(min_value=0, max_value=5, allow_nan=False), max_size=30)


def samples(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
    return {(s.name, json.dumps(s.labels, sort_keys=True)): s.value
            for metric in registry.collect() for s in metric.samples
            if not s.name.endswith("_created")}


class TestCells:
    @given(AMOUNTS)
    def test_histogram_cells_equal_observe(self, amounts: list[float]) -> None:
        """Each observation lands in the same bucket and sum as Histogram.observe puts it,
        bounds included (an amount equal to a bound belongs to that bound's bucket)."""
        mine, theirs = CollectorRegistry(), CollectorRegistry()
        ours = Histogram("h", "h", ["m"], buckets=BUCKETS, registry=mine)
        reference = Histogram("h", "h", ["m"], buckets=BUCKETS, registry=theirs)
        bound = cells.HistogramCells(ours, "Encode")
        for amount in [*amounts, *BUCKETS]:
            cells.observe((bound,), amount)
            reference.labels("Encode").observe(amount)
        assert samples(mine) == samples(theirs)

    def test_counter_cells_add_under_one_write(self) -> None:
        registry = CollectorRegistry()
        counter = Counter("c", "c", ["code"], registry=registry)
        ok, failed = cells.counter_cell(counter, "OK"), cells.counter_cell(counter, "FAILED")
        cells.write(ok, 1.0, failed, 2.0, ok, 3.0)
        assert registry.get_sample_value("c_total", {"code": "OK"}) == 4.0
        assert registry.get_sample_value("c_total", {"code": "FAILED"}) == 2.0


SNIPPET = """
import json, sys
from prometheus_client import CollectorRegistry, Counter, Histogram, multiprocess
from tokend.server import cells
mode = sys.argv[1]
c = Counter("calls", "calls", ["code"])
h = Histogram("lat", "lat", ["m"], buckets=(0.01, 0.1))
amounts = [0.005, 0.01, 0.05, 0.5, 0.2]
if mode == "cells":
    ok, lat = cells.counter_cell(c, "OK"), cells.HistogramCells(h, "Encode")
    for a in amounts:
        cells.observe((lat,), a, ok, 1.0)
else:
    for a in amounts:
        h.labels("Encode").observe(a)
        c.labels("OK").inc()
registry = CollectorRegistry()
multiprocess.MultiProcessCollector(registry)
print(json.dumps(sorted((s.name, sorted(s.labels.items()), s.value)
                        for m in registry.collect() for s in m.samples)))
"""


class TestMultiprocessFiles:
    def test_cells_write_the_files_prometheus_reads(self, tmp_path: Path) -> None:
        """In multiprocess mode (tokend serve's workers) the scraped samples are the same
        whether a process wrote them through cells or through prometheus_client."""
        got = {}
        for mode in ("cells", "prometheus"):
            folder = tmp_path / mode
            folder.mkdir()
            env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
            got[mode] = json.loads(subprocess.run(
                [sys.executable, "-c", SNIPPET, mode], env=env, capture_output=True, text=True,
                check=True, timeout=60).stdout)
        assert got["cells"] == got["prometheus"]
        assert any(name == "calls_total" and value == 5 for name, _, value in got["cells"])
