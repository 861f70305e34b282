"""What a lint says: findings (kind, id, token, severity, a one-line explanation) and a report.

JSON shape (``LintReport.to_dict``)::

    {"format": "tokend-lint-1", "tokenizer": "o200k_base", "n_vocab": 200019,
     "findings": [{"kind": "unreachable", "id": 3413, "severity": "warning",
                   "token": {"text": " I'", "hex": "204927", "base64": "IEkn"},
                   "message": "..."}, ...],
     "summary": {"unreachable": 12, "partial-utf8": 1562, ...},
     "summaries": {"trailing_space_twins": {...}, "digits": {...}, "languages": [...]},
     "checks": {"unreachable": "ran", "glitch-candidate": "skipped: ..."}}
"""

from __future__ import annotations

import base64
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

LINT_FORMAT = "tokend-lint-1"
Severity = Literal["error", "warning", "info"]

# kind -> (severity, what it means); the one table docs/lint.md and the CLI follow.
KINDS: dict[str, tuple[Severity, str]] = {
    "duplicate-special-id": ("error", "two special strings share one id"),
    "unreachable": ("warning", "no text encodes to this ordinary token on its own"),
    "hole": ("warning", "an id below n_vocab with no token"),
    "special-in-text": ("warning", "ordinary text produces this special token's text"),
    "special-normalized": ("warning", "the normalizer changes this special token's text"),
    "special-whitespace": ("warning", "a special token with whitespace inside"),
    "special-non-ascii": ("warning", "a special token with non-ASCII characters"),
    "round-trip": ("warning", "decode(encode(text)) is not the text"),
    "partial-utf8": ("info", "the token's bytes alone are not valid UTF-8"),
    "glitch-candidate": ("info", "a long, early token the bundled corpora never use"),
}


def token_dict(data: bytes) -> dict[str, str]:
    """A token's bytes as text (invalid UTF-8 replaced), hex and base64.

    >>> token_dict(b" I'")
    {'text': " I'", 'hex': '204927', 'base64': 'IEkn'}
    """
    return {
        "text": data.decode("utf-8", "replace"),
        "hex": data.hex(),
        "base64": base64.b64encode(data).decode("ascii"),
    }


@dataclass(frozen=True)
class Finding:
    """One thing lint noticed. ``id`` is None for findings about a text (round-trip)."""

    kind: str
    id: int | None
    token: bytes | None
    message: str
    extra: dict[str, Any] = field(default_factory=dict)  # kind-specific fields (score, text)

    @property
    def severity(self) -> Severity:
        return KINDS[self.kind][0]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "id": self.id, "severity": self.severity}
        if self.token is not None:
            out["token"] = token_dict(self.token)
        out["message"] = self.message
        out.update(self.extra)
        return out


@dataclass
class LintReport:
    """Every finding of one lint run, the counts per kind and the descriptive summaries.

    ``counts`` may exceed the findings listed: partial-UTF-8 tokens are counted but listed
    only on request, glitch candidates are listed up to a limit (best first).
    """

    tokenizer: str
    n_vocab: int
    findings: list[Finding] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    summaries: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, str] = field(default_factory=dict)  # kind -> "ran" | "skipped: why"
    seconds: float = 0.0

    def add(self, finding: Finding, *, listed: bool = True) -> None:
        self.counts[finding.kind] += 1
        if listed:
            self.findings.append(finding)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def summary(self) -> dict[str, int]:
        """``{kind: count}`` for every kind that ran (zero included), in ``KINDS`` order."""
        return {
            kind: self.counts[kind] for kind in KINDS if self.checks.get(kind) == "ran"
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": LINT_FORMAT,
            "tokenizer": self.tokenizer,
            "n_vocab": self.n_vocab,
            "findings": [f.to_dict() for f in self.findings],
            "summary": self.summary(),
            "summaries": self.summaries,
            "checks": dict(self.checks),
            "seconds": round(self.seconds, 3),
        }
