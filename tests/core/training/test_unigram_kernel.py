"""The Unigram trainer's two kernels (compiled and pure Python) give the same results."""

from __future__ import annotations

import math

import pytest
from unigram_corpus import lines, metaspace_counts

from tokend.core.training import unigram_kernel
from tokend.core.training.unigram import _build_lattices, _Clock, train_unigram
from tokend.core.training.unigram_lattice import NEG_INF
from tokend.core.training.unigram_seed import required_characters, seed_pieces


def test_compiled_kernel_is_built() -> None:
    """CI builds the extension; a silent fall-back would leave the compiled twin untested."""
    assert unigram_kernel.COMPILED_AVAILABLE


def both(counts: dict[str, int]):  # type: ignore[no-untyped-def]
    required = required_characters(counts, 0.9995)
    seeds = seed_pieces(counts, required, max_piece_length=16, seed_size=1_000_000)
    out = []
    for kernel in ("python", "compiled"):
        lattices, first_word, first_start = _build_lattices(
            counts, seeds, 16, kernel, _Clock(None, None)  # type: ignore[arg-type]
        )
        out.append(lattices)
    return seeds, first_word, first_start, out


class TestTwins:
    def test_every_method_agrees(self) -> None:
        """Expectations (to 1e-9), Viterbi counts and second-best paths, before and after
        pieces are removed."""
        counts = metaspace_counts(lines()[0][:150])
        seeds, first_word, first_start, (py, cc) = both(counts)
        assert py.num_edges() == cc.num_edges()
        scores = list(seeds.scores)
        for round_ in range(3):
            min_score = min(s for s in scores if s != NEG_INF)
            exp_py, obj_py = py.expectations(scores, min_score)
            exp_cc, obj_cc = cc.expectations(scores, min_score)
            assert obj_py == pytest.approx(obj_cc, rel=1e-12)
            assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
                       for a, b in zip(exp_py, exp_cc, strict=True))
            assert py.viterbi_counts(scores, min_score) == cc.viterbi_counts(scores, min_score)
            alive = [i for i, s in enumerate(scores) if s != NEG_INF]
            args = (alive, [first_word[i] for i in alive], [first_start[i] for i in alive])
            assert py.second_best(scores, min_score, *args) == cc.second_best(
                scores, min_score, *args)
            # remove every third live piece (single characters too: unknown edges appear)
            for i in alive[round_::3]:
                scores[i] = NEG_INF
            py.drop_dead(scores)
            cc.drop_dead(scores)
            assert py.num_edges() == cc.num_edges()

    def test_training_gives_the_same_vocabulary(self) -> None:
        """Whole runs: the same pieces in the same order, scores equal to 1e-9."""
        counts = metaspace_counts(lines()[0][:300])
        py = train_unigram(counts, 400, kernel="python")
        cc = train_unigram(counts, 400, kernel="compiled")
        assert (py.stats.kernel, cc.stats.kernel) == ("python", "compiled")
        assert [p for p, _ in py.pieces] == [p for p, _ in cc.pieces]
        assert all(math.isclose(a, b, rel_tol=1e-9)
                   for (_, a), (_, b) in zip(py.pieces, cc.pieces, strict=True))

    def test_unknown_kernel_is_refused(self) -> None:
        with pytest.raises(ValueError, match="unknown kernel"):
            train_unigram({"▁ab": 2}, 10, kernel="fast")  # type: ignore[arg-type]
