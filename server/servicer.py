"""TokenizerService: a thin adapter between the proto messages and tokend.core.

Each method converts the request at the edge, checks the configured limits, calls the core
(Encoding, Registry, the job store) and converts the answer back. Errors are raised as
tokend.core.errors classes; the interceptor turns them into status codes (errors.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import accumulate
from typing import Any, Literal, TypeAlias

import grpc

from tokend.core.builtins import builtin_n_vocab
from tokend.core.encoding import Encoding
from tokend.core.errors import (
    DisallowedSpecialToken,
    InvalidInput,
    TokendError,
    UnknownTokenId,
    shown,
)
from tokend.server import limits, metrics
from tokend.server.config import ServerConfig
from tokend.server.errors import with_field
from tokend.server.jobs import JobStore
from tokend.server.streaming import StreamEncoder
from tokend.server.tokenizers import Served, Tokenizers
from tokend.server.training import TrainingService
from tokend.v1 import tokenizer_pb2 as pb

Allowed: TypeAlias = Literal["all"] | AbstractSet[str]
Disallowed: TypeAlias = Literal["all"] | AbstractSet[str]

# OpenAI's published rule for counting chat prompts (see docs/counting.md).
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING_TOKENS = 3
# The largest CountTokens.max_tokens: `remaining` (max_tokens - total) is an int64.
MAX_TOKENS_LIMIT = 2**63 - 1


class TokenizerService(TrainingService):
    """Every RPC: the tokenization ones here, the training-job ones from TrainingService."""

    def __init__(self, config: ServerConfig, tokenizers: Tokenizers, jobs: JobStore) -> None:
        super().__init__(config, jobs)
        self.tokenizers = tokenizers

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
            try:
                ids = enc.encode(text, allowed_special=allowed, disallowed_special=disallowed)
            except TokendError as exc:
                raise field_error(exc, field) from None
            total += len(ids)
            limits.check("ids in the Encode response", total, self.config.max_ids, "--max-ids",
                         field=field)
            result = response.results.add()
            result.ids.extend(ids)
            if request.include_details:
                result.details.extend(token_details(enc, ids))
        count_encoded("Encode", total)
        return response

    def EncodeStream(
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
            count_encoded("EncodeStream", count)

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
        served = self._served(request.tokenizer)
        enc = served.encoding
        items = len(request.texts) + len(request.messages)
        if items == 0:
            raise with_field(
                InvalidInput("CountTokens needs texts or messages; both are empty"), "texts"
            )
        limits.check("texts + messages batch size", items, self.config.max_batch, "--max-batch",
                     field="texts")
        allowed, disallowed = special_policy(request.special_tokens, enc, default=frozenset())

        def count(text: str, field: str) -> int:
            limits.check_alive(context)
            limits.check_text(text, self.config.max_text_bytes, field)
            try:
                return enc.count(text, allowed_special=allowed, disallowed_special=disallowed)
            except TokendError as exc:
                raise field_error(exc, field) from None

        counts = [count(text, f"texts[{i}]") for i, text in enumerate(request.texts)]
        messages_count = 0
        for i, message in enumerate(request.messages):
            fields = [("role", message.role), ("content", message.content)]
            if message.name:
                fields.append(("name", message.name))
            for key, value in fields:
                messages_count += count(value, f"messages[{i}].{key}")
            if not request.plain_text:
                messages_count += TOKENS_PER_MESSAGE
                if message.name:
                    messages_count += TOKENS_PER_NAME
        if request.messages and not request.plain_text:
            messages_count += REPLY_PRIMING_TOKENS
        total = sum(counts) + messages_count
        count_encoded("CountTokens", total)
        response = pb.CountTokensResponse(
            tokenizer=served.ref, counts=counts, messages_count=messages_count, total=total,
            fits=True,
        )
        if request.HasField("max_tokens"):
            if request.max_tokens > MAX_TOKENS_LIMIT:
                # `remaining` is an int64: a larger budget has no answer to give in it.
                raise with_field(
                    InvalidInput(f"max_tokens is {request.max_tokens}, over the largest "
                                 f"allowed value {MAX_TOKENS_LIMIT} (2^63 - 1, the range of "
                                 "`remaining`); leave max_tokens unset for no budget"),
                    "max_tokens",
                )
            response.fits = total <= request.max_tokens
            response.remaining = request.max_tokens - total
        return response

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

    def _vocab_size(self, name: str, builtin: bool, loaded: Mapping[str, Encoding]) -> int:
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


def count_encoded(method: str, tokens: int) -> None:
    """Add to tokend_tokens_encoded_total{method}."""
    metrics.child(metrics.TOKENS_ENCODED, method).inc(tokens)


# -- conversions at the edge ---------------------------------------------------------------


def special_policy(
    policy: pb.SpecialTokenPolicy, enc: Encoding, *, default: Literal["all"] | frozenset[str]
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


def token_details(enc: Encoding, ids: Sequence[int]) -> list[pb.TokenDetail]:
    """Per-token piece bytes, byte offsets [start, end) and special flag (the TEI shape)."""
    pieces = enc.decode_tokens_bytes(ids)
    ends = list(accumulate(len(p) for p in pieces))
    return [
        pb.TokenDetail(
            id=i, piece=p, start=end - len(p), end=end, special=enc.is_special_token(i)
        )
        for i, p, end in zip(ids, pieces, ends, strict=True)
    ]


def _decode_bytes(enc: Encoding, ids: Sequence[int], field: str) -> bytes:
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
