"""Lint and Diff: tokend.core.lint over served tokenizers, bounded before any work.

Limits: every tokenizer's vocabulary within --max-lint-vocab (lint encodes each token once;
a diff reads both vocabularies), ``max_findings`` within --max-lint-findings (the counts cover
every finding whatever is listed), a diff's ``top`` at most ``MAX_TOP``, and at most
--max-lint-calls of these calls running at once per worker (one more is refused at once: each
holds a handler thread for up to seconds of CPU). The core's ``check`` hook is the call's
deadline and cancellation, polled between checks and every 2048 tokens, so a caller that gave
up stops costing CPU. No rule of lint lives here: ``lint_tokenizer`` and ``diff_tokenizers``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tokend.core.errors import InvalidInput, TokendError, shown
from tokend.core.lint import LintReport, lint_tokenizer
from tokend.core.lint.diff import diff_tokenizers
from tokend.server import limits
from tokend.server.app.context import CallContext, check_alive
from tokend.server.app.fields import with_field
from tokend.server.config import ServerConfig
from tokend.server.streaming import StreamSlots
from tokend.server.tokenizers import Served

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
DEPTHS = ("full", "import")  # "full": everything (the default); "import": what publish runs
DEFAULT_FINDINGS = 1000  # findings listed when the request says 0
DEFAULT_TOP = 10  # a diff's texts whose counts changed most, when the request says 0
MAX_TOP = 100

Get = Callable[[str], Served]


@dataclass(frozen=True, slots=True)
class LintRequest:
    tokenizer: str
    depth: str = ""  # "full" (also when empty) or "import"
    list_partial: bool = False  # list every partial-UTF-8 token (always counted)
    max_findings: int = 0  # findings listed; 0: DEFAULT_FINDINGS


@dataclass(frozen=True, slots=True)
class Linted:
    tokenizer: str  # the resolved reference
    depth: str  # "full" or "import"
    report: LintReport  # its findings, errors then warnings then info, cut to max_findings
    truncated: bool  # the findings were cut (the counts were not)


@dataclass(frozen=True, slots=True)
class DiffRequest:
    a: str
    b: str
    top: int = 0  # texts listed; 0: DEFAULT_TOP


@dataclass(frozen=True, slots=True)
class DiffToken:
    id: int  # b's id for an added token, a's for a removed one
    token: bytes


@dataclass(frozen=True, slots=True)
class ChangedId:
    id: int
    a: bytes
    b: bytes


@dataclass(frozen=True, slots=True)
class MovedToken:
    a_id: int
    b_id: int
    token: bytes


@dataclass(frozen=True, slots=True)
class LanguageRatio:
    language: str
    name: str
    a_tokens: int
    b_tokens: int
    ratio: float  # b / a


@dataclass(frozen=True, slots=True)
class TextChange:
    text: str  # the first 120 characters
    a_tokens: int
    b_tokens: int
    ratio: float


@dataclass(frozen=True, slots=True)
class Diffed:
    a: str  # the resolved references
    b: str
    a_n_vocab: int
    b_n_vocab: int
    summary: dict[str, int]  # added, removed, changed, moved, reordered_merges, special_changes
    errors: list[str]
    added: list[DiffToken] = field(default_factory=list)
    removed: list[DiffToken] = field(default_factory=list)
    changed: list[ChangedId] = field(default_factory=list)
    moved: list[MovedToken] = field(default_factory=list)
    specials_added: list[str] = field(default_factory=list)
    specials_removed: list[str] = field(default_factory=list)
    specials_moved: list[str] = field(default_factory=list)
    languages: list[LanguageRatio] = field(default_factory=list)
    texts: list[TextChange] = field(default_factory=list)


def lint(request: LintRequest, get: Get, config: ServerConfig, slots: StreamSlots,
         context: CallContext) -> Linted:
    """Check the request, load the tokenizer, check its size, lint it within the slots."""
    depth = request.depth or "full"
    if depth not in DEPTHS:
        raise with_field(InvalidInput(f"depth {shown(request.depth)} is not a lint depth: "
                                      "use import or full"), "depth")
    limits.check("max_findings", request.max_findings, config.max_lint_findings,
                 "--max-lint-findings", field="max_findings")
    wanted = request.max_findings or min(DEFAULT_FINDINGS, config.max_lint_findings)
    served = _load(get, request.tokenizer, "tokenizer", config)
    with slots.hold("Lint"):
        report = lint_tokenizer(served.encoding, name=served.ref, full=depth == "full",
                                list_partial=request.list_partial,
                                check=lambda: check_alive(context))
    # Errors first, then warnings, then info (core's order within each), so that a cut list
    # keeps what matters: listed partial-UTF-8 tokens never push unreachable ones out.
    ordered = sorted(report.findings, key=lambda f: SEVERITY_ORDER[f.severity])
    report = dataclasses.replace(report, findings=ordered[:wanted])
    return Linted(served.ref, depth, report, len(ordered) > wanted)


def diff(request: DiffRequest, get: Get, config: ServerConfig, slots: StreamSlots,
         context: CallContext) -> Diffed:
    """Check the request, load both tokenizers, check their sizes, diff them within the slots."""
    if request.top > MAX_TOP:
        raise with_field(InvalidInput(f"top is {request.top}: list at most {MAX_TOP} texts"),
                         "top")
    a = _load(get, request.a, "a", config)
    b = _load(get, request.b, "b", config)
    with slots.hold("Diff"):
        found = diff_tokenizers(a.encoding, b.encoding, name_a=a.ref, name_b=b.ref,
                                top=request.top or DEFAULT_TOP,
                                check=lambda: check_alive(context))
    return diffed(found)


def _load(get: Get, ref: str, name: str, config: ServerConfig) -> Served:
    """The served tokenizer ``ref`` (errors tagged with the field ``name``), within
    --max-lint-vocab."""
    try:
        served = get(ref)
    except TokendError as exc:
        raise with_field(exc, name) from None
    limits.check(f"{name} vocabulary size ({served.ref})", served.encoding.n_vocab,
                 config.max_lint_vocab, "--max-lint-vocab", field=name)
    return served


def diffed(found: dict[str, Any]) -> Diffed:
    """``diff_tokenizers``' JSON-ready dict as the typed result (hex back to bytes)."""
    specials = found["specials"]
    return Diffed(
        a=found["a"], b=found["b"], a_n_vocab=found["n_vocab"]["a"],
        b_n_vocab=found["n_vocab"]["b"], summary=dict(found["summary"]),
        errors=list(found["errors"]),
        added=[DiffToken(r["id"], _bytes(r["token"])) for r in found["added"]],
        removed=[DiffToken(r["id"], _bytes(r["token"])) for r in found["removed"]],
        changed=[ChangedId(r["id"], _bytes(r["a"]), _bytes(r["b"])) for r in found["changed"]],
        moved=[MovedToken(r["a"], r["b"], _bytes(r["token"])) for r in found["moved"]],
        specials_added=list(specials["added"]), specials_removed=list(specials["removed"]),
        specials_moved=list(specials["changed_id"]),
        languages=[LanguageRatio(r["language"], r["name"], r["a"], r["b"], r["ratio"])
                   for r in found["languages"]],
        texts=[TextChange(r["text"], r["a"], r["b"], r["ratio"]) for r in found["texts"]],
    )


def _bytes(token: dict[str, str]) -> bytes:
    return bytes.fromhex(token["hex"])
