"""The Report RPC: bounded, then measured by tokend.core.report (no training on this path).

Training for vocabulary curves stays in the CLI / library: a training run belongs in a Train
job (queued, cancellable, bounded by the job limits), never inside a unary call holding a
handler thread. Limits: --max-report-tokenizers tokenizers, --max-batch texts, and the texts
together at most --max-text-bytes (each tokenizer reads all of them).
"""

from __future__ import annotations

from collections.abc import Callable

import grpc

from tokend.core.errors import InvalidInput, TokendError, shown
from tokend.core.report import (
    corpus_texts,
    language_costs,
    load_parallel_corpus,
    measure,
)
from tokend.core.tokenizer import Tokenizer
from tokend.server import limits
from tokend.server.config import ServerConfig
from tokend.server.errors import with_field
from tokend.server.tokenizers import Served
from tokend.v1 import tokenizer_pb2 as pb

SHIPPED_SOURCE = "the shipped parallel corpus (20 languages)"
REQUEST_SOURCE = "the request's texts"


def report_response(
    request: pb.ReportRequest,
    context: grpc.ServicerContext,
    config: ServerConfig,
    get: Callable[[str], Served],
) -> pb.ReportResponse:
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
    response = pb.ReportResponse(texts_source=source)
    for name, tok in tokenizers:
        limits.check_alive(context)
        m = measure(tok, measured, name=name)
        response.tokenizers.add(
            tokenizer=m.tokenizer, n_vocab=m.n_vocab, texts=m.texts, bytes=m.bytes,
            chars=m.chars, words=m.words, tokens=m.tokens, distinct_tokens=m.distinct_tokens,
            bytes_per_token=m.bytes_per_token, chars_per_token=m.chars_per_token,
            tokens_per_word=m.tokens_per_word, vocab_used=m.vocab_used,
        )
    if request.include_languages:
        limits.check_alive(context)
        for row in language_costs(tokenizers, corpus):
            response.languages.add(
                tokenizer=row.tokenizer, language=row.language, name=row.name, bytes=row.bytes,
                tokens=row.tokens, relative=row.relative, bytes_per_token=row.bytes_per_token,
            )
    return response


def _tokenizers(
    request: pb.ReportRequest, config: ServerConfig, get: Callable[[str], Served]
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
