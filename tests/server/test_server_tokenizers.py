"""The per-worker tokenizer table: shared loads, no leftovers from bogus references."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tokend.core.errors import InvalidInput, UnknownTokenizer
from tokend.core.registry import Registry
from tokend.server.tokenizers import Tokenizers


class TestTokenizers:
    def test_concurrent_first_requests_share_one_encoding(self, tmp_path: Path) -> None:
        table = Tokenizers(Registry(tmp_path))
        got = []
        threads = [threading.Thread(target=lambda: got.append(table.get("gpt-4o")))
                   for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({id(s.encoding) for s in got}) == 1
        assert {s.ref for s in got} == {"o200k_base"}

    def test_bogus_references_leave_nothing_behind(self, tmp_path: Path) -> None:
        """Unknown or malformed references are not remembered (a client cannot grow memory)."""
        table = Tokenizers(Registry(tmp_path))
        for i in range(50):
            with pytest.raises(UnknownTokenizer):
                table.get(f"nope-{i}")
            with pytest.raises(InvalidInput):
                table.get(f"Bad {i}")
        assert table._refs == {} and table._load_locks == {}
