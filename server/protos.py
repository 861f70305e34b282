"""The gRPC adapter's conversions: proto requests -> the app layer's typed requests, and typed
results -> proto responses. No rules live here; every check is the app layer's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from tokend.core.counting import Chunk
from tokend.core.counting.breakdown import PARTS
from tokend.core.counting.quote import Quote
from tokend.core.training.spec import DEFAULT_MODEL
from tokend.server.app.catalog import TokenizerManifest, TokenizerSummary
from tokend.server.app.counting import (
    ChunkRequest,
    Chunks,
    Counted,
    CountRequest,
    Truncated,
    TruncateRequest,
)
from tokend.server.app.encoding import (
    Decoded,
    DecodeRequest,
    Encoded,
    EncodeRequest,
    StreamIds,
    StreamStart,
)
from tokend.server.app.linting import Diffed, DiffRequest, DiffToken, Linted, LintRequest
from tokend.server.app.messages import ChatMessage, ContentPart, ImagePart, ToolCall
from tokend.server.app.quoting import QuoteRequest
from tokend.server.app.reporting import Reported, ReportRequest
from tokend.server.app.specials import NO_POLICY, SpecialPolicy
from tokend.server.app.training import TrainConfig, TrainMessage
from tokend.server.jobs import CANCELLED, FAILED, QUEUED, RUNNING, SUCCEEDED, Job
from tokend.server.packed import encode_response_bytes
from tokend.v1 import tokenizer_pb2 as pb

_STATES = {
    QUEUED: pb.TRAIN_JOB_STATE_QUEUED,
    RUNNING: pb.TRAIN_JOB_STATE_RUNNING,
    SUCCEEDED: pb.TRAIN_JOB_STATE_SUCCEEDED,
    FAILED: pb.TRAIN_JOB_STATE_FAILED,
    CANCELLED: pb.TRAIN_JOB_STATE_CANCELLED,
}
_DEPTHS = {pb.LINT_DEPTH_UNSPECIFIED: "", pb.LINT_DEPTH_IMPORT: "import",
           pb.LINT_DEPTH_FULL: "full"}
_DEPTH_ENUMS = {"import": pb.LINT_DEPTH_IMPORT, "full": pb.LINT_DEPTH_FULL}

# -- requests ---------------------------------------------------------------------------------


def policy(message: pb.SpecialTokenPolicy) -> SpecialPolicy:
    if not (message.allowed or message.allow_all or message.disallowed_mode
            or message.disallowed):
        return NO_POLICY
    return SpecialPolicy(tuple(message.allowed), message.allow_all, message.disallowed_mode,
                         tuple(message.disallowed))


def encode_request(request: pb.EncodeRequest, *, packed: bool = False) -> EncodeRequest:
    """``packed``: the caller takes the response as wire bytes (``encode_wire``)."""
    return EncodeRequest(request.tokenizer, request.texts, policy(request.special_tokens),
                         request.include_details, request.add_special_tokens, packed)


def stream_start(first: pb.EncodeStreamRequest | None) -> StreamStart | None:
    if first is None:
        return None
    return StreamStart(first.tokenizer, policy(first.special_tokens), first.text)


def stream_texts(rest: Iterator[pb.EncodeStreamRequest]) -> Iterator[str]:
    for request in rest:
        yield request.text


def decode_request(request: pb.DecodeRequest) -> DecodeRequest:
    return DecodeRequest(request.tokenizer, request.ids, [seq.ids for seq in request.batch])


def count_request(request: pb.CountTokensRequest) -> CountRequest:
    # Positional, in CountRequest's field order (a keyword call costs more, every call).
    messages = request.messages
    return CountRequest(
        request.tokenizer,
        request.texts,
        [chat_message(m) for m in messages] if messages else (),
        request.plain_text,
        policy(request.special_tokens),
        request.max_tokens if request.HasField("max_tokens") else None,
        request.model,
        request.tools_json,
        request.tool_choice,
        request.add_special_tokens,
    )


def chat_message(message: pb.ChatMessage) -> ChatMessage:
    parts = tuple(
        ContentPart(image=ImagePart(part.image.width, part.image.height, part.image.detail,
                                    part.image.url))
        if part.HasField("image") else ContentPart(text=part.text)
        for part in message.parts
    )
    calls = tuple(ToolCall(c.id, c.name, c.arguments) for c in message.tool_calls)
    return ChatMessage(message.role, message.content, message.name, parts, calls,
                       message.tool_call_id)


def truncate_request(request: pb.TruncateRequest) -> TruncateRequest:
    marker = request.marker if request.HasField("marker") else None
    return TruncateRequest(request.tokenizer, request.text, request.max_tokens, request.keep,
                           marker)


def chunk_request(request: pb.ChunkRequest) -> ChunkRequest:
    return ChunkRequest(request.tokenizer, request.text, request.max_tokens, request.overlap)


def report_request(request: pb.ReportRequest) -> ReportRequest:
    return ReportRequest(request.tokenizers, request.texts, request.include_languages)


def lint_request(request: pb.LintRequest) -> LintRequest:
    # An enum value this server does not know reaches the app as its number (and is refused).
    depth = _DEPTHS.get(request.depth, str(request.depth))
    return LintRequest(request.tokenizer, depth, request.list_partial_utf8,
                       request.max_findings)


def diff_request(request: pb.DiffRequest) -> DiffRequest:
    return DiffRequest(request.a, request.b, request.top)


def train_messages(requests: Iterator[pb.TrainRequest]) -> Iterator[TrainMessage]:
    for request in requests:
        payload = request.WhichOneof("payload")
        if payload == "config":
            c = request.config
            yield TrainConfig(c.name, c.vocab_size, tuple(c.special_tokens), c.pattern,
                              c.corpus_path, c.model, c.wordpiece_score)
        elif payload == "corpus_chunk":
            yield request.corpus_chunk
        else:
            yield None


# -- results ----------------------------------------------------------------------------------


def encode_wire(result: Encoded) -> pb.EncodeResponse | bytes:
    """Encode's answer for grpcio: its serialized bytes when the engine wrote the ids as
    packed varints (``packed.py``; the servicer's serializer passes them through), else the
    message."""
    data = _packed_response(result)
    return encode_response(result) if data is None else data


def _packed_response(result: Encoded) -> bytes | None:
    if not result.results or result.results[0].packed is None:
        return None
    return encode_response_bytes(result.tokenizer,
                                 [(item.packed or b"", item.count) for item in result.results])


def encode_response(result: Encoded) -> pb.EncodeResponse:
    data = _packed_response(result)
    if data is not None:
        return pb.EncodeResponse.FromString(data)
    response = pb.EncodeResponse(tokenizer=result.tokenizer)
    for item in result.results:
        out = response.results.add()
        out.ids.extend(item.ids)
        if item.details:
            out.details.extend(
                pb.TokenDetail(id=d.id, piece=d.piece, start=d.start, end=d.end,
                               special=d.special)
                for d in item.details
            )
    return response


def stream_response(piece: StreamIds) -> pb.EncodeStreamResponse:
    return pb.EncodeStreamResponse(tokenizer=piece.tokenizer, ids=piece.ids, count=piece.count,
                                   done=piece.done)


def decode_response(result: Decoded) -> pb.DecodeResponse:
    response = pb.DecodeResponse(tokenizer=result.tokenizer, text=result.text, data=result.data)
    for item in result.results:
        response.results.add(text=item.text, data=item.data)
    return response


# CountTokensResponse's fields that are often at their default (proto3 writes nothing then).
_COUNT_EXTRAS = ("messages_count", "remaining", "estimate_reason", "chat_rule", "tools_count",
                 "images_count", "model", "context_window", "max_output_tokens")


def count_response(result: Counted) -> pb.CountTokensResponse:
    # subtle: only the fields that are not at their default are set (the same message, and
    # the same bytes): half the cost of passing all fifteen, on every CountTokens call.
    response = pb.CountTokensResponse(tokenizer=result.tokenizer, counts=result.counts,
                                      total=result.total, fits=result.fits, exact=result.exact)
    for name in _COUNT_EXTRAS:
        value = getattr(result, name)
        if value:
            setattr(response, name, value)
    breakdown = response.breakdown
    breakdown.SetInParent()  # present even when every part is 0, as it always was
    parts = result.breakdown
    for name in PARTS:
        value = getattr(parts, name)
        if value:
            setattr(breakdown, name, value)
    return response


def truncate_response(truncated: Truncated) -> pb.TruncateResponse:
    result = truncated.result
    return pb.TruncateResponse(
        tokenizer=truncated.tokenizer, text=result.text, ids=result.ids, count=result.count,
        truncated=result.truncated, head_chars=result.head_chars,
        tail_chars=result.tail_chars, exact=result.exact,
        estimate_reason=result.estimate_reason,
    )


def chunk_response(batch: Chunks) -> pb.ChunkResponse:
    return pb.ChunkResponse(tokenizer=batch.tokenizer, chunks=[_chunk(c) for c in batch.chunks],
                            done=batch.done)


def _chunk(piece: Chunk) -> pb.TextChunk:
    return pb.TextChunk(
        index=piece.index, text=piece.text, start=piece.start, end=piece.end,
        byte_start=piece.byte_start, byte_end=piece.byte_end, count=piece.count,
        exact=piece.exact, estimate_reason=piece.estimate_reason,
    )


def list_response(summaries: list[TokenizerSummary]) -> pb.ListTokenizersResponse:
    response = pb.ListTokenizersResponse()
    for info in summaries:
        summary = response.tokenizers.add(
            name=info.name, builtin=info.builtin, versions=info.versions,
            latest_version=info.latest_version, vocab_size=info.vocab_size,
        )
        summary.aliases.update(info.aliases)
    return response


def manifest_response(manifest: TokenizerManifest) -> pb.GetTokenizerResponse:
    out = pb.TokenizerManifest(
        name=manifest.name, version=manifest.version, ref=manifest.ref,
        builtin=manifest.builtin, vocab_size=manifest.vocab_size, pattern=manifest.pattern,
        created_at=manifest.created_at, training_json=manifest.training_json,
        versions=manifest.versions,
    )
    out.special_tokens.update(manifest.special_tokens)
    out.sha256.update(manifest.sha256)
    out.aliases.update(manifest.aliases)
    return pb.GetTokenizerResponse(manifest=out)


def report_response(result: Reported) -> pb.ReportResponse:
    response = pb.ReportResponse(texts_source=result.texts_source)
    for m in result.tokenizers:
        response.tokenizers.add(
            tokenizer=m.tokenizer, n_vocab=m.n_vocab, texts=m.texts, bytes=m.bytes,
            chars=m.chars, words=m.words, tokens=m.tokens, distinct_tokens=m.distinct_tokens,
            bytes_per_token=m.bytes_per_token, chars_per_token=m.chars_per_token,
            tokens_per_word=m.tokens_per_word, vocab_used=m.vocab_used,
        )
    for row in result.languages:
        response.languages.add(
            tokenizer=row.tokenizer, language=row.language, name=row.name, bytes=row.bytes,
            tokens=row.tokens, relative=row.relative, bytes_per_token=row.bytes_per_token,
        )
    return response


def lint_response(result: Linted) -> pb.LintResponse:
    report = result.report
    response = pb.LintResponse(
        tokenizer=result.tokenizer, n_vocab=report.n_vocab, depth=_DEPTH_ENUMS[result.depth],
        summary=report.summary(), checks=report.checks,
        summaries_json=json.dumps(report.summaries, ensure_ascii=False, sort_keys=True),
        truncated=result.truncated, seconds=report.seconds,
    )
    for f in report.findings:
        out = response.findings.add(
            kind=f.kind, severity=f.severity, message=f.message,
            extra_json=json.dumps(f.extra, ensure_ascii=False, sort_keys=True),
        )
        if f.id is not None:
            out.id = f.id
        if f.token is not None:
            out.token = f.token
            out.token_text = f.token.decode("utf-8", "replace")
    return response


def diff_response(result: Diffed) -> pb.DiffResponse:
    return pb.DiffResponse(
        a=result.a, b=result.b, a_n_vocab=result.a_n_vocab, b_n_vocab=result.b_n_vocab,
        summary=result.summary, errors=result.errors,
        added=[_diff_token(t) for t in result.added],
        removed=[_diff_token(t) for t in result.removed],
        changed=[pb.DiffChangedId(id=c.id, a=_diff_token(DiffToken(c.id, c.a)),
                                  b=_diff_token(DiffToken(c.id, c.b))) for c in result.changed],
        moved=[pb.DiffMovedToken(a_id=m.a_id, b_id=m.b_id, token=m.token,
                                 text=m.token.decode("utf-8", "replace")) for m in result.moved],
        specials_added=result.specials_added, specials_removed=result.specials_removed,
        specials_moved=result.specials_moved,
        languages=[pb.DiffLanguage(language=r.language, name=r.name, a_tokens=r.a_tokens,
                                   b_tokens=r.b_tokens, ratio=r.ratio) for r in result.languages],
        texts=[pb.DiffText(text=t.text, a_tokens=t.a_tokens, b_tokens=t.b_tokens, ratio=t.ratio)
               for t in result.texts],
    )


def _diff_token(token: DiffToken) -> pb.DiffToken:
    return pb.DiffToken(id=token.id, token=token.token,
                        text=token.token.decode("utf-8", "replace"))


def job_to_proto(job: Job) -> pb.TrainJob:
    cfg = job["config"]
    return pb.TrainJob(
        job_id=job["job_id"],
        config=pb.TrainConfig(
            name=cfg["name"],
            vocab_size=cfg["vocab_size"],
            special_tokens=cfg["special_tokens"],
            pattern=cfg["pattern"],
            corpus_path=cfg.get("corpus_path", ""),
            model=cfg.get("model", DEFAULT_MODEL),
            wordpiece_score=cfg.get("wordpiece_score", ""),
        ),
        state=_STATES.get(job["state"], pb.TRAIN_JOB_STATE_UNSPECIFIED),
        phase=job.get("phase", ""),
        done=int(job.get("done", 0)),
        total=int(job.get("total", 0)),
        rate=float(job.get("rate", 0.0)),
        eta_seconds=float(job.get("eta_seconds", 0.0)),
        published=job.get("published", ""),
        error=job.get("error", ""),
        created_at=job.get("created_at", ""),
        finished_at=job.get("finished_at", ""),
        corpus_bytes=int(job.get("corpus_bytes", 0)),
    )


# -- Quote (issue 32) ---------------------------------------------------------------------------


def quote_request(request: pb.QuoteRequest) -> QuoteRequest:
    """The app's quote request; the body stays a JSON string (the app parses and checks it)."""
    return QuoteRequest(
        count=count_request(request.count),
        vendor=request.vendor,
        vendor_body=request.vendor_body_json or None,
        max_output_tokens=(request.max_output_tokens if request.HasField("max_output_tokens")
                           else None),
        cache=request.cache,
        provider=request.provider,
    )


def quote_response(quote: Quote) -> pb.QuoteResponse:
    answer = quote.as_dict()
    return pb.QuoteResponse(
        model=answer["model"], exact=answer["exact"], estimate_reason=answer["estimate_reason"],
        input_tokens=answer["input_tokens"], cache_write_tokens=answer["cache_write_tokens"],
        cache_write_1h_tokens=answer["cache_write_1h_tokens"],
        cache_read_tokens=answer["cache_read_tokens"],
        output_tokens_max=answer["output_tokens_max"], usd_min=answer["usd_min"],
        usd_max=answer["usd_max"], cache=answer["cache"], cache_rule=answer["cache_rule"],
        breakpoints=[pb.QuoteBreakpoint(**b) for b in answer["breakpoints"]],
        prices=pb.QuotePrices(**answer["prices"]),
        parts=[pb.QuotePart(**p) for p in answer["parts"]],
    )
