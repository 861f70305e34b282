"""Rank-table BPE: the short and long merge loops agree with tiktoken's order."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_reference import reference

from tokend.core import get_encoding
from tokend.core.engine import bpe


def naive_merge(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """The textbook loop: merge the lowest-ranked adjacent pair, leftmost first."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        candidates = [
            (ranks[parts[i] + parts[i + 1]], i)
            for i in range(len(parts) - 1)
            if parts[i] + parts[i + 1] in ranks
        ]
        if not candidates:
            break
        _, i = min(candidates)
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts


class TestMerge:
    """merge_parts equals the naive loop and tiktoken's piece encoder."""

    def test_docstring_example(self) -> None:
        """Lowest rank wins even when it is not leftmost."""
        ranks = {b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"ab": 4}
        assert bpe.merge_parts(b"abc", ranks) == [b"a", b"bc"]

    def test_tie_goes_leftmost(self) -> None:
        """Equal ranks (the same pair twice) merge left to right."""
        ranks = {b"a": 0, b"aa": 1}
        assert bpe.merge_parts(b"aaa", ranks) == [b"aa", b"a"]
        assert bpe._merge_long(b"aaa", ranks) == [b"aa", b"a"]
        assert bpe._merge_short(b"aaaaa", ranks) == bpe._merge_long(b"aaaaa", ranks)

    @settings(max_examples=300, deadline=None)
    @given(st.binary(min_size=2, max_size=400))
    def test_short_long_naive_agree(self, data: bytes) -> None:
        """Both loops give the naive result on arbitrary bytes with cl100k ranks."""
        ranks = get_encoding("cl100k_base").mergeable_ranks
        expected = naive_merge(data, ranks) if len(data) <= 60 else bpe._merge_long(data, ranks)
        assert bpe._merge_short(data, ranks) == expected
        assert bpe._merge_long(data, ranks) == expected

    @pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "r50k_base"])
    def test_pathological_pieces_match_tiktoken(self, name: str) -> None:
        """Long single pieces (one letter, random letters, CJK, digits, spaces) match tiktoken."""
        rng = random.Random(7)
        enc, ref = get_encoding(name), reference(name)
        texts = [
            "a" * 20_000,
            "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(20_000)),
            "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(7_000)),
            "".join(rng.choice("0123456789") for _ in range(20_000)),
            " " * 20_000,
            " " * 20_000 + "x",
        ]
        for text in texts:
            assert enc.encode(text) == ref.encode(text), text[:20]

    def test_encode_piece_shortcut(self) -> None:
        """A piece that is a token is returned whole."""
        ranks = {b"a": 0, b"b": 1, b"ab": 5}
        assert bpe.encode_piece(b"ab", ranks, ranks) == [5]
        assert bpe.encode_piece(b"ba", ranks, ranks) == [1, 0]
