"""CountTokens, Truncate and Chunk as plain calls: typed requests, limits first, typed results.

Counting follows the model's chat rule (``tokend.core.counting``) for messages; a model name
also brings its context window, against which ``fits`` and ``remaining`` are computed. The
result's ``breakdown`` splits ``total`` into system, messages, tools, images, framing and texts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from tokend.core.counting import (
    Chunk,
    ModelCatalogue,
    ModelInfo,
    TruncateResult,
    count_chat,
    iter_chunks,
    truncate,
    version_chat_model,
)
from tokend.core.counting.breakdown import Breakdown
from tokend.core.counting.catalogue import not_installed
from tokend.core.counting.chat import budget_fit
from tokend.core.counting.sizes import check_chat_sizes
from tokend.core.counting.truncation import Keep
from tokend.core.errors import InvalidInput, LimitExceeded, TokendError, UnknownTokenizer
from tokend.core.tokenizer import add_special_tokens
from tokend.server import limits
from tokend.server.app.context import CallContext, check_alive
from tokend.server.app.fields import with_field
from tokend.server.app.messages import ChatMessage, message_dict, tool_choice, tools_list
from tokend.server.app.specials import NO_POLICY, Allowed, Disallowed, SpecialPolicy, field_error
from tokend.server.app.specials import resolve as resolve_specials
from tokend.server.config import ServerConfig
from tokend.server.tokenizers import Served, Tokenizers

# The largest CountTokens.max_tokens: `remaining` (max_tokens - total) is an int64.
MAX_TOKENS_LIMIT = 2**63 - 1
# Pieces per Chunk batch (a stream of small messages costs more than it saves).
CHUNKS_PER_MESSAGE = 64
# Truncate's ``keep``, numbered as the proto's TruncateKeep (0, unspecified, keeps the head).
TRUNCATE_KEEP: dict[int, Keep] = {0: "head", 1: "head", 2: "tail", 3: "both"}


@dataclass(frozen=True, slots=True)
class CountRequest:
    tokenizer: str = ""
    texts: Sequence[str] = ()
    messages: Sequence[ChatMessage] = ()
    plain_text: bool = False
    special_tokens: SpecialPolicy = NO_POLICY
    max_tokens: int | None = None  # a budget; None: no budget
    model: str = ""
    tools_json: str = ""
    tool_choice: str = ""
    add_special_tokens: bool = False


@dataclass(slots=True)
class Counted:
    tokenizer: str
    counts: list[int]
    messages_count: int = 0
    total: int = 0
    fits: bool = False
    remaining: int = 0
    exact: bool = True
    estimate_reason: str = ""
    chat_rule: str = ""
    tools_count: int = 0
    images_count: int = 0
    model: str = ""
    context_window: int = 0
    max_output_tokens: int = 0
    # ``total`` part by part (docs/counting.md, "Breakdown"): its parts sum to ``total``.
    breakdown: Breakdown = field(default_factory=Breakdown)


@dataclass(frozen=True, slots=True)
class TruncateRequest:
    tokenizer: str
    text: str
    max_tokens: int
    keep: int = 0  # TRUNCATE_KEEP's numbers
    marker: str | None = None  # None: "…"


@dataclass(frozen=True, slots=True)
class Truncated:
    tokenizer: str
    result: TruncateResult


@dataclass(frozen=True, slots=True)
class ChunkRequest:
    tokenizer: str
    text: str
    max_tokens: int
    overlap: int = 0


@dataclass(frozen=True, slots=True)
class Chunks:
    """Up to CHUNKS_PER_MESSAGE consecutive pieces; the last batch has ``done`` set."""

    tokenizer: str
    chunks: list[Chunk] = field(default_factory=list)
    done: bool = False


def count(
    request: CountRequest,
    tokenizers: Tokenizers,
    models: ModelCatalogue,
    config: ServerConfig,
    context: CallContext,
) -> tuple[Served, Counted]:
    info = models.find(request.model or request.tokenizer)
    if request.model and info is None:
        try:
            models.get(request.model)  # raises UnknownTokenizer listing known models
        except TokendError as exc:
            raise field_error(exc, "model") from None
    ref = request.tokenizer or (info.tokenizer if info else "")
    if not ref:
        raise with_field(InvalidInput("CountTokens needs a tokenizer or a model"), "tokenizer")
    try:
        served = tokenizers.get(ref)
    except UnknownTokenizer as exc:
        if info is None or request.tokenizer:
            raise with_field(exc, "tokenizer") from None
        # An open model whose tokenizer is not installed: say how to install it.
        raise field_error(UnknownTokenizer(not_installed(info)), "model") from None
    except TokendError as exc:
        raise with_field(exc, "tokenizer") from None
    enc = served.encoding
    items = len(request.texts)
    if request.messages:
        items += len(request.messages) + sum(len(m.parts) for m in request.messages)
    if items == 0:
        raise with_field(
            InvalidInput("CountTokens needs texts or messages; both are empty"), "texts"
        )
    limits.check("texts + messages + content parts batch size", items, config.max_batch,
                 "--max-batch", field="texts")
    budget = request.max_tokens
    if budget is not None and budget > MAX_TOKENS_LIMIT:
        # `remaining` is an int64: a larger budget has no answer to give in it.
        raise with_field(
            InvalidInput(f"max_tokens is {budget}, over the largest allowed value "
                         f"{MAX_TOKENS_LIMIT} (2^63 - 1, the range of `remaining`); leave "
                         "max_tokens unset for no budget"),
            "max_tokens",
        )
    allowed, disallowed = resolve_specials(request.special_tokens, enc, default=frozenset())
    counts: list[int] = []
    for i, text in enumerate(request.texts):
        where = f"texts[{i}]"
        check_alive(context)
        limits.check_text(text, config.max_text_bytes, where)
        try:
            counts.append(enc.count(text, allowed_special=allowed, disallowed_special=disallowed))
        except TokendError as exc:
            raise field_error(exc, where) from None
    framing = 0
    if request.add_special_tokens:
        framing = len(add_special_tokens(enc, []))  # the same ids around every text
        counts = [c + framing for c in counts]
    framing *= len(counts)
    result = Counted(served.ref, counts)
    reason = info.fixed_reason() if info is not None else ""
    if info is not None and reason:  # a closed model: texts are estimates too
        result.counts = counts = [info.text_tokens(c) for c in counts]
        result.exact, result.estimate_reason = False, reason
    if info is not None:
        result.model = info.name
        result.context_window = info.context_window
        result.max_output_tokens = info.max_output_tokens
    if request.messages or request.tools_json:  # tools alone: what their definitions cost
        _count_messages(request, result, tokenizers=tokenizers, models=models, config=config,
                        context=context, info=info, served=served, allowed=allowed,
                        disallowed=disallowed)
    result.total = sum(counts) + result.messages_count
    result.breakdown = result.breakdown.with_texts(sum(counts) - framing, framing)
    window = info.context_window if info is not None and info.context_window else None
    result.fits, result.remaining = budget_fit(result.total, budget, window)
    return served, result


def _count_messages(
    request: CountRequest,
    result: Counted,
    *,
    tokenizers: Tokenizers,
    models: ModelCatalogue,
    config: ServerConfig,
    context: CallContext,
    info: ModelInfo | None,
    served: Served,
    allowed: Allowed,
    disallowed: Disallowed,
) -> None:
    """Fill the chat part of ``result`` by the model's chat rule (tokend.core.counting);
    a registry version imported with a chat template supplies the rule if no model does."""
    messages = [
        message_dict(m, f"messages[{i}]", config.max_text_bytes)
        for i, m in enumerate(request.messages)
    ]
    try:
        check_chat_sizes(messages, max_text_bytes=config.max_text_bytes,
                         max_items=config.max_batch - len(request.texts))
    except LimitExceeded as exc:
        raise limits.hit(exc, getattr(exc, "field", "messages")) from None
    tools = tools_list(request.tools_json, config.max_text_bytes)
    check_alive(context)
    try:
        if not served.resolved.builtin:
            manifest = tokenizers.manifest(served)
            info = version_chat_model(served.ref, manifest, info)
        chat = count_chat(
            messages,
            model=info.name if info is not None else None,
            model_info=info,
            tools=tools,
            encoding=served.encoding,
            tool_choice=tool_choice(request.tool_choice),
            rule="plain" if request.plain_text else None,
            catalogue=models,
            allowed_special=allowed,
            disallowed_special=disallowed,
        )
    except TokendError as exc:
        raise field_error(exc, "messages") from None
    result.messages_count = chat.total
    result.breakdown = chat.breakdown
    result.tools_count = chat.tools
    result.images_count = chat.images
    result.chat_rule = chat.rule
    result.exact = chat.exact
    result.estimate_reason = chat.estimate_reason


def truncate_text(served: Served, request: TruncateRequest, config: ServerConfig) -> Truncated:
    limits.check_text(request.text, config.max_text_bytes, "text")
    keep = TRUNCATE_KEEP.get(request.keep)
    if keep is None:
        raise with_field(InvalidInput(f"unknown keep {request.keep}"), "keep")
    marker = "…" if request.marker is None else request.marker
    limits.check_text(marker, config.max_text_bytes, "marker")
    try:
        result = truncate(served.encoding, request.text, request.max_tokens, keep=keep,
                          marker=marker)
    except TokendError as exc:
        raise field_error(exc, "max_tokens") from None
    limits.check("ids in the Truncate response", result.count, config.max_ids, "--max-ids",
                 field="max_tokens")
    return Truncated(served.ref, result)


def check_chunking(request: ChunkRequest, config: ServerConfig) -> None:
    """Chunk's limits, checked before the first piece is made."""
    limits.check_text(request.text, config.max_text_bytes, "text")
    if request.max_tokens < 1:
        raise with_field(InvalidInput("max_tokens must be >= 1"), "max_tokens")
    if request.overlap >= request.max_tokens:
        raise with_field(InvalidInput(
            f"overlap must be below max_tokens {request.max_tokens}, not {request.overlap}"
        ), "overlap")


def chunk_text(served: Served, request: ChunkRequest, context: CallContext) -> Iterator[Chunks]:
    """The pieces of the text in batches of CHUNKS_PER_MESSAGE (``check_chunking`` first)."""
    pieces = iter_chunks(served.encoding, request.text, request.max_tokens,
                         overlap=request.overlap)
    batch: list[Chunk] = []
    try:
        for piece in pieces:
            check_alive(context)
            batch.append(piece)
            if len(batch) == CHUNKS_PER_MESSAGE:
                yield Chunks(served.ref, batch)
                batch = []
    except InvalidInput as exc:
        raise field_error(exc, "max_tokens") from None
    yield Chunks(served.ref, batch, done=True)


def served_as(tokenizers: Tokenizers, ref: str) -> Served:
    """What ``ref`` is served as; an unknown or invalid one names the ``tokenizer`` field."""
    try:
        return tokenizers.get(ref)
    except TokendError as exc:
        raise with_field(exc, "tokenizer") from None
