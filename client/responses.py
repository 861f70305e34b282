"""Response messages -> the result dataclasses of ``results.py``, one function per RPC.

Shared by the sync and async clients (through ``calls.py``): the only place a response
message is read, so both clients return equal results for equal responses.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from tokend.client.results import (
    CountBreakdown,
    CountResult,
    DecodeResult,
    DiffChange,
    DiffLanguage,
    DiffMove,
    DiffResult,
    DiffText,
    DiffToken,
    EncodeResult,
    JobState,
    LintFinding,
    LintResult,
    QuotePart,
    QuoteResult,
    ReportLanguage,
    ReportResult,
    ReportTokenizer,
    TextChunk,
    TokenDetail,
    TokenizerManifest,
    TokenizerSummary,
    TrainJob,
    TruncateResult,
)
from tokend.v1 import tokenizer_pb2 as pb

_JOB_STATES: dict[int, JobState] = {
    pb.TRAIN_JOB_STATE_UNSPECIFIED: JobState.UNSPECIFIED,
    pb.TRAIN_JOB_STATE_QUEUED: JobState.QUEUED,
    pb.TRAIN_JOB_STATE_RUNNING: JobState.RUNNING,
    pb.TRAIN_JOB_STATE_SUCCEEDED: JobState.SUCCEEDED,
    pb.TRAIN_JOB_STATE_FAILED: JobState.FAILED,
    pb.TRAIN_JOB_STATE_CANCELLED: JobState.CANCELLED,
}


def encode_results(response: pb.EncodeResponse, *, details: bool) -> list[EncodeResult]:
    """One result per text; ``details`` None unless they were asked for."""
    return [
        EncodeResult(
            tokenizer=response.tokenizer,
            ids=list(result.ids),
            details=[
                TokenDetail(d.id, bytes(d.piece), d.start, d.end, d.special) for d in result.details
            ]
            if details
            else None,
        )
        for result in response.results
    ]


def stream_ids(response: pb.EncodeStreamResponse) -> list[int]:
    """The ids one EncodeStream message makes final."""
    return list(response.ids)


def decode_result(response: pb.DecodeResponse) -> DecodeResult:
    return DecodeResult(response.tokenizer, response.text, bytes(response.data))


def decode_results(response: pb.DecodeResponse) -> list[DecodeResult]:
    return [DecodeResult(response.tokenizer, r.text, bytes(r.data)) for r in response.results]


def count_result(response: pb.CountTokensResponse) -> CountResult:
    return CountResult(
        tokenizer=response.tokenizer,
        counts=list(response.counts),
        messages_count=response.messages_count,
        total=response.total,
        fits=response.fits,
        remaining=response.remaining,
        exact=response.exact,
        estimate_reason=response.estimate_reason,
        chat_rule=response.chat_rule,
        tools_count=response.tools_count,
        images_count=response.images_count,
        model=response.model,
        context_window=response.context_window,
        max_output_tokens=response.max_output_tokens,
        breakdown=CountBreakdown(
            system=response.breakdown.system, messages=response.breakdown.messages,
            tools=response.breakdown.tools, images=response.breakdown.images,
            framing=response.breakdown.framing, texts=response.breakdown.texts,
        ),
    )


def truncate_result(response: pb.TruncateResponse) -> TruncateResult:
    return TruncateResult(
        tokenizer=response.tokenizer, text=response.text, ids=list(response.ids),
        count=response.count, truncated=response.truncated, head_chars=response.head_chars,
        tail_chars=response.tail_chars, exact=response.exact,
        estimate_reason=response.estimate_reason,
    )


def text_chunks_of(response: pb.ChunkResponse) -> list[TextChunk]:
    """The pieces one Chunk message carries."""
    return [
        TextChunk(index=c.index, text=c.text, start=c.start, end=c.end,
                  byte_start=c.byte_start, byte_end=c.byte_end, count=c.count,
                  exact=c.exact, estimate_reason=c.estimate_reason)
        for c in response.chunks
    ]


def report_result(response: pb.ReportResponse) -> ReportResult:
    return ReportResult(
        texts_source=response.texts_source,
        tokenizers=[
            ReportTokenizer(
                tokenizer=t.tokenizer, n_vocab=t.n_vocab, texts=t.texts, bytes=t.bytes,
                chars=t.chars, words=t.words, tokens=t.tokens, distinct_tokens=t.distinct_tokens,
                bytes_per_token=t.bytes_per_token, chars_per_token=t.chars_per_token,
                tokens_per_word=t.tokens_per_word, vocab_used=t.vocab_used,
            )
            for t in response.tokenizers
        ],
        languages=[
            ReportLanguage(
                tokenizer=row.tokenizer, language=row.language, name=row.name, bytes=row.bytes,
                tokens=row.tokens, relative=row.relative, bytes_per_token=row.bytes_per_token,
            )
            for row in response.languages
        ],
    )


_DEPTHS = {pb.LINT_DEPTH_IMPORT: "import", pb.LINT_DEPTH_FULL: "full"}


def lint_result(response: pb.LintResponse) -> LintResult:
    return LintResult(
        tokenizer=response.tokenizer, n_vocab=response.n_vocab,
        depth=_DEPTHS.get(response.depth, "full"),
        findings=[
            LintFinding(
                kind=f.kind, severity=f.severity, id=f.id if f.HasField("id") else None,
                token=f.token if f.HasField("token") else None, message=f.message,
                extra=_json_object(f.extra_json),
            )
            for f in response.findings
        ],
        summary=dict(response.summary), checks=dict(response.checks),
        summaries=_json_object(response.summaries_json), truncated=response.truncated,
        seconds=response.seconds,
    )


def diff_result(response: pb.DiffResponse) -> DiffResult:
    def tokens(rows: Any) -> list[DiffToken]:
        return [DiffToken(t.id, t.token) for t in rows]

    return DiffResult(
        a=response.a, b=response.b, a_n_vocab=response.a_n_vocab,
        b_n_vocab=response.b_n_vocab, summary=dict(response.summary),
        errors=list(response.errors), added=tokens(response.added),
        removed=tokens(response.removed),
        changed=[DiffChange(c.id, c.a.token, c.b.token) for c in response.changed],
        moved=[DiffMove(m.a_id, m.b_id, m.token) for m in response.moved],
        specials_added=list(response.specials_added),
        specials_removed=list(response.specials_removed),
        specials_moved=list(response.specials_moved),
        languages=[DiffLanguage(r.language, r.name, r.a_tokens, r.b_tokens, r.ratio)
                   for r in response.languages],
        texts=[DiffText(t.text, t.a_tokens, t.b_tokens, t.ratio) for t in response.texts],
    )


def _json_object(text: str) -> dict[str, Any]:
    """A JSON object field of a response ("" or anything but an object: empty)."""
    value = json.loads(text) if text else {}
    return value if isinstance(value, dict) else {}


# -- Registry -----------------------------------------------------------------------------------


def tokenizer_summaries(response: pb.ListTokenizersResponse) -> list[TokenizerSummary]:
    return [
        TokenizerSummary(
            name=t.name,
            builtin=t.builtin,
            versions=list(t.versions),
            latest_version=t.latest_version,
            aliases=dict(sorted(t.aliases.items())),
            vocab_size=t.vocab_size,
        )
        for t in response.tokenizers
    ]


def tokenizer_manifest(response: pb.GetTokenizerResponse) -> TokenizerManifest:
    m = response.manifest
    return TokenizerManifest(
        name=m.name,
        version=m.version,
        ref=m.ref,
        builtin=m.builtin,
        vocab_size=m.vocab_size,
        pattern=m.pattern,
        # subtle: a protobuf map iterates in no fixed order; results (and what the CLI
        # prints) list specials by id and the other maps by key, whichever process read them.
        special_tokens=dict(sorted(m.special_tokens.items(), key=lambda item: item[1])),
        sha256=dict(sorted(m.sha256.items())),
        training=TokenizerManifest.parse_training(m.training_json),
        created_at=m.created_at,
        versions=list(m.versions),
        aliases=dict(sorted(m.aliases.items())),
    )


# -- Training -----------------------------------------------------------------------------------


def train_job(job: pb.TrainJob) -> TrainJob:
    return TrainJob(
        job_id=job.job_id,
        name=job.config.name,
        vocab_size=job.config.vocab_size,
        special_tokens=list(job.config.special_tokens),
        pattern=job.config.pattern,
        corpus_path=job.config.corpus_path,
        state=_JOB_STATES.get(job.state, JobState.UNSPECIFIED),
        phase=job.phase,
        done=job.done,
        total=job.total,
        rate=job.rate,
        eta_seconds=job.eta_seconds,
        published=job.published,
        error=job.error,
        created_at=job.created_at,
        finished_at=job.finished_at,
        corpus_bytes=job.corpus_bytes,
        model=job.config.model or "byte-bpe",
        wordpiece_score=job.config.wordpiece_score,
    )


def job_of(
    response: pb.TrainResponse | pb.GetTrainJobResponse | pb.CancelTrainJobResponse,
) -> TrainJob:
    """The job snapshot a Train / GetTrainJob / CancelTrainJob answer carries."""
    return train_job(response.job)


def jobs_of(response: pb.WatchTrainJobResponse) -> list[TrainJob]:
    """The snapshot one WatchTrainJob message carries (as a stream's items)."""
    return [train_job(response.job)]


def train_jobs(response: pb.ListTrainJobsResponse) -> list[TrainJob]:
    return [train_job(job) for job in response.jobs]


def quote_result(response: pb.QuoteResponse) -> QuoteResult:
    prices = response.prices
    return QuoteResult(
        model=response.model, exact=response.exact, estimate_reason=response.estimate_reason,
        input_tokens=response.input_tokens, cache_write_tokens=response.cache_write_tokens,
        cache_write_1h_tokens=response.cache_write_1h_tokens,
        cache_read_tokens=response.cache_read_tokens,
        output_tokens_max=response.output_tokens_max, usd_min=Decimal(response.usd_min),
        usd_max=Decimal(response.usd_max), cache=response.cache, cache_rule=response.cache_rule,
        breakpoints=tuple({"field": b.field, "ttl": b.ttl, "prefix_tokens": b.prefix_tokens}
                          for b in response.breakpoints),
        prices={"source": prices.source, "version": prices.version, "snapshot": prices.snapshot,
                "provider": prices.provider, "model": prices.model},
        parts=tuple(QuotePart(p.part, p.tokens, Decimal(p.usd_per_mtok), Decimal(p.usd))
                    for p in response.parts),
    )
