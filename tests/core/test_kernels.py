"""One switch for every compiled kernel: ``tokend.core.kernels.pick``."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from tokend.core.kernels import pick

BUILT = types.ModuleType("built")


def test_default_is_compiled_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKEND_ENGINE", raising=False)
    assert pick(None, BUILT, "x") == "compiled"
    assert pick(None, None, "x") == "python"


def test_tokend_engine_python_forces_the_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEND_ENGINE", " Python ")
    assert pick(None, BUILT, "x") == "python"
    assert pick("compiled", BUILT, "x") == "compiled"  # an explicit choice still wins


def test_refusals_name_the_problem() -> None:
    with pytest.raises(ValueError, match="unknown kernel 'fast'"):
        pick("fast", BUILT, "x")
    with pytest.raises(RuntimeError, match="the compiled pair merger was not built"):
        pick("compiled", None, "pair merger")


def test_every_kernel_obeys_the_one_switch() -> None:
    """The encoding engine, the pair merger and the Unigram lattices all follow TOKEND_ENGINE."""
    code = ("from tokend.core import engine; from tokend.core.training import merge_kernel, "
            "unigram_kernel; print(engine.ENGINE, merge_kernel.default_kernel(), "
            "unigram_kernel.default_kernel())")
    forced = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env={"TOKEND_ENGINE": "python", "PATH": ""})
    assert forced.stdout.split() == ["python"] * 3
