"""Tokenizer lint: what a vocabulary gets wrong or does oddly, and what changed between two.

``lint_tokenizer`` reports unreachable tokens, partial-UTF-8 tokens, holes, broken special
tokens, round-trip failures and ranked glitch candidates, with summaries (trailing-space twins,
digit grouping, cost per language); ``diff_tokenizers`` compares two versions. Plain Python
over the ``Tokenizer`` protocol: every family the registry serves. Method and limits:
``docs/lint.md``.
"""

from __future__ import annotations

from tokend.core.lint.lint import (
    lint_tokenizer,
    manifest_summary,
    read_manifest_summary,
)
from tokend.core.lint.model import KINDS, LINT_FORMAT, Finding, LintReport, token_dict

__all__ = [
    "KINDS",
    "LINT_FORMAT",
    "Finding",
    "LintReport",
    "lint_tokenizer",
    "manifest_summary",
    "read_manifest_summary",
    "token_dict",
]
