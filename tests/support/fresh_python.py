"""Run a snippet in a fresh interpreter: for what a test process has already imported or loaded.

Importable from any test as ``from fresh_python import run_fresh`` (``tests/support`` is on
pytest's ``pythonpath``).
"""

from __future__ import annotations

import subprocess
import sys


def run_fresh(code: str, *, timeout: float = 60) -> str:
    """The standard output of ``python -c code`` in a new process (a failure raises)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=timeout
    ).stdout
