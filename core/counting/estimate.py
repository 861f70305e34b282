"""The ``estimate`` rule: models whose tokenizer is not public (Claude 3 and later, Gemini).

No reference exists to be exact against, so tokend says how it estimates, on every count::

    messages = factor * (base tokens of every text in the messages)
               + per_message * (number of messages) + fixed
    tools    = factor * (base tokens of the tools' JSON) + the vendor's tool-use prompt
    images   = the vendor's published image formula (sizes given, never fetched)

``base`` is the entry's ``tokenizer`` (o200k_base). ``factor``, ``per_message`` and ``fixed``
start as documented guesses (docs/counting.md) and are replaced by ``tokend calibrate`` with a
least-squares fit to the operator's own bills; the calibration's held-out error then rides on
every estimate ("±2.8% over 412 calls").

>>> e = Estimate(factor=1.2, per_message=3, fixed=4)
>>> e.value(text_tokens=10, messages=1)
19.0
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokend.core.counting.breakdown import SYSTEM_ROLES, Breakdown
from tokend.core.errors import CorruptData, InvalidInput

IMAGE_RULES = ("anthropic", "gemini")
# Anthropic: images over 1568 px on the long edge or 1092x1092 pixels are scaled down first,
# then cost width * height / 750 tokens ("Vision" docs: 1092x1092 is ~1,590, the most).
ANTHROPIC_LONG_EDGE = 1568
ANTHROPIC_MAX_PIXELS = 1092 * 1092
ANTHROPIC_PIXELS_PER_TOKEN = 750
# Gemini 2.x: 258 tokens when both sides are at most 384 px, else 258 per 768-px tile
# ("Understand and count tokens", images).
GEMINI_TILE_TOKENS = 258
GEMINI_SMALL = 384


@dataclass(frozen=True)
class Calibration:
    """A fit to billed counts (``tokend calibrate``): held-out error and how many calls."""

    error_pct: float  # mean absolute error on the held-out calls, in percent of the bill
    calls: int  # calls in the usage file
    held_out: int  # of which held out to measure the error

    def describe(self) -> str:
        return f"±{self.error_pct:.1f}% over {self.calls} calls"


@dataclass(frozen=True)
class Estimate:
    """The coefficients of one model's estimate (module docstring)."""

    factor: float
    per_message: float = 0.0
    fixed: float = 0.0
    # The tool-use system prompt: (tool_choice auto or none, any or a named tool).
    tools: tuple[int, int] = (0, 0)
    image: str | None = None
    calibration: Calibration | None = None

    def value(self, *, text_tokens: int, messages: int) -> float:
        return self.factor * text_tokens + self.per_message * messages + self.fixed


def parse_estimate(raw: Any, where: str) -> Estimate:
    """An entry's ``"estimate"`` object; CorruptData naming the entry on a mistake."""
    if not isinstance(raw, Mapping):
        raise CorruptData(f'{where}: estimate must be {{"factor": 1.2, ...}}')
    try:
        numbers = {key: float(raw.get(key, 0.0)) for key in ("per_message", "fixed")}
        factor = float(raw["factor"])
        tools = tuple(int(n) for n in raw.get("tools", (0, 0)))
    except (KeyError, TypeError, ValueError):
        raise CorruptData(f"{where}: estimate needs a number factor (and numbers per_message, "
                          "fixed; tools as [auto, any])") from None
    if factor <= 0 or len(tools) != 2:
        raise CorruptData(f"{where}: estimate factor must be > 0 and tools two numbers")
    image = raw.get("image")
    if image is not None and image not in IMAGE_RULES:
        raise CorruptData(f"{where}: estimate image must be one of {', '.join(IMAGE_RULES)}")
    calibration = None
    if raw.get("calibration") is not None:
        cal = raw["calibration"]
        try:
            calibration = Calibration(float(cal["error_pct"]), int(cal["calls"]),
                                      int(cal["held_out"]))
        except (KeyError, TypeError, ValueError):
            raise CorruptData(f"{where}: estimate calibration needs error_pct, calls, "
                              "held_out") from None
    return Estimate(factor=factor, tools=(tools[0], tools[1]), image=image,
                    calibration=calibration, **numbers)


def estimate_reason(model: str, base: str, estimate: Estimate) -> str:
    """Why a count for ``model`` is an estimate, and how good it is known to be."""
    how = (f"{model}'s tokenizer is not public: estimated from {base} tokens "
           f"(x{estimate.factor:.3g} + {estimate.per_message:.3g} per message + "
           f"{estimate.fixed:.3g})")
    if estimate.calibration is None:
        return (how + ", uncalibrated; `tokend calibrate MODEL usage.jsonl` fits it to your "
                "bills and measures its error")
    cal = estimate.calibration
    return how + (f", calibrated on your bills: {cal.describe()} (error measured on the "
                  f"{cal.held_out} held out)")


@dataclass(frozen=True)
class Features:
    """What the estimate rule sees in a request (``calibrate.py`` fits on these)."""

    text: int  # base-tokenizer tokens of every text, tool call and block in the messages
    messages: int
    tools_text: int  # base-tokenizer tokens of the tools' JSON
    tools_prompt: int  # the vendor's tool-use system prompt (0 without tools)
    images: int
    system: int = 0  # of ``text``, the tokens of system messages

    def parts(self, estimate: Estimate) -> tuple[int, int, int]:
        """(messages, tools, images) tokens under ``estimate``."""
        msgs = round(estimate.value(text_tokens=self.text, messages=self.messages)) \
            if self.messages else 0
        tools = round(estimate.factor * self.tools_text) + self.tools_prompt \
            if self.tools_text else 0
        return msgs, tools, self.images

    def total(self, estimate: Estimate) -> int:
        return sum(self.parts(estimate))

    def breakdown(self, estimate: Estimate) -> Breakdown:
        """:meth:`parts` split further: ``factor`` times the system's and the other messages'
        text; framing the rest of the messages' estimate (per message, fixed, rounding)."""
        msgs, tools, images = self.parts(estimate)
        system = round(estimate.factor * self.system)
        others = round(estimate.factor * (self.text - self.system))
        return Breakdown(system=system, messages=others, tools=tools, images=images,
                         framing=msgs - system - others)


def features(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    tool_choice: Any,
    estimate: Estimate,
    count: Callable[[str], int],
) -> Features:
    """The :class:`Features` of a chat request (OpenAI, Anthropic or Gemini shapes)."""
    text = system = 0
    images = 0
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidInput(f"messages[{i}] must be an object with role and content")
        before = text
        for key, value in message.items():
            if key == "role" or value is None:
                continue
            if key == "content" and not isinstance(value, str):
                t, img = _blocks(value, f"messages[{i}].content", estimate, count)
                text += t
                images += img
            else:
                text += count(value if isinstance(value, str) else _json(value))
        if message.get("role") in SYSTEM_ROLES:
            system += text - before
    tools_text = tools_prompt = 0
    if tools:
        tools_text = count(_json(list(tools)))
        tools_prompt = estimate.tools[1 if _forced(tool_choice) else 0]
    return Features(text, len(messages), tools_text, tools_prompt, images, system)


def _forced(choice: Any) -> bool:
    """Whether ``tool_choice`` forces a tool (Anthropic's any / tool; else auto or none)."""
    if choice in (None, "auto", "none"):
        return False
    if isinstance(choice, Mapping):
        mode = choice.get("functionCallingConfig")  # Gemini's toolConfig
        if choice.get("type") in ("auto", "none") or (
                isinstance(mode, Mapping) and mode.get("mode") in ("AUTO", "NONE")):
            return False
    return True


def estimate_chat(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    tool_choice: Any,
    estimate: Estimate,
    count: Callable[[str], int],
) -> Breakdown:
    """The tokens of a chat request by the estimate rule, part by part."""
    return features(messages, tools, tool_choice=tool_choice, estimate=estimate,
                    count=count).breakdown(estimate)


def _blocks(parts: Any, where: str, estimate: Estimate, count: Callable[[str], int]
            ) -> tuple[int, int]:
    """(text tokens, image tokens) of OpenAI parts or Anthropic / Gemini content blocks."""
    if not isinstance(parts, Sequence):
        raise InvalidInput(f"{where} must be a string or a list of parts")
    text = images = 0
    for j, part in enumerate(parts):
        if not isinstance(part, Mapping):
            raise InvalidInput(f"{where}[{j}] must be an object")
        kind = part.get("type")
        if kind in ("image", "image_url"):
            images += image_estimate(part, f"{where}[{j}]", estimate.image)
        elif kind == "text" or "text" in part:
            text += count(str(part.get("text", "")))
        else:  # tool_use, tool_result, documents...: their JSON, less the type tag
            text += count(_json({k: v for k, v in part.items() if k != "type"}))
    return text, images


def image_estimate(part: Mapping[str, Any], where: str, rule: str | None) -> int:
    """Tokens of an image part whose ``width`` and ``height`` are given (never fetched)."""
    url = part.get("image_url")
    url = url if isinstance(url, Mapping) else {}
    source = part.get("source")
    source = source if isinstance(source, Mapping) else {}
    try:
        width = int(part.get("width") or url.get("width") or source.get("width") or 0)
        height = int(part.get("height") or url.get("height") or source.get("height") or 0)
    except (TypeError, ValueError):
        width = height = 0
    if width <= 0 or height <= 0:
        raise InvalidInput(f"{where}: an image needs its width and height in pixels; tokend "
                           "never downloads images, so pass them with the image")
    if rule == "gemini":
        if width <= GEMINI_SMALL and height <= GEMINI_SMALL:
            return GEMINI_TILE_TOKENS
        unit = min(max(math.floor(min(width, height) / 1.5), 256), 768)
        return GEMINI_TILE_TOKENS * math.ceil(width / unit) * math.ceil(height / unit)
    scale = min(1.0, ANTHROPIC_LONG_EDGE / max(width, height),
                math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)))
    return math.ceil(width * scale * height * scale / ANTHROPIC_PIXELS_PER_TOKEN)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
