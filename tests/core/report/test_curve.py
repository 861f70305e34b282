"""Tokens vs vocabulary size: cuts of one byte-BPE run equal runs trained to each size."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken

from tokend.core.errors import InvalidInput
from tokend.core.report import training_kinds, vocab_curve
from tokend.core.training.byte_bpe import train_bpe

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
        (point,) = vocab_curve(path, "ab", [1000], kinds=["byte-bpe"], workers=1)
        # Pretokens "ab" x1, " ab" x2: two merges (a+b, then " "+ab), then no pair is left.
        assert (point.vocab_size, point.n_vocab, point.tokens) == (1000, 258, 1)

    def test_kinds_are_the_trainers_own(self) -> None:
        """The curve offers exactly the kinds train_tokenizer dispatches (so it grows with it)."""
        from tokend.core.training import MODEL_KINDS

        assert training_kinds() == tuple(MODEL_KINDS)
        assert "byte-bpe" in training_kinds()

    @pytest.mark.parametrize("kind", ["char", "word-bpe", "wordpiece", "unigram"])
    def test_other_kinds_count_as_hf_does_on_their_export(self, corpus: Path, kind: str) -> None:
        """Each point equals HF's token count with the tokenizer.json of a run to that size."""
        from tokenizers import Tokenizer

        from tokend.core.training import train_tokenizer

        sizes = [60, 120]
        points = vocab_curve(corpus, HELDOUT, sizes, kinds=[kind])
        assert [(p.kind, p.vocab_size) for p in points] == [(kind, s) for s in sizes]
        for point in points:
            trained = train_tokenizer(corpus, point.vocab_size, model=kind)
            hf = Tokenizer.from_str(trained.tokenizer_json_bytes().decode())
            assert point.tokens == len(hf.encode(HELDOUT, add_special_tokens=False).ids)
            assert point.n_vocab == hf.get_vocab_size()

    @pytest.mark.parametrize("sizes, kinds, heldout, match", [
        ([], None, "x", "sizes are empty"),
        ([100], ["byte-bpe"], "x", "byte-bpe needs at least 257"),
        ([1], ["char"], "x", "give at least 2"),
        ([300], ["nope"], "x", "kind 'nope' is not known; known: byte-bpe, char"),
        ([300], None, "  ", "held-out text is empty"),
    ])
    def test_bad_arguments_are_refused(
        self, corpus: Path, sizes: list[int], kinds: list[str] | None, heldout: str, match: str
    ) -> None:
        with pytest.raises(InvalidInput, match=match):
            vocab_curve(corpus, heldout, sizes, kinds=kinds)
