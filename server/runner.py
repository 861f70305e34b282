"""The job runner: starts training processes for queued jobs and fails jobs whose trainer died.

It runs as a thread in the supervisor (one per server), polling the jobs directory. A trainer
is a separate process (``python -m tokend.server.trainer``) so encode traffic keeps its latency
and a crash cannot take a worker down. The runner locks the job's ``trainer.lock`` and hands
that descriptor to the child, so the lock is held exactly as long as the trainer lives; a free
lock on a running job therefore means the trainer is gone, whoever started it (this also
covers trainers left running by a previous supervisor). Jobs still queued when the server
stops are started by the next one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from tokend.core.errors import TokendError
from tokend.core.registry.locking import try_lock
from tokend.server import metrics
from tokend.server.jobs import (
    FAILED,
    QUEUED,
    RUNNING,
    TERMINAL,
    TRAINER_LOCK,
    TRAINER_LOG,
    UPLOAD_LOCK,
    Job,
    JobStore,
    now,
)
from tokend.server.logs import log_event

POLL_SECONDS = 0.2
STALE_UPLOAD_SECONDS = 5.0


class JobRunner:
    """Poll the job store; keep up to ``concurrency`` trainers running."""

    def __init__(
        self, store: JobStore, registry: Path | str, *, concurrency: int = 1, train_workers: int = 1
    ) -> None:
        self.store = store
        self.registry = registry
        self.concurrency = concurrency
        self.train_workers = train_workers
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        self._exit_codes: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen_terminal: set[str] = set()
        self._started_at = now()  # jobs that ended before this runner are not re-counted

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="job-runner", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling. Running trainers keep going; the next runner adopts them."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                self.poll()
            except Exception as exc:  # a bad job file must not stop the runner
                log_event("runner_error", error=repr(exc))

    def poll(self) -> None:
        """One pass: reap, fail dead trainers, start queued jobs (oldest first)."""
        for job_id, child in list(self._children.items()):
            code = child.poll()
            if code is not None:  # reaped here; the status is kept for the failure reason
                del self._children[job_id]
                self._exit_codes[job_id] = code
        jobs = self.store.list(skip=self._seen_terminal)  # a finished job never changes
        running = 0
        for job in jobs:
            if job["state"] == RUNNING:
                if self._trainer_alive(job):
                    running += 1
                else:
                    self._fail_dead(job)
            elif job["state"] == QUEUED and not job["ready"]:
                self._clean_stale_upload(job)
            elif job["state"] in TERMINAL and job["job_id"] not in self._seen_terminal:
                self._seen_terminal.add(job["job_id"])
                self._exit_codes.pop(job["job_id"], None)
                if job.get("finished_at", "") >= self._started_at:
                    metrics.TRAIN_JOBS.labels(job["state"]).inc()
                    log_event("train_job_finished", job_id=job["job_id"], state=job["state"],
                              published=job.get("published"), error=job.get("error"))
        publish_training(jobs)
        for job in jobs:
            if running >= self.concurrency:
                break
            if job["state"] == QUEUED and job["ready"] and self._start(job["job_id"]):
                running += 1

    def _lock_is_free(self, path: Path) -> bool:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return True
        try:
            return try_lock(fd)
        finally:
            os.close(fd)

    def _trainer_alive(self, job: Job) -> bool:
        return not self._lock_is_free(self.store.job_dir(job["job_id"]) / TRAINER_LOCK)

    def _fail_dead(self, job: Job) -> None:
        job_id = job["job_id"]
        child = self._children.pop(job_id, None)
        code = child.wait() if child is not None else self._exit_codes.pop(job_id, None)
        log_tail = _tail(self.store.job_dir(job_id) / TRAINER_LOG)
        reason = "the training process died"
        if code is not None:
            reason += f" (exit status {code})"
        if log_tail:
            reason += f": {log_tail}"
        with self.store.locked(job_id) as current:
            if current["state"] != RUNNING:
                return  # it finished cleanly just before exiting
        self.store.finish(job_id, FAILED, error=reason)
        log_event("train_job_crashed", job_id=job_id, exit_status=code)

    def _clean_stale_upload(self, job: Job) -> None:
        """Remove a job whose uploader died (its upload lock is free) mid-corpus."""
        job_dir = self.store.job_dir(job["job_id"])
        try:
            age = time.time() - (job_dir / UPLOAD_LOCK).stat().st_mtime
        except FileNotFoundError:
            age = STALE_UPLOAD_SECONDS
        if age >= STALE_UPLOAD_SECONDS and self._lock_is_free(job_dir / UPLOAD_LOCK):
            shutil.rmtree(job_dir, ignore_errors=True)
            log_event("train_upload_abandoned", job_id=job["job_id"])

    def _start(self, job_id: str) -> bool:
        job_dir = self.store.job_dir(job_id)
        with self.store.locked(job_id) as job:
            if job["state"] != QUEUED:
                return False
            lock_fd = os.open(job_dir / TRAINER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
            try:
                if not try_lock(lock_fd):
                    return False
                with open(job_dir / TRAINER_LOG, "ab") as log:
                    try:
                        child = subprocess.Popen(
                            [sys.executable, "-m", "tokend.server.trainer", str(job_dir),
                             "--registry", str(self.registry),
                             "--workers", str(self.train_workers)],
                            stdin=subprocess.DEVNULL,
                            stdout=log,
                            stderr=log,
                            pass_fds=(lock_fd,),
                            start_new_session=True,  # survives a supervisor restart
                            env=_trainer_env(),
                        )
                    except OSError as exc:
                        raise TokendError(f"could not start the training process: {exc}") from exc
            finally:
                os.close(lock_fd)  # the child's inherited descriptor keeps the lock
            job.update(state=RUNNING, phase="count", started_at=now(), pid=child.pid)
        self._children[job_id] = child
        metrics.TRAIN_JOBS.labels(RUNNING).inc()
        log_event("train_job_started", job_id=job_id, pid=child.pid)
        return True


def _trainer_env() -> dict[str, str]:
    """The environment without the metrics directory: a trainer exports no metrics, and its
    files there would outlive it (nobody marks a trainer's pid dead)."""
    env = dict(os.environ)
    env.pop(metrics.MULTIPROC_ENV, None)
    return env


def _tail(path: Path, limit: int = 400) -> str:
    """The last line(s) of a trainer log, for the failure reason."""
    try:
        data = path.read_bytes()[-limit:]
    except FileNotFoundError:
        return ""
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def publish_training(jobs: list[Job]) -> None:
    """Active jobs by state, merges learned and phase progress of the running ones."""
    running = [job for job in jobs if job["state"] == RUNNING]
    metrics.TRAIN_ACTIVE.labels(QUEUED).set(sum(job["state"] == QUEUED for job in jobs))
    metrics.TRAIN_ACTIVE.labels(RUNNING).set(len(running))
    metrics.TRAIN_MERGES.set(
        sum(int(job.get("done", 0)) for job in running if job.get("phase") == "merge")
    )
    ratios = [int(job.get("done", 0)) / int(job["total"]) for job in running
              if int(job.get("total", 0) or 0) > 0]
    metrics.TRAIN_PROGRESS.set(sum(ratios) / len(ratios) if ratios else 0.0)
