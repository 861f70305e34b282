"""Training jobs: accept one (config + corpus) and report jobs from the on-disk store.

``Training.train`` validates the config, writes a streamed corpus into the job directory (bounded by
--max-corpus-bytes, checked to be UTF-8 as it arrives) or checks a server-side file under
--train-dir, and returns the queued job at once. The supervisor's runner (runner.py) starts
the training process. Every worker reads the same job files, so any of them can answer
Get/Watch/List/Cancel for a job another worker accepted.
"""

from __future__ import annotations

import codecs
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from tokend.core.errors import (
    FailedPrecondition,
    InvalidInput,
    TokendError,
    shown,
    storage_error,
)
from tokend.core.patterns import DEFAULT_TRAIN_PATTERN
from tokend.core.training.spec import DEFAULT_MODEL, TrainSpec
from tokend.server import limits
from tokend.server.app.context import CallContext, check_alive
from tokend.server.app.fields import field_of, with_field
from tokend.server.config import ServerConfig
from tokend.server.jobs import CORPUS_FILE, TERMINAL, Job, JobStore
from tokend.server.logs import log_event

WATCH_POLL_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """What to train: the proto's TrainConfig as plain data (empty strings: the defaults)."""

    name: str
    vocab_size: int
    special_tokens: tuple[str, ...] = ()
    pattern: str = ""
    corpus_path: str = ""  # a file under --train-dir instead of a streamed corpus
    model: str = ""
    wordpiece_score: str = ""


# One message of a Train call: the config (first), a chunk of corpus, or an empty message.
TrainMessage: TypeAlias = TrainConfig | bytes | None


class Training:
    """The training-job calls over one worker's job store (any worker can answer for any job:
    they share the files)."""

    def __init__(self, config: ServerConfig, jobs: JobStore) -> None:
        self.config = config
        self.jobs = jobs

    def train(self, messages: Iterator[TrainMessage], context: CallContext) -> Job:
        """Validate the config, take the corpus (streamed or under --train-dir), queue a job."""
        first = next(messages, None)
        if not isinstance(first, TrainConfig):
            raise with_field(
                InvalidInput("the first Train message must carry the config (TrainConfig)"),
                "config",
            )
        config = self._check_config(first)
        if first.corpus_path:
            path, size = self._train_dir_file(first.corpus_path)
            for _ in messages:  # a server-side corpus excludes a streamed one
                raise with_field(
                    InvalidInput("config.corpus_path names a server-side corpus; do not also "
                                 "stream corpus_chunk messages"),
                    "corpus_chunk",
                )
            job, _ = self.jobs.create(
                config, max_jobs=self.config.max_train_jobs, corpus_file=path, corpus_bytes=size
            )
        else:
            job = self._receive_corpus(config, messages, context)
        log_event("train_job_created", job_id=job["job_id"], name=config["name"],
                  model=config["model"], vocab_size=config["vocab_size"],
                  corpus_bytes=job["corpus_bytes"])
        return job

    def _check_config(self, cfg: TrainConfig) -> dict[str, Any]:
        """The job's config: the TrainSpec rules (core), then this server's limits."""
        spec = TrainSpec(
            vocab_size=cfg.vocab_size,
            special_tokens=tuple(cfg.special_tokens),
            model=cfg.model or DEFAULT_MODEL,
            pattern=cfg.pattern or DEFAULT_TRAIN_PATTERN,
            wordpiece_score=cfg.wordpiece_score,
            name=cfg.name,
        )
        limits.check("vocab_size", cfg.vocab_size, self.config.max_vocab_size,
                     "--max-vocab-size", field="config.vocab_size")
        try:
            spec = spec.checked()
        except TokendError as exc:
            raise with_field(exc, f"config.{field_of(exc) or 'name'}") from None
        return {**spec.to_dict(), "corpus_path": cfg.corpus_path}

    def _train_dir_file(self, relative: str) -> tuple[Path, int]:
        """Resolve a corpus path inside --train-dir; refuse anything that escapes it."""
        field = "config.corpus_path"
        if self.config.train_dir is None:
            raise with_field(
                FailedPrecondition("this server reads no server-side corpora: start it with "
                                   "--train-dir, or stream the corpus instead"),
                field,
            )
        base = self.config.train_dir.resolve()
        if os.path.isabs(relative) or "\x00" in relative:
            raise with_field(
                InvalidInput(f"corpus_path {shown(relative)} must be relative to the train dir"),
                field,
            )
        try:
            path = (base / relative).resolve()  # follows symlinks: the target must stay inside
            if path != base and base not in path.parents:
                raise with_field(
                    InvalidInput(
                        f"corpus_path {shown(relative)} leads outside the train dir {base}"
                    ),
                    field,
                )
            if not path.is_file():
                raise with_field(
                    InvalidInput(
                        f"corpus_path {shown(relative)} is not a file in the train dir {base}"
                    ),
                    field,
                )
            size = path.stat().st_size
        except OSError as exc:  # a name too long, a loop of symlinks, no permission...
            raise with_field(
                InvalidInput(f"corpus_path {shown(relative)} cannot be read in the train dir "
                             f"{base}: {exc.strerror}"),
                field,
            ) from None
        limits.check(f"corpus {shown(relative)} size in bytes", size, self.config.max_corpus_bytes,
                     "--max-corpus-bytes", field=field)
        if size == 0:
            raise with_field(InvalidInput(f"corpus_path {shown(relative)} is empty"), field)
        return path, size

    def _receive_corpus(
        self,
        config: dict[str, Any],
        messages: Iterator[TrainMessage],
        context: CallContext,
    ) -> Job:
        try:
            job, upload_fd = self.jobs.create(
                config, max_jobs=self.config.max_train_jobs, corpus_file=None
            )
        except OSError as exc:
            raise storage_error(exc, "cannot create the training job on the server") from exc
        assert upload_fd is not None
        job_id = job["job_id"]
        received = 0
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            with open(self.jobs.job_dir(job_id) / CORPUS_FILE, "wb") as out:
                for message in messages:
                    check_alive(context)
                    if not isinstance(message, bytes):
                        raise with_field(
                            InvalidInput("only the first Train message may carry a config"),
                            "config",
                        )
                    chunk = message
                    received += len(chunk)
                    limits.check("streamed corpus size in bytes", received,
                                 self.config.max_corpus_bytes, "--max-corpus-bytes",
                                 field="corpus_chunk")
                    _check_utf8(decoder, chunk, received)
                    out.write(chunk)
                _check_not_cancelled(context)
                _check_utf8(decoder, b"", received, final=True)
                if received == 0:
                    raise with_field(
                        InvalidInput("the corpus is empty: stream it in corpus_chunk messages "
                                     "or name a file with config.corpus_path"),
                        "corpus_chunk",
                    )
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:  # disk full, read-only...: the job is dropped, not half-kept
            self.jobs.abort_upload(job_id, upload_fd)
            raise storage_error(
                exc, "cannot store the uploaded corpus on the server (no job was created)"
            ) from exc
        except BaseException:
            self.jobs.abort_upload(job_id, upload_fd)
            raise
        try:
            return self.jobs.finish_upload(job_id, upload_fd, received)
        except OSError as exc:
            self.jobs.abort_upload(job_id, upload_fd)
            raise storage_error(exc, "cannot queue the training job on the server") from exc

    def get_job(self, job_id: str) -> Job:
        return self._read(job_id)

    def list_jobs(self) -> list[Job]:
        return list(self.jobs.list())

    def cancel_job(self, job_id: str) -> Job:
        try:
            job = self.jobs.cancel(job_id)
        except TokendError as exc:
            raise with_field(exc, "job_id") from None
        log_event("train_job_cancel", job_id=job_id, state=job["state"])
        return job

    def watch_job(self, job_id: str, context: CallContext) -> Iterator[Job]:
        """The job now and on every change, until it ends (the last one is final)."""
        last: Job | None = None
        while True:
            job = self._read(job_id)
            if job != last:
                yield job
                last = job
            if job["state"] in TERMINAL:
                return
            if context.cancelled():
                return
            time.sleep(WATCH_POLL_SECONDS)

    def _read(self, job_id: str) -> Job:
        try:
            return self.jobs.read(job_id)
        except TokendError as exc:
            raise with_field(exc, "job_id") from None


# How long the end of a Train request stream is watched for a cancellation before the upload
# counts as complete (a fraction of any training job's time).
CANCEL_SETTLE_SECONDS = 0.2


def _check_not_cancelled(context: CallContext) -> None:
    """Raise if the call was cancelled rather than the corpus completed.

    subtle: grpcio can end the request iterator (StopIteration, as for a normal end of stream)
    when the client cancels, a moment before the call shows as inactive; a job queued then
    would train a truncated corpus for a client that never learned its id. So the end of the
    stream is watched for up to CANCEL_SETTLE_SECONDS.
    """
    deadline = time.monotonic() + CANCEL_SETTLE_SECONDS
    while True:
        check_alive(context)
        if time.monotonic() >= deadline:
            return
        time.sleep(0.02)


def _check_utf8(
    decoder: codecs.IncrementalDecoder, chunk: bytes, received: int, *, final: bool = False
) -> None:
    try:
        decoder.decode(chunk, final)
    except UnicodeDecodeError as exc:
        offset = received - len(chunk) + exc.start
        raise with_field(
            InvalidInput(f"the corpus is not valid UTF-8 at byte {offset}: {exc.reason}"),
            "corpus_chunk",
        ) from None
