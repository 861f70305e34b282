"""Typed results of tokend calls: small frozen dataclasses, so no protobuf type leaks out."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

# The Lint and Diff results live in lint_results; re-exported, as every call's result is here.
from tokend.client.lint_results import (
    DiffChange,
    DiffLanguage,
    DiffMove,
    DiffResult,
    DiffText,
    DiffToken,
    LintFinding,
    LintResult,
)


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One chat message to count (OpenAI's ``{"role", "content", "name"?}`` shape)."""

    role: str
    content: str
    name: str | None = None


@dataclass(frozen=True, slots=True)
class TokenDetail:
    """One token of an encoded text: its id, bytes and byte span ``[start, end)`` in the text."""

    id: int
    piece: bytes
    start: int
    end: int
    special: bool


@dataclass(frozen=True, slots=True)
class EncodeResult:
    """The ids of one text; ``tokenizer`` is the resolved reference (``"mytok@7"``)."""

    tokenizer: str
    ids: list[int]
    # Filled only when details were requested; parallel to ids.
    details: list[TokenDetail] | None = None


@dataclass(frozen=True, slots=True)
class DecodeResult:
    """Decoded ids: ``text`` (invalid UTF-8 replaced by U+FFFD) and the exact ``data`` bytes."""

    tokenizer: str
    text: str
    data: bytes


@dataclass(frozen=True, slots=True)
class CountBreakdown:
    """``total`` part by part; the parts sum to it (docs/counting.md, "Breakdown").

    ``framing`` is what the chat format adds (roles, special tokens, the reply's priming); for
    formats encoded as a whole it is the remainder, and can go below zero.
    """

    system: int = 0
    messages: int = 0
    tools: int = 0
    images: int = 0
    framing: int = 0
    texts: int = 0

    @property
    def total(self) -> int:
        return (self.system + self.messages + self.tools + self.images + self.framing
                + self.texts)


@dataclass(frozen=True, slots=True)
class CountResult:
    """Token counts: one per text, the chat messages' total, and whether it fits a budget."""

    tokenizer: str
    counts: list[int]
    messages_count: int
    total: int
    # total <= max_tokens; True when no max_tokens was given.
    fits: bool
    # budget - total (negative when it does not fit): the budget is max_tokens, else the
    # model's context window; 0 with neither.
    remaining: int
    # False when a rule is unpublished or unverified for the model; estimate_reason says why.
    exact: bool = True
    estimate_reason: str = ""
    chat_rule: str = ""
    # Parts of messages_count: tool definitions (and tool_choice), image parts.
    tools_count: int = 0
    images_count: int = 0
    # The catalogued model, its context window and max output tokens (0 when unknown).
    model: str = ""
    context_window: int = 0
    max_output_tokens: int = 0
    # What costs what: system, messages, tools, images, framing, texts.
    breakdown: CountBreakdown = CountBreakdown()


@dataclass(frozen=True, slots=True)
class TruncateResult:
    """A text cut to a token budget: the text, its ids and count, what was kept."""

    tokenizer: str
    text: str
    ids: list[int]
    count: int
    # False when the whole text fitted.
    truncated: bool
    # Characters kept from the start and from the end of the input.
    head_chars: int
    tail_chars: int
    exact: bool = True
    estimate_reason: str = ""


@dataclass(frozen=True, slots=True)
class TextChunk:
    """One piece of a chunked text: ``text == document[start:end]`` (bytes: byte_start:byte_end)."""

    index: int
    text: str
    start: int
    end: int
    byte_start: int
    byte_end: int
    # The tokens of this piece encoded alone.
    count: int
    exact: bool = True
    estimate_reason: str = ""


@dataclass(frozen=True, slots=True)
class TokenizerSummary:
    """One entry of ``list_tokenizers``: a name, its versions and aliases."""

    name: str
    builtin: bool
    versions: list[int]
    latest_version: int
    aliases: dict[str, int]
    vocab_size: int


@dataclass(frozen=True, slots=True)
class TokenizerManifest:
    """One tokenizer version as ``get_tokenizer`` describes it (version 0 for built-ins)."""

    name: str
    version: int
    ref: str
    builtin: bool
    vocab_size: int
    pattern: str
    special_tokens: dict[str, int]
    sha256: dict[str, str]
    # Training parameters and statistics; empty for built-in and imported tokenizers.
    training: dict[str, object]
    created_at: str
    versions: list[int]
    aliases: dict[str, int]

    @staticmethod
    def parse_training(training_json: str) -> dict[str, object]:
        """The manifest's ``training_json`` as a dict (``{}`` when empty)."""
        if not training_json:
            return {}
        value = json.loads(training_json)
        return dict(value) if isinstance(value, Mapping) else {"value": value}


class JobState(enum.Enum):
    """Where a training job is; the last three are final."""

    UNSPECIFIED = "unspecified"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True, slots=True)
class TrainJob:
    """A snapshot of a training job: its config, state and progress within the phase."""

    job_id: str
    name: str
    vocab_size: int
    special_tokens: list[str]
    pattern: str
    corpus_path: str
    state: JobState
    # "count", then "index"/"merge", "select" (char) or "seed"/"lattice"/"em" (unigram), then
    # "publish" (the server's phases); "" before the first report.
    phase: str
    done: int
    total: int
    # Units of the phase per second, and the estimated seconds left (0 when unknown).
    rate: float
    eta_seconds: float
    # The published reference on success ("mytok@3"), the reason on failure.
    published: str
    error: str
    created_at: str
    finished_at: str
    corpus_bytes: int
    # The tokenizer kind ("byte-bpe", "char", "word-bpe", "wordpiece", "unigram").
    model: str = "byte-bpe"
    # WordPiece's merge criterion ("gain", "ratio", "count"); "" for the other kinds.
    wordpiece_score: str = ""

    @property
    def finished(self) -> bool:
        """True once the job succeeded, failed or was cancelled."""
        return self.state.finished


@dataclass(frozen=True, slots=True)
class TrainSpec:
    """What to train (the client-side twin of the proto's TrainConfig)."""

    name: str
    vocab_size: int
    special_tokens: tuple[str, ...] = ()
    # "o200k", "cl100k", "gpt2", or a custom regular expression; "" (the default): the
    # server's default, o200k.
    pattern: str = ""
    # A corpus file relative to the server's --train-dir; "" when the corpus is streamed.
    corpus_path: str = ""
    # "byte-bpe", "char", "word-bpe", "wordpiece" or "unigram"; "" (the default): byte-bpe.
    model: str = ""
    # wordpiece only: "gain", "ratio" or "count" (HF's trainer); "" (the default): gain.
    wordpiece_score: str = ""


__all__ = [
    "ChatMessage",
    "CountBreakdown",
    "CountResult",
    "DecodeResult",
    "DiffChange",
    "DiffLanguage",
    "DiffMove",
    "DiffResult",
    "DiffText",
    "DiffToken",
    "EncodeResult",
    "JobState",
    "LintFinding",
    "LintResult",
    "TokenDetail",
    "TokenizerManifest",
    "TokenizerSummary",
    "TrainJob",
    "TrainSpec",
]


@dataclass(frozen=True, slots=True)
class ReportTokenizer:
    """One tokenizer over the report's texts (words: whitespace-separated runs)."""

    tokenizer: str  # the resolved reference
    n_vocab: int
    texts: int
    bytes: int
    chars: int
    words: int
    tokens: int
    distinct_tokens: int
    bytes_per_token: float
    chars_per_token: float
    tokens_per_word: float
    vocab_used: float  # distinct_tokens / n_vocab


@dataclass(frozen=True, slots=True)
class ReportLanguage:
    """One tokenizer on one language of the server's parallel corpus."""

    tokenizer: str
    language: str  # ISO 639-1 code, e.g. "de"
    name: str  # English name, e.g. "German"
    bytes: int
    tokens: int
    relative: float  # tokens / English tokens, same tokenizer (1.0 = parity)
    bytes_per_token: float


@dataclass(frozen=True, slots=True)
class ReportResult:
    """A Report call's answer: per-tokenizer figures and, if asked, the language table."""

    texts_source: str
    tokenizers: list[ReportTokenizer]
    languages: list[ReportLanguage]


@dataclass(frozen=True, slots=True)
class QuotePart:
    """One part of a quote: its tokens, USD per million tokens and USD (exact decimals)."""

    part: str  # input, cache_write, cache_write_1h, cache_read, output
    tokens: int
    usd_per_mtok: Decimal
    usd: Decimal


@dataclass(frozen=True, slots=True)
class QuoteResult:
    """What a call will cost (docs/counting.md, "Price quotes"); ``as_dict`` is /quote's JSON."""

    model: str
    exact: bool
    estimate_reason: str
    # All input, cache writes and reads included (as genai-prices counts it).
    input_tokens: int
    cache_write_tokens: int  # 5-minute and 1-hour writes
    cache_write_1h_tokens: int
    cache_read_tokens: int
    output_tokens_max: int
    usd_min: Decimal  # without output
    usd_max: Decimal  # with output_tokens_max
    cache: str
    cache_rule: str
    breakpoints: tuple[dict[str, Any], ...]  # {"field", "ttl", "prefix_tokens"}
    prices: dict[str, str]  # source, version, snapshot, provider, model
    parts: tuple[QuotePart, ...]

    def as_dict(self) -> dict[str, Any]:
        """The JSON answer of ``POST /quote`` (USD as decimal strings)."""
        return {
            "model": self.model, "exact": self.exact, "estimate_reason": self.estimate_reason,
            "input_tokens": self.input_tokens, "cache_write_tokens": self.cache_write_tokens,
            "cache_write_1h_tokens": self.cache_write_1h_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "output_tokens_max": self.output_tokens_max, "usd_min": _usd(self.usd_min),
            "usd_max": _usd(self.usd_max), "cache": self.cache, "cache_rule": self.cache_rule,
            "breakpoints": [dict(b) for b in self.breakpoints], "prices": dict(self.prices),
            "parts": [{"part": p.part, "tokens": p.tokens, "usd_per_mtok": _usd(p.usd_per_mtok),
                       "usd": _usd(p.usd)} for p in self.parts],
        }


def _usd(value: Decimal) -> str:
    """As the server writes USD: a plain decimal string, zero as "0"."""
    return "0" if value == 0 else format(value, "f")
