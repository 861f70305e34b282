"""Ids without a list: ``encode_to_numpy`` and ``encode_varints`` equal ``encode`` (both engines).

The varint form is checked against protobuf itself: a packed ``repeated uint32 ids = 1`` field
is the tag byte, the payload's length and then exactly these bytes.
"""

from __future__ import annotations

import builtins
import sys
from typing import Any

import numpy as np
import pytest
from fresh_encoding import fresh, shakespeare_text
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_reference import reference

from tokend.core.engine.wire import uint32_buffer, varints
from tokend.v1 import tokenizer_pb2

pytestmark = pytest.mark.usefixtures("each_engine")

NAMES = ["o200k_base", "cl100k_base", "gpt2"]


def packed_field(ids: list[int]) -> bytes:
    """What protobuf writes for ``EncodeResult(ids=ids)``: the packed field's payload."""
    wire = tokenizer_pb2.EncodeResult(ids=ids).SerializeToString()
    if not ids:
        assert wire == b""
        return b""
    assert wire[0] == 0x0A  # field 1, length-delimited
    length, at = 0, 1
    shift = 0
    while True:
        byte = wire[at]
        length |= (byte & 0x7F) << shift
        at += 1
        shift += 7
        if byte < 0x80:
            break
    assert len(wire) == at + length
    return wire[at:]


class TestWire:
    """The pure-Python forms (the reference for the compiled engine's)."""

    @given(ids=st.lists(st.integers(0, 2**32 - 1), max_size=50))
    def test_varints_are_protobufs(self, ids: list[int]) -> None:
        assert varints(ids) == packed_field(ids)

    @given(ids=st.lists(st.integers(0, 2**32 - 1), max_size=50))
    def test_buffer_is_uint32s(self, ids: list[int]) -> None:
        assert np.frombuffer(uint32_buffer(ids), dtype=np.uint32).tolist() == ids


class TestEncodeForms:
    """Every form of the ids equals ``encode``'s list, on both engines."""

    @pytest.mark.parametrize("name", NAMES)
    def test_corpus(self, name: str) -> None:
        text = shakespeare_text()[:120_000]
        enc = fresh(name)
        expected = reference(name).encode_ordinary(text)
        for _ in range(2):  # first sight, then from the caches
            array = enc.encode_to_numpy(text)
            assert array.dtype == np.uint32 and array.tolist() == expected
            data, count = enc.encode_varints(text)
            assert count == len(expected) and data == packed_field(expected)

    @settings(max_examples=150, deadline=None)
    @given(text=st.text(max_size=200))
    def test_arbitrary_unicode(self, text: str) -> None:
        """Any text, lone surrogates and special-token text included (tiktoken's rules)."""
        enc = fresh("o200k_base")
        expected = enc.encode(text, disallowed_special=())
        assert enc.encode_to_numpy(text, disallowed_special=()).tolist() == expected
        assert enc.encode_varints(text, disallowed_special=()) == (
            packed_field(expected),
            len(expected),
        )

    def test_special_tokens(self) -> None:
        """Allowed special tokens come out as their ids; disallowed ones raise as in encode."""
        enc = fresh("cl100k_base")
        text = "a<|endoftext|>b <|fim_prefix|> c"
        expected = enc.encode(text, allowed_special="all")
        assert 100257 in expected
        assert enc.encode_to_numpy(text, allowed_special="all").tolist() == expected
        assert enc.encode_varints(text, allowed_special="all") == (
            packed_field(expected),
            len(expected),
        )
        with pytest.raises(ValueError, match="disallowed special token"):
            enc.encode_to_numpy(text)
        with pytest.raises(ValueError, match="disallowed special token"):
            enc.encode_varints(text)

    def test_empty(self) -> None:
        enc = fresh("o200k_base")
        assert enc.encode_to_numpy("").tolist() == []
        assert enc.encode_varints("") == (b"", 0)


def test_numpy_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without numpy, encode_to_numpy says what is missing and what to use instead."""
    real_import = builtins.__import__

    def no_numpy(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "numpy" or name.startswith("numpy."):
            raise ImportError("No module named 'numpy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "numpy", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_numpy)
    with pytest.raises(ImportError, match=r"needs numpy.*pip install numpy.*Encoding\.encode"):
        fresh("gpt2").encode_to_numpy("hello")
