"""TokenizerService: a thin adapter between the proto messages and tokend.core.

Each method converts the request at the edge, checks the configured limits, calls the core
(a Tokenizer, the Registry, the job store) and converts the answer back. Errors are raised as
tokend.core.errors classes; the interceptor turns them into status codes (errors.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import accumulate
from pathlib import Path
from typing import Any, Literal, TypeAlias

import grpc

from tokend.core.counting import (
    ModelCatalogue,
    ModelInfo,
    count_chat,
    iter_chunks,
    truncate,
    version_chat_model,
)
from tokend.core.counting.catalogue import not_installed
from tokend.core.counting.chat import budget_fit
from tokend.core.counting.sizes import check_chat_sizes
from tokend.core.counting.tools import parse_tools
from tokend.core.counting.truncation import Keep
from tokend.core.engine.builtins import builtin_n_vocab
from tokend.core.errors import (
    DisallowedSpecialToken,
    InvalidInput,
    LimitExceeded,
    TokendError,
    UnknownTokenId,
    UnknownTokenizer,
    shown,
)
from tokend.core.pipeline.alignment import byte_offsets
from tokend.core.tokenizer import Tokenizer, add_special_tokens
from tokend.server import limits, metrics
from tokend.server.config import ServerConfig
from tokend.server.errors import with_field
from tokend.server.jobs import JobStore
from tokend.server.reporting import report_response
from tokend.server.streaming import StreamEncoder, idle_bounded
from tokend.server.tokenizers import Served, Tokenizers
from tokend.server.training import TrainingService
from tokend.v1 import tokenizer_pb2 as pb

Allowed: TypeAlias = Literal["all"] | AbstractSet[str]
Disallowed: TypeAlias = Literal["all"] | AbstractSet[str]

# The largest CountTokens.max_tokens: `remaining` (max_tokens - total) is an int64.
MAX_TOKENS_LIMIT = 2**63 - 1
# Pieces per Chunk response message (a stream of small messages costs more than it saves).
CHUNKS_PER_MESSAGE = 64
TRUNCATE_KEEP: dict[int, Keep] = {
    pb.TRUNCATE_KEEP_UNSPECIFIED: "head",
    pb.TRUNCATE_KEEP_HEAD: "head",
    pb.TRUNCATE_KEEP_TAIL: "tail",
    pb.TRUNCATE_KEEP_BOTH: "both",
}


class TokenizerService(TrainingService):
    """Every RPC: the tokenization ones here, the training-job ones from TrainingService."""

    def __init__(self, config: ServerConfig, tokenizers: Tokenizers, jobs: JobStore) -> None:
        super().__init__(config, jobs)
        self.tokenizers = tokenizers
        # The shipped model table plus the registry's models.json (re-read when it changes);
        # a registry in object storage has no such file (docs/registry.md).
        folder = tokenizers.registry.store.local_root
        self.models = ModelCatalogue.for_registry(Path(folder)) if folder else ModelCatalogue()

    # -- helpers ------------------------------------------------------------------------

    def _served(self, ref: str) -> Served:
        try:
            return self.tokenizers.get(ref)
        except TokendError as exc:
            raise with_field(exc, "tokenizer") from None

    def _check_batch(self, size: int, field: str) -> None:
        if size == 0:
            raise with_field(
                InvalidInput(f"{field} is empty: send at least one item (up to --max-batch "
                             f"{self.config.max_batch})"),
                field,
            )
        limits.check(f"{field} batch size", size, self.config.max_batch, "--max-batch",
                     field=field)

    # -- RPCs ---------------------------------------------------------------------------

    def Encode(self, request: pb.EncodeRequest, context: grpc.ServicerContext) -> pb.EncodeResponse:
        served = self._served(request.tokenizer)
        enc = served.encoding
        self._check_batch(len(request.texts), "texts")
        allowed, disallowed = special_policy(request.special_tokens, enc, default="all")
        response = pb.EncodeResponse(tokenizer=served.ref)
        total = 0
        for i, text in enumerate(request.texts):
            limits.check_alive(context)
            field = f"texts[{i}]"
            limits.check_text(text, self.config.max_text_bytes, field)
            offsets = None
            try:
                if request.include_details and hasattr(enc, "encode_with_offsets"):
                    ids, offsets = encode_with_offsets(
                        enc, text, allowed, disallowed, request.add_special_tokens)
                else:
                    ids = enc.encode(text, allowed_special=allowed, disallowed_special=disallowed)
                    if request.add_special_tokens:
                        ids = add_special_tokens(enc, ids)
            except TokendError as exc:
                raise field_error(exc, field) from None
            total += len(ids)
            limits.check("ids in the Encode response", total, self.config.max_ids, "--max-ids",
                         field=field)
            if request.include_details:  # checked before the details are built
                limits.check("tokens with details in the Encode response (ask without "
                             "include_details for ids only)", total,
                             self.config.max_detail_tokens, "--max-detail-tokens", field=field)
            result = response.results.add()
            result.ids.extend(ids)
            if request.include_details:
                result.details.extend(token_details(enc, ids, offsets))
        count_encoded("Encode", total, served)
        return response

    def EncodeStream(
        self, request_iterator: Iterator[pb.EncodeStreamRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.EncodeStreamResponse]:
        with self.streams.hold("EncodeStream"):
            yield from self._encode_stream(idle_bounded(
                request_iterator, self.config.stream_idle_seconds, what="EncodeStream"), context)

    def _encode_stream(
        self, request_iterator: Iterator[pb.EncodeStreamRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.EncodeStreamResponse]:
        first = next(request_iterator, None)
        if first is None:
            raise with_field(
                InvalidInput("EncodeStream received no message: the first one names the "
                             "tokenizer and may carry the first chunk of text"),
                "tokenizer",
            )
        served = self._served(first.tokenizer)
        allowed, disallowed = special_policy(first.special_tokens, served.encoding, default="all")
        chunks = _texts(first, request_iterator)
        max_bytes, flag = self.config.max_stream_bytes, "--max-stream-bytes"
        if not served.encoding.streams_in_bounded_memory:
            # The encoder must hold the whole text: bound it like one text of Encode.
            max_bytes, flag = min(max_bytes, self.config.max_text_bytes), "--max-text-bytes"
        stream = StreamEncoder(
            served.encoding,
            chunks,
            allowed_special=allowed,
            disallowed_special=disallowed,
            max_bytes=max_bytes,
            flag=flag,
        )
        context.add_callback(stream.close)  # the client may vanish while we wait for input
        count = 0
        try:
            for ids, done in stream:
                limits.check_alive(context)
                count += len(ids)
                yield pb.EncodeStreamResponse(tokenizer=served.ref, ids=ids, count=count,
                                              done=done)
        except DisallowedSpecialToken as exc:
            raise field_error(exc, "text") from None
        finally:
            stream.close()
            count_encoded("EncodeStream", count, served)

    def Decode(self, request: pb.DecodeRequest, context: grpc.ServicerContext) -> pb.DecodeResponse:
        served = self._served(request.tokenizer)
        enc = served.encoding
        if request.batch:
            limits.check("batch size", len(request.batch), self.config.max_batch, "--max-batch",
                         field="batch")
        total = len(request.ids) + sum(len(seq.ids) for seq in request.batch)
        limits.check("ids in the Decode request", total, self.config.max_ids, "--max-ids",
                     field="ids")
        response = pb.DecodeResponse(tokenizer=served.ref)
        if request.ids or not request.batch:
            data = _decode_bytes(enc, request.ids, "ids")
            response.data = data
            response.text = data.decode("utf-8", errors="replace")
        for i, seq in enumerate(request.batch):
            limits.check_alive(context)
            data = _decode_bytes(enc, seq.ids, f"batch[{i}].ids")
            response.results.add(text=data.decode("utf-8", errors="replace"), data=data)
        return response

    def CountTokens(
        self, request: pb.CountTokensRequest, context: grpc.ServicerContext
    ) -> pb.CountTokensResponse:
        info = self.models.find(request.model or request.tokenizer)
        if request.model and info is None:
            try:
                self.models.get(request.model)  # raises UnknownTokenizer listing known models
            except TokendError as exc:
                raise field_error(exc, "model") from None
        ref = request.tokenizer or (info.tokenizer if info else "")
        if not ref:
            raise with_field(InvalidInput("CountTokens needs a tokenizer or a model"), "tokenizer")
        try:
            served = self.tokenizers.get(ref)
        except UnknownTokenizer as exc:
            if info is None or request.tokenizer:
                raise with_field(exc, "tokenizer") from None
            raise field_error(UnknownTokenizer(not_installed(info)), "model") from None
        except TokendError as exc:
            raise with_field(exc, "tokenizer") from None
        enc = served.encoding
        parts = sum(len(m.parts) for m in request.messages)
        items = len(request.texts) + len(request.messages) + parts
        if items == 0:
            raise with_field(
                InvalidInput("CountTokens needs texts or messages; both are empty"), "texts"
            )
        limits.check("texts + messages + content parts batch size", items,
                     self.config.max_batch, "--max-batch", field="texts")
        allowed, disallowed = special_policy(request.special_tokens, enc, default=frozenset())

        def count(text: str, field: str) -> int:
            limits.check_alive(context)
            limits.check_text(text, self.config.max_text_bytes, field)
            try:
                return enc.count(text, allowed_special=allowed, disallowed_special=disallowed)
            except TokendError as exc:
                raise field_error(exc, field) from None

        counts = [count(text, f"texts[{i}]") for i, text in enumerate(request.texts)]
        if request.add_special_tokens:
            framing = len(add_special_tokens(enc, []))  # the same ids around every text
            counts = [c + framing for c in counts]
        response = pb.CountTokensResponse(tokenizer=served.ref, counts=counts, exact=True)
        reason = info.fixed_reason() if info is not None else ""
        if info is not None and reason:  # a closed model: texts are estimates too
            response.counts[:] = [info.text_tokens(c) for c in counts]
            response.exact, response.estimate_reason = False, reason
            counts = list(response.counts)
        if info is not None:
            response.model = info.name
            response.context_window = info.context_window
            response.max_output_tokens = info.max_output_tokens
        if request.messages:
            self._count_messages(request, response, info=info, served=served, allowed=allowed,
                                disallowed=disallowed, context=context)
        response.total = sum(counts) + response.messages_count
        count_encoded("CountTokens", response.total, served)
        budget = request.max_tokens if request.HasField("max_tokens") else None
        if budget is not None and budget > MAX_TOKENS_LIMIT:
            # `remaining` is an int64: a larger budget has no answer to give in it.
            raise with_field(
                InvalidInput(f"max_tokens is {budget}, over the largest allowed value "
                             f"{MAX_TOKENS_LIMIT} (2^63 - 1, the range of `remaining`); leave "
                             "max_tokens unset for no budget"),
                "max_tokens",
            )
        window = info.context_window if info is not None and info.context_window else None
        response.fits, response.remaining = budget_fit(response.total, budget, window)
        return response

    def _count_messages(
        self,
        request: pb.CountTokensRequest,
        response: pb.CountTokensResponse,
        *,
        info: ModelInfo | None,
        served: Served,
        allowed: Allowed,
        disallowed: Disallowed,
        context: grpc.ServicerContext,
    ) -> None:
        """Fill the chat part of ``response`` by the model's chat rule (tokend.core.counting);
        a registry version imported with a chat template supplies the rule if no model does."""
        messages = [
            message_dict(m, f"messages[{i}]", self.config.max_text_bytes)
            for i, m in enumerate(request.messages)
        ]
        try:
            check_chat_sizes(messages, max_text_bytes=self.config.max_text_bytes,
                             max_items=self.config.max_batch - len(request.texts))
        except LimitExceeded as exc:
            raise limits.hit(exc, getattr(exc, "field", "messages")) from None
        tools = tools_list(request.tools_json, self.config.max_text_bytes)
        limits.check_alive(context)
        try:
            if not served.resolved.builtin:
                manifest = self.tokenizers.manifest(served)
                info = version_chat_model(served.ref, manifest, info)
            chat = count_chat(
                messages,
                model=info.name if info is not None else None,
                model_info=info,
                tools=tools,
                encoding=served.encoding,
                tool_choice=tool_choice(request.tool_choice),
                rule="plain" if request.plain_text else None,
                catalogue=self.models,
                allowed_special=allowed,
                disallowed_special=disallowed,
            )
        except TokendError as exc:
            raise field_error(exc, "messages") from None
        response.messages_count = chat.total
        response.tools_count = chat.tools
        response.images_count = chat.images
        response.chat_rule = chat.rule
        response.exact = chat.exact
        response.estimate_reason = chat.estimate_reason

    def Truncate(
        self, request: pb.TruncateRequest, context: grpc.ServicerContext
    ) -> pb.TruncateResponse:
        served = self._served(request.tokenizer)
        limits.check_text(request.text, self.config.max_text_bytes, "text")
        keep = TRUNCATE_KEEP.get(request.keep)
        if keep is None:
            raise with_field(InvalidInput(f"unknown keep {request.keep}"), "keep")
        marker = request.marker if request.HasField("marker") else "…"
        limits.check_text(marker, self.config.max_text_bytes, "marker")
        try:
            result = truncate(served.encoding, request.text, request.max_tokens, keep=keep,
                              marker=marker)
        except TokendError as exc:
            raise field_error(exc, "max_tokens") from None
        limits.check("ids in the Truncate response", result.count, self.config.max_ids,
                     "--max-ids", field="max_tokens")
        count_encoded("Truncate", result.count, served)
        return pb.TruncateResponse(
            tokenizer=served.ref, text=result.text, ids=result.ids, count=result.count,
            truncated=result.truncated, head_chars=result.head_chars,
            tail_chars=result.tail_chars, exact=result.exact,
            estimate_reason=result.estimate_reason,
        )

    def Chunk(
        self, request: pb.ChunkRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ChunkResponse]:
        served = self._served(request.tokenizer)
        limits.check_text(request.text, self.config.max_text_bytes, "text")
        if request.max_tokens < 1:
            raise with_field(InvalidInput("max_tokens must be >= 1"), "max_tokens")
        if request.overlap >= request.max_tokens:
            raise with_field(InvalidInput(
                f"overlap must be below max_tokens {request.max_tokens}, not {request.overlap}"
            ), "overlap")
        pieces = iter_chunks(served.encoding, request.text, request.max_tokens,
                             overlap=request.overlap)
        batch: list[pb.TextChunk] = []
        total = 0
        try:
            for piece in pieces:
                limits.check_alive(context)
                total += piece.count
                batch.append(pb.TextChunk(
                    index=piece.index, text=piece.text, start=piece.start, end=piece.end,
                    byte_start=piece.byte_start, byte_end=piece.byte_end, count=piece.count,
                    exact=piece.exact, estimate_reason=piece.estimate_reason,
                ))
                if len(batch) == CHUNKS_PER_MESSAGE:
                    yield pb.ChunkResponse(tokenizer=served.ref, chunks=batch)
                    batch = []
        except InvalidInput as exc:
            raise field_error(exc, "max_tokens") from None
        finally:
            count_encoded("Chunk", total, served)
        yield pb.ChunkResponse(tokenizer=served.ref, chunks=batch, done=True)

    def ListTokenizers(
        self, request: pb.ListTokenizersRequest, context: grpc.ServicerContext
    ) -> pb.ListTokenizersResponse:
        registry = self.tokenizers.registry
        loaded = self.tokenizers.loaded()
        response = pb.ListTokenizersResponse()
        for info in registry.list():
            summary = response.tokenizers.add(
                name=info.name, builtin=info.builtin, versions=info.versions,
                latest_version=info.latest or 0,
            )
            summary.aliases.update(info.aliases)
            summary.vocab_size = self._vocab_size(info.name, info.builtin, loaded)
        return response

    def _vocab_size(self, name: str, builtin: bool, loaded: Mapping[str, Tokenizer]) -> int:
        """n_vocab of the latest version, without loading anything that is not loaded yet."""
        try:
            if builtin:
                encoding = loaded.get(name)
                if encoding is not None:
                    return int(encoding.n_vocab)
                return builtin_n_vocab(name)
            manifest = self.tokenizers.registry.manifest(name)
            return int(manifest["n_vocab"])
        except TokendError:
            return 0  # a corrupt version is reported by GetTokenizer; listing keeps working

    def GetTokenizer(
        self, request: pb.GetTokenizerRequest, context: grpc.ServicerContext
    ) -> pb.GetTokenizerResponse:
        registry = self.tokenizers.registry
        try:
            resolved = registry.resolve(request.tokenizer)
            manifest: dict[str, Any] = registry.manifest(resolved.ref)
        except TokendError as exc:
            raise with_field(exc, "tokenizer") from None
        out = pb.TokenizerManifest(
            name=resolved.name,
            version=resolved.version or 0,
            ref=resolved.ref,
            builtin=resolved.builtin,
            vocab_size=int(manifest.get("n_vocab", 0)),
            pattern=str(manifest.get("pattern", "")),
            created_at=str(manifest.get("created_at", "") or ""),
        )
        out.special_tokens.update(manifest.get("special_tokens", {}))
        files = manifest.get("files") or {}
        out.sha256.update({file: str(info["sha256"]) for file, info in files.items()})
        training = manifest.get("training")
        if training:
            payload = {"training": training, "corpus": manifest.get("corpus")}
            out.training_json = json.dumps(payload, sort_keys=True, default=str)
        if not resolved.builtin:
            for info in registry.list():
                if info.name == resolved.name:
                    out.versions.extend(info.versions)
                    out.aliases.update(info.aliases)
        return pb.GetTokenizerResponse(manifest=out)

    def Report(self, request: pb.ReportRequest, context: grpc.ServicerContext) -> pb.ReportResponse:
        return report_response(request, context, self.config, self.tokenizers.get)


def field_error(exc: TokendError, field: str) -> TokendError:
    """``exc`` tagged with its request field; a disallowed special token is explained in
    terms of the request's fields (core's message advises tiktoken's Python arguments)."""
    if isinstance(exc, DisallowedSpecialToken):
        token = shown(exc.token)
        exc = DisallowedSpecialToken(
            exc.token,
            message=(
                f"{field} contains the special token {token}, which this request does not "
                f"allow: to encode it as its special id, list it in special_tokens.allowed "
                f"(or set special_tokens.allow_all); to encode it as plain text, set "
                f"special_tokens.disallowed_mode to DISALLOWED_SPECIAL_NONE"
            ),
        )
    return with_field(exc, field)


def count_encoded(method: str, tokens: int, served: Served) -> None:
    """Add to tokend_tokens_encoded_total{method} and tokend_tokens_total{tokenizer, method}.

    The tokenizer label is the served (resolved, loaded) name, never the client's string, so
    its values are bounded by what the registry holds.
    """
    metrics.child(metrics.TOKENS_ENCODED, method).inc(tokens)
    metrics.child(metrics.TOKENS, served.resolved.name, method).inc(tokens)


# -- conversions at the edge ---------------------------------------------------------------


def special_policy(
    policy: pb.SpecialTokenPolicy, enc: Tokenizer, *, default: Literal["all"] | frozenset[str]
) -> tuple[Allowed, Disallowed]:
    """tiktoken's (allowed_special, disallowed_special) from the proto policy.

    Unknown special token names are refused (a typo must not silently change the ids).
    """
    for field in ("allowed", "disallowed"):
        names: Sequence[str] = getattr(policy, field)
        if not names:
            continue
        known = enc.special_tokens_set
        for i, name in enumerate(names):
            if name not in known:
                raise with_field(
                    InvalidInput(
                        f"special_tokens.{field} names {shown(name)}, which is not a special token "
                        "of "
                        f"{enc.name}; its special tokens are {sorted(known)}"
                    ),
                    f"special_tokens.{field}[{i}]",
                )
    allowed: Allowed = "all" if policy.allow_all else frozenset(policy.allowed)
    mode = policy.disallowed_mode
    disallowed: Disallowed
    if mode == pb.DISALLOWED_SPECIAL_UNSPECIFIED:
        disallowed = default
    elif mode == pb.DISALLOWED_SPECIAL_ALL:
        disallowed = "all"
    elif mode == pb.DISALLOWED_SPECIAL_NONE:
        disallowed = frozenset()
    elif mode == pb.DISALLOWED_SPECIAL_LISTED:
        disallowed = frozenset(policy.disallowed)
    else:
        raise with_field(
            InvalidInput(f"unknown disallowed_mode {mode}"), "special_tokens.disallowed_mode"
        )
    return allowed, disallowed


def token_details(
    enc: Tokenizer, ids: Sequence[int], offsets: Sequence[tuple[int, int]] | None = None
) -> list[pb.TokenDetail]:
    """Per-token piece bytes, byte offsets [start, end) and special flag (the TEI shape).

    ``offsets`` are the byte spans in the request text when the tokenizer tracks them (the
    pipeline families, whose text is normalized); otherwise each piece follows the previous
    one, which for tiktoken-style BPE is exactly where it sits in the text.
    """
    pieces = enc.decode_tokens_bytes(ids)
    if offsets is None:
        ends = list(accumulate(len(p) for p in pieces))
        offsets = [(end - len(p), end) for p, end in zip(pieces, ends, strict=True)]
    return [
        pb.TokenDetail(id=i, piece=p, start=start, end=end, special=enc.is_special_token(i))
        for i, p, (start, end) in zip(ids, pieces, offsets, strict=True)
    ]


def encode_with_offsets(
    enc: Tokenizer, text: str, allowed: Allowed, disallowed: Disallowed, add_special: bool
) -> tuple[list[int], list[tuple[int, int]]]:
    """Ids and UTF-8 byte offsets into ``text`` from a tokenizer that tracks alignments."""
    ids, chars = enc.encode_with_offsets(  # type: ignore[attr-defined]
        text, allowed_special=allowed, disallowed_special=disallowed,
        add_special_tokens=add_special)
    return ids, byte_offsets(text, chars)


def message_dict(message: pb.ChatMessage, field: str, max_bytes: int) -> dict[str, Any]:
    """An OpenAI-style message dict from the proto message (text fields size-checked)."""
    out: dict[str, Any] = {"role": message.role}
    limits.check_text(message.role, max_bytes, f"{field}.role")
    if message.parts:
        parts: list[dict[str, Any]] = []
        for j, part in enumerate(message.parts):
            if part.HasField("image"):
                image = part.image
                parts.append({"type": "image_url", "width": image.width, "height": image.height,
                              "image_url": {"url": image.url, "detail": image.detail or "auto"}})
            else:
                limits.check_text(part.text, max_bytes, f"{field}.parts[{j}].text")
                parts.append({"type": "text", "text": part.text})
        out["content"] = parts
    else:
        limits.check_text(message.content, max_bytes, f"{field}.content")
        out["content"] = message.content
    if message.name:
        limits.check_text(message.name, max_bytes, f"{field}.name")
        out["name"] = message.name
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}}
            for call in message.tool_calls
        ]
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


def tools_list(tools_json: str, max_bytes: int) -> list[dict[str, Any]] | None:
    """The tool definitions of a request (a JSON array, schemas checked), or None."""
    if not tools_json:
        return None
    limits.check_text(tools_json, max_bytes, "tools_json")
    try:
        return parse_tools(tools_json)
    except InvalidInput as exc:
        raise with_field(exc, "tools_json") from None


def tool_choice(value: str) -> str | dict[str, Any] | None:
    """``auto``/``none``/``required`` as they are, a function's name as OpenAI's object form."""
    if not value:
        return None
    if value in ("auto", "none", "required"):
        return value
    return {"type": "function", "function": {"name": value}}


def _decode_bytes(enc: Tokenizer, ids: Sequence[int], field: str) -> bytes:
    try:
        return enc.decode_bytes(list(ids))
    except UnknownTokenId as exc:
        index = list(ids).index(exc.token_id) if exc.token_id in ids else None
        where = field if index is None else f"{field}[{index}]"
        raise with_field(exc, where) from None


def _texts(
    first: pb.EncodeStreamRequest, rest: Iterator[pb.EncodeStreamRequest]
) -> Iterator[str]:
    yield first.text
    for request in rest:
        yield request.text
