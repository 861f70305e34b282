"""The training RPCs: accept a job (config + corpus) and report jobs from the on-disk store.

Train validates the config, writes a streamed corpus into the job directory (bounded by
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
from pathlib import Path
from typing import Any

import grpc

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
from tokend.server.config import ServerConfig
from tokend.server.errors import field_of, with_field
from tokend.server.jobs import (
    CANCELLED,
    CORPUS_FILE,
    FAILED,
    QUEUED,
    RUNNING,
    SUCCEEDED,
    TERMINAL,
    Job,
    JobStore,
)
from tokend.server.logs import log_event
from tokend.server.streaming import StreamSlots, idle_bounded
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

WATCH_POLL_SECONDS = 0.1

_STATES = {
    QUEUED: pb.TRAIN_JOB_STATE_QUEUED,
    RUNNING: pb.TRAIN_JOB_STATE_RUNNING,
    SUCCEEDED: pb.TRAIN_JOB_STATE_SUCCEEDED,
    FAILED: pb.TRAIN_JOB_STATE_FAILED,
    CANCELLED: pb.TRAIN_JOB_STATE_CANCELLED,
}


class TrainingService(pb_grpc.TokenizerServiceServicer):
    """The training-job RPCs (TokenizerService adds the tokenization ones)."""

    def __init__(self, config: ServerConfig, jobs: JobStore) -> None:
        self.config = config
        self.jobs = jobs
        # EncodeStream calls open at once (TokenizerService's). Train uploads are not counted
        # here: they need the admin token and are bounded by --max-train-jobs, so anonymous
        # half-open streams can never lock the operator's training out.
        self.streams = StreamSlots(config.stream_cap)

    def Train(
        self, request_iterator: Iterator[pb.TrainRequest], context: grpc.ServicerContext
    ) -> pb.TrainResponse:
        return self._train(idle_bounded(request_iterator, self.config.stream_idle_seconds,
                                        what="Train"), context)

    def _train(
        self, request_iterator: Iterator[pb.TrainRequest], context: grpc.ServicerContext
    ) -> pb.TrainResponse:
        first = next(request_iterator, None)
        if first is None or first.WhichOneof("payload") != "config":
            raise with_field(
                InvalidInput("the first Train message must carry the config (TrainConfig)"),
                "config",
            )
        config = self._check_config(first.config)
        if first.config.corpus_path:
            path, size = self._train_dir_file(first.config.corpus_path)
            for _ in request_iterator:  # a server-side corpus excludes a streamed one
                raise with_field(
                    InvalidInput("config.corpus_path names a server-side corpus; do not also "
                                 "stream corpus_chunk messages"),
                    "corpus_chunk",
                )
            job, _ = self.jobs.create(
                config, max_jobs=self.config.max_train_jobs, corpus_file=path, corpus_bytes=size
            )
        else:
            job = self._receive_corpus(config, request_iterator, context)
        log_event("train_job_created", job_id=job["job_id"], name=config["name"],
                  model=config["model"], vocab_size=config["vocab_size"],
                  corpus_bytes=job["corpus_bytes"])
        return pb.TrainResponse(job=job_to_proto(job))

    def _check_config(self, cfg: pb.TrainConfig) -> dict[str, Any]:
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
        request_iterator: Iterator[pb.TrainRequest],
        context: grpc.ServicerContext,
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
                for message in request_iterator:
                    limits.check_alive(context)
                    if message.WhichOneof("payload") != "corpus_chunk":
                        raise with_field(
                            InvalidInput("only the first Train message may carry a config"),
                            "config",
                        )
                    chunk = message.corpus_chunk
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

    def GetTrainJob(
        self, request: pb.GetTrainJobRequest, context: grpc.ServicerContext
    ) -> pb.GetTrainJobResponse:
        return pb.GetTrainJobResponse(job=job_to_proto(self._read(request.job_id)))

    def ListTrainJobs(
        self, request: pb.ListTrainJobsRequest, context: grpc.ServicerContext
    ) -> pb.ListTrainJobsResponse:
        return pb.ListTrainJobsResponse(jobs=[job_to_proto(j) for j in self.jobs.list()])

    def CancelTrainJob(
        self, request: pb.CancelTrainJobRequest, context: grpc.ServicerContext
    ) -> pb.CancelTrainJobResponse:
        try:
            job = self.jobs.cancel(request.job_id)
        except TokendError as exc:
            raise with_field(exc, "job_id") from None
        log_event("train_job_cancel", job_id=request.job_id, state=job["state"])
        return pb.CancelTrainJobResponse(job=job_to_proto(job))

    def WatchTrainJob(
        self, request: pb.WatchTrainJobRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.WatchTrainJobResponse]:
        """Send the job now and on every change, until it ends (the last message is final)."""
        last: Job | None = None
        while True:
            job = self._read(request.job_id)
            if job != last:
                yield pb.WatchTrainJobResponse(job=job_to_proto(job))
                last = job
            if job["state"] in TERMINAL:
                return
            if not context.is_active():
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


def _check_not_cancelled(context: grpc.ServicerContext) -> None:
    """Raise if the call was cancelled rather than the corpus completed.

    subtle: grpcio can end the request iterator (StopIteration, as for a normal end of stream)
    when the client cancels, a moment before the call shows as inactive; a job queued then
    would train a truncated corpus for a client that never learned its id. So the end of the
    stream is watched for up to CANCEL_SETTLE_SECONDS.
    """
    deadline = time.monotonic() + CANCEL_SETTLE_SECONDS
    while True:
        limits.check_alive(context)
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


def job_to_proto(job: Job) -> pb.TrainJob:
    cfg = job["config"]
    return pb.TrainJob(
        job_id=job["job_id"],
        config=pb.TrainConfig(
            name=cfg["name"],
            vocab_size=cfg["vocab_size"],
            special_tokens=cfg["special_tokens"],
            pattern=cfg["pattern"],
            corpus_path=cfg.get("corpus_path", ""),
            model=cfg.get("model", DEFAULT_MODEL),
            wordpiece_score=cfg.get("wordpiece_score", ""),
        ),
        state=_STATES.get(job["state"], pb.TRAIN_JOB_STATE_UNSPECIFIED),
        phase=job.get("phase", ""),
        done=int(job.get("done", 0)),
        total=int(job.get("total", 0)),
        rate=float(job.get("rate", 0.0)),
        eta_seconds=float(job.get("eta_seconds", 0.0)),
        published=job.get("published", ""),
        error=job.get("error", ""),
        created_at=job.get("created_at", ""),
        finished_at=job.get("finished_at", ""),
        corpus_bytes=int(job.get("corpus_bytes", 0)),
    )
