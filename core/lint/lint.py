"""``lint_tokenizer``: every check on one tokenizer, in one report.

Two depths. ``full`` (``tokend registry lint``) runs everything. The import depth (every
publish, stored in the manifest) leaves out what encodes corpora -- glitch candidates, round
trips and the summaries -- so publishing stays fast on big vocabularies; the checks that can
make a version unusable (duplicate special ids, holes, special-token warnings) run at both,
and so do unreachable tokens, except on the pure-Python pipelines (tokenizer.json,
SentencePiece), where one encode per token takes ~20 s for a 129k vocabulary.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tokend.core.lint.checks import (
    check_holes,
    check_partial_utf8,
    check_round_trip,
    check_specials,
    check_unreachable,
)
from tokend.core.lint.corpora import bundled_texts
from tokend.core.lint.glitch import check_glitch
from tokend.core.lint.model import LINT_FORMAT, LintReport
from tokend.core.lint.summaries import digit_grouping, language_summary, space_twins
from tokend.core.lint.vocab import vocabulary
from tokend.core.pipeline.tokenizer import PipelineTokenizer
from tokend.core.tokenizer import Tokenizer

GLITCH_LIMIT = 50  # glitch candidates listed (all are counted)
SKIPPED_AT_IMPORT = "skipped: not run at import (tokend registry lint runs it)"
SKIPPED_SLOW = ("skipped: not run at import on a pure-Python pipeline (one encode per token); "
                "tokend registry lint runs it")


def lint_tokenizer(
    tokenizer: Tokenizer,
    *,
    name: str | None = None,
    full: bool = True,
    list_partial: bool = False,
    glitch_limit: int = GLITCH_LIMIT,
    check: Callable[[], None] | None = None,
) -> LintReport:
    """Lint ``tokenizer``: findings, counts per kind and (``full``) the summaries.

    ``list_partial`` lists every partial-UTF-8 token (they are always counted). ``check`` is
    called between the checks and every few thousand tokens; it raises to stop the lint (a
    server passes its call's deadline and cancellation).

    >>> from tokend.core import get_encoding
    >>> lint_tokenizer(get_encoding("r50k_base"), full=False).summary()["unreachable"]
    0
    """
    alive = check or _no_check
    started = time.perf_counter()
    alive()
    vocab = vocabulary(tokenizer)
    report = LintReport(name or tokenizer.name, tokenizer.n_vocab)
    alive()
    check_specials(tokenizer, vocab, report)
    alive()
    check_holes(vocab, report)
    alive()
    check_partial_utf8(vocab, report, listed=list_partial)
    alive()
    if full or not isinstance(tokenizer, PipelineTokenizer):
        unreachable = check_unreachable(tokenizer, vocab, report, alive)
    else:
        unreachable = set()
        report.checks["unreachable"] = SKIPPED_SLOW

    if full:
        texts = bundled_texts()
        alive()
        check_round_trip(tokenizer, texts, report)
        alive()
        check_glitch(tokenizer, vocab, report, texts=texts, skip=unreachable,
                     limit=glitch_limit)
        alive()
        twins = space_twins(vocab)
        alive()
        digits = digit_grouping(tokenizer, vocab)
        alive()
        report.summaries = {
            "trailing_space_twins": twins,
            "digits": digits,
            "languages": language_summary(report.tokenizer, tokenizer),
        }
    else:
        report.checks["round-trip"] = report.checks["glitch-candidate"] = SKIPPED_AT_IMPORT
    report.seconds = time.perf_counter() - started
    return report


def _no_check() -> None:
    """The default ``check``: never stops a lint."""


def manifest_summary(report: LintReport) -> dict[str, Any]:
    """What a manifest keeps of a lint: counts, the errors named, what ran (versioned)."""
    return {
        "format": LINT_FORMAT,
        "summary": report.summary(),
        "errors": [f.message for f in report.errors],
        "checks": dict(report.checks),
    }


def read_manifest_summary(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The lint summary a manifest holds; None for versions published before lint existed
    (or with a lint format this tokend does not read)."""
    lint = manifest.get("lint")
    if not isinstance(lint, dict) or lint.get("format") != LINT_FORMAT:
        return None
    if not isinstance(lint.get("summary"), dict):
        return None
    return lint
