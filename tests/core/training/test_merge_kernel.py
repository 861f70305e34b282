"""The pair-merge loop's two kernels (compiled and pure Python) learn the same merges.

Same pairs in the same order for every score (``count``, ``ratio``, ``gain``), on the paper's
worked example, on real word distributions and on random weighted words; ``test_reference.py``
replays the textbook algorithms under both kernels.
"""

from __future__ import annotations

import gzip
import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.training import merge_kernel
from tokend.core.training.merge_kernel import KernelName, make_merger
from tokend.core.training.pair_merge import SCORES, Pair
from tokend.core.training.wordpiece import _BertWords

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "corpora"
KERNELS: tuple[KernelName, ...] = ("python", "compiled")


def run(
    kernel: KernelName, words: list[list[int]], freqs: list[int], lengths: list[int],
    score: str, *, limit: int = 100_000,
) -> list[Pair]:
    """Merge the best pair until none is left (or ``limit``); the merges in order."""
    lengths = list(lengths)
    merger = make_merger([list(w) for w in words], list(freqs), lengths, score=score,
                         kernel=kernel)
    assert merger.name == kernel
    merges: list[Pair] = []
    while len(merges) < limit:
        best = merger.pop_best()
        if best is None:
            break
        merges.append(best)
        lengths.append(lengths[best[0]] + lengths[best[1]])
        merger.merge(best[0], best[1], len(lengths) - 1)
    return merges


def both(
    words: list[list[int]], freqs: list[int], lengths: list[int], score: str,
    *, limit: int = 100_000,
) -> list[Pair]:
    """The merges of both kernels, which must be equal."""
    merges = [run(k, words, freqs, lengths, score, limit=limit) for k in KERNELS]
    assert merges[0] == merges[1]
    return merges[0]


def wordpiece_symbols(counts: Counter[str]) -> tuple[list[list[int]], list[int], list[int]]:
    """WordPiece's start: each word as ``c ##c ##c``, symbols in first-seen order."""
    sym: dict[str, int] = {}
    words = [[sym.setdefault(c if i == 0 else "##" + c, len(sym)) for i, c in enumerate(w)]
             for w in counts]
    return words, list(counts.values()), [1] * len(sym)


def corpus_words(name: str, max_chars: int) -> Counter[str]:
    path = FIXTURES / name
    data = path.read_bytes()
    text = (gzip.decompress(data) if name.endswith(".gz") else data).decode("utf-8")
    return Counter(_BertWords()(text[:max_chars]))


def test_compiled_kernel_is_built() -> None:
    """CI builds the extension; a silent fall-back would leave the compiled twin untested."""
    assert merge_kernel.COMPILED_AVAILABLE


class TestTwins:
    @pytest.mark.parametrize("score", SCORES)
    def test_worked_example(self, score: str) -> None:
        """The paper's example (low 5, lower 2, newest 6, widest 3, with </w>); under "count"
        the merges it lists, (e,s), (es,t), (est,</w>), (l,o), (lo,w), come first."""
        counts = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
        sym: dict[str, int] = {}
        words = [[sym.setdefault(c, len(sym)) for c in w] for w in counts]
        eow = len(sym)
        names = [*sym, "</w>"]
        merges = both([[*w, eow] for w in words], list(counts.values()), [1] * len(names),
                      score)
        if score == "count":
            for a, b in merges:
                names.append(names[a] + names[b])
            learned = [(names[a], names[b]) for a, b in merges[:5]]
            assert learned == [("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"),
                               ("lo", "w")]

    @pytest.mark.parametrize("score", SCORES)
    @pytest.mark.parametrize(("name", "max_chars", "limit"), [
        ("corpus.en", 140_000, 3000),
        ("shakespeare.txt.gz", 300_000, 1500),
        ("german.txt", 10_000, 10_000),
        ("tinystories_sample.txt", 10_000, 10_000),
        ("address.txt", 10_000, 10_000),
    ])
    def test_real_corpora(self, score: str, name: str, max_chars: int, limit: int) -> None:
        """Real word distributions (Zipf counts, long words, most pairs parked under gain)."""
        words, freqs, lengths = wordpiece_symbols(corpus_words(name, max_chars))
        assert len(both(words, freqs, lengths, score, limit=limit)) > 100

    @settings(max_examples=int(os.environ.get("TOKEND_REF_EXAMPLES", "150")), deadline=None)
    @given(
        st.lists(
            st.tuples(st.lists(st.integers(0, 4), min_size=1, max_size=9),
                      st.integers(1, 40) | st.integers(1, 1 << 45)),
            min_size=1, max_size=14,
        ),
        st.lists(st.integers(1, 3), min_size=5, max_size=5),
        st.sampled_from(SCORES),
    )
    def test_random_weighted_words(
        self, weighted: list[tuple[list[int], int]], lengths: list[int], score: str
    ) -> None:
        """Random words over 5 symbols of random widths: repeats like (a, a, a), ties, and
        counts past 2**53 (where the ratio's product leaves exact doubles)."""
        both([w for w, _ in weighted], [f for _, f in weighted], lengths, score)

    def test_ratio_past_exact_doubles(self) -> None:
        """Products of symbol counts above 2**53 still score as Python's int division."""
        words = [[0, 1], [1, 2], [2, 0], [0, 1, 2]]
        freqs = [(1 << 40) + 3, (1 << 40) + 1, 1 << 40, 7]
        assert len(both(words, freqs, [1, 1, 1], "ratio")) >= 2


class TestContract:
    @pytest.mark.parametrize("kernel", KERNELS)
    def test_check_is_called_and_can_cancel(self, kernel: KernelName) -> None:
        """``check`` runs while indexing; what it raises stops the merger (cancel)."""

        class Cancelled(Exception):
            pass

        def check() -> None:
            raise Cancelled

        with pytest.raises(Cancelled):
            make_merger([[0, 1]], [1], [1, 1], check=check, kernel=kernel)

    @pytest.mark.parametrize("kernel", KERNELS)
    def test_unknown_score_is_refused(self, kernel: KernelName) -> None:
        with pytest.raises(ValueError, match="score must be one of"):
            make_merger([[0, 1]], [1], [1, 1], score="best", kernel=kernel)

    def test_unknown_kernel_is_refused(self) -> None:
        with pytest.raises(ValueError, match="unknown kernel"):
            make_merger([[0, 1]], [1], [1, 1], kernel="fast")  # type: ignore[arg-type]

    def test_symbol_without_width_is_refused(self) -> None:
        """The compiled twin checks ids against ``lengths`` instead of reading past them."""
        with pytest.raises(IndexError, match="no width"):
            make_merger([[0, 5]], [1], [1, 1], kernel="compiled")
        merger = make_merger([[0, 1]], [1], [1, 1], kernel="compiled")
        with pytest.raises(IndexError, match="no width"):
            merger.merge(0, 1, 2)

    @pytest.mark.parametrize(("value", "expected"), [("python", "python"), ("", "compiled"),
                                                     (" Python ", "python")])
    def test_environment_chooses(
        self, monkeypatch: pytest.MonkeyPatch, value: str, expected: str
    ) -> None:
        """TOKEND_ENGINE=python forces the twin; otherwise the compiled kernel serves."""
        monkeypatch.setenv("TOKEND_ENGINE", value)
        assert make_merger([[0, 1]], [1], [1, 1]).name == expected
