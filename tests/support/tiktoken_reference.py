"""The tests' reference encoder: tiktoken built offline from the rank files tokend ships.

Importable from any test as ``from tiktoken_reference import reference`` (pyproject puts
``tests/support`` on pytest's ``pythonpath``). The ranks come from ``get_encoding`` (sha256-checked
against the shipped file on load), so the comparison is tokend's merging against tiktoken's.
"""

from __future__ import annotations

import functools

import tiktoken

from tokend.core import get_encoding
from tokend.core.engine.builtins import load_builtin_spec


@functools.cache
def reference(name: str) -> tiktoken.Encoding:
    """tiktoken's encoding for the built-in ``name`` (one shared instance per name)."""
    spec = load_builtin_spec(name)
    return tiktoken.Encoding(
        name,
        pat_str=spec["pat_str"],
        mergeable_ranks=get_encoding(name).mergeable_ranks,
        special_tokens=spec["special_tokens"],
        explicit_n_vocab=spec.get("explicit_n_vocab"),
    )
