"""Image tokens by OpenAI's published formulas, from a given width, height and detail.

tokend never fetches an image: the caller says how large it is. Two formulas exist (OpenAI,
"Images and vision", calculating costs):

* tiles (gpt-4o, gpt-4.1, o1, o3, ...): ``detail="low"`` costs ``base`` tokens. Otherwise the
  image is scaled to fit in 2048x2048, then so that its shortest side is at most 768 px, and
  costs ``base + tile * (512-px tiles covering it)``.
* patches (gpt-4.1-mini, gpt-4.1-nano, o4-mini): 32x32-px patches covering the image, capped
  at 1536 (the image is scaled down to fit), times a per-model multiplier.

>>> image_tokens(1024, 1024, "high", ImageRule("tiles", base=85, tile=170))
765
>>> image_tokens(2048, 4096, "high", ImageRule("tiles", base=85, tile=170))
1105
>>> image_tokens(1800, 2400, "auto", ImageRule("patches", multiplier=1.0))
1452
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from tokend.core.errors import InvalidInput

DETAILS = ("auto", "low", "high")
PATCH = 32
MAX_PATCHES = 1536


@dataclass(frozen=True)
class ImageRule:
    """How a model prices an image: ``tiles`` (base + tile per 512-px tile) or ``patches``."""

    kind: Literal["tiles", "patches"]
    base: int = 0
    tile: int = 0
    multiplier: float = 1.0


# gpt-4o's constants: the rule used (and said to be an estimate) for a model with no rule.
DEFAULT_RULE = ImageRule("tiles", base=85, tile=170)


def image_tokens(width: int, height: int, detail: str, rule: ImageRule) -> int:
    """Tokens of one image of ``width`` x ``height`` pixels at ``detail`` (auto|low|high)."""
    if detail not in DETAILS:
        raise InvalidInput(f"image detail must be one of {', '.join(DETAILS)}, not {detail[:32]!r}")
    if width <= 0 or height <= 0:
        raise InvalidInput(
            f"an image needs its width and height in pixels (got {width}x{height}); tokend "
            "never downloads images, so pass them with the image"
        )
    if rule.kind == "patches":
        return math.ceil(_patches(width, height) * rule.multiplier)
    if detail == "low":
        return rule.base
    w, h = _fit(width, height, 2048)
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return rule.base + rule.tile * tiles


def _fit(width: float, height: float, side: int) -> tuple[float, float]:
    """Scale down (never up) to fit in a ``side`` x ``side`` square, keeping the aspect ratio."""
    if width <= side and height <= side:
        return width, height
    scale = side / max(width, height)
    return width * scale, height * scale


def _patches(width: int, height: int) -> int:
    """32-px patches covering the image, after the published scale-down to at most 1536."""
    patches = math.ceil(width / PATCH) * math.ceil(height / PATCH)
    if patches <= MAX_PATCHES:
        return patches
    # Scale so the area holds 1536 patches, then shrink a little more so that whole patches fit
    # along the tighter side (the published steps).
    shrink = math.sqrt(PATCH * PATCH * MAX_PATCHES / (width * height))
    w, h = width * shrink, height * shrink
    shrink *= min(math.floor(w / PATCH) / (w / PATCH), math.floor(h / PATCH) / (h / PATCH))
    w, h = width * shrink, height * shrink
    return math.ceil(w / PATCH) * math.ceil(h / PATCH)
