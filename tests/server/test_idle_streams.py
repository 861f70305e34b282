"""Idle clients cannot starve a worker: half-open EncodeStream calls and stalled Train uploads
are capped per worker (--max-streams) and ended after --stream-idle-seconds of silence, so
unary probes keep answering and a stalled upload gives its job slot back."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator

import grpc
from conditions import row
from http_api import call, free_port

from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

HALF_OPEN = 48


def half_open(release: threading.Event, first: pb.EncodeStreamRequest
              ) -> Iterator[pb.EncodeStreamRequest]:
    yield first
    release.wait()  # never half-closes until the test ends


def new_channel(target: str) -> grpc.Channel:
    return grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])


def metric(port: int, key: str) -> float:
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(key):
            total += float(line.rpartition(" ")[2])
    return total


class TestHalfOpenStreams:
    def test_probes_answer_while_48_streams_stay_half_open(self, tokend_factory) -> None:
        """48 EncodeStream calls that send one message and never half-close (the issue's
        attack): gRPC probes on new connections answer within 2 s (they timed out before),
        the streams over the cap are refused naming --max-streams, and the admitted ones are
        ended after --stream-idle-seconds naming that flag."""
        too_many, idle = row("max-streams"), row("stream-idle")
        http_port = free_port()
        served = tokend_factory(idle.flag, "4", "--http-port", str(http_port),
                                workers=2)
        for _ in range(16):  # new connections: each worker loads o200k_base before the clock
            assert call(f"http://127.0.0.1:{http_port}", "POST", "/count",
                        {"tokenizer": "o200k_base", "texts": ["warm"]}, timeout=60).status == 200
        release = threading.Event()
        channels = [new_channel(served.target) for _ in range(12)]
        calls = []
        try:
            first = pb.EncodeStreamRequest(tokenizer="o200k_base", text="hello ")
            for i in range(HALF_OPEN):
                stub = pb_grpc.TokenizerServiceStub(channels[i % len(channels)])
                calls.append(stub.EncodeStream(half_open(release, first), timeout=60))
            time.sleep(0.5)
            for _ in range(10):
                with new_channel(served.target) as channel:
                    stub = pb_grpc.TokenizerServiceStub(channel)
                    started = time.monotonic()
                    answer = stub.CountTokens(pb.CountTokensRequest(
                        tokenizer="o200k_base", texts=["still answering"]), timeout=2)
                    assert answer.total == 2
                    assert time.monotonic() - started < 2
                started = time.monotonic()
                answer_http = call(f"http://127.0.0.1:{http_port}", "POST", "/count",
                                   {"tokenizer": "o200k_base", "texts": ["still answering"]},
                                   timeout=2)
                assert answer_http.status == 200 and answer_http.body["total"] == 2
                assert time.monotonic() - started < 2
            outcomes: dict[str, int] = {}
            for stream in calls:
                try:
                    for _ in stream:
                        pass
                    outcomes["ok"] = outcomes.get("ok", 0) + 1
                except grpc.RpcError as err:
                    case = too_many if too_many.flag in err.details() else idle
                    assert err.code() == grpc.StatusCode[case.answer], err.details()
                    assert case.flag in err.details(), err.details()
                    outcomes[case.flag] = outcomes.get(case.flag, 0) + 1
            # Each worker keeps half of its 16 threads for other calls: at most 16 admitted.
            assert outcomes.get(too_many.flag, 0) >= HALF_OPEN - 16, outcomes
            assert outcomes.get(idle.flag, 0) >= 1, outcomes
            assert "ok" not in outcomes
        finally:
            release.set()
            for channel in channels:
                channel.close()
        assert metric(served.metrics_port, 'tokend_limit_hits_total{limit="max-streams"}') > 0
        assert metric(served.metrics_port,
                      'tokend_limit_hits_total{limit="stream-idle-seconds"}') > 0


class TestStalledUpload:
    def test_a_stalled_upload_gives_its_job_slot_back(self, tokend_factory) -> None:
        """A Train upload that stops sending: ended after --stream-idle-seconds (naming it),
        its job removed, so --max-train-jobs 1 admits the next one (the slot was kept forever
        before)."""
        idle = row("train-idle")
        served = tokend_factory(idle.flag, "2", "--max-train-jobs", "1", workers=1)
        release = threading.Event()
        auth = (("authorization", f"Bearer {served.admin_token}"),)

        def stalled() -> Iterator[pb.TrainRequest]:
            yield pb.TrainRequest(config=pb.TrainConfig(name="stalled", vocab_size=300))
            yield pb.TrainRequest(corpus_chunk=b"the first part of a corpus " * 50)
            release.wait()

        with new_channel(served.target) as channel:
            stub = pb_grpc.TokenizerServiceStub(channel)
            started = time.monotonic()
            try:
                stub.Train(stalled(), metadata=auth, timeout=60)
                raise AssertionError("a stalled upload was accepted")
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode[idle.answer], err.details()
                assert idle.flag in err.details()
            finally:
                release.set()
            assert time.monotonic() - started < 30
            job = stub.Train(iter([
                pb.TrainRequest(config=pb.TrainConfig(name="after", vocab_size=300)),
                pb.TrainRequest(corpus_chunk=b"a whole corpus this time " * 50)]),
                metadata=auth, timeout=60)
            assert job.job.job_id
            assert [j.job_id for j in stub.ListTrainJobs(pb.ListTrainJobsRequest()).jobs] == [
                job.job.job_id]
