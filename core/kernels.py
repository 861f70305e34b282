"""One switch for every compiled kernel and its pure-Python twin.

The encoding engine, the pair-merge loop and the Unigram lattices are each built twice: in
Cython and in pure Python, with identical results. The compiled one serves when it was built,
unless ``TOKEND_ENGINE=python`` asks every kernel for its twin (tests and debugging).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Literal

KernelName = Literal["compiled", "python"]
KERNEL_NAMES: tuple[KernelName, ...] = ("compiled", "python")


def python_forced() -> bool:
    """Whether the environment says ``TOKEND_ENGINE=python``."""
    return os.environ.get("TOKEND_ENGINE", "").strip().lower() == "python"


def pick(kernel: str | None, compiled: ModuleType | None, what: str) -> KernelName:
    """``kernel`` checked, or the default when None: compiled when built and not forced off.

    ``compiled`` is the extension module (None when it was not built); ``what`` names the
    kernel in the error for a compiled one that is missing.

    >>> pick(None, None, "engine")
    'python'
    """
    if kernel is None:
        return "python" if python_forced() or compiled is None else "compiled"
    if kernel not in KERNEL_NAMES:
        raise ValueError(f"unknown kernel {kernel!r}; choose 'compiled' or 'python'")
    if kernel == "compiled" and compiled is None:
        raise RuntimeError(f"the compiled {what} was not built; reinstall with a C compiler")
    return "compiled" if kernel == "compiled" else "python"
