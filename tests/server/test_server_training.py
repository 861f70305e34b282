"""Training jobs: validation and auth in-process; real jobs, cancel, crashes on `tokend serve`."""

from __future__ import annotations

import gzip
import os
import signal
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import tiktoken
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from tokend.core.registry import Registry
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

ADMIN = [("authorization", "Bearer secret-admin")]
STATES = pb.TrainJobState


def train_requests(config: pb.TrainConfig, corpus: bytes = b"",
                   chunk: int = 65536) -> Iterator[pb.TrainRequest]:
    yield pb.TrainRequest(config=config)
    for i in range(0, len(corpus), chunk):
        yield pb.TrainRequest(corpus_chunk=corpus[i:i + chunk])


def rpc_error(call) -> grpc.RpcError:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


class TestTrainValidation:
    """Refusals happen before any job exists; each names the value and the limit."""

    @pytest.mark.parametrize(
        ("config", "needle"),
        [
            (pb.TrainConfig(name="Bad Name", vocab_size=300), "Bad Name"),
            (pb.TrainConfig(name="ok", vocab_size=100), "256"),
            (pb.TrainConfig(name="ok", vocab_size=257, special_tokens=["<a>", "<b>"]), "258"),
            (pb.TrainConfig(name="ok", vocab_size=300, special_tokens=["<a>", "<a>"]), "<a>"),
            (pb.TrainConfig(name="ok", vocab_size=300, pattern="(unclosed"), "(unclosed"),
            (pb.TrainConfig(name="ok", vocab_size=300, pattern="x*"), "empty"),
        ],
    )
    def test_bad_config_is_invalid_argument(self, fresh_server, config, needle: str) -> None:
        server = fresh_server()
        err = rpc_error(lambda: server.stub.Train(train_requests(config, b"text"),
                                                  metadata=ADMIN))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert needle in err.details()
        assert server.stub.ListTrainJobs(pb.ListTrainJobsRequest()).jobs == []

    def test_builtin_name_is_refused_up_front(self, fresh_server) -> None:
        server = fresh_server()
        err = rpc_error(lambda: server.stub.Train(train_requests(
            pb.TrainConfig(name="cl100k_base", vocab_size=300), b"x"), metadata=ADMIN))
        assert err.code() == grpc.StatusCode.ALREADY_EXISTS
        assert "cl100k_base" in err.details()

    def test_vocab_size_limit(self, fresh_server) -> None:
        server = fresh_server(max_vocab_size=1000)
        err = rpc_error(lambda: server.stub.Train(
            train_requests(pb.TrainConfig(name="ok", vocab_size=1001), b"x"), metadata=ADMIN))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "1001" in err.details() and "--max-vocab-size" in err.details()

    def test_first_message_must_be_config(self, fresh_server) -> None:
        server = fresh_server()
        err = rpc_error(lambda: server.stub.Train(
            iter([pb.TrainRequest(corpus_chunk=b"abc")]), metadata=ADMIN))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT

    def test_empty_and_non_utf8_corpora(self, fresh_server) -> None:
        server = fresh_server()
        config = pb.TrainConfig(name="ok", vocab_size=300)
        err = rpc_error(lambda: server.stub.Train(train_requests(config), metadata=ADMIN))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "empty" in err.details()
        err = rpc_error(lambda: server.stub.Train(
            train_requests(config, b"good \xe9\xff bad"), metadata=ADMIN))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "UTF-8 at byte 5" in err.details()
        assert server.stub.ListTrainJobs(pb.ListTrainJobsRequest()).jobs == []

    def test_corpus_size_limit(self, fresh_server) -> None:
        """A streamed corpus over --max-corpus-bytes is refused and leaves no job behind."""
        server = fresh_server()
        limit = server.config.max_corpus_bytes
        err = rpc_error(lambda: server.stub.Train(train_requests(
            pb.TrainConfig(name="ok", vocab_size=300), b"a" * (limit + 1), chunk=4096),
            metadata=ADMIN))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert str(limit) in err.details() and "--max-corpus-bytes" in err.details()
        assert server.stub.ListTrainJobs(pb.ListTrainJobsRequest()).jobs == []
        assert not [p for p in server.config.jobs_path.iterdir() if not p.name.startswith(".")]

    def test_train_dir_paths_cannot_escape(self, fresh_server, tmp_path: Path) -> None:
        """Absolute paths, `..`, and symlinks leading out of --train-dir are refused."""
        server = fresh_server()
        train_dir = server.config.train_dir
        assert train_dir is not None
        outside = tmp_path / "secret.txt"
        outside.write_text("secret corpus")
        (train_dir / "link.txt").symlink_to(outside)
        (train_dir / "sub").mkdir()
        for path in (str(outside), "../secret.txt", "sub/../../secret.txt", "link.txt",
                     "missing.txt", "sub"):
            config = pb.TrainConfig(name="ok", vocab_size=300, corpus_path=path)
            err = rpc_error(lambda c=config: server.stub.Train(train_requests(c),
                                                               metadata=ADMIN))
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, path
            assert repr(path) in err.details()

    def test_no_train_dir_is_failed_precondition(self, fresh_server) -> None:
        server = fresh_server(train_dir=None)
        err = rpc_error(lambda: server.stub.Train(train_requests(
            pb.TrainConfig(name="ok", vocab_size=300, corpus_path="a.txt")), metadata=ADMIN))
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "--train-dir" in err.details()

    def test_too_many_jobs(self, fresh_server) -> None:
        """Queued + running jobs are capped by --max-train-jobs (no runner: they stay queued)."""
        server = fresh_server()
        config = pb.TrainConfig(name="ok", vocab_size=300)
        for _ in range(server.config.max_train_jobs):
            server.stub.Train(train_requests(config, b"some text"), metadata=ADMIN)
        err = rpc_error(lambda: server.stub.Train(train_requests(config, b"more"),
                                                  metadata=ADMIN))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--max-train-jobs" in err.details()
        job = server.stub.ListTrainJobs(pb.ListTrainJobsRequest()).jobs[0]
        cancelled = server.stub.CancelTrainJob(pb.CancelTrainJobRequest(job_id=job.job_id),
                                               metadata=ADMIN).job
        assert cancelled.state == STATES.Value("TRAIN_JOB_STATE_CANCELLED")
        server.stub.Train(train_requests(config, b"fits again"), metadata=ADMIN)


class TestAdminToken:
    def test_train_and_cancel_need_the_token(self, fresh_server) -> None:
        """No token: UNAUTHENTICATED; wrong token: PERMISSION_DENIED; reads need none."""
        server = fresh_server()
        config = pb.TrainConfig(name="ok", vocab_size=300)
        err = rpc_error(lambda: server.stub.Train(train_requests(config, b"x")))
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED
        err = rpc_error(lambda: server.stub.Train(
            train_requests(config, b"x"), metadata=[("authorization", "Bearer wrong")]))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED
        job = server.stub.Train(train_requests(config, b"x"), metadata=ADMIN).job
        request = pb.CancelTrainJobRequest(job_id=job.job_id)
        err = rpc_error(lambda: server.stub.CancelTrainJob(request))
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED
        assert server.stub.GetTrainJob(pb.GetTrainJobRequest(job_id=job.job_id)).job == job

    def test_no_token_configured_means_open(self, fresh_server) -> None:
        server = fresh_server(admin_token=None)
        job = server.stub.Train(train_requests(pb.TrainConfig(name="ok", vocab_size=300),
                                               b"x")).job
        assert job.state == STATES.Value("TRAIN_JOB_STATE_QUEUED")


class TestJobLookups:
    def test_unknown_and_malformed_job_ids(self, fresh_server) -> None:
        server = fresh_server()
        err = rpc_error(lambda: server.stub.GetTrainJob(pb.GetTrainJobRequest(job_id="0" * 32)))
        assert err.code() == grpc.StatusCode.NOT_FOUND
        for bad in ("", "../../etc", "ABC"):
            err = rpc_error(lambda b=bad: server.stub.WatchTrainJob(
                pb.WatchTrainJobRequest(job_id=b)).next())
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT

    def test_cancel_of_unknown_or_malformed_job_names_the_field(self, fresh_server) -> None:
        server = fresh_server(admin_token=None)
        for job_id, code in (("0" * 32, grpc.StatusCode.NOT_FOUND),
                             ("../../etc", grpc.StatusCode.INVALID_ARGUMENT)):
            err = rpc_error(lambda j=job_id: server.stub.CancelTrainJob(
                pb.CancelTrainJobRequest(job_id=j)))
            assert err.code() == code
            assert job_id in err.details()
            status = rpc_status.from_call(err)
            assert status is not None
            fields = []
            for detail in status.details:
                bad = error_details_pb2.BadRequest()
                if detail.Unpack(bad):
                    fields += [v.field for v in bad.field_violations]
            assert fields == ["job_id"]


# -- real jobs on `tokend serve` ------------------------------------------------------------


def watch(stub: pb_grpc.TokenizerServiceStub, job_id: str, timeout: float = 60) -> pb.TrainJob:
    last = None
    for message in stub.WatchTrainJob(pb.WatchTrainJobRequest(job_id=job_id), timeout=timeout):
        last = message.job
    assert last is not None
    return last


def reference_for(registry: Path, ref: str) -> tiktoken.Encoding:
    """tiktoken built from the published ranks, pattern and special tokens."""
    data = Registry(registry).load_data(ref)
    return tiktoken.Encoding(ref, pat_str=data.pat_str, mergeable_ranks=data.ranks,
                             special_tokens=data.special_tokens)


@pytest.fixture(scope="module")
def big_corpus(tokend_server, fixtures_dir) -> str:
    """A corpus in the server's --train-dir big enough that training takes a few seconds."""
    text = gzip.decompress((fixtures_dir / "corpora" / "shakespeare.txt.gz").read_bytes())
    path = tokend_server.train_dir / "big.txt"
    path.write_bytes(text * 12)
    return path.name


class TestRealJobs:
    def test_job_while_encode_load_runs(self, tokend_server, fixtures_dir) -> None:
        """A streamed job trains and publishes while 8 threads keep encoding without error;
        the published tokenizer is served at once and gives tiktoken's ids for its ranks."""
        admin = [("authorization", f"Bearer {tokend_server.admin_token}")]
        corpus = (fixtures_dir / "corpora" / "corpus.en").read_bytes()
        stop = threading.Event()
        failures: list[BaseException] = []
        done = [0]

        def load() -> None:
            with grpc.insecure_channel(tokend_server.target) as channel:
                stub = pb_grpc.TokenizerServiceStub(channel)
                while not stop.is_set():
                    try:
                        stub.Encode(pb.EncodeRequest(tokenizer="cl100k_base",
                                                     texts=["load " * 200]), timeout=30)
                        done[0] += 1
                    except grpc.RpcError as exc:
                        failures.append(exc)

        threads = [threading.Thread(target=load) for _ in range(8)]
        for t in threads:
            t.start()
        try:
            with grpc.insecure_channel(tokend_server.target) as channel:
                stub = pb_grpc.TokenizerServiceStub(channel)
                job = stub.Train(train_requests(pb.TrainConfig(
                    name="loadtok", vocab_size=600, special_tokens=["<|endoftext|>"]), corpus),
                    metadata=admin).job
                assert job.state == STATES.Value("TRAIN_JOB_STATE_QUEUED")
                assert job.corpus_bytes == len(corpus)
                final = watch(stub, job.job_id)
                assert final.state == STATES.Value("TRAIN_JOB_STATE_SUCCEEDED"), final.error
                assert final.published == "loadtok@1" and final.finished_at
                text = corpus.decode()[:5000] + " <|endoftext|>"
                response = stub.Encode(pb.EncodeRequest(
                    tokenizer=final.published, texts=[text],
                    special_tokens=pb.SpecialTokenPolicy(allow_all=True)))
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert failures == [] and done[0] > 0
        ref = reference_for(tokend_server.registry, "loadtok@1")
        assert list(response.results[0].ids) == ref.encode(text, allowed_special="all")
        manifest = Registry(tokend_server.registry).manifest("loadtok@1")
        assert manifest["training"]["job_id"] == job.job_id
        assert manifest["corpus"]["bytes"] == len(corpus)
        url = f"http://127.0.0.1:{tokend_server.metrics_port}/metrics"
        deadline = time.monotonic() + 10
        while 'tokend_train_jobs_total{state="succeeded"}' not in \
                urllib.request.urlopen(url, timeout=10).read().decode():
            assert time.monotonic() < deadline, "no train job metric"
            time.sleep(0.1)

    def test_jobs_look_the_same_from_every_worker(self, tokend_server, fixtures_dir) -> None:
        """Job state lives on disk: new connections (spread over workers) all see the job."""
        admin = [("authorization", f"Bearer {tokend_server.admin_token}")]
        corpus = (fixtures_dir / "corpora" / "tinystories_sample.txt").read_bytes()
        with grpc.insecure_channel(tokend_server.target) as channel:
            job = pb_grpc.TokenizerServiceStub(channel).Train(train_requests(
                pb.TrainConfig(name="everywhere", vocab_size=300), corpus), metadata=admin).job
        seen = set()
        for _ in range(12):  # each channel is a new connection; SO_REUSEPORT spreads them
            with grpc.insecure_channel(tokend_server.target,
                                       options=[("grpc.use_local_subchannel_pool", 1)]) as ch:
                stub = pb_grpc.TokenizerServiceStub(ch)
                got = stub.GetTrainJob(pb.GetTrainJobRequest(job_id=job.job_id)).job
                assert got.job_id == job.job_id and got.config == job.config
                assert job.job_id in [j.job_id for j in
                                      stub.ListTrainJobs(pb.ListTrainJobsRequest()).jobs]
                seen.add(got.state)
        final = watch(pb_grpc.TokenizerServiceStub(grpc.insecure_channel(tokend_server.target)),
                      job.job_id)
        assert final.state == STATES.Value("TRAIN_JOB_STATE_SUCCEEDED"), final.error

    def test_train_dir_corpus_and_cancel(self, tokend_server, big_corpus) -> None:
        """A server-side corpus trains; cancelling it while it runs ends it CANCELLED within
        seconds and publishes nothing."""
        admin = [("authorization", f"Bearer {tokend_server.admin_token}")]
        with grpc.insecure_channel(tokend_server.target) as channel:
            stub = pb_grpc.TokenizerServiceStub(channel)
            job = stub.Train(train_requests(pb.TrainConfig(
                name="cancelme", vocab_size=20000, corpus_path=big_corpus)), metadata=admin).job
            assert job.corpus_bytes == (tokend_server.train_dir / big_corpus).stat().st_size
            for message in stub.WatchTrainJob(pb.WatchTrainJobRequest(job_id=job.job_id),
                                              timeout=60):
                if message.job.state == STATES.Value("TRAIN_JOB_STATE_RUNNING"):
                    break
            stub.CancelTrainJob(pb.CancelTrainJobRequest(job_id=job.job_id), metadata=admin)
            start = time.monotonic()
            final = watch(stub, job.job_id, timeout=30)
        assert final.state == STATES.Value("TRAIN_JOB_STATE_CANCELLED"), final
        assert time.monotonic() - start < 10
        assert "cancelme" not in {t.name for t in Registry(tokend_server.registry).list()}

    def test_trainer_crash_fails_the_job_cleanly(self, tokend_server, big_corpus) -> None:
        """SIGKILL of the training process: the job ends FAILED naming it; nothing published."""
        admin = [("authorization", f"Bearer {tokend_server.admin_token}")]
        with grpc.insecure_channel(tokend_server.target) as channel:
            stub = pb_grpc.TokenizerServiceStub(channel)
            job = stub.Train(train_requests(pb.TrainConfig(
                name="crashme", vocab_size=20000, corpus_path=big_corpus)), metadata=admin).job
            event = tokend_server.wait_event("train_job_started", job_id=job.job_id)
            os.kill(event["pid"], signal.SIGKILL)
            final = watch(stub, job.job_id, timeout=30)
        assert final.state == STATES.Value("TRAIN_JOB_STATE_FAILED")
        assert "died" in final.error and "-9" in final.error
        assert "crashme" not in {t.name for t in Registry(tokend_server.registry).list()}


class TestJobsOutliveWorkers:
    def test_job_finishes_although_every_worker_is_killed(self, tokend_factory,
                                                          fixtures_dir) -> None:
        """Jobs belong to the supervisor's runner, not to the worker that accepted them."""
        served = tokend_factory(workers=1)
        admin = [("authorization", f"Bearer {served.admin_token}")]
        corpus = (fixtures_dir / "corpora" / "corpus.en").read_bytes()
        with grpc.insecure_channel(served.target) as channel:
            job = pb_grpc.TokenizerServiceStub(channel).Train(train_requests(
                pb.TrainConfig(name="survivor", vocab_size=500), corpus), metadata=admin).job
        worker = served.wait_event("serving")["pids"][0]
        os.kill(worker, signal.SIGKILL)
        mark = len(served.events)
        served.wait_event("worker_ready", after=mark, timeout=60)
        with grpc.insecure_channel(served.target) as channel:
            final = watch(pb_grpc.TokenizerServiceStub(channel), job.job_id)
        assert final.state == STATES.Value("TRAIN_JOB_STATE_SUCCEEDED"), final.error
        assert final.published == "survivor@1"
