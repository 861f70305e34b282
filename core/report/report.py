"""A report: per-tokenizer metrics, the per-language cost table and a vocabulary curve.

``build_report`` computes what was asked for; ``Report.to_dict`` is the JSON the CLI prints
(``tokend report --json``) and ``format_report`` the terminal tables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.report.curve import CurvePoint
from tokend.core.report.languages import (
    LanguageCost,
    ParallelCorpus,
    language_costs,
    load_parallel_corpus,
)
from tokend.core.report.metrics import TokenizerMetrics, encode_text, measure_all
from tokend.core.tokenizer import Tokenizer

REPORT_FORMAT = "tokend-report-1"
_Row = TypeVar("_Row")


@dataclass(frozen=True)
class Report:
    """Everything one ``tokend report`` run measured."""

    texts_source: str  # where the measured texts came from (file names, or the shipped corpus)
    metrics: tuple[TokenizerMetrics, ...]
    languages: tuple[LanguageCost, ...] = ()
    curve: tuple[CurvePoint, ...] = ()
    # The compared tokenizers' tokens on the curve's held-out text: where the curve stands.
    heldout_tokens: tuple[tuple[str, int], ...] = ()
    # Each tokenizer's lint counts per kind (core.lint, import depth): (name, {kind: count}).
    lint: tuple[tuple[str, dict[str, int]], ...] = ()

    @property
    def tokenizers(self) -> list[str]:
        """The compared tokenizers' names, in order."""
        return [m.tokenizer for m in self.metrics]

    def to_dict(self) -> dict[str, object]:
        """The JSON shape of ``tokend report --json`` (versioned by ``format``)."""
        return {
            "format": REPORT_FORMAT,
            "texts_source": self.texts_source,
            "tokenizers": [m.to_dict() for m in self.metrics],
            "languages": [row.to_dict() for row in self.languages],
            "curve": [point.to_dict() for point in self.curve],
            "heldout_tokens": dict(self.heldout_tokens),
            "lint": {name: dict(counts) for name, counts in self.lint},
        }


def report_from_dict(data: Mapping[str, Any]) -> Report:
    """The Report a ``to_dict`` (``tokend report --json``) holds: re-draw or re-print it.

    Ratios are recomputed from the counts; an unknown format or a missing field is
    CorruptData naming it.
    """
    if not isinstance(data, Mapping) or data.get("format") != REPORT_FORMAT:
        raise CorruptData(f"not a saved report: 'format' must be {REPORT_FORMAT!r}")
    try:
        heldout = data.get("heldout_tokens", {})
        return Report(
            texts_source=str(data["texts_source"]),
            metrics=tuple(_rows(TokenizerMetrics, data["tokenizers"])),
            languages=tuple(_rows(LanguageCost, data.get("languages", []))),
            curve=tuple(_rows(CurvePoint, data.get("curve", []))),
            heldout_tokens=tuple((str(k), int(v)) for k, v in heldout.items()),
            lint=tuple((str(name), {str(k): int(v) for k, v in counts.items()})
                       for name, counts in data.get("lint", {}).items()),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptData(f"saved report: missing or malformed field {exc}") from None


def _rows(cls: type[_Row], rows: Sequence[Mapping[str, Any]]) -> list[_Row]:
    """Each row's fields for ``cls`` (a dataclass), the derived ratios left out."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    return [cls(**{name: row[name] for name in names}) for row in rows]


def corpus_texts(corpus: ParallelCorpus) -> list[str]:
    """Every sentence of every language: the default texts when none are given."""
    return [s for lang in corpus.languages for s in lang.sentences]


def build_report(
    tokenizers: Sequence[tuple[str, Tokenizer]],
    texts: Sequence[str] | None = None,
    *,
    texts_source: str = "",
    languages: bool = True,
    corpus: ParallelCorpus | None = None,
    curve: Sequence[CurvePoint] = (),
    heldout: str | None = None,
    lint: bool = False,
) -> Report:
    """Measure ``tokenizers`` on ``texts`` (default: the shipped parallel corpus).

    ``languages`` adds the per-language cost table; ``curve`` points (from ``vocab_curve``)
    are carried into the report as they are, and ``heldout`` (the curve's held-out text) is
    counted by each tokenizer so the curve can be read against them. ``lint`` adds each
    tokenizer's lint counts (``core.lint`` at import depth: about half a second for o200k).
    """
    if not tokenizers:
        raise InvalidInput("no tokenizers to compare: name at least one, e.g. o200k_base")
    names = [name for name, _ in tokenizers]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidInput(f"tokenizer {duplicates[0]!r} is named twice: name each once")
    parallel = load_parallel_corpus() if corpus is None else corpus  # small: always read
    if texts is None:
        texts = corpus_texts(parallel)
        texts_source = texts_source or "the shipped parallel corpus (20 languages)"
    return Report(
        texts_source=texts_source,
        metrics=tuple(measure_all(tokenizers, texts)),
        languages=tuple(language_costs(tokenizers, parallel)) if languages else (),
        curve=tuple(curve),
        heldout_tokens=() if heldout is None else tuple(
            (name, len(encode_text(tok, heldout))) for name, tok in tokenizers
        ),
        lint=tuple(_lint_counts(tokenizers)) if lint else (),
    )


def _lint_counts(tokenizers: Sequence[tuple[str, Tokenizer]]) -> list[tuple[str, dict[str, int]]]:
    # subtle: core.lint imports core.report.languages; importing it here, not at the top,
    # lets either package be imported first.
    from tokend.core.lint import lint_tokenizer  # noqa: PLC0415

    return [(name, lint_tokenizer(tok, name=name, full=False).summary())
            for name, tok in tokenizers]
