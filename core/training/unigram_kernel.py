"""Which implementation of the Unigram trainer's lattices to use: compiled or pure Python.

Both give the same results (``tests/core/training/test_unigram_kernel.py``); the compiled one is
the default when the extension was built, unless ``TOKEND_ENGINE=python`` (the switch the
encoding engine obeys too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Protocol

from tokend.core.kernels import KernelName, pick
from tokend.core.training.unigram_lattice import PyLattices
from tokend.core.training.unigram_seed import PySubstrings, Substrings, Tick

__all__ = ["COMPILED_AVAILABLE", "KernelName", "Lattices", "default_kernel", "make_lattices",
           "make_substrings"]

_compiled: ModuleType | None
try:
    from tokend.core.training import _unigram_lattice as _compiled
except ImportError:  # built without a compiler: the pure-Python twin serves
    _compiled = None

COMPILED_AVAILABLE: bool = _compiled is not None


class Lattices(Protocol):
    """What the trainer asks of the lattices (see ``PyLattices`` for each method)."""

    @property
    def name(self) -> str: ...

    def num_edges(self) -> int: ...

    def drop_dead(self, scores: Sequence[float]) -> None: ...

    def expectations(
        self, scores: Sequence[float], min_score: float
    ) -> tuple[list[float], float]: ...

    def viterbi_counts(self, scores: Sequence[float], min_score: float) -> list[float]: ...

    def second_best(
        self,
        scores: Sequence[float],
        min_score: float,
        pieces: Sequence[int],
        words: Sequence[int],
        starts: Sequence[int],
    ) -> list[tuple[int, list[int]]]: ...


def default_kernel() -> KernelName:
    """``compiled`` when built, unless ``TOKEND_ENGINE=python``."""
    return pick(None, _compiled, "Unigram kernel")


def make_substrings(
    kernel: KernelName | None,
    *,
    words: Sequence[str],
    counts: Sequence[int],
    chars: Mapping[str, tuple[bool, bool, int]],
    max_length: int,
    whole_word_seeds: bool,
    tick: Tick | None = None,
) -> Substrings:
    """The substring table of the words (``kernel`` None: the default); see PySubstrings."""
    chosen = _chosen(kernel)
    if chosen == "compiled":
        assert _compiled is not None  # subtle: _chosen refuses "compiled" when it is not built
        built: Substrings = _compiled.CompiledSubstrings(
            words=words, counts=counts, chars=chars, max_length=max_length,
            whole_word_seeds=whole_word_seeds,
        )
        return built
    return PySubstrings(
        words=words, counts=counts, chars=chars, max_length=max_length,
        whole_word_seeds=whole_word_seeds, tick=tick,
    )


def _chosen(kernel: KernelName | None) -> KernelName:
    return pick(kernel, _compiled, "Unigram kernel")


def make_lattices(
    kernel: KernelName | None,
    *,
    lengths: Sequence[int],
    counts: Sequence[float],
    offsets: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    pieces: Sequence[int],
) -> Lattices:
    """Lattices over the given edges (``kernel`` None: the default)."""
    if _chosen(kernel) == "compiled":
        assert _compiled is not None  # subtle: _chosen refuses "compiled" when it is not built
        built: Lattices = _compiled.CompiledLattices(
            lengths=lengths, counts=counts, offsets=offsets, starts=starts, ends=ends,
            pieces=pieces,
        )
        return built
    return PyLattices(
        lengths=lengths, counts=counts, offsets=offsets, starts=starts, ends=ends, pieces=pieces
    )
