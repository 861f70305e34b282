"""``diff_tokenizers`` on encodings built here: added, removed, changed, moved, reordered."""

from __future__ import annotations

from tokend.core import Encoding, get_encoding
from tokend.core.lint.diff import diff_tokenizers, longest_increasing
from tokend.core.patterns import GPT2_PATTERN

BYTES = {bytes([b]): b for b in range(256)}


def enc(extra: list[bytes], specials: dict[str, int] | None = None) -> Encoding:
    ranks = dict(BYTES)
    for token in extra:
        ranks[token] = len(ranks)
    return Encoding("e", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                    special_tokens=specials or {})


class TestDiff:
    def test_longest_increasing(self) -> None:
        assert longest_increasing([]) == 0
        assert longest_increasing([3, 1, 2, 5, 4]) == 3

    def test_swapped_merges_change_bytes_move_ids_and_reorder(self) -> None:
        diff = diff_tokenizers(enc([b"ab", b"cd", b"ef"]), enc([b"cd", b"ab", b"ef", b"gh"]))
        s = diff["summary"]
        assert (s["added"], s["removed"], s["changed"], s["moved"]) == (1, 0, 2, 2)
        assert s["reordered_merges"] == 1
        assert [row["id"] for row in diff["changed"]] == [256, 257]
        assert len(diff["errors"]) == 2 and "256" in diff["errors"][0]
        assert diff["added"][0]["token"]["text"] == "gh"

    def test_special_changes(self) -> None:
        diff = diff_tokenizers(enc([b"ab"], {"<|a|>": 300, "<|b|>": 301}),
                               enc([b"ab"], {"<|a|>": 302, "<|c|>": 301}))
        assert diff["specials"] == {"added": ["<|c|>"], "removed": ["<|b|>"],
                                    "changed_id": ["<|a|>"]}
        assert any("<|a|>" in e for e in diff["errors"])

    def test_same_tokenizer_has_no_changes_and_ratio_one(self) -> None:
        r50k = get_encoding("r50k_base")
        diff = diff_tokenizers(r50k, r50k)
        assert set(diff["summary"].values()) == {0}
        assert {row["ratio"] for row in diff["languages"]} == {1.0}
        assert diff["texts"] == []

    def test_languages_and_texts_between_builtins(self) -> None:
        """r50k -> o200k: fewer tokens for most languages; texts sorted by relative change."""
        a, b = get_encoding("r50k_base"), get_encoding("o200k_base")
        diff = diff_tokenizers(a, b, top=3)
        hi = next(r for r in diff["languages"] if r["language"] == "hi")
        assert hi["ratio"] < 0.5
        changes = [abs(r["b"] - r["a"]) / r["a"] for r in diff["texts"]]
        assert len(changes) == 3 and changes == sorted(changes, reverse=True)
