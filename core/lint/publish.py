"""Lint at publish time: the summary a manifest keeps, and ``strict``'s refusal.

The registry calls these on every publish (import, ``tokend train``, the Train RPC): a rank
table through :func:`lint_ranks`, a kept file through :func:`lint_file` (which builds the
tokenizer, so a file with an unsupported component is refused before anything is written).
With ``strict`` a tokenizer with an error-level finding is refused, each error named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokend.core.engine.encoding import Encoding
from tokend.core.errors import InvalidInput
from tokend.core.formats.files import load_file
from tokend.core.lint.lint import lint_tokenizer, manifest_summary
from tokend.core.tokenizer import NormalizedEncoding, Tokenizer

SHOWN_ERRORS = 10  # errors named in a refusal (all are counted)


def lint_for_publish(tokenizer: Tokenizer, *, name: str, strict: bool) -> dict[str, Any]:
    """The manifest's ``lint`` entry (import depth); with ``strict``, InvalidInput on errors.

    >>> from tokend.core import get_encoding
    >>> lint_for_publish(get_encoding("r50k_base"), name="r", strict=True)["errors"]
    []
    """
    report = lint_tokenizer(tokenizer, name=name, full=False)
    errors = report.errors
    if strict and errors:
        named = "; ".join(f"{f.kind}: {f.message}" for f in errors[:SHOWN_ERRORS])
        more = f" (and {len(errors) - SHOWN_ERRORS} more)" if len(errors) > SHOWN_ERRORS else ""
        raise InvalidInput(
            f"{name}: refused by --strict: {len(errors)} lint error(s): {named}{more}; fix the "
            "tokenizer, or publish without --strict (the errors are kept in the manifest)"
        )
    return manifest_summary(report)


def lint_ranks(
    name: str, ranks: Mapping[bytes, int], *, pat_str: str, special_tokens: Mapping[str, int],
    explicit_n_vocab: int | None, normalizer: str | None, strict: bool,
) -> dict[str, Any]:
    """Lint the rank table about to be published, built as ``build_tokenizer`` builds it."""
    encoding = Encoding(name, pat_str=pat_str, mergeable_ranks=dict(ranks),
                        special_tokens=dict(special_tokens), explicit_n_vocab=explicit_n_vocab)
    tokenizer = encoding if normalizer is None else NormalizedEncoding(encoding, normalizer)
    return lint_for_publish(tokenizer, name=name, strict=strict)


def lint_file(
    name: str, fmt: str, data: bytes, *, strict: bool
) -> tuple[Tokenizer, dict[str, Any]]:
    """Build the tokenizer a kept file describes and lint it: ``(tokenizer, lint entry)``."""
    tokenizer = load_file(fmt, data, name=name)  # as build_tokenizer loads a kept file
    return tokenizer, lint_for_publish(tokenizer, name=name, strict=strict)
