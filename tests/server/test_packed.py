"""Encode's response written by hand (server/packed.py) is byte for byte protobuf's own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokend.server.packed import encode_response_bytes, pack_ids, response_serializer, varint
from tokend.v1 import tokenizer_pb2 as pb

UINT32 = st.integers(min_value=0, max_value=2**32 - 1)
IDS = st.lists(UINT32, max_size=300)


def protobuf_bytes(tokenizer: str, batch: list[list[int]]) -> bytes:
    return pb.EncodeResponse(
        tokenizer=tokenizer, results=[pb.EncodeResult(ids=ids) for ids in batch]
    ).SerializeToString()


class TestPacked:
    @given(st.text(max_size=200), st.lists(IDS, max_size=6))
    def test_response_equals_protobufs(self, tokenizer: str, batch: list[list[int]]) -> None:
        """Any tokenizer name (empty, non-ASCII, long) and any ids, empty results included."""
        packed = [(pack_ids(ids), len(ids)) for ids in batch]
        assert encode_response_bytes(tokenizer, packed) == protobuf_bytes(tokenizer, batch)

    @given(st.lists(UINT32, min_size=1, max_size=2000))
    def test_long_results_need_multi_byte_lengths(self, ids: list[int]) -> None:
        """Payloads past 127 bytes carry multi-byte length varints, as protobuf writes them."""
        data = encode_response_bytes("o200k_base", [(pack_ids(ids), len(ids))])
        assert data == protobuf_bytes("o200k_base", [ids])
        assert list(pb.EncodeResponse.FromString(data).results[0].ids) == ids

    @given(UINT32)
    def test_varint_is_protobufs(self, value: int) -> None:
        # A packed field of one value: tag, length, then the value's varint.
        serialized = pb.EncodeResult(ids=[value]).SerializeToString()
        assert serialized[2:] == varint(value)

    def test_serializer_passes_bytes_and_serializes_messages(self) -> None:
        message = pb.EncodeResponse(tokenizer="gpt2", results=[pb.EncodeResult(ids=[1, 2])])
        assert response_serializer(message) == message.SerializeToString()
        assert response_serializer(b"\x0a\x01x") == b"\x0a\x01x"


class TestEncodeOverGrpc:
    """Encode served from the engine's packed ids: the bytes protobuf would send, the same
    refusals. The engine's ``encode_varints`` when it has one, else a stand-in writing the
    varints of ``encode``'s ids (the path is the server's either way)."""

    @pytest.fixture
    def server(self, fresh_server: Callable[..., Any]) -> Any:
        running = fresh_server()
        enc = running.server.tokenizers.get("o200k_base").encoding

        def stand_in(text: str, *, allowed_special: Any = frozenset(),
                     disallowed_special: Any = "all") -> tuple[bytes, int]:
            ids = enc.encode(text, allowed_special=allowed_special,
                             disallowed_special=disallowed_special)
            return pack_ids(ids), len(ids)

        engines = getattr(enc, "encode_varints", stand_in)
        running.packed_calls = []

        def counted(text: str, **policy: Any) -> tuple[bytes, int]:
            running.packed_calls.append(text)
            return engines(text, **policy)  # type: ignore[no-any-return]

        object.__setattr__(enc, "encode_varints", counted)
        return running

    def test_bytes_are_protobufs(self, server: Any, tiktoken_ref: Any) -> None:
        texts = ["hello world", "", "naïve café 😀 " * 50, "<|endoftext|> as text"]
        request = pb.EncodeRequest(tokenizer="o200k_base", texts=texts,
                                   special_tokens=pb.SpecialTokenPolicy(
                                       disallowed_mode=pb.DISALLOWED_SPECIAL_NONE))
        raw = server.channel.unary_unary("/tokend.v1.TokenizerService/Encode")(
            request.SerializeToString())
        ref = tiktoken_ref("o200k_base")
        batch = [ref.encode(t, disallowed_special=()) for t in texts]
        assert raw == protobuf_bytes("o200k_base", batch)
        assert server.packed_calls == texts  # the packed path answered, no list of ids

    def test_refusals_are_unchanged(self, server: Any) -> None:
        with pytest.raises(grpc.RpcError) as refused:
            server.stub.Encode(pb.EncodeRequest(tokenizer="o200k_base",
                                                texts=["ok", "a <|endoftext|>"]))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "texts[1]" in (refused.value.details() or "")
        too_many = "word " * (server.config.max_ids + 10)
        with pytest.raises(grpc.RpcError) as limited:
            server.stub.Encode(pb.EncodeRequest(tokenizer="o200k_base", texts=[too_many]))
        assert limited.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

    def test_details_and_framing_still_come_as_lists(self, server: Any,
                                                     tiktoken_ref: Any) -> None:
        response = server.stub.Encode(pb.EncodeRequest(tokenizer="o200k_base",
                                                       texts=["hello world"],
                                                       include_details=True))
        ids = tiktoken_ref("o200k_base").encode("hello world")
        assert list(response.results[0].ids) == ids
        assert [d.id for d in response.results[0].details] == ids
