"""A report: per-tokenizer metrics, the per-language cost table and a vocabulary curve.

``build_report`` computes what was asked for; ``Report.to_dict`` is the JSON the CLI prints
(``tokend report --json``) and ``format_report`` the terminal tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tokend.core.errors import InvalidInput
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


@dataclass(frozen=True)
class Report:
    """Everything one ``tokend report`` run measured."""

    texts_source: str  # where the measured texts came from (file names, or the shipped corpus)
    metrics: tuple[TokenizerMetrics, ...]
    languages: tuple[LanguageCost, ...] = ()
    curve: tuple[CurvePoint, ...] = ()
    # The compared tokenizers' tokens on the curve's held-out text: where the curve stands.
    heldout_tokens: tuple[tuple[str, int], ...] = ()

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
        }


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
) -> Report:
    """Measure ``tokenizers`` on ``texts`` (default: the shipped parallel corpus).

    ``languages`` adds the per-language cost table; ``curve`` points (from ``vocab_curve``)
    are carried into the report as they are, and ``heldout`` (the curve's held-out text) is
    counted by each tokenizer so the curve can be read against them.
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
    )
