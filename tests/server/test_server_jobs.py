"""The on-disk job store and the runner's housekeeping, without a server."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tokend.core.errors import InvalidInput, LimitExceeded, UnknownJob
from tokend.core.registry.locking import held_lock_file
from tokend.server.jobs import (
    CANCEL_FILE,
    CANCELLED,
    FAILED,
    QUEUED,
    RUNNING,
    TRAINER_LOCK,
    UPLOAD_LOCK,
    JobStore,
)
from tokend.server.runner import STALE_UPLOAD_SECONDS, JobRunner

CONFIG = {"name": "t", "vocab_size": 300, "special_tokens": [], "pattern": "gpt2",
          "corpus_path": ""}


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / ".jobs")


def ready_job(store: JobStore, tmp_path: Path) -> str:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("some text")
    job, _ = store.create(dict(CONFIG), max_jobs=10, corpus_file=corpus, corpus_bytes=9)
    return str(job["job_id"])


class TestJobStore:
    def test_ids_are_checked_before_touching_the_disk(self, store: JobStore) -> None:
        for bad in ("..", "../x", "a" * 31, "A" * 32, "/tmp"):
            with pytest.raises(InvalidInput):
                store.read(bad)
        with pytest.raises(UnknownJob):
            store.read("0" * 32)

    def test_limit_counts_queued_and_running(self, store: JobStore, tmp_path: Path) -> None:
        first = ready_job(store, tmp_path)
        store.update(first, state=RUNNING)
        ready_job(store, tmp_path)
        with pytest.raises(LimitExceeded, match="--max-train-jobs"):
            store.create(dict(CONFIG), max_jobs=2, corpus_file=tmp_path / "corpus.txt")
        store.finish(first, FAILED, error="x")
        ready_job(store, tmp_path)  # a finished job no longer counts

    def test_cancel_queued_ends_it_running_asks_the_trainer(self, store: JobStore,
                                                            tmp_path: Path) -> None:
        queued = ready_job(store, tmp_path)
        assert store.cancel(queued)["state"] == CANCELLED
        running = ready_job(store, tmp_path)
        store.update(running, state=RUNNING)
        assert store.cancel(running)["state"] == RUNNING
        assert (store.job_dir(running) / CANCEL_FILE).exists()
        assert store.cancel_requested(running)
        store.finish(running, CANCELLED)
        assert store.finish(running, FAILED)["state"] == CANCELLED  # terminal states stick


class TestRunnerHousekeeping:
    def test_dead_uploader_leaves_no_job(self, store: JobStore, tmp_path: Path) -> None:
        """A streamed job whose uploader died (upload lock free) is removed once stale."""
        job, fd = store.create(dict(CONFIG), max_jobs=10, corpus_file=None)
        assert fd is not None
        runner = JobRunner(store, tmp_path / "registry")
        runner.poll()
        assert store.read(job["job_id"])["state"] == QUEUED  # the uploader is alive
        os.close(fd)  # the uploader dies
        old = time.time() - STALE_UPLOAD_SECONDS - 1
        os.utime(store.job_dir(job["job_id"]) / UPLOAD_LOCK, (old, old))
        runner.poll()
        with pytest.raises(UnknownJob):
            store.read(job["job_id"])

    def test_running_job_without_a_live_trainer_fails(self, store: JobStore,
                                                      tmp_path: Path) -> None:
        """A job left running by a dead trainer (e.g. before a restart) ends FAILED."""
        alive = ready_job(store, tmp_path)
        dead = ready_job(store, tmp_path)
        for job_id in (alive, dead):
            store.update(job_id, state=RUNNING)
        fd = held_lock_file(store.job_dir(alive) / TRAINER_LOCK)  # a trainer holds this one
        try:
            JobRunner(store, tmp_path / "registry", concurrency=0).poll()
            assert store.read(alive)["state"] == RUNNING
            failed = store.read(dead)
            assert failed["state"] == FAILED and "died" in failed["error"]
        finally:
            os.close(fd)
