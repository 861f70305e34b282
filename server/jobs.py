"""Training jobs kept on disk, so every worker process sees the same jobs.

Layout (under ``<registry>/.jobs``)::

    .lock                    serializes job creation (the --max-train-jobs count)
    <job_id>/state.json      the job, replaced atomically on every change (format_version 1)
    <job_id>/lock            serializes read-modify-write of state.json
    <job_id>/corpus.txt      a streamed corpus (removed when the job ends)
    <job_id>/upload.lock     held by the worker receiving the corpus
    <job_id>/trainer.lock    held by the training process for as long as it lives
    <job_id>/cancel          marker: the trainer's should_stop() sees it and stops
    <job_id>/trainer.log     the training process's stderr

States: queued -> running -> succeeded | failed | cancelled (queued -> cancelled directly).
A job is picked up by the runner (runner.py, in the supervisor) only once ``ready`` is set,
i.e. its corpus is complete. A lock held by a process dies with it, so a crashed uploader or
trainer is detected by taking its lock.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from tokend.core.errors import CorruptData, InvalidInput, UnknownJob, shown, storage_error
from tokend.core.registry.locking import file_lock, try_lock
from tokend.server.limits import check

FORMAT_VERSION = 1
STATE_FILE = "state.json"
CORPUS_FILE = "corpus.txt"
CANCEL_FILE = "cancel"
UPLOAD_LOCK = "upload.lock"
TRAINER_LOCK = "trainer.lock"
TRAINER_LOG = "trainer.log"

QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = (
    "queued", "running", "succeeded", "failed", "cancelled",
)
ACTIVE = frozenset({QUEUED, RUNNING})
TERMINAL = frozenset({SUCCEEDED, FAILED, CANCELLED})
KEEP_FINISHED = 200  # finished jobs kept for listing; older ones are pruned

_JOB_ID = re.compile(r"[0-9a-f]{32}\Z")

Job = dict[str, Any]


def now() -> str:
    """RFC 3339 UTC timestamp."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def check_job_id(job_id: str) -> str:
    if not isinstance(job_id, str) or _JOB_ID.match(job_id) is None:
        raise InvalidInput(f"invalid job id {shown(job_id)}: job ids are 32 lowercase hex digits")
    return job_id


def write_json(path: Path, data: Job, *, sync: bool = False) -> None:
    """Replace ``path`` atomically (temp file + rename); fsync only when asked.

    Progress updates are frequent and losing the last one in a power cut is harmless, so they
    skip the fsync; terminal states sync.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    payload = (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()
    try:
        with open(tmp, "wb") as fh:
            fh.write(payload)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:  # a full disk must not leave .state.json.*.tmp files behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class JobStore:
    """Create, read, update and cancel jobs in a jobs directory (safe across processes)."""

    def __init__(self, root: Path, *, create: bool = True) -> None:
        """``create=False`` leaves the folder alone until a job is created (a process that
        only reads, such as the CLI counting in process, writes nothing)."""
        self.root = Path(root)
        if create:
            self.root.mkdir(parents=True, exist_ok=True)

    def job_dir(self, job_id: str) -> Path:
        return self.root / check_job_id(job_id)

    # -- reading ----------------------------------------------------------------------------

    def read(self, job_id: str) -> Job:
        path = self.job_dir(job_id) / STATE_FILE
        try:
            raw = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            raise UnknownJob(f"no training job {shown(job_id)} (see ListTrainJobs)") from None
        try:
            job: Job = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CorruptData(f"{path}: job state is not valid JSON ({exc})") from None
        if not isinstance(job, dict) or job.get("format_version") != FORMAT_VERSION:
            raise CorruptData(f"{path}: job state has no supported format_version")
        return job

    def ids(self) -> list[str]:
        out = []
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self.root):
                if _JOB_ID.match(entry.name) and entry.is_dir(follow_symlinks=False):
                    out.append(entry.name)
        return out

    def list(self, *, skip: AbstractSet[str] = frozenset()) -> list[Job]:
        """Every readable job (but those in ``skip``), oldest first."""
        jobs = []
        for job_id in self.ids():
            if job_id in skip:
                continue
            with contextlib.suppress(UnknownJob, CorruptData):
                jobs.append(self.read(job_id))
        jobs.sort(key=lambda j: (j.get("created_at", ""), j["job_id"]))
        return jobs

    # -- creating ---------------------------------------------------------------------------

    def create(
        self,
        config: dict[str, Any],
        *,
        max_jobs: int,
        corpus_file: Path | None,
        corpus_bytes: int = 0,
    ) -> tuple[Job, int | None]:
        """Create a job, refusing when ``max_jobs`` are already queued or running.

        With ``corpus_file`` the job is ready at once; without, the corpus is streamed into
        the job directory: the job is not ready, and the returned descriptor holds its upload
        lock until ``finish_upload`` / ``abort_upload``.
        """
        with file_lock(self.root / ".lock"):
            active = sum(1 for job in self.list() if job["state"] in ACTIVE)
            check("queued + running training jobs", active + 1, max_jobs, "--max-train-jobs")
            job_id = uuid.uuid4().hex
            job_dir = self.root / job_id
            upload_fd: int | None = None
            try:
                job_dir.mkdir()
                if corpus_file is None:
                    upload_fd = os.open(job_dir / UPLOAD_LOCK,
                                        os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
                    try_lock(upload_fd)
                job: Job = {
                    "format_version": FORMAT_VERSION,
                    "job_id": job_id,
                    "config": config,
                    "state": QUEUED,
                    "ready": corpus_file is not None,
                    "phase": "queued" if corpus_file is not None else "upload",
                    "done": 0,
                    "total": 0,
                    "rate": 0.0,
                    "eta_seconds": 0.0,
                    "published": "",
                    "error": "",
                    "created_at": now(),
                    "started_at": "",
                    "finished_at": "",
                    "corpus_file": str(corpus_file or job_dir / CORPUS_FILE),
                    "corpus_bytes": corpus_bytes,
                    "pid": 0,
                }
                write_json(job_dir / STATE_FILE, job, sync=True)
            except OSError as exc:  # disk full, read-only: no half-made job is left
                if upload_fd is not None:
                    os.close(upload_fd)
                shutil.rmtree(job_dir, ignore_errors=True)
                raise storage_error(
                    exc, "cannot create the training job on the server") from exc
        self.prune()
        return job, upload_fd

    def finish_upload(self, job_id: str, upload_fd: int, corpus_bytes: int) -> Job:
        """Mark a streamed corpus complete: the runner may start the job now."""
        try:
            return self.update(job_id, ready=True, phase="queued", corpus_bytes=corpus_bytes)
        finally:
            os.close(upload_fd)

    def abort_upload(self, job_id: str, upload_fd: int) -> None:
        """Forget a job whose corpus never arrived completely."""
        shutil.rmtree(self.job_dir(job_id), ignore_errors=True)
        os.close(upload_fd)

    # -- changing ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, job_id: str) -> Iterator[Job]:
        """Read-modify-write a job under its lock; changes to the yielded dict are saved."""
        job_dir = self.job_dir(job_id)
        if not job_dir.is_dir():
            raise UnknownJob(f"no training job {shown(job_id)} (see ListTrainJobs)")
        with file_lock(job_dir / "lock"):
            job = self.read(job_id)
            before = dict(job)
            yield job
            if job != before:
                job["updated_at"] = now()
                write_json(job_dir / STATE_FILE, job, sync=job["state"] in TERMINAL)

    def update(self, job_id: str, **changes: Any) -> Job:
        with self.locked(job_id) as job:
            job.update(changes)
        return job

    def finish(self, job_id: str, state: str, **changes: Any) -> Job:
        """Move a job to a terminal state (no-op if it already ended) and drop its corpus."""
        with self.locked(job_id) as job:
            if job["state"] not in TERMINAL:
                job.update(changes, state=state, finished_at=now(), eta_seconds=0.0)
                if state == SUCCEEDED:
                    job["phase"] = "done"
        streamed = self.job_dir(job_id) / CORPUS_FILE
        streamed.unlink(missing_ok=True)
        return job

    def cancel(self, job_id: str) -> Job:
        """Cancel: a queued job ends now; a running one is asked to stop (marker file)."""
        with self.locked(job_id) as job:
            if job["state"] == QUEUED:
                job.update(state=CANCELLED, phase="cancelled", finished_at=now(),
                           error="cancelled before it started")
            elif job["state"] == RUNNING:
                (self.job_dir(job_id) / CANCEL_FILE).touch()
        if job["state"] == CANCELLED:
            (self.job_dir(job_id) / CORPUS_FILE).unlink(missing_ok=True)
        return job

    def cancel_requested(self, job_id: str) -> bool:
        return (self.job_dir(job_id) / CANCEL_FILE).exists()

    def prune(self) -> None:
        """Delete the oldest finished jobs beyond KEEP_FINISHED."""
        finished = [j for j in self.list() if j["state"] in TERMINAL]
        for job in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            shutil.rmtree(self.root / job["job_id"], ignore_errors=True)
