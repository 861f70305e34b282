"""Comparing tokenizers: metrics per tokenizer, cost per language, tokens vs vocabulary size.

``build_report`` measures loaded tokenizers on texts (default: the shipped parallel corpus);
``vocab_curve`` trains one tokenizer per vocabulary size and counts a held-out text;
``format_report`` and ``write_plot`` turn a ``Report`` into tables and figures.
"""

from __future__ import annotations

from tokend.core.report.curve import (
    DEFAULT_SIZES,
    CurvePoint,
    training_kinds,
    vocab_curve,
)
from tokend.core.report.languages import (
    Language,
    LanguageCost,
    ParallelCorpus,
    language_costs,
    load_parallel_corpus,
)
from tokend.core.report.metrics import TokenizerMetrics, measure, measure_all
from tokend.core.report.report import (
    REPORT_FORMAT,
    Report,
    build_report,
    corpus_texts,
    report_from_dict,
)
from tokend.core.report.text import format_report

__all__ = [
    "DEFAULT_SIZES",
    "REPORT_FORMAT",
    "CurvePoint",
    "Language",
    "LanguageCost",
    "ParallelCorpus",
    "Report",
    "TokenizerMetrics",
    "build_report",
    "corpus_texts",
    "format_report",
    "language_costs",
    "load_parallel_corpus",
    "measure",
    "measure_all",
    "report_from_dict",
    "training_kinds",
    "vocab_curve",
]
