"""The training process: ``python -m tokend.server.trainer JOB_DIR --registry DIR``.

Started by the runner (runner.py) with the job's ``trainer.lock`` already locked on an
inherited descriptor, so the lock lives exactly as long as this process. It trains with
``train_tokenizer`` (the job's model kind), rewrites ``state.json`` at a steady rate (phase,
done/total, rate, ETA), stops
within about a second when the ``cancel`` marker appears, and on success publishes a new
registry version and records it as ``published``. Any failure ends the job as failed with the
reason; nothing is published unless training completed.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tokend.core.errors import Cancelled
from tokend.core.registry import Registry
from tokend.core.registry.publish import publish_trained, training_record
from tokend.core.training import TrainSpec, train
from tokend.server.jobs import (
    CANCELLED,
    FAILED,
    RUNNING,
    SUCCEEDED,
    JobStore,
)

HEARTBEAT_SECONDS = 0.25


class Progress:
    """Latest progress from train_bpe, written to state.json by a heartbeat thread."""

    def __init__(self, store: JobStore, job_id: str, *, corpus_bytes: int = 0) -> None:
        self.store = store
        self.job_id = job_id
        self.corpus_bytes = corpus_bytes  # the count phase's total (train_bpe may not know it)
        self.phase = "count"
        self.done = 0
        self.total = 0
        self._phase_start = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)

    def __call__(self, phase: str, done: int, total: int) -> None:
        with self._lock:
            if phase != self.phase:
                self._phase_start = time.monotonic()
            if phase == "count" and total == 0:
                total = self.corpus_bytes
            self.phase, self.done, self.total = phase, done, total

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            elapsed = max(time.monotonic() - self._phase_start, 1e-9)
            rate = self.done / elapsed if self.done else 0.0
            left = max(self.total - self.done, 0)
            eta = left / rate if rate > 0 and self.total else 0.0
            return {"phase": self.phase, "done": self.done, "total": self.total,
                    "rate": rate, "eta_seconds": eta}

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            self.store.update(self.job_id, **self.snapshot())

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def file_digest(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def run(job_dir: Path, registry_root: Path | str, workers: int) -> int:
    store = JobStore(job_dir.parent)
    job_id = job_dir.name
    job = store.read(job_id)
    cfg = job["config"]
    progress = Progress(store, job_id, corpus_bytes=int(job.get("corpus_bytes", 0)))
    last_check = [0.0, False]

    def should_stop() -> bool:
        now = time.monotonic()
        if now - last_check[0] > 0.1:  # a stat per 100 ms is plenty for "within ~1 s"
            last_check[0] = now
            last_check[1] = store.cancel_requested(job_id)
        return bool(last_check[1])

    progress.start()
    try:
        corpus = Path(job["corpus_file"])
        spec = TrainSpec.from_dict(cfg)
        result = train([str(corpus)], spec, workers=workers, progress=progress,
                       should_stop=should_stop)
        if store.cancel_requested(job_id):
            raise Cancelled("cancelled before publishing")
        progress("publish", 0, 1)
        info = publish_trained(
            Registry(registry_root),
            cfg["name"],
            result,
            training=training_record(spec, result, job_id=job_id),
            corpus={"sha256": file_digest(corpus), "bytes": corpus.stat().st_size},
        )
        progress("publish", 1, 1)
    except Cancelled as exc:
        progress.stop()
        store.finish(job_id, CANCELLED, error=str(exc) or "cancelled", **progress.snapshot())
        return 0
    except BaseException as exc:
        progress.stop()
        store.finish(job_id, FAILED, error=f"{type(exc).__name__}: {exc}",
                     **progress.snapshot())
        raise
    progress.stop()
    # A finished job ("done") shows what it did: its merges (a small job may end before any
    # heartbeat has shown a number), not the one-step publish phase's 1/1.
    # merges (BPE kinds, WordPiece) or pieces kept (char, unigram)
    merges = result.stats.steps
    merge_seconds = float(result.stats.seconds.get("merge", 0.0))
    store.finish(job_id, SUCCEEDED, published=info.ref, done=merges,
                 total=merges, rate=merges / merge_seconds if merge_seconds > 0 else 0.0,
                 eta_seconds=0.0)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokend.server.trainer")
    parser.add_argument("job_dir", type=Path)
    parser.add_argument("--registry", required=True)  # a folder or an s3:// URL
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    store = JobStore(args.job_dir.parent)
    # subtle: the runner marks the job running under its lock right after starting us;
    # taking the lock waits for that, so we never read the state from before.
    with store.locked(args.job_dir.name) as job:
        state = job["state"]
    if state != RUNNING:
        return 0  # cancelled between the runner's start and ours: nothing to do
    return run(args.job_dir, args.registry, args.workers)


if __name__ == "__main__":
    sys.exit(main())
