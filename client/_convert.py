"""Proto <-> Python conversion for the client: the only module that touches request/response
messages, shared by the sync and async clients so both build identical requests.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Literal, TypeAlias

from tokend.client.results import (
    ChatMessage,
    CountResult,
    DecodeResult,
    EncodeResult,
    JobState,
    ReportLanguage,
    ReportResult,
    ReportTokenizer,
    TextChunk,
    TokenDetail,
    TokenizerManifest,
    TokenizerSummary,
    TrainJob,
    TrainSpec,
    TruncateResult,
)
from tokend.core.errors import InvalidInput
from tokend.v1 import tokenizer_pb2 as pb

# tiktoken's policy arguments: allowed_special="all" or a set; disallowed_special="all", a
# collection (empty = no check), or None for the RPC's default (see DisallowedSpecial in the proto).
AllowedSpecial: TypeAlias = Literal["all"] | AbstractSet[str]
DisallowedSpecial: TypeAlias = Literal["all"] | Iterable[str] | None
MessageLike: TypeAlias = ChatMessage | Mapping[str, Any]
# count_tokens input: one text, several texts, or chat messages.
CountInput: TypeAlias = str | Sequence[str] | Sequence[MessageLike]

# Chunk sizes of client-streamed payloads: well under gRPC's default 4 MiB message limit.
STREAM_CHUNK_CHARS = 256 * 1024
TRAIN_CHUNK_BYTES = 1024 * 1024

_JOB_STATES: dict[int, JobState] = {
    pb.TRAIN_JOB_STATE_UNSPECIFIED: JobState.UNSPECIFIED,
    pb.TRAIN_JOB_STATE_QUEUED: JobState.QUEUED,
    pb.TRAIN_JOB_STATE_RUNNING: JobState.RUNNING,
    pb.TRAIN_JOB_STATE_SUCCEEDED: JobState.SUCCEEDED,
    pb.TRAIN_JOB_STATE_FAILED: JobState.FAILED,
    pb.TRAIN_JOB_STATE_CANCELLED: JobState.CANCELLED,
}


def special_policy(
    allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
) -> pb.SpecialTokenPolicy:
    """tiktoken's two policy arguments as the proto's SpecialTokenPolicy.

    >>> special_policy("all", None).allow_all
    True
    >>> special_policy(frozenset(), ()).disallowed_mode == pb.DISALLOWED_SPECIAL_NONE
    True
    """
    policy = pb.SpecialTokenPolicy()
    if allowed_special == "all":
        policy.allow_all = True
    else:
        policy.allowed.extend(sorted(allowed_special))
    if disallowed_special is None:
        policy.disallowed_mode = pb.DISALLOWED_SPECIAL_UNSPECIFIED
    elif disallowed_special == "all":
        policy.disallowed_mode = pb.DISALLOWED_SPECIAL_ALL
    elif isinstance(disallowed_special, str):
        raise InvalidInput(
            "disallowed_special must be 'all', a collection of special tokens (empty: no check) "
            f"or None, not {disallowed_special!r}"
        )
    else:
        listed = sorted(set(disallowed_special))
        if listed:
            policy.disallowed_mode = pb.DISALLOWED_SPECIAL_LISTED
            policy.disallowed.extend(listed)
        else:
            policy.disallowed_mode = pb.DISALLOWED_SPECIAL_NONE
    return policy


# -- Encode / EncodeStream ---------------------------------------------------------------------


def encode_request(
    tokenizer: str,
    texts: Sequence[str],
    *,
    allowed_special: AllowedSpecial,
    disallowed_special: DisallowedSpecial,
    details: bool,
    add_special_tokens: bool = False,
) -> pb.EncodeRequest:
    if isinstance(texts, str):
        raise InvalidInput("encode_batch takes a list of texts, not one str (use encode)")
    return pb.EncodeRequest(
        tokenizer=tokenizer,
        texts=list(texts),
        special_tokens=special_policy(allowed_special, disallowed_special),
        include_details=details,
        add_special_tokens=add_special_tokens,
    )


def encode_results(response: pb.EncodeResponse, *, details: bool) -> list[EncodeResult]:
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


def text_chunks(text: str | Iterable[str], chunk_chars: int = STREAM_CHUNK_CHARS) -> Iterator[str]:
    """A long text cut into pieces (any boundary is fine: the server re-joins them)."""
    if isinstance(text, str):
        for start in range(0, len(text), chunk_chars):
            yield text[start : start + chunk_chars]
    else:
        yield from text


def encode_stream_requests(
    tokenizer: str, chunks: Iterable[str], policy: pb.SpecialTokenPolicy
) -> Iterator[pb.EncodeStreamRequest]:
    """The request stream: tokenizer and policy ride on the first message only."""
    first = True
    for chunk in chunks:
        if first:
            yield pb.EncodeStreamRequest(tokenizer=tokenizer, special_tokens=policy, text=chunk)
            first = False
        else:
            yield pb.EncodeStreamRequest(text=chunk)
    if first:  # an empty text still needs the message naming the tokenizer
        yield pb.EncodeStreamRequest(tokenizer=tokenizer, special_tokens=policy)


async def encode_stream_requests_async(
    tokenizer: str, chunks: Iterable[str] | AsyncIterable[str], policy: pb.SpecialTokenPolicy
) -> AsyncIterator[pb.EncodeStreamRequest]:
    """``encode_stream_requests`` for the async client (also takes an async iterable)."""
    if isinstance(chunks, AsyncIterable):
        first = True
        async for chunk in chunks:
            if first:
                yield pb.EncodeStreamRequest(tokenizer=tokenizer, special_tokens=policy, text=chunk)
                first = False
            else:
                yield pb.EncodeStreamRequest(text=chunk)
        if first:
            yield pb.EncodeStreamRequest(tokenizer=tokenizer, special_tokens=policy)
    else:
        for request in encode_stream_requests(tokenizer, chunks, policy):
            yield request


# -- Decode -------------------------------------------------------------------------------------


def decode_request(tokenizer: str, ids: Sequence[int]) -> pb.DecodeRequest:
    return pb.DecodeRequest(tokenizer=tokenizer, ids=_check_ids(ids))


def decode_batch_request(tokenizer: str, batch: Sequence[Sequence[int]]) -> pb.DecodeRequest:
    return pb.DecodeRequest(
        tokenizer=tokenizer, batch=[pb.TokenIds(ids=_check_ids(ids)) for ids in batch]
    )


def _check_ids(ids: Sequence[int]) -> list[int]:
    """Ids as a list, refusing negatives here (uint32 on the wire would wrap them)."""
    out = list(ids)
    for token_id in out:
        if not 0 <= token_id < 2**32:
            raise InvalidInput(f"Invalid token id {token_id}: ids are in [0, 2**32)")
    return out


def decode_result(response: pb.DecodeResponse) -> DecodeResult:
    return DecodeResult(response.tokenizer, response.text, bytes(response.data))


def decode_results(response: pb.DecodeResponse) -> list[DecodeResult]:
    return [DecodeResult(response.tokenizer, r.text, bytes(r.data)) for r in response.results]


# -- CountTokens --------------------------------------------------------------------------------


def count_request(
    tokenizer: str,
    text: CountInput | None,
    *,
    messages: Sequence[MessageLike] | None,
    plain_text: bool,
    max_tokens: int | None,
    allowed_special: AllowedSpecial,
    disallowed_special: DisallowedSpecial,
    model: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: str | Mapping[str, Any] | None = None,
    add_special_tokens: bool = False,
) -> pb.CountTokensRequest:
    """A CountTokens request; ``text`` may be a str, a list of str, or a list of messages."""
    texts: list[str] = []
    chat: list[MessageLike] = list(messages or ())
    if isinstance(text, str):
        texts.append(text)
    elif text is not None:
        items = list(text)
        if all(isinstance(item, str) for item in items):
            texts.extend(item for item in items if isinstance(item, str))
        else:
            chat.extend(_as_message(item) for item in items)
    if max_tokens is not None and max_tokens < 0:
        raise InvalidInput(f"max_tokens must be >= 0, got {max_tokens}")
    request = pb.CountTokensRequest(
        tokenizer=tokenizer,
        texts=texts,
        messages=[_chat_message(m) for m in chat],
        plain_text=plain_text,
        special_tokens=special_policy(allowed_special, disallowed_special),
        add_special_tokens=add_special_tokens,
    )
    if max_tokens is not None:
        request.max_tokens = max_tokens
    if model:
        request.model = model
    if tools:
        request.tools_json = json.dumps(list(tools))
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        tool_choice = str((function or tool_choice).get("name", ""))
    if tool_choice:
        request.tool_choice = tool_choice
    return request


def _as_message(item: object) -> MessageLike:
    if isinstance(item, ChatMessage | Mapping):
        return item
    raise InvalidInput(
        "count_tokens takes a str, a list of str, or a list of chat messages "
        f"(ChatMessage or {{'role': ..., 'content': ...}}); got an item {item!r}"
    )


def _chat_message(message: MessageLike) -> pb.ChatMessage:
    if isinstance(message, ChatMessage):
        return pb.ChatMessage(role=message.role, content=message.content, name=message.name or "")
    unknown = set(message) - {"role", "content", "name", "tool_calls", "tool_call_id"}
    if unknown or "role" not in message:
        raise InvalidInput(
            "a chat message needs 'role' and 'content' (and optionally 'name', 'tool_calls', "
            f"'tool_call_id'); got keys {sorted(message)}"
        )
    out = pb.ChatMessage(role=str(message["role"]), name=str(message.get("name") or ""),
                         tool_call_id=str(message.get("tool_call_id") or ""))
    content: Any = message.get("content")
    if isinstance(content, str) or content is None:
        out.content = content or ""
    else:
        out.parts.extend(_content_part(part) for part in content)
    for call in message.get("tool_calls") or ():
        function = call.get("function", call)
        arguments = function.get("arguments", "")
        out.tool_calls.add(id=str(call.get("id", "")), name=str(function.get("name", "")),
                           arguments=arguments if isinstance(arguments, str)
                           else json.dumps(arguments))
    return out


def _content_part(part: Any) -> pb.ContentPart:
    """An OpenAI content part: text, or an image_url with its width/height (never fetched)."""
    kind = part.get("type") if isinstance(part, Mapping) else None
    if kind == "text":
        return pb.ContentPart(text=str(part.get("text", "")))
    if kind == "image_url":
        url = part.get("image_url") or {}
        return pb.ContentPart(image=pb.ImagePart(
            width=int(part.get("width") or url.get("width") or 0),
            height=int(part.get("height") or url.get("height") or 0),
            detail=str(part.get("detail") or url.get("detail") or ""),
            url=str(url.get("url", "")),
        ))
    raise InvalidInput(
        f'a content part must be {{"type": "text"|"image_url", ...}}, got {part!r}'[:200]
    )


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
    )


# -- Truncate and Chunk ------------------------------------------------------------------------

_KEEP = {"head": pb.TRUNCATE_KEEP_HEAD, "tail": pb.TRUNCATE_KEEP_TAIL,
         "both": pb.TRUNCATE_KEEP_BOTH}


def truncate_request(tokenizer: str, text: str, max_tokens: int, keep: str,
                     marker: str | None) -> pb.TruncateRequest:
    if keep not in _KEEP:
        raise InvalidInput(f"keep must be head, tail or both, not {keep!r}")
    if max_tokens < 0:
        raise InvalidInput(f"max_tokens must be >= 0, got {max_tokens}")
    request = pb.TruncateRequest(tokenizer=tokenizer, text=text, max_tokens=max_tokens,
                                 keep=_KEEP[keep])
    if marker is not None:
        request.marker = marker
    return request


def truncate_result(response: pb.TruncateResponse) -> TruncateResult:
    return TruncateResult(
        tokenizer=response.tokenizer, text=response.text, ids=list(response.ids),
        count=response.count, truncated=response.truncated, head_chars=response.head_chars,
        tail_chars=response.tail_chars, exact=response.exact,
        estimate_reason=response.estimate_reason,
    )


def chunk_request(tokenizer: str, text: str, max_tokens: int, overlap: int) -> pb.ChunkRequest:
    if max_tokens < 1 or overlap < 0:
        raise InvalidInput(f"max_tokens must be >= 1 and overlap >= 0 (got {max_tokens}, "
                           f"{overlap})")
    return pb.ChunkRequest(tokenizer=tokenizer, text=text, max_tokens=max_tokens,
                           overlap=overlap)


def text_chunks_of(response: pb.ChunkResponse) -> list[TextChunk]:
    return [
        TextChunk(index=c.index, text=c.text, start=c.start, end=c.end,
                  byte_start=c.byte_start, byte_end=c.byte_end, count=c.count,
                  exact=c.exact, estimate_reason=c.estimate_reason)
        for c in response.chunks
    ]


# -- Registry -----------------------------------------------------------------------------------


def tokenizer_summaries(response: pb.ListTokenizersResponse) -> list[TokenizerSummary]:
    return [
        TokenizerSummary(
            name=t.name,
            builtin=t.builtin,
            versions=list(t.versions),
            latest_version=t.latest_version,
            aliases=dict(t.aliases),
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
        special_tokens=dict(m.special_tokens),
        sha256=dict(m.sha256),
        training=TokenizerManifest.parse_training(m.training_json),
        created_at=m.created_at,
        versions=list(m.versions),
        aliases=dict(m.aliases),
    )


# -- Training -----------------------------------------------------------------------------------

# A corpus to stream: text, bytes, a local file (Path), or an iterable of byte chunks.
Corpus: TypeAlias = str | bytes | Path | Iterable[bytes]


def train_requests(spec: TrainSpec, corpus: Corpus | None) -> Iterator[pb.TrainRequest]:
    """The Train request stream: the config, then the corpus in ~1 MiB chunks."""
    if corpus is None and not spec.corpus_path:
        raise InvalidInput("train needs a corpus to stream or a server-side corpus_path")
    if corpus is not None and spec.corpus_path:
        raise InvalidInput(
            f"train takes a streamed corpus or corpus_path={spec.corpus_path!r}, not both"
        )
    yield pb.TrainRequest(
        config=pb.TrainConfig(
            name=spec.name,
            vocab_size=spec.vocab_size,
            special_tokens=list(spec.special_tokens),
            pattern=spec.pattern,
            corpus_path=spec.corpus_path,
            model=spec.model,
            wordpiece_score=spec.wordpiece_score,
        )
    )
    for chunk in _corpus_chunks(corpus):
        if chunk:
            yield pb.TrainRequest(corpus_chunk=chunk)


def _corpus_chunks(corpus: Corpus | None) -> Iterator[bytes]:
    if corpus is None:
        return
    if isinstance(corpus, str):
        corpus = corpus.encode("utf-8")
    if isinstance(corpus, bytes):
        for start in range(0, len(corpus), TRAIN_CHUNK_BYTES):
            yield corpus[start : start + TRAIN_CHUNK_BYTES]
    elif isinstance(corpus, Path):
        with corpus.open("rb") as f:
            while chunk := f.read(TRAIN_CHUNK_BYTES):
                yield chunk
    else:
        yield from corpus


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


# -- Report ------------------------------------------------------------------------------------


def report_request(tokenizers: str | Sequence[str], texts: Sequence[str] | None,
                   languages: bool) -> pb.ReportRequest:
    names = [tokenizers] if isinstance(tokenizers, str) else list(tokenizers)
    if isinstance(texts, str):
        raise InvalidInput("texts must be a list of strings, not one string")
    return pb.ReportRequest(tokenizers=names, texts=list(texts or ()),
                            include_languages=languages)


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
