"""Fuzzing every RPC of a real ``tokend serve`` with hypothesis-generated requests.

Requests are drawn from each request message's descriptor (any strings, numbers, enums,
repeated and nested fields, oneofs), and raw bytes are drawn by mutating valid requests. Any
answer is fine except INTERNAL / UNKNOWN (an unhandled error), DEADLINE_EXCEEDED (a hang: every
call has a 20 s deadline) and UNAVAILABLE (a crashed worker); afterwards the workers' RSS must
not have grown beyond a small allowance. Bounded for CI: a few hundred examples in all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from bad_inputs import SHAPES
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokend_process import ServedProcess, start_tokend

from tokend.v1 import tokenizer_pb2 as pb

SERVICE = pb.DESCRIPTOR.services_by_name["TokenizerService"]
BAD_CODES = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN,
             grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE}
# RSS a worker may gain over the fuzzing after a warm-up (allocator noise, small caches).
RSS_ALLOWANCE_MB = 25.0

VALID_TOKENIZERS = ["o200k_base", "cl100k_base", "gpt2", "gpt-4o"]
BAD_TOKENIZERS = ["nope", "", "x@1", "A", "o200k_base@2"]
SPECIALS = ["<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>", "<|x|>", ""]
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
# Strings worth more than random text in some fields.
FIELD_STRINGS: dict[str, st.SearchStrategy[str]] = {
    # Mostly valid: a request refused at its first field would never reach the rest.
    # (free-text names are the catalogue's and the mutation test's business)
    "tokenizer": st.sampled_from(VALID_TOKENIZERS * 3 + BAD_TOKENIZERS),
    "allowed": st.sampled_from(SPECIALS[:3]) | st.sampled_from(SPECIALS) | text,
    "disallowed": st.sampled_from(SPECIALS[:3]) | st.sampled_from(SPECIALS) | text,
    "texts": text | st.sampled_from(["hello <|endoftext|> world", "🎉" * 30, " " * 100]),
    "job_id": st.sampled_from(["0" * 32, "f" * 32]) | text,
    "name": st.sampled_from(["fuzz", "o200k_base", "Bad Name"]) | text,
    "pattern": st.sampled_from(["", "gpt2", "o200k", "(", "a*", r"\w+|\s+"]) | text,
    "corpus_path": st.sampled_from(["corpus.txt", "../x", "/etc/passwd", ""]) | text,
}
ALWAYS = {"tokenizer", "config"}  # fields a request is rarely without
INT_RANGES = {
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
}


def scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return FIELD_STRINGS.get(field.name, text)
    if kind == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=200) | st.text(max_size=200).map(str.encode)
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind == FieldDescriptor.TYPE_ENUM:
        return st.integers(0, 3) | st.integers(-2, 6)  # known values and unknown ones
    if field.name == "vocab_size":
        return st.integers(0, 2**32 - 1) | st.integers(250, 400)
    if field.name in ("ids",):
        return st.integers(0, 2**32 - 1) | st.integers(0, 300_000)
    low, high = INT_RANGES.get(kind, (0, 2**32 - 1))
    # Edges first: hypothesis draws small integers far more often than huge ones.
    edges = st.sampled_from([v for v in (high, low, 2**63, 2**63 - 1, 2**32, 2**31, 1)
                             if low <= v <= high])
    return edges | st.integers(low, high)


def message(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """A dict of field name -> value for ``descriptor`` (oneofs: at most one member set)."""
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for field in descriptor.fields:
        if field.message_type is not None:
            if field.message_type.GetOptions().map_entry or depth > 2:
                continue
            value: st.SearchStrategy[Any] = message(field.message_type, depth + 1)
        else:
            value = scalar(field)
        parts[field.name] = st.lists(value, max_size=5) if field.is_repeated else value
    # (a member past the depth limit has no strategy: it is never picked)
    oneofs = {f.name for o in descriptor.oneofs for f in o.fields if f.name in parts}

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        chosen = {name: draw(strategy) for name, strategy in parts.items()
                  if name not in oneofs and (name in ALWAYS or draw(st.integers(0, 3)) > 0)}
        if oneofs:
            pick = draw(st.sampled_from([*sorted(oneofs), ""]))
            if pick:
                chosen[pick] = draw(parts[pick])
        return chosen

    return build()


def to_message(cls: Any, values: dict[str, Any]) -> Any:
    out = cls()
    for name, value in values.items():
        field = cls.DESCRIPTOR.fields_by_name[name]
        if field.message_type is not None:
            items = value if field.is_repeated else [value]
            for item in items:
                target = getattr(out, name).add() if field.is_repeated else getattr(out, name)
                target.CopyFrom(to_message(target.__class__, item))
        elif field.is_repeated:
            getattr(out, name).extend(value)
        else:
            setattr(out, name, value)
    return out


def requests_for(rpc: str) -> st.SearchStrategy[list[bytes]]:
    method = SERVICE.methods_by_name[rpc]
    cls = pb.DESCRIPTOR.message_types_by_name[method.input_type.name]
    one = message(method.input_type).map(lambda v: to_message(
        getattr(pb, cls.name), v).SerializeToString())
    streaming_in, _ = SHAPES[rpc]
    if rpc == "Train":  # mostly a config first, as a client would send
        config = message(pb.TrainConfig.DESCRIPTOR).map(
            lambda v: pb.TrainRequest(config=to_message(pb.TrainConfig, v)).SerializeToString())
        chunks = st.lists(st.binary(max_size=300).map(
            lambda b: pb.TrainRequest(corpus_chunk=b).SerializeToString()), max_size=3)
        sane = st.tuples(config, chunks).map(lambda pair: [pair[0], *pair[1]])
        return sane | sane | st.lists(one, max_size=4)
    return st.lists(one, min_size=0, max_size=4) if streaming_in else one.map(lambda b: [b])


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few bytes flipped, cut or inserted."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "insert"]))
        at = draw(st.integers(0, len(buf)))
        if op == "flip" and at < len(buf):
            buf[at] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del buf[at:at + draw(st.integers(1, 8))]
        else:
            buf[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(buf)


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedProcess]:
    served = start_tokend(
        tmp_path_factory.mktemp("fuzz"), "--max-batch", "8", "--max-text-bytes", "4096",
        "--max-ids", "5000", "--max-corpus-bytes", "4096", "--max-vocab-size", "400",
        "--max-train-jobs", "2", "--train-concurrency", "1", "--cache-entries", "2000",
        workers=1,
    )
    (served.train_dir / "corpus.txt").write_text("a small corpus for fuzzed jobs\n" * 20)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def channel(fuzz_server: ServedProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(fuzz_server.target) as ch:
        yield ch


def send(channel: grpc.Channel, rpc: str, requests: list[bytes], token: str) -> None:
    """Send raw request bytes; fail on a status that means a bug, a hang or a crash."""
    streaming_in, streaming_out = SHAPES[rpc]
    path = f"/{SERVICE.full_name}/{rpc}"
    metadata = (("authorization", f"Bearer {token}"),)
    try:
        if streaming_in and streaming_out:
            list(channel.stream_stream(path)(iter(requests), metadata=metadata, timeout=20))
        elif streaming_in:
            channel.stream_unary(path)(iter(requests), metadata=metadata, timeout=20)
        elif streaming_out:
            call = channel.unary_stream(path)(requests[0], metadata=metadata, timeout=20)
            for _ in call:  # WatchTrainJob follows a real job: one message is enough
                call.cancel()
                break
        else:
            channel.unary_unary(path)(requests[0], metadata=metadata, timeout=20)
    except grpc.RpcError as err:
        if err.code() == grpc.StatusCode.CANCELLED and streaming_out and not streaming_in:
            return
        assert err.code() not in BAD_CODES, f"{rpc}: {err.code().name}: {err.details()}"


def worker_rss_mb(served: ServedProcess) -> dict[int, float]:
    pids = [e["pid"] for e in served.events if e.get("event") == "worker_started"]
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        out[pid] = int(line.split()[1]) / 1024
        except OSError:
            continue
    return out


FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])


class TestFuzzRpcs:
    @pytest.mark.parametrize("rpc", list(SHAPES))
    def test_generated_requests(self, channel, fuzz_server, rpc: str) -> None:
        """Descriptor-generated requests never get INTERNAL, never hang, never crash."""

        @FUZZ
        @given(requests=requests_for(rpc))
        def run(requests: list[bytes]) -> None:
            send(channel, rpc, requests, fuzz_server.admin_token)

        run()

    def test_mutated_bytes(self, channel, fuzz_server) -> None:
        """Valid requests with bytes flipped, cut or inserted: a status, never INTERNAL."""
        valid = {
            "Encode": pb.EncodeRequest(tokenizer="o200k_base", texts=["hello", "wörld"],
                                       special_tokens=pb.SpecialTokenPolicy(allow_all=True)),
            "CountTokens": pb.CountTokensRequest(tokenizer="cl100k_base", texts=["a b c"],
                                                 messages=[pb.ChatMessage(role="user",
                                                                          content="hi")],
                                                 max_tokens=10),
            "Decode": pb.DecodeRequest(tokenizer="gpt2", ids=[1, 2, 3],
                                       batch=[pb.TokenIds(ids=[4, 5])]),
            "GetTokenizer": pb.GetTokenizerRequest(tokenizer="o200k_base"),
            "GetTrainJob": pb.GetTrainJobRequest(job_id="0" * 32),
        }

        @settings(FUZZ, max_examples=80)
        @given(rpc=st.sampled_from(sorted(valid)), data=st.data())
        def run(rpc: str, data: st.DataObject) -> None:
            raw = data.draw(mutated(valid[rpc].SerializeToString()))
            send(channel, rpc, [raw], fuzz_server.admin_token)

        run()

    def test_rss_does_not_grow(self, channel, fuzz_server) -> None:
        """After a warm-up, another round of generated requests leaves the workers' RSS flat.

        Runs after the tests above (same module server), which are the warm-up."""
        before = worker_rss_mb(fuzz_server)
        assert before, "no worker pid in the log"

        @settings(FUZZ, max_examples=60)
        @given(rpc=st.sampled_from(["Encode", "CountTokens", "Decode", "EncodeStream"]),
               data=st.data())
        def run(rpc: str, data: st.DataObject) -> None:
            send(channel, rpc, data.draw(requests_for(rpc)), fuzz_server.admin_token)

        run()
        after = worker_rss_mb(fuzz_server)
        for pid, rss in before.items():
            assert pid in after, f"worker {pid} is gone"
            assert after[pid] - rss < RSS_ALLOWANCE_MB, (before, after)
        assert os.path.exists(f"/proc/{fuzz_server.process.pid}")
