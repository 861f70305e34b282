"""Encode, EncodeStream and Decode as plain calls: typed requests, limits first, typed results.

Each function takes the served tokenizer (already resolved by ``App``), the request and the
call's context; the transports convert from and to their own shapes (proto, JSON).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from tokend.core.errors import DisallowedSpecialToken, InvalidInput, TokendError, UnknownTokenId
from tokend.core.pipeline.alignment import byte_offsets
from tokend.core.tokenizer import Tokenizer, add_special_tokens
from tokend.server import limits
from tokend.server.app.context import CallContext, check_alive
from tokend.server.app.fields import with_field
from tokend.server.app.specials import (
    NO_POLICY,
    Allowed,
    Disallowed,
    SpecialPolicy,
    field_error,
    resolve,
)
from tokend.server.config import ServerConfig
from tokend.server.streaming import StreamEncoder
from tokend.server.tokenizers import Served


@dataclass(frozen=True, slots=True)
class EncodeRequest:
    tokenizer: str
    texts: Sequence[str]
    special_tokens: SpecialPolicy = NO_POLICY
    include_details: bool = False
    add_special_tokens: bool = False
    # The transport takes ids as the varint payload of a packed repeated uint32 (gRPC): when
    # the tokenizer writes them so (``encode_varints``), results carry ``packed``, not ``ids``.
    packed: bool = False


@dataclass(frozen=True, slots=True)
class TokenDetail:
    """One token: its id, its bytes, its byte span [start, end) in the text, special or not."""

    id: int
    piece: bytes
    start: int
    end: int
    special: bool


@dataclass(frozen=True, slots=True)
class EncodeResult:
    ids: list[int]
    details: list[TokenDetail] = field(default_factory=list)
    packed: bytes | None = None  # the ids as packed varints instead (EncodeRequest.packed)
    count: int = 0  # ids in ``packed``


@dataclass(frozen=True, slots=True)
class Encoded:
    tokenizer: str  # the served ref (name@version)
    results: list[EncodeResult]
    total: int  # ids over all results


@dataclass(frozen=True, slots=True)
class StreamStart:
    """EncodeStream's first message: the tokenizer, the policy and the first chunk of text."""

    tokenizer: str
    special_tokens: SpecialPolicy = NO_POLICY
    text: str = ""


@dataclass(frozen=True, slots=True)
class StreamIds:
    """Ids that are final, the running count, and whether the text has ended."""

    tokenizer: str
    ids: list[int]
    count: int
    done: bool


@dataclass(frozen=True, slots=True)
class DecodeRequest:
    tokenizer: str
    ids: Sequence[int] = ()
    batch: Sequence[Sequence[int]] = ()


@dataclass(frozen=True, slots=True)
class DecodedText:
    text: str  # the bytes as UTF-8, invalid sequences replaced
    data: bytes


@dataclass(frozen=True, slots=True)
class Decoded:
    tokenizer: str
    text: str = ""  # of ``ids`` (set when ids were sent, or no batch)
    data: bytes = b""
    results: list[DecodedText] = field(default_factory=list)


def check_batch(size: int, field: str, config: ServerConfig) -> None:
    """A batch holds at least one item and at most --max-batch."""
    if size == 0:
        raise with_field(
            InvalidInput(f"{field} is empty: send at least one item (up to --max-batch "
                         f"{config.max_batch})"),
            field,
        )
    limits.check(f"{field} batch size", size, config.max_batch, "--max-batch", field=field)


def encode(served: Served, request: EncodeRequest, config: ServerConfig,
           context: CallContext) -> Encoded:
    enc = served.encoding
    check_batch(len(request.texts), "texts", config)
    allowed, disallowed = resolve(request.special_tokens, enc, default="all")
    with_offsets = request.include_details and hasattr(enc, "encode_with_offsets")
    varints = getattr(enc, "encode_varints", None) if request.packed and not (
        request.include_details or request.add_special_tokens) else None
    results: list[EncodeResult] = []
    total = 0
    for i, text in enumerate(request.texts):
        check_alive(context)
        where = f"texts[{i}]"
        limits.check_text(text, config.max_text_bytes, where)
        if varints is not None:  # no list of ids at all: the engine writes the wire bytes
            try:
                packed, count = varints(text, allowed_special=allowed,
                                        disallowed_special=disallowed)
            except TokendError as exc:
                raise field_error(exc, where) from None
            total += count
            limits.check("ids in the Encode response", total, config.max_ids, "--max-ids",
                         field=where)
            results.append(EncodeResult([], packed=packed, count=count))
            continue
        offsets = None
        try:
            if with_offsets:
                ids, offsets = encode_with_offsets(
                    enc, text, allowed, disallowed, request.add_special_tokens)
            else:
                ids = enc.encode(text, allowed_special=allowed, disallowed_special=disallowed)
                if request.add_special_tokens:
                    ids = add_special_tokens(enc, ids)
        except TokendError as exc:
            raise field_error(exc, where) from None
        total += len(ids)
        limits.check("ids in the Encode response", total, config.max_ids, "--max-ids",
                     field=where)
        if request.include_details:  # checked before the details are built
            limits.check("tokens with details in the Encode response (ask without "
                         "include_details for ids only)", total, config.max_detail_tokens,
                         "--max-detail-tokens", field=where)
        details = token_details(enc, ids, offsets) if request.include_details else []
        results.append(EncodeResult(ids, details))
    return Encoded(served.ref, results, total)


def encode_stream(served: Served, first: StreamStart, rest: Iterator[str], config: ServerConfig,
                  context: CallContext) -> Iterator[StreamIds]:
    """Ids as soon as they are final, for a text arriving in chunks (``first.text``, then
    ``rest``); bounded by --max-stream-bytes, or --max-text-bytes for an encoder that must hold
    the whole text."""
    allowed, disallowed = resolve(first.special_tokens, served.encoding, default="all")
    max_bytes, flag = config.max_stream_bytes, "--max-stream-bytes"
    if not served.encoding.streams_in_bounded_memory:
        # The encoder must hold the whole text: bound it like one text of Encode.
        max_bytes, flag = min(max_bytes, config.max_text_bytes), "--max-text-bytes"
    stream = StreamEncoder(
        served.encoding,
        _texts(first.text, rest),
        allowed_special=allowed,
        disallowed_special=disallowed,
        max_bytes=max_bytes,
        flag=flag,
    )
    context.add_done_callback(stream.close)  # the client may vanish while we wait for input
    count = 0
    try:
        for ids, done in stream:
            check_alive(context)
            count += len(ids)
            yield StreamIds(served.ref, ids, count, done)
    except DisallowedSpecialToken as exc:
        raise field_error(exc, "text") from None
    finally:
        stream.close()


def decode(served: Served, request: DecodeRequest, config: ServerConfig,
           context: CallContext) -> Decoded:
    enc = served.encoding
    if request.batch:
        limits.check("batch size", len(request.batch), config.max_batch, "--max-batch",
                     field="batch")
    total = len(request.ids) + sum(len(ids) for ids in request.batch)
    limits.check("ids in the Decode request", total, config.max_ids, "--max-ids", field="ids")
    text, data = "", b""
    if request.ids or not request.batch:
        data = _decode_bytes(enc, request.ids, "ids")
        text = data.decode("utf-8", errors="replace")
    results: list[DecodedText] = []
    for i, ids in enumerate(request.batch):
        check_alive(context)
        piece = _decode_bytes(enc, ids, f"batch[{i}].ids")
        results.append(DecodedText(piece.decode("utf-8", errors="replace"), piece))
    return Decoded(served.ref, text, data, results)


def token_details(
    enc: Tokenizer, ids: Sequence[int], offsets: Sequence[tuple[int, int]] | None = None
) -> list[TokenDetail]:
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
        TokenDetail(i, p, start, end, enc.is_special_token(i))
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


def _decode_bytes(enc: Tokenizer, ids: Sequence[int], field: str) -> bytes:
    try:
        return enc.decode_bytes(list(ids))
    except UnknownTokenId as exc:
        index = list(ids).index(exc.token_id) if exc.token_id in ids else None
        where = field if index is None else f"{field}[{index}]"
        raise with_field(exc, where) from None


def _texts(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest
