"""Tokens vs vocabulary size: cuts of one byte-BPE run equal runs trained to each size."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken

from tokend.core.errors import InvalidInput
from tokend.core.report import training_kinds, vocab_curve
from tokend.core.train import train_bpe

HELDOUT = "Once upon a time a little girl found a shiny stone in the garden."


@pytest.fixture(scope="module")
def corpus(fixtures_dir: Path) -> Path:
    return fixtures_dir / "corpora" / "tinystories_sample.txt"


class TestVocabCurve:
    def test_each_point_equals_a_run_trained_to_that_size(self, corpus: Path) -> None:
        """The held-out count at each size equals tiktoken's on a run stopped at that size."""
        sizes = [260, 300, 350]
        points = vocab_curve(corpus, HELDOUT, sizes, kinds=["byte-bpe"], workers=1)
        assert [(p.kind, p.vocab_size) for p in points] == [("byte-bpe", s) for s in sizes]
        for point in points:
            direct = train_bpe(corpus, point.vocab_size, workers=1)
            ref = tiktoken.Encoding(f"direct{point.vocab_size}", pat_str=direct.pattern,
                                    mergeable_ranks=direct.mergeable_ranks(), special_tokens={})
            assert point.tokens == len(ref.encode_ordinary(HELDOUT))
            assert point.n_vocab == len(direct.vocab)
            assert point.bytes == len(HELDOUT.encode())
        assert points[0].tokens > points[-1].tokens

    def test_a_size_beyond_the_corpus_stops_where_training_stopped(self, tmp_path: Path) -> None:
        path = tmp_path / "tiny.txt"
        path.write_text("ab ab ab", "utf-8")
        (point,) = vocab_curve(path, "ab", [1000], workers=1)
        # Pretokens "ab" x1, " ab" x2: two merges (a+b, then " "+ab), then no pair is left.
        assert (point.vocab_size, point.n_vocab, point.tokens) == (1000, 258, 1)

    def test_byte_bpe_is_a_kind(self) -> None:
        assert "byte-bpe" in training_kinds()

    @pytest.mark.parametrize("sizes, kinds, heldout, match", [
        ([], None, "x", "sizes are empty"),
        ([100], None, "x", "too small"),
        ([300], ["nope"], "x", "kind 'nope' is not known; known: byte-bpe"),
        ([300], None, "  ", "held-out text is empty"),
    ])
    def test_bad_arguments_are_refused(
        self, corpus: Path, sizes: list[int], kinds: list[str] | None, heldout: str, match: str
    ) -> None:
        with pytest.raises(InvalidInput, match=match):
            vocab_curve(corpus, heldout, sizes, kinds=kinds)
