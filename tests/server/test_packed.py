"""Encode's response written by hand (server/packed.py) is byte for byte protobuf's own."""

from __future__ import annotations

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
