"""The Unigram trainer's two kernels (compiled and pure Python) give the same results."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unigram_corpus import lines, metaspace_counts

from tokend.core.errors import InvalidInput
from tokend.core.training import unigram_kernel
from tokend.core.training.unigram import train_unigram
from tokend.core.training.unigram_kernel import make_lattices, make_substrings
from tokend.core.training.unigram_lattice import NEG_INF
from tokend.core.training.unigram_seed import char_table, required_characters, seed_pieces


def test_compiled_kernel_is_built() -> None:
    """CI builds the extension; a silent fall-back would leave the compiled twin untested."""
    assert unigram_kernel.COMPILED_AVAILABLE


def both(counts: dict[str, int], whole_word_seeds: bool = True):  # type: ignore[no-untyped-def]
    """Seeds and lattices from each kernel; the seeds and edges must already agree."""
    required = required_characters(counts, 0.9995)
    out = []
    for kernel in ("python", "compiled"):
        subs = make_substrings(kernel, words=list(counts), counts=list(counts.values()),
                               chars=char_table(counts, required), max_length=16,
                               whole_word_seeds=whole_word_seeds)
        assert subs.name == kernel
        seeds = seed_pieces(subs, required, 1_000_000)
        edges = [list(part) for part in subs.lattice_edges(seeds.pieces)]
        out.append((seeds, edges))
    (seeds, edges), (seeds_cc, edges_cc) = out
    assert seeds == seeds_cc
    assert edges == edges_cc
    offsets, starts, ends, pieces, first_word, first_start = edges
    lattices = [
        make_lattices(kernel, lengths=[len(w) for w in counts],
                      counts=[float(c) for c in counts.values()], offsets=offsets,
                      starts=starts, ends=ends, pieces=pieces)
        for kernel in ("python", "compiled")
    ]
    return seeds, first_word, first_start, lattices


class TestTwins:
    @pytest.mark.parametrize("whole_word_seeds", [True, False])
    def test_seeds_and_edges_agree(self, whole_word_seeds: bool) -> None:
        """Both substring tables give the same seeds and the same lattice edges, also with
        several scripts, combining marks, digits and characters outside the coverage."""
        counts = metaspace_counts(lines()[0][:300])
        counts |= {"▁abcабв": 3, "▁e\u0301té": 4, "▁x12,": 5, "▁日本語カナ": 6, "▁☃☃": 1,
                   "▁" + "long" * 10: 2}
        both(counts, whole_word_seeds)

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


words = st.text(alphabet="▁▁▁aabcd1,.аб日カ\u0301☃", min_size=1, max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts=st.dictionaries(words, st.integers(1, 50), min_size=1, max_size=40),
       vocab_size=st.integers(20, 80), whole_word_seeds=st.booleans())
def test_random_corpora_train_the_same_in_both_kernels(
    counts: dict[str, int], vocab_size: int, whole_word_seeds: bool
) -> None:
    """Any small corpus (several scripts, marks, digits, rare characters): same seeds, same
    edges, and the same vocabulary from a whole run."""
    both(counts, whole_word_seeds)
    try:
        py = train_unigram(counts, vocab_size, kernel="python", whole_word_seeds=whole_word_seeds)
    except InvalidInput:
        with pytest.raises(InvalidInput):
            train_unigram(counts, vocab_size, kernel="compiled")
        return
    cc = train_unigram(counts, vocab_size, kernel="compiled", whole_word_seeds=whole_word_seeds)
    assert [p for p, _ in py.pieces] == [p for p, _ in cc.pieces]
