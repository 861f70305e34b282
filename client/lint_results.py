"""Typed results of the Lint and Diff calls (re-exported by ``tokend.client.results``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LintFinding:
    """One thing lint noticed (the kinds: the server's docs/lint.md)."""

    kind: str  # "unreachable", "partial-utf8", "duplicate-special-id", "glitch-candidate", ...
    severity: str  # "error", "warning" or "info"
    id: int | None  # None for a finding about a text (round-trip)
    token: bytes | None  # None when the finding has no token (a hole, two specials on one id)
    message: str
    extra: dict[str, Any]  # the kind's own fields: encodes_to, score and rank, texts...

    @property
    def text(self) -> str | None:
        """The token's text (invalid UTF-8 replaced), None without a token."""
        return None if self.token is None else self.token.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class LintResult:
    """A Lint call's answer: the findings listed, the counts of all, what ran."""

    tokenizer: str  # the resolved reference
    n_vocab: int
    depth: str  # "import" or "full"
    findings: list[LintFinding]
    summary: dict[str, int]  # kind -> count, for every kind that ran
    checks: dict[str, str]  # kind -> "ran" or "skipped: why"
    summaries: dict[str, Any]  # full depth: trailing_space_twins, digits, languages
    truncated: bool  # more findings than max_findings: the list was cut
    seconds: float


@dataclass(frozen=True, slots=True)
class DiffToken:
    """A token of one side of a diff: its id there and its bytes."""

    id: int
    token: bytes

    @property
    def text(self) -> str:
        return self.token.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class DiffChange:
    """An id whose bytes changed from ``a`` to ``b`` (an error: embedding rows mean another
    token now)."""

    id: int
    a: bytes
    b: bytes


@dataclass(frozen=True, slots=True)
class DiffMove:
    """A token that kept its bytes but moved id."""

    a_id: int
    b_id: int
    token: bytes


@dataclass(frozen=True, slots=True)
class DiffLanguage:
    """Tokens with each side on one language of the server's parallel corpus."""

    language: str  # ISO 639-1 code
    name: str
    a_tokens: int
    b_tokens: int
    ratio: float  # b / a


@dataclass(frozen=True, slots=True)
class DiffText:
    """A bundled text whose token count changed (its first 120 characters)."""

    text: str
    a_tokens: int
    b_tokens: int
    ratio: float


@dataclass(frozen=True, slots=True)
class DiffResult:
    """A Diff call's answer: what changed from tokenizer ``a`` to ``b`` (lists: 50 rows at
    most; ``summary`` counts all)."""

    a: str
    b: str
    a_n_vocab: int
    b_n_vocab: int
    summary: dict[str, int]  # added, removed, changed, moved, reordered_merges, special_changes
    errors: list[str]
    added: list[DiffToken]  # ids in b
    removed: list[DiffToken]  # ids in a
    changed: list[DiffChange]
    moved: list[DiffMove]
    specials_added: list[str]
    specials_removed: list[str]
    specials_moved: list[str]
    languages: list[DiffLanguage]
    texts: list[DiffText]
