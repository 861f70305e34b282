"""/metrics of a real ``tokend serve``: the standard gRPC server families, per-worker process
gauges, tokens by tokenizer and the loaded versions; and what grpcio refuses before our code."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tokend.server import metrics
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

SERVICE = "tokend.v1.TokenizerService"
Sample = tuple[str, frozenset[tuple[str, str]]]


def scrape(port: int) -> dict[Sample, float]:
    """Every sample of the server's /metrics, keyed by (name, labels)."""
    url = f"http://127.0.0.1:{port}/metrics"
    body = urllib.request.urlopen(url, timeout=10).read().decode()
    return parse(body)


def parse(body: str) -> dict[Sample, float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }


def value(samples: dict[Sample, float], metric: str, **labels: str) -> float:
    return samples.get((metric, frozenset(labels.items())), 0.0)


def grpc_labels(method: str, grpc_type: str = "unary") -> dict[str, str]:
    return {"grpc_type": grpc_type, "grpc_service": SERVICE, "grpc_method": method}


@pytest.fixture
def stub(tokend_server) -> Iterator[pb_grpc.TokenizerServiceStub]:
    with grpc.insecure_channel(tokend_server.target) as channel:
        yield pb_grpc.TokenizerServiceStub(channel)


class TestGrpcFamilies:
    def test_unary_calls_move_started_handled_messages_and_latency(self, tokend_server,
                                                                   stub) -> None:
        """5 good Encode calls and 2 refused ones move every standard family by that much."""
        port = tokend_server.metrics_port
        labels = grpc_labels("Encode")
        before = scrape(port)
        for _ in range(5):
            stub.Encode(pb.EncodeRequest(tokenizer="r50k_base", texts=["grpc families"]))
        for _ in range(2):
            with pytest.raises(grpc.RpcError) as info:
                stub.Encode(pb.EncodeRequest(tokenizer="no-such-tokenizer", texts=["x"]))
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
        after = scrape(port)

        def moved(name: str, **extra: str) -> float:
            return value(after, name, **labels, **extra) - value(before, name, **labels, **extra)

        assert moved("grpc_server_started_total") == 7
        assert moved("grpc_server_handled_total", grpc_code="OK") == 5
        assert moved("grpc_server_handled_total", grpc_code="NOT_FOUND") == 2
        assert moved("grpc_server_msg_received_total") == 7
        assert moved("grpc_server_msg_sent_total") == 5
        assert moved("grpc_server_handling_seconds_count") == 7
        assert moved("grpc_server_handling_seconds_bucket", le="30.0") == 7
        les = {dict(k[1])["le"] for k in after if k[0] == "grpc_server_handling_seconds_bucket"}
        assert {"5e-05", "30.0", "+Inf"} <= les

    def test_a_stream_counts_each_message(self, tokend_server, stub) -> None:
        """EncodeStream: one started and handled call, a message per request and response."""
        port = tokend_server.metrics_port
        labels = grpc_labels("EncodeStream", "bidi_stream")
        before = scrape(port)
        requests = [pb.EncodeStreamRequest(tokenizer="r50k_base", text="abc " * 10)]
        requests += [pb.EncodeStreamRequest(text="def " * 10) for _ in range(3)]
        responses = list(stub.EncodeStream(iter(requests)))
        after = scrape(port)

        def moved(name: str, **extra: str) -> float:
            return value(after, name, **labels, **extra) - value(before, name, **labels, **extra)

        assert moved("grpc_server_started_total") == 1
        assert moved("grpc_server_handled_total", grpc_code="OK") == 1
        assert moved("grpc_server_msg_received_total") == 4
        assert moved("grpc_server_msg_sent_total") == len(responses) >= 1

    def test_a_message_grpcio_refuses_is_started_but_never_handled(self, inproc) -> None:
        """Over --max-message-bytes grpcio ends the call before any handler: started counts
        it, handled cannot (metrics.py documents the gap)."""
        labels = grpc_labels("Encode")
        before = parse(metrics.render().decode())
        too_big = "x" * (inproc.config.max_message_bytes + 1)
        with pytest.raises(grpc.RpcError) as info:
            inproc.stub.Encode(pb.EncodeRequest(tokenizer="r50k_base", texts=[too_big]))
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        after = parse(metrics.render().decode())

        def moved(name: str) -> float:
            return value(after, name, **labels) - value(before, name, **labels)

        assert moved("grpc_server_started_total") == 1
        assert moved("grpc_server_msg_received_total") == 0
        handled = [k for k in after if k[0] == "grpc_server_handled_total"]
        assert all(after[k] == before.get(k, 0.0) for k in handled)


class TestWorkerAndDomainMetrics:
    def test_each_worker_publishes_its_process_gauges(self, tokend_server) -> None:
        """RSS, CPU seconds, open fds and GC collections, one series per live worker pid."""
        pids = {str(p) for p in tokend_server.wait_event("serving")["pids"]}
        time.sleep(1.0)  # the gauges are refreshed on the workers' poll tick
        samples = scrape(tokend_server.metrics_port)
        for name in ("tokend_worker_resident_memory_bytes", "tokend_worker_cpu_seconds",
                     "tokend_worker_open_fds"):
            per_pid = {dict(k[1])["pid"]: v for k, v in samples.items() if k[0] == name}
            assert set(per_pid) == pids, name
            slots = {dict(k[1])["worker"] for k in samples if k[0] == name}
            assert slots == {"0", "1"}, name
            assert all(v > 0 for v in per_pid.values()), name
        rss = {dict(k[1])["pid"]: v for k, v in samples.items()
               if k[0] == "tokend_worker_resident_memory_bytes"}
        for pid, bytes_ in rss.items():  # the same figure the kernel reports
            pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
            assert abs(bytes_ - pages * 4096) < 64 * 1024 * 1024
        gc0 = [v for k, v in samples.items()
               if k[0] == "tokend_worker_gc_collections" and ("generation", "0") in k[1]]
        assert len(gc0) == len(pids) and all(v > 0 for v in gc0)

    def test_tokens_by_tokenizer_and_loaded_versions(self, tokend_server, stub) -> None:
        """Tokens are counted under the served name only; an unknown name makes no series."""
        port = tokend_server.metrics_port
        before = scrape(port)
        got = stub.Encode(pb.EncodeRequest(tokenizer="r50k_base", texts=["one two", "three"]))
        with pytest.raises(grpc.RpcError):
            stub.Encode(pb.EncodeRequest(tokenizer="client-made-up-name", texts=["x"]))
        time.sleep(1.0)
        after = scrape(port)
        ids = sum(len(r.ids) for r in got.results)
        key = {"tokenizer": "r50k_base", "method": "Encode"}
        assert value(after, "tokend_tokens_total", **key) - value(
            before, "tokend_tokens_total", **key) == ids
        assert not any("client-made-up-name" in str(k) for k in after)
        assert value(after, "tokend_tokenizer_info", name="r50k_base", version="builtin") == 1

    def test_restart_reasons_are_a_bounded_set(self) -> None:
        assert [metrics.restart_reason(c) for c in (-9, -15, None, 1, 3, 0)] == [
            "killed", "killed", "killed", "crashed", "crashed", "exited"]
