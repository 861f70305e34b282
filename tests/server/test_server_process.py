"""`tokend serve` as a real process: every RPC, concurrency, hot reload, metrics, health,
reflection, worker restarts and a graceful SIGTERM under load."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import tiktoken
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tokend.core.registry import Registry
from tokend.core.training.byte_bpe import train_bpe
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

SERVICE = "tokend.v1.TokenizerService"


def new_stub(target: str) -> tuple[grpc.Channel, pb_grpc.TokenizerServiceStub]:
    """A stub on a channel of its own (its own connection, so possibly another worker)."""
    channel = grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
    return channel, pb_grpc.TokenizerServiceStub(channel)


def publish_trained(registry: Path, name: str, corpus: str, vocab_size: int) -> str:
    result = train_bpe(iter([corpus]), vocab_size, ["<|endoftext|>"])
    info = Registry(registry).publish(name, ranks=result.mergeable_ranks(),
                                      pat_str=result.pattern,
                                      special_tokens=result.special_tokens)
    return info.ref


def reference_for(registry: Path, ref: str) -> tiktoken.Encoding:
    data = Registry(registry).load_data(ref)
    return tiktoken.Encoding(ref, pat_str=data.pat_str, mergeable_ranks=data.ranks,
                             special_tokens=data.special_tokens)


def wait_until(predicate, timeout: float = 15.0, what: str = "condition") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class TestEveryRpc:
    def test_tokenization_rpcs(self, tokend_server, tiktoken_ref) -> None:
        """Encode, EncodeStream, Decode and CountTokens over the real server equal tiktoken."""
        ref = tiktoken_ref("o200k_base")
        text = "Hello, wörld! 1234 🎉 " * 50
        channel, stub = new_stub(tokend_server.target)
        with channel:
            encoded = stub.Encode(pb.EncodeRequest(tokenizer="gpt-4o", texts=[text, "x"]))
            assert [list(r.ids) for r in encoded.results] == [ref.encode(text), ref.encode("x")]
            chunks = [text[i:i + 37] for i in range(0, len(text), 37)]
            requests = [pb.EncodeStreamRequest(tokenizer="o200k_base", text=chunks[0])]
            requests += [pb.EncodeStreamRequest(text=c) for c in chunks[1:]]
            streamed = [i for m in stub.EncodeStream(iter(requests)) for i in m.ids]
            assert streamed == ref.encode(text)
            decoded = stub.Decode(pb.DecodeRequest(tokenizer="o200k_base", ids=ref.encode(text)))
            assert decoded.text == text
            counted = stub.CountTokens(pb.CountTokensRequest(tokenizer="o200k_base",
                                                             texts=[text]))
            assert counted.total == len(ref.encode(text))
            names = {t.name for t in stub.ListTokenizers(pb.ListTokenizersRequest()).tokenizers}
            assert {"o200k_base", "cl100k_base", "r50k_base"} <= names
            manifest = stub.GetTokenizer(pb.GetTokenizerRequest(tokenizer="o200k_base")).manifest
            assert manifest.vocab_size == ref.n_vocab

    def test_health_and_reflection(self, tokend_server) -> None:
        with grpc.insecure_channel(tokend_server.target) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            for service in ("", SERVICE):
                status = health.Check(health_pb2.HealthCheckRequest(service=service)).status
                assert status == health_pb2.HealthCheckResponse.SERVING
            reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
            answer = next(reflection.ServerReflectionInfo(iter([
                reflection_pb2.ServerReflectionRequest(list_services="")])))
            listed = {s.name for s in answer.list_services_response.service}
            assert {SERVICE, "grpc.health.v1.Health"} <= listed

    def test_hundred_concurrent_clients(self, tokend_server, tiktoken_ref) -> None:
        """100 threads, each with its own connection, get exact ids with no failure."""
        ref = tiktoken_ref("cl100k_base")
        failures: list[BaseException] = []
        start = threading.Barrier(100)

        def client(n: int) -> None:
            try:
                channel, stub = new_stub(tokend_server.target)
                with channel:
                    start.wait(30)
                    for k in range(3):
                        text = f"client {n} request {k}: " + "tokens and more tokens " * (n % 7)
                        got = stub.Encode(pb.EncodeRequest(tokenizer="cl100k_base",
                                                           texts=[text]), timeout=60)
                        assert list(got.results[0].ids) == ref.encode(text)
                        count = stub.CountTokens(pb.CountTokensRequest(
                            tokenizer="cl100k_base", texts=[text]), timeout=60)
                        assert count.total == len(ref.encode(text))
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(100)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []


class TestHotReload:
    def test_new_versions_and_alias_moves_without_restart(self, tokend_server,
                                                          fixtures_dir) -> None:
        """Publishing a version, moving an alias or deleting a version changes what every
        worker serves."""
        registry = tokend_server.registry
        corpus = (fixtures_dir / "corpora" / "corpus.en").read_text()
        text = corpus[:3000]
        v1 = publish_trained(registry, "hot", corpus, 300)
        channels = [new_stub(tokend_server.target) for _ in range(8)]
        try:
            for _, stub in channels:
                got = stub.Encode(pb.EncodeRequest(tokenizer="hot", texts=[text]))
                assert got.tokenizer == v1
            v2 = publish_trained(registry, "hot", corpus, 420)
            ref2 = reference_for(registry, v2)

            def all_serve(ref: str, expected_ref: str) -> bool:
                answers = [stub.Encode(pb.EncodeRequest(tokenizer=ref, texts=[text]))
                           for _, stub in channels]
                return all(a.tokenizer == expected_ref for a in answers)

            wait_until(lambda: all_serve("hot", v2), what="every worker to serve hot@2")
            got = channels[0][1].Encode(pb.EncodeRequest(tokenizer="hot", texts=[text]))
            assert list(got.results[0].ids) == ref2.encode(text)
            Registry(registry).set_alias("hot", "stable", 1)
            wait_until(lambda: all_serve("hot@stable", v1), what="alias stable -> 1")
            Registry(registry).set_alias("hot", "stable", 2)
            wait_until(lambda: all_serve("hot@stable", v2), what="alias stable -> 2")
            assert all_serve(v1, v1)  # every worker now serves "hot@1" from its table
            Registry(registry).delete(v1)

            def all_gone() -> bool:
                codes = []
                for _, stub in channels:
                    try:
                        stub.Encode(pb.EncodeRequest(tokenizer=v1, texts=[text]))
                        codes.append(grpc.StatusCode.OK)
                    except grpc.RpcError as exc:
                        codes.append(exc.code())
                return set(codes) == {grpc.StatusCode.NOT_FOUND}

            wait_until(all_gone, what="a deleted version to stop being served")
        finally:
            for channel, _ in channels:
                channel.close()

    def test_failed_load_keeps_serving_the_old_version(self, fresh_server,
                                                       fixtures_dir) -> None:
        """A corrupt new version is not served: the reference keeps its last good version,
        and asking for the corrupt version itself says DATA_LOSS."""
        server = fresh_server(reload_seconds=3600)  # reloads are triggered by hand below
        registry = server.config.registry
        corpus = (fixtures_dir / "corpora" / "corpus.en").read_text()
        v1 = publish_trained(registry, "fragile", corpus, 300)
        assert server.stub.Encode(pb.EncodeRequest(tokenizer="fragile",
                                                   texts=["x"])).tokenizer == v1
        v2 = publish_trained(registry, "fragile", corpus, 320)
        ranks = registry / "fragile" / "2" / "ranks.tiktoken"
        ranks.write_bytes(ranks.read_bytes()[:-10])  # truncated: sha256 no longer matches
        assert server.server.tokenizers.reload_if_changed()  # the poll thread's step
        assert server.stub.Encode(pb.EncodeRequest(tokenizer="fragile",
                                                   texts=["x"])).tokenizer == v1
        with pytest.raises(grpc.RpcError) as info:
            server.stub.Encode(pb.EncodeRequest(tokenizer=v2, texts=["x"]))
        assert info.value.code() == grpc.StatusCode.DATA_LOSS
        assert "ranks.tiktoken" in info.value.details()


class TestMetrics:
    def test_metrics_endpoint_aggregates_workers(self, tokend_server) -> None:
        channel, stub = new_stub(tokend_server.target)
        with channel:
            for _ in range(5):
                stub.Encode(pb.EncodeRequest(tokenizer="r50k_base", texts=["metrics test"]))
            with pytest.raises(grpc.RpcError):
                stub.Encode(pb.EncodeRequest(tokenizer="r50k_base", texts=["x"] * 5000))
            # A burst on one connection (one worker): more calls than --busy-calls (2) arrive
            # together, so some wait in line.
            texts = [f"burst {i} " * 500 + str(j) for i in range(4) for j in range(3)]
            burst = [stub.Encode.future(pb.EncodeRequest(tokenizer="r50k_base", texts=texts))
                     for _ in range(16)]
            assert all(f.result(timeout=60).results for f in burst)
        time.sleep(1.0)  # gauges are refreshed on the workers' poll tick
        url = f"http://127.0.0.1:{tokend_server.metrics_port}/metrics"
        body = urllib.request.urlopen(url, timeout=10).read().decode()
        samples = {}
        for line in body.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                samples[key] = float(value)
        assert samples['tokend_rpcs_total{code="OK",method="Encode"}'] >= 5
        assert samples['tokend_rpcs_total{code="RESOURCE_EXHAUSTED",method="Encode"}'] >= 1
        assert samples['tokend_limit_hits_total{limit="max-batch"}'] >= 1
        assert samples['tokend_tokens_encoded_total{method="Encode"}'] >= 10
        assert any(k.startswith("tokend_rpc_seconds_bucket{") for k in samples)
        assert samples['tokend_cache_misses{tokenizer="r50k_base"}'] >= 1
        assert 'tokend_cache_hits{tokenizer="r50k_base"}' in samples
        assert samples["tokend_calls_waited"] >= 1
        assert samples["tokend_calls_waiting"] == 0  # the burst is over
        # the engine in use is visible: on /metrics and in the serving log line
        from tokend import __version__
        from tokend.core.engine import ENGINE

        assert samples[f'tokend_build_info{{engine="{ENGINE}",version="{__version__}"}}'] == 1
        assert tokend_server.wait_event("serving")["engine"] == ENGINE


class TestLifecycle:
    def test_worker_restart_then_graceful_sigterm_under_load(self, tokend_factory,
                                                             tiktoken_ref) -> None:
        """A killed worker is replaced; on SIGTERM health goes NOT_SERVING, every in-flight
        call completes with the right ids, and the server exits 0."""
        served = tokend_factory("--grace-seconds", "20")
        serving = served.wait_event("serving")
        victim = serving["pids"][0]
        os.kill(victim, signal.SIGKILL)
        served.wait_event("worker_died", pid=victim, timeout=30)
        mark = len(served.events)
        served.wait_event("worker_ready", after=mark, timeout=60)
        url = f"http://127.0.0.1:{served.metrics_port}/metrics"
        body = urllib.request.urlopen(url, timeout=10).read().decode()
        assert 'tokend_worker_restarts_total{reason="killed"} 1.0' in body.splitlines()
        ref = tiktoken_ref("cl100k_base")
        for _ in range(10):  # both slots answer again
            channel, stub = new_stub(served.target)
            with channel:
                got = stub.Encode(pb.EncodeRequest(tokenizer="cl100k_base", texts=["alive"]))
                assert list(got.results[0].ids) == ref.encode("alive")

        # In-flight streams: each has had a response, so the server is surely working on it.
        head = "The quick brown fox jumps over the lazy dog. " * 2000
        tail = " and the end of the stream."
        streams = []
        for _ in range(6):
            channel, stub = new_stub(served.target)
            outbox: queue.Queue[pb.EncodeStreamRequest | None] = queue.Queue()

            def requests(box: queue.Queue[pb.EncodeStreamRequest | None] = outbox,
                         ) -> Iterator[pb.EncodeStreamRequest]:
                while (item := box.get()) is not None:
                    yield item

            outbox.put(pb.EncodeStreamRequest(tokenizer="cl100k_base", text=head))
            outbox.put(pb.EncodeStreamRequest(text=" more"))
            call = stub.EncodeStream(requests(), timeout=60)
            first = next(call)
            streams.append((channel, outbox, call, list(first.ids)))
        health_channel = grpc.insecure_channel(served.target)
        watcher = health_pb2_grpc.HealthStub(health_channel).Watch(
            health_pb2.HealthCheckRequest(service=SERVICE), timeout=60)
        assert next(watcher).status == health_pb2.HealthCheckResponse.SERVING

        served.process.send_signal(signal.SIGTERM)
        assert next(watcher).status == health_pb2.HealthCheckResponse.NOT_SERVING
        served.wait_event("draining", timeout=30)
        for channel, outbox, call, ids in streams:
            outbox.put(pb.EncodeStreamRequest(text=tail))
            outbox.put(None)
            ids += [i for m in call for i in m.ids]
            assert ids == ref.encode(head + " more" + tail)
            channel.close()
        health_channel.close()
        assert served.process.wait(60) == 0
        served.wait_event("exited", timeout=5)


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


class TestOrphans:
    def test_workers_stop_when_the_supervisor_is_killed(self, tokend_factory) -> None:
        """SIGKILL of the supervisor: its workers notice, drain and exit."""
        served = tokend_factory(workers=2)
        pids = served.wait_event("serving")["pids"]
        served.process.kill()
        served.process.wait(10)
        wait_until(lambda: not any(process_alive(pid) for pid in pids), timeout=20,
                   what="orphaned workers to exit")


class TestCommandLine:
    @pytest.mark.parametrize(
        ("args", "needle"),
        [
            (["--port", "70000"], "70000"),
            (["--tls-cert", "/nonexistent.pem"], "--tls-key"),
            (["--workers", "0"], "--workers"),
        ],
    )
    def test_bad_settings_exit_2_with_a_reason(self, args: list[str], needle: str) -> None:
        result = subprocess.run([sys.executable, "-m", "tokend.cli", "serve", *args],
                                check=False, capture_output=True, text=True, timeout=60)
        assert result.returncode == 2
        assert needle in result.stderr

    def test_unusable_files_and_ports_exit_1_with_a_reason(self, tmp_path: Path) -> None:
        """Missing TLS files, a missing --train-dir or a taken metrics port stop start-up."""
        missing = str(tmp_path / "missing.pem")
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = str(taken.getsockname()[1])
            for args, needle in (
                (["--tls-cert", missing, "--tls-key", missing], "--tls-cert"),
                (["--train-dir", str(tmp_path / "nope")], "--train-dir"),
                (["--metrics-port", port], port),
            ):
                result = subprocess.run(
                    [sys.executable, "-m", "tokend.cli", "serve", "--port", "0",
                     "--registry", str(tmp_path / "reg"), *args],
                    check=False, capture_output=True, text=True, timeout=60)
                assert result.returncode == 1, result.stderr
                assert needle in result.stderr

    def test_env_settings_are_read(self, tmp_path: Path) -> None:
        """TOKEND_* variables configure the server when no flag is given."""
        import argparse

        from tokend.commands.serve import register
        from tokend.server.config import config_from

        parser = argparse.ArgumentParser()
        register(parser.add_subparsers())
        args = parser.parse_args(["serve", "--max-batch", "7"])
        config = config_from(args, {"TOKEND_MAX_BATCH": "9", "TOKEND_PORT": "6000",
                                    "TOKEND_REGISTRY": str(tmp_path)})
        assert (config.max_batch, config.port, config.registry) == (7, 6000, tmp_path)
        with pytest.raises(ValueError, match="TOKEND_PORT"):
            config_from(args, {"TOKEND_PORT": "many"})

    def test_busy_calls_setting_reaches_the_handler_pool(self, tmp_path: Path) -> None:
        """--busy-calls / TOKEND_BUSY_CALLS bound the calls a worker runs at once."""
        import argparse

        from tokend.commands.serve import register
        from tokend.server.config import ServerConfig, config_from
        from tokend.server.serving import make_server

        parser = argparse.ArgumentParser()
        register(parser.add_subparsers())
        env = {"TOKEND_BUSY_CALLS": "3", "TOKEND_REGISTRY": str(tmp_path)}
        assert config_from(parser.parse_args(["serve"]), env).busy_calls == 3
        config = config_from(parser.parse_args(["serve", "--busy-calls", "5", "--port", "0"]), env)
        server = make_server(config)
        try:
            assert server.executor is not None and server.executor._max_busy == 5
        finally:
            server.server.stop(None)
        with pytest.raises(ValueError, match="--busy-calls must be at least 1"):
            ServerConfig(busy_calls=0)
