"""Fit a closed model's estimate to the operator's bills: ``tokend calibrate MODEL usage.jsonl``.

Each line of the usage file is one call as sent and billed::

    {"request": <the body sent to the vendor>, "input_tokens": <what the response billed>}

The body is Anthropic's (``system``, ``messages``, ``tools``), Gemini's (``contents``,
``systemInstruction``, ``tools``) or OpenAI's (``messages`` or ``instructions`` + ``input``),
read as the vendor endpoints read it (``vendor_requests``: ``request_chat``), so the fit is of
what a count of the same request sees.
Every fifth call (the 5th, 10th, ...) is held out; the estimate's ``factor``, ``per_message``
and ``fixed`` are fitted to the others by least squares on what the estimate rule sees
(base-tokenizer tokens of all text, the number of messages; the tool-use prompt and image
tokens are the vendor's published figures and are subtracted first). The error is measured on
the held-out calls only: the mean of ``|estimate - billed| / billed``. The fitted estimate and
that error are what the registry's ``models.json`` then serves for the model, so every later
estimate reports "±2.8% over 412 calls".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokend.core.counting.catalogue import ModelInfo
from tokend.core.counting.estimate import Calibration, Estimate, Features, features
from tokend.core.counting.vendor_requests.anthropic import anthropic_request
from tokend.core.counting.vendor_requests.gemini import gemini_request
from tokend.core.counting.vendor_requests.responses import responses_request
from tokend.core.errors import InvalidInput

MIN_CALLS = 10
HOLD_OUT_EVERY = 5

Call = tuple[Features, int]  # what the estimate sees, what was billed


@dataclass(frozen=True)
class CalibrationResult:
    """The fitted estimate (with its measured error) and the error before fitting."""

    model: str
    estimate: Estimate
    before_pct: float  # the uncalibrated estimate's error on the same held-out calls

    @property
    def calibration(self) -> Calibration:
        assert self.estimate.calibration is not None  # set by calibrate()
        return self.estimate.calibration


def read_usage(path: Path) -> list[tuple[dict[str, Any], int]]:
    """(request body, billed input tokens) per line; InvalidInput naming the line."""
    out = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read usage file {path}: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(f"{path}:{number}: not JSON ({exc})") from None
        billed = row.get("input_tokens") if isinstance(row, Mapping) else None
        if not isinstance(row, Mapping) or not isinstance(row.get("request"), Mapping) or (
                not isinstance(billed, int) or isinstance(billed, bool) or billed <= 0):
            raise InvalidInput(f'{path}:{number}: expected {{"request": {{...}}, '
                               '"input_tokens": N}} with N > 0')
        out.append((dict(row["request"]), billed))
    return out


def request_chat(body: Mapping[str, Any]) -> tuple[list[Any], list[Any] | None, Any]:
    """(messages, tools, tool_choice) of a vendor request body, read as tokend's vendor
    endpoints read it (``vendor_requests``), so a calibration fits what those counts see:
    Gemini's (``contents``), OpenAI Responses' (``input`` / ``instructions``), Anthropic's
    (``messages``); ``messages`` that Anthropic's shape refuses (a ``system`` or ``tool``
    role) are read as OpenAI Chat Completions messages, as they are."""
    named = {**body, "model": str(body.get("model") or "")}
    if "contents" in body or "generateContentRequest" in body:
        chat = gemini_request(named["model"], body)
    elif "input" in body or "instructions" in body:
        chat = responses_request(named)
    else:
        try:
            chat = anthropic_request(named)
        except InvalidInput:
            given = body.get("messages")
            return (list(given) if isinstance(given, list) else [], body.get("tools") or None,
                    body.get("tool_choice"))
    return chat.messages, chat.tools or None, chat.tool_choice or None


def calibrate(info: ModelInfo, usage: Iterable[tuple[dict[str, Any], int]],
              count: Callable[[str], int]) -> CalibrationResult:
    """Fit ``info``'s estimate to ``usage`` and measure it on held-out calls."""
    if info.estimate is None:
        raise InvalidInput(f"{info.name} is counted exactly ({info.exactness}); only models "
                           "counted by an estimate (Claude, Gemini) are calibrated")
    calls: list[Call] = []
    for i, (body, billed) in enumerate(usage):
        try:
            messages, tools, choice = request_chat(body)
            calls.append((features(messages, tools, tool_choice=choice,
                                   estimate=info.estimate, count=count), billed))
        except InvalidInput as exc:
            raise InvalidInput(f"usage line {i + 1}: {exc}") from None
    if len(calls) < MIN_CALLS:
        raise InvalidInput(f"calibration needs at least {MIN_CALLS} calls (one in "
                           f"{HOLD_OUT_EVERY} is held out to measure the error); got {len(calls)}")
    held = [c for i, c in enumerate(calls) if i % HOLD_OUT_EVERY == HOLD_OUT_EVERY - 1]
    train = [c for i, c in enumerate(calls) if i % HOLD_OUT_EVERY != HOLD_OUT_EVERY - 1]
    factor, per_message, fixed = _fit(train)
    fitted = dataclasses.replace(info.estimate, factor=factor, per_message=per_message,
                                 fixed=fixed)
    error = _error(fitted, held)
    fitted = dataclasses.replace(fitted, calibration=Calibration(round(error, 2), len(calls),
                                                                 len(held)))
    return CalibrationResult(info.name, fitted, _error(info.estimate, held))


def _error(estimate: Estimate, calls: list[Call]) -> float:
    """Mean absolute error of ``estimate`` on ``calls``, in percent of the bill."""
    return 100 * sum(abs(f.total(estimate) - billed) / billed for f, billed in calls) / len(calls)


def _fit(calls: list[Call]) -> tuple[float, float, float]:
    """Least squares of ``billed - tools prompt - images`` on (text tokens, messages, 1)."""
    rows = [((float(f.text + f.tools_text), float(f.messages), 1.0),
             float(billed - f.tools_prompt - f.images)) for f, billed in calls]
    # Normal equations A^T A w = A^T y, with a tiny ridge so that a constant message count
    # (every call one message) leaves per_message at 0 instead of a singular system.
    ata = [[sum(x[i] * x[j] for x, _ in rows) for j in range(3)] for i in range(3)]
    aty = [sum(x[i] * y for x, y in rows) for i in range(3)]
    ridge = 1e-9 * max(ata[i][i] for i in range(3))
    for i in range(3):
        ata[i][i] += ridge
    weights = _solve(ata, aty)
    if weights[0] <= 0:  # degenerate data: keep the estimate's shape, fit the ratio only
        text = sum(x[0] for x, _ in rows)
        return (sum(y for _, y in rows) / text if text else 1.0), 0.0, 0.0
    return weights[0], weights[1], weights[2]


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (3 x 3)."""
    n = len(rhs)
    a = [[*row, rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        if a[col][col] == 0:
            continue
        for r in range(n):
            if r != col:
                k = a[r][col] / a[col][col]
                a[r] = [v - k * p for v, p in zip(a[r], a[col], strict=True)]
    return [a[i][n] / a[i][i] if a[i][i] else 0.0 for i in range(n)]


def estimate_entry(info: ModelInfo, estimate: Estimate) -> dict[str, Any]:
    """A registry ``models.json`` entry: ``info`` with ``estimate`` (calibration included)."""
    entry: dict[str, Any] = {
        "tokenizer": info.tokenizer, "vendor": info.vendor, "chat_rule": info.chat_rule,
        "context_window": info.context_window, "max_output_tokens": info.max_output_tokens,
        "aliases": list(info.aliases),
        "estimate": {"factor": estimate.factor, "per_message": estimate.per_message,
                     "fixed": estimate.fixed, "tools": list(estimate.tools),
                     "image": estimate.image},
    }
    if estimate.calibration is not None:
        entry["estimate"]["calibration"] = dataclasses.asdict(estimate.calibration)
    return entry
