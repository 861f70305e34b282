"""decode_batch / decode_bytes_batch use their thread pool, like tiktoken's."""

from __future__ import annotations

import threading

import pytest

from tokend.core.engine.builtins import get_encoding
from tokend.core.engine.encoding import Encoding


class TestDecodeBatch:
    @pytest.mark.parametrize("method", ["decode_batch", "decode_bytes_batch"])
    def test_num_threads_is_used(self, monkeypatch: pytest.MonkeyPatch, method: str) -> None:
        """Bug 7: decode_batch(num_threads=...) accepted and ignored its argument."""
        enc = get_encoding("cl100k_base")
        threads: set[int] = set()
        gate = threading.Barrier(2, timeout=10)
        original = Encoding.decode_bytes

        def spy(self: Encoding, tokens):  # type: ignore[no-untyped-def]
            threads.add(threading.get_ident())
            gate.wait()  # two sequences decode at once only if two threads run them
            return original(self, tokens)

        monkeypatch.setattr(Encoding, "decode_bytes", spy)
        batch = [enc.encode("hello world"), enc.encode("goodbye")]
        result = getattr(enc, method)(batch, num_threads=2)
        assert len(threads) == 2 and threading.get_ident() not in threads
        expected = [b"hello world", b"goodbye"]
        assert result == (expected if method == "decode_bytes_batch"
                          else [b.decode() for b in expected])

    def test_one_thread_decodes_in_the_caller(self, monkeypatch: pytest.MonkeyPatch) -> None:
        enc = get_encoding("cl100k_base")
        threads: set[int] = set()
        original = Encoding.decode_bytes

        def spy(self: Encoding, tokens):  # type: ignore[no-untyped-def]
            threads.add(threading.get_ident())
            return original(self, tokens)

        monkeypatch.setattr(Encoding, "decode_bytes", spy)
        assert enc.decode_batch([[15339], [1917]], num_threads=1) == ["hello", " world"]
        assert threads == {threading.get_ident()}
