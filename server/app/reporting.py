"""Report: bounded, then measured by tokend.core.report (no training on this path).

Training for vocabulary curves stays in the CLI / library: a training run belongs in a Train
job (queued, cancellable, bounded by the job limits), never inside a unary call holding a
handler thread. Limits: --max-report-tokenizers tokenizers, --max-batch texts, and the texts
together at most --max-text-bytes (each tokenizer reads all of them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tokend.core.errors import InvalidInput, TokendError, shown
from tokend.core.report import (
    LanguageCost,
    TokenizerMetrics,
    corpus_texts,
    language_costs,
    load_parallel_corpus,
    measure,
)
from tokend.core.tokenizer import Tokenizer
from tokend.server import limits
from tokend.server.app.context import CallContext, check_alive
from tokend.server.app.fields import with_field
from tokend.server.config import ServerConfig
from tokend.server.tokenizers import Served

SHIPPED_SOURCE = "the shipped parallel corpus (20 languages)"
REQUEST_SOURCE = "the request's texts"


@dataclass(frozen=True, slots=True)
class ReportRequest:
    tokenizers: Sequence[str]
    texts: Sequence[str] = ()  # none: the shipped parallel corpus
    include_languages: bool = False


@dataclass(frozen=True, slots=True)
class Reported:
    texts_source: str
    tokenizers: list[TokenizerMetrics]
    languages: list[LanguageCost]


def report(
    request: ReportRequest,
    context: CallContext,
    config: ServerConfig,
    get: Callable[[str], Served],
) -> Reported:
    """Check the request against the limits, load its tokenizers, measure, convert."""
    tokenizers = _tokenizers(request, config, get)
    texts = list(request.texts)
    limits.check("texts batch size", len(texts), config.max_batch, "--max-batch",
                 field="texts")
    total = 0
    for i, text in enumerate(texts):
        limits.check_text(text, config.max_text_bytes, f"texts[{i}]")
        total += limits.utf8_len(text)
    limits.check("texts size in bytes (all texts together)", total, config.max_text_bytes,
                 "--max-text-bytes", field="texts")
    corpus = load_parallel_corpus()
    source = REQUEST_SOURCE if texts else SHIPPED_SOURCE
    measured = texts or corpus_texts(corpus)
    measures: list[TokenizerMetrics] = []
    for name, tok in tokenizers:
        check_alive(context)
        measures.append(measure(tok, measured, name=name))
    languages: list[LanguageCost] = []
    if request.include_languages:
        check_alive(context)
        languages = list(language_costs(tokenizers, corpus))
    return Reported(source, measures, languages)


def _tokenizers(
    request: ReportRequest, config: ServerConfig, get: Callable[[str], Served]
) -> list[tuple[str, Tokenizer]]:
    """The served tokenizers the request names, each once, within --max-report-tokenizers."""
    refs = list(request.tokenizers)
    if not refs:
        raise with_field(
            InvalidInput("tokenizers is empty: name at least one tokenizer to compare "
                         "(e.g. o200k_base)"),
            "tokenizers",
        )
    limits.check("tokenizers to compare", len(refs), config.max_report_tokenizers,
                 "--max-report-tokenizers", field="tokenizers")
    loaded: list[tuple[str, Tokenizer]] = []
    for i, ref in enumerate(refs):
        field = f"tokenizers[{i}]"
        try:
            served = get(ref)
        except TokendError as exc:
            raise with_field(exc, field) from None
        if any(name == served.ref for name, _ in loaded):
            raise with_field(
                InvalidInput(f"{field} {shown(ref)} is {served.ref}, already compared: name "
                             "each tokenizer once"),
                field,
            )
        loaded.append((served.ref, served.encoding))
    return loaded
