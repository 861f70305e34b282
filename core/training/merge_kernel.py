"""Which implementation of the pair-merge loop (word-level BPE, WordPiece) to use.

Both give the same merges in the same order (``tests/core/training/test_merge_kernel.py``);
the compiled one (``_pair_merge.pyx``) is the default when the extension was built, unless
``TOKEND_ENGINE=python`` (the switch the encoding engine and the Unigram kernel obey too).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Protocol

from tokend.core.kernels import KernelName, pick
from tokend.core.training.pair_merge import Pair, PairMerger

__all__ = ["COMPILED_AVAILABLE", "KernelName", "Merger", "default_kernel", "make_merger"]

_compiled: ModuleType | None
try:
    from tokend.core.training import _pair_merge as _compiled
except ImportError:  # built without a compiler: the pure-Python twin serves
    _compiled = None

COMPILED_AVAILABLE: bool = _compiled is not None


class Merger(Protocol):
    """What the word-level BPE and WordPiece trainers ask of the loop (see ``PairMerger``)."""

    @property
    def name(self) -> str: ...

    def pop_best(self) -> Pair | None: ...

    def merge(self, a: int, b: int, new: int) -> None: ...


def default_kernel() -> KernelName:
    """``compiled`` when built, unless ``TOKEND_ENGINE=python``."""
    return pick(None, _compiled, "pair merger")


def make_merger(
    words: list[list[int]],
    freqs: list[int],
    lengths: list[int],
    *,
    score: str = "count",
    check: Callable[[], None] = lambda: None,
    kernel: KernelName | None = None,
) -> Merger:
    """A merger over ``words`` (``kernel`` None: the default); arguments as ``PairMerger``'s."""
    if pick(kernel, _compiled, "pair merger") == "compiled":
        assert _compiled is not None  # subtle: pick refuses "compiled" when it is not built
        built: Merger = _compiled.CompiledPairMerger(words, freqs, lengths, score=score,
                                                     check=check)
        return built
    return PairMerger(words, freqs, lengths, score=score, check=check)
