"""Regression tests of the hardening issue's bugs, each through a real ``tokend serve``."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2

from tokend.core.registry import Registry
from tokend.core.training.byte_bpe import train_bpe
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

SERVICE = "tokend.v1.TokenizerService"


def rpc_error(call) -> grpc.RpcError:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value  # type: ignore[return-value]


def metric_samples(port: int) -> dict[str, float]:
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    samples = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples


class TestCountTokensMaxTokens:
    def test_any_uint64_answers_or_is_invalid_naming_the_field(self, tokend_server) -> None:
        """Bug 1: max_tokens near 2^64 was INTERNAL (remaining overflowed its int64)."""
        with grpc.insecure_channel(tokend_server.target) as channel:
            stub = pb_grpc.TokenizerServiceStub(channel)
            largest = 2**63 - 1
            ok = stub.CountTokens(pb.CountTokensRequest(
                tokenizer="o200k_base", texts=["hello world"], max_tokens=largest))
            assert (ok.total, ok.fits, ok.remaining) == (2, True, largest - 2)
            for value in (2**63, 2**64 - 1):
                err = rpc_error(lambda v=value: stub.CountTokens(pb.CountTokensRequest(
                    tokenizer="o200k_base", texts=["hello world"], max_tokens=v)))
                assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert err.details().startswith("max_tokens is")
                assert str(value) in err.details()


class TestOnePortOneInstance:
    def test_a_second_instance_on_a_served_port_refuses_to_start(self, tokend_factory,
                                                                tmp_path) -> None:
        """Bug 2: a second `tokend serve` on the port shared it with the first (split brain)."""
        first = tokend_factory(workers=2)
        result = train_bpe(iter(["only the first instance has this one " * 20]), 300, [])
        Registry(first.registry).publish("only-first", ranks=result.mergeable_ranks(),
                                         pat_str=result.pattern, special_tokens={})
        port = first.target.rpartition(":")[2]
        for host in ("127.0.0.1", "0.0.0.0"):
            second = subprocess.run(
                [sys.executable, "-m", "tokend.cli", "serve", "--host", host, "--port", port,
                 "--allow-open-training",
                 "--workers", "1", "--metrics-port", "0", "--registry",
                 str(tmp_path / "other-registry")],
                capture_output=True, text=True, timeout=120, check=False,
            )
            assert second.returncode == 1, second.stderr
            assert f"{host}:{port}: the port is already in use" in second.stderr
            assert "choose another --port" in second.stderr
        # Every connection still reaches the first instance's registry.
        time.sleep(0.5)  # the first instance's poll picks up the new version
        for _ in range(16):
            channel = grpc.insecure_channel(
                first.target, options=[("grpc.use_local_subchannel_pool", 1)])
            with channel:
                stub = pb_grpc.TokenizerServiceStub(channel)
                answer = stub.CountTokens(pb.CountTokensRequest(tokenizer="only-first",
                                                                texts=["only"]), timeout=30)
                assert answer.tokenizer == "only-first@1"


class TestBoundedEcho:
    @pytest.mark.parametrize("size", [6 * 1024, 64 * 1024])
    def test_a_huge_value_is_echoed_as_a_bounded_prefix(self, tokend_server, size: int) -> None:
        """Bug 3: a ~6 KB name was echoed in full; the trailers overflowed the client's 16 KiB
        limit and it saw RESOURCE_EXHAUSTED "Stream removed"."""
        name = "y" * size
        with grpc.insecure_channel(tokend_server.target) as channel:
            stub = pb_grpc.TokenizerServiceStub(channel)
            calls = [
                lambda: stub.Encode(pb.EncodeRequest(tokenizer=name, texts=["a"])),
                lambda: stub.GetTokenizer(pb.GetTokenizerRequest(tokenizer=name)),
                lambda: stub.Encode(pb.EncodeRequest(
                    tokenizer="o200k_base", texts=["a"],
                    special_tokens=pb.SpecialTokenPolicy(allowed=[name]))),
                lambda: stub.GetTrainJob(pb.GetTrainJobRequest(job_id=name)),
                lambda: stub.Train(iter([pb.TrainRequest(config=pb.TrainConfig(
                    name="ok", vocab_size=300, corpus_path=name))]),
                    metadata=(("authorization", f"Bearer {tokend_server.admin_token}"),)),
            ]
            for call in calls:
                err = rpc_error(call)
                assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
                assert f"({size} characters)" in err.details()
                assert len(err.details()) < 1200


class TestInvalidUtf8:
    def test_is_invalid_argument_naming_the_field_and_counted(self, tokend_server) -> None:
        """Bug 4: invalid UTF-8 in a string field was INTERNAL "Exception deserializing
        request!" and not counted in the metrics."""
        key = 'tokend_rpcs_total{code="INVALID_ARGUMENT",method="CountTokens"}'
        before = metric_samples(tokend_server.metrics_port).get(key, 0.0)
        placeholder = "\x01BAD\x01"
        request = pb.CountTokensRequest(tokenizer="o200k_base", texts=["ok"], messages=[
            pb.ChatMessage(role="user", content="fine"),
            pb.ChatMessage(role="user", content=placeholder)]).SerializeToString()
        bad = request.replace(placeholder.encode(), b"\xc3\x28\xff\xfe\xfd")
        with grpc.insecure_channel(tokend_server.target) as channel:
            raw = channel.unary_unary(f"/{SERVICE}/CountTokens")
            for _ in range(3):
                err = rpc_error(lambda: raw(bad, timeout=30))
                assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert err.details().startswith("messages[1].content is not valid UTF-8")
            stream = channel.stream_stream(f"/{SERVICE}/EncodeStream")
            first = pb.EncodeStreamRequest(tokenizer="o200k_base", text="ok").SerializeToString()
            later = pb.EncodeStreamRequest(text=placeholder).SerializeToString().replace(
                placeholder.encode(), b"\xc3\x28\xff\xfe\xfd")
            err = rpc_error(lambda: list(stream(iter([first, later]), timeout=30)))
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "text is not valid UTF-8" in err.details()
        after = metric_samples(tokend_server.metrics_port).get(key, 0.0)
        assert after - before >= 3


class TestCacheEntries:
    def test_the_flag_bounds_the_builtin_encodings_caches(self, tokend_factory) -> None:
        """Bug 5: --cache-entries did not reach the built-ins (o200k_base held 5,520 entries
        with a limit of 100)."""
        served = tokend_factory("--cache-entries", "100", workers=1)
        texts = [" ".join(f"w{i}x{j}" for j in range(50)) for i in range(40)]
        with grpc.insecure_channel(served.target) as channel:
            stub = pb_grpc.TokenizerServiceStub(channel)
            stub.Encode(pb.EncodeRequest(tokenizer="o200k_base", texts=texts[:16]))
            stub.Encode(pb.EncodeRequest(tokenizer="o200k_base", texts=texts[16:32]))
        key = 'tokend_cache_entries{tokenizer="o200k_base"}'
        deadline = time.monotonic() + 15
        while key not in (samples := metric_samples(served.metrics_port)):
            assert time.monotonic() < deadline, "no cache gauge for o200k_base"
            time.sleep(0.2)
        time.sleep(0.5)  # the gauge is published on the poll tick
        samples = metric_samples(served.metrics_port)
        assert 0 < samples[key] <= 100
        # the bound was reached: entries were evicted (whichever engine's unit an entry is)
        assert samples['tokend_cache_evictions{tokenizer="o200k_base"}'] > 0


class TestDisallowedSpecialMessage:
    def test_names_the_request_fields_not_tiktoken_arguments(self, tokend_server) -> None:
        """Bug 6: the error told gRPC clients to pass tiktoken's `allowed_special=...`."""
        with grpc.insecure_channel(tokend_server.target) as channel:
            stub = pb_grpc.TokenizerServiceStub(channel)
            errors = [
                rpc_error(lambda: stub.Encode(pb.EncodeRequest(
                    tokenizer="o200k_base", texts=["a <|endoftext|>"]))),
                rpc_error(lambda: list(stub.EncodeStream(iter([pb.EncodeStreamRequest(
                    tokenizer="o200k_base", text="a <|endoftext|>")])))),
                rpc_error(lambda: stub.CountTokens(pb.CountTokensRequest(
                    tokenizer="o200k_base", texts=["<|endoftext|>"],
                    special_tokens=pb.SpecialTokenPolicy(
                        disallowed_mode=pb.DISALLOWED_SPECIAL_ALL)))),
            ]
        for err in errors:
            details = err.details()
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "'<|endoftext|>'" in details
            assert "special_tokens.allowed" in details and "DISALLOWED_SPECIAL_NONE" in details
            assert "allowed_special" not in details and "disallowed_special" not in details


class TestReflectionV1:
    def test_v1_and_v1alpha_both_list_and_describe(self, tokend_server) -> None:
        """Papercut: reflection was offered only as v1alpha; grpcurl asks for v1."""
        with grpc.insecure_channel(tokend_server.target) as channel:
            for version in ("v1", "v1alpha"):
                call = channel.stream_stream(
                    f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
                    request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                    response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
                )
                listed, described = call(iter([
                    reflection_pb2.ServerReflectionRequest(list_services=""),
                    reflection_pb2.ServerReflectionRequest(
                        file_containing_symbol="grpc.reflection.v1.ServerReflection"),
                ]), timeout=30)
                names = {s.name for s in listed.list_services_response.service}
                assert {SERVICE, "grpc.reflection.v1.ServerReflection",
                        "grpc.reflection.v1alpha.ServerReflection"} <= names
                assert described.file_descriptor_response.file_descriptor_proto


class TestTrainingDefaults:
    def test_a_small_job_reports_numbers_and_the_default_pattern_is_o200k(
            self, tokend_server) -> None:
        """Papercuts: a small job ended showing "done 1/1" (no number had been reported);
        the pattern defaults to o200k's in the RPC as in the library and the CLI."""
        import argparse

        from tokend.commands import train as train_command
        from tokend.core.patterns import DEFAULT_TRAIN_PATTERN, resolve_pattern
        from tokend.core.training.byte_bpe import train_bpe

        assert DEFAULT_TRAIN_PATTERN == "o200k"
        assert train_bpe(iter(["a b c"]), 258).pattern == resolve_pattern("o200k")
        parser = argparse.ArgumentParser()
        train_command.register(parser.add_subparsers())
        args = parser.parse_args(["train", "c.txt", "--vocab-size", "300", "--name", "x"])
        assert args.pattern == "o200k"

        corpus = ("Once upon a time there was a little robot who liked to count tokens. " * 40)
        metadata = (("authorization", f"Bearer {tokend_server.admin_token}"),)
        with grpc.insecure_channel(tokend_server.target) as channel:
            stub = pb_grpc.TokenizerServiceStub(channel)
            job = stub.Train(iter([
                pb.TrainRequest(config=pb.TrainConfig(name="small-defaults", vocab_size=300)),
                pb.TrainRequest(corpus_chunk=corpus.encode()),
            ]), metadata=metadata, timeout=60).job
            assert job.config.pattern == "o200k"
            final = job
            for update in stub.WatchTrainJob(pb.WatchTrainJobRequest(job_id=job.job_id),
                                             timeout=120):
                final = update.job
            assert final.state == pb.TRAIN_JOB_STATE_SUCCEEDED, final.error
            assert final.phase == "done" and final.done == final.total > 0
            manifest = stub.GetTokenizer(pb.GetTokenizerRequest(
                tokenizer=final.published), timeout=30).manifest
        assert manifest.pattern == resolve_pattern("o200k")
        expected = train_bpe(iter([corpus]), 300)
        assert final.total == len(expected.merges)
