"""Which implementation of the pair-merge loop (word-level BPE, WordPiece) to use.

Both give the same merges in the same order (``tests/core/training/test_merge_kernel.py``);
the compiled one (``_pair_merge.pyx``) is the default when the extension was built, unless
``TOKEND_ENGINE=python`` (the switch the encoding engine and the Unigram kernel obey too).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import Literal, Protocol

from tokend.core.training.pair_merge import Pair, PairMerger

KernelName = Literal["compiled", "python"]

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
    if os.environ.get("TOKEND_ENGINE", "").strip().lower() == "python" or _compiled is None:
        return "python"
    return "compiled"


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
    chosen = default_kernel() if kernel is None else kernel
    if chosen not in ("compiled", "python"):
        raise ValueError(f"unknown kernel {chosen!r}; choose 'compiled' or 'python'")
    if chosen == "compiled":
        if _compiled is None:
            raise RuntimeError(
                "the compiled pair merger was not built; reinstall with a C compiler")
        built: Merger = _compiled.CompiledPairMerger(words, freqs, lengths, score=score,
                                                     check=check)
        return built
    return PairMerger(words, freqs, lengths, score=score, check=check)
