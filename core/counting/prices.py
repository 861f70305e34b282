"""USD prices of token numbers, by ``genai-prices`` (pinned; its shipped data snapshot).

tokend keeps no price table: every dollar figure is genai-prices' own calculation on the token
numbers tokend counted. The totals are ``genai_prices.calc_price``; each part's price is the
same package's ``calc_unit_price`` on the model's price object (``PriceCalculation.model_price``)
at the tier the whole input selects, so the parts add up to ``calc_price``'s total (a test
checks it for every quoted model). genai-prices counts ``input_tokens`` as all input, cache
writes and reads included, and prices a part it has no price for at its parent's (a 1-hour
write at the write price, a read at the input price): the part reports the price it used.

genai-prices is an optional dependency (``pip install 'tokend[prices]'``): it brings pydantic,
which the client and the counting library do not need.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from importlib import metadata
from typing import Any

from tokend.core.errors import FailedPrecondition, NoPrice, shown

SOURCE = "genai-prices"
MTOK = 1_000_000
__all__ = ["NoPrice", "PricePart", "Priced", "price", "price_source"]
# The catalogue's vendors -> genai-prices' provider ids (Qwen's models are priced by their
# hosts only: genai-prices then picks the provider from the model's name).
PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "google": "google", "meta": "meta",
             "mistral": "mistral", "deepseek": "deepseek"}
# Quote parts -> (genai-prices usage key, the price keys genai-prices falls back through).
PART_KEYS: dict[str, tuple[str, ...]] = {
    "input": ("input_mtok",),
    "cache_write": ("cache_write_5m_mtok", "cache_write_mtok", "input_mtok"),
    "cache_write_1h": ("cache_write_1h_mtok", "cache_write_mtok", "input_mtok"),
    "cache_read": ("cache_read_mtok", "input_mtok"),
    "output": ("output_mtok",),
}


@dataclass(frozen=True)
class PricePart:
    """One part of a quote: its tokens, the USD per million it is billed at, its USD."""

    name: str
    tokens: int
    usd_per_mtok: Decimal
    usd: Decimal


@dataclass(frozen=True)
class Priced:
    """A quote's prices: the parts at the most output, the totals without and with it."""

    parts: tuple[PricePart, ...]
    usd_min: Decimal
    usd_max: Decimal
    provider: str
    price_model: str  # genai-prices' id of the model it priced

    @property
    def source(self) -> dict[str, str]:
        return price_source()


def price_source() -> dict[str, str]:
    """The price data's name and version (its shipped snapshot)."""
    gp = _genai_prices()
    return {"source": SOURCE, "version": gp.__version__,
            "snapshot": f"bundled with {SOURCE} {gp.__version__}"}


def price(
    model: str,
    vendor: str | None,
    *,
    input_tokens: int,
    cache_write_tokens: int = 0,
    cache_write_1h_tokens: int = 0,
    cache_read_tokens: int = 0,
    output_tokens_max: int = 0,
    provider: str | None = None,
) -> Priced:
    """The prices of a call's token numbers (``input_tokens`` is all input, as genai-prices
    counts it; ``cache_write_tokens`` includes the 1-hour writes).

    >>> p = price("gpt-4o", "openai", input_tokens=1000, output_tokens_max=10)
    >>> str(p.usd_max)
    '0.0026'
    """
    gp = _genai_prices()
    given = provider or PROVIDERS.get(vendor or "")
    usage = {"input_tokens": input_tokens, "cache_write_tokens": cache_write_tokens,
             "cache_write_1h_tokens": cache_write_1h_tokens,
             "cache_read_tokens": cache_read_tokens}
    try:
        low = _calc(gp, model, given, usage)
    except LookupError:
        if provider is not None or given is None:
            raise NoPrice(_no_price(model, provider)) from None
        try:  # priced by another host: genai-prices picks it from the name
            low = _calc(gp, model, None, usage)
        except LookupError:
            raise NoPrice(_no_price(model, None)) from None
    high = _calc(gp, model, low.provider.id, {**usage, "output_tokens": output_tokens_max})
    writes_5m = cache_write_tokens - cache_write_1h_tokens
    counts = {"input": input_tokens - cache_write_tokens - cache_read_tokens,
              "cache_write": writes_5m, "cache_write_1h": cache_write_1h_tokens,
              "cache_read": cache_read_tokens, "output": output_tokens_max}
    parts = tuple(_part(gp, high.model_price, name, n, input_tokens)
                  for name, n in counts.items())
    return Priced(parts, usd_min=low.total_price, usd_max=high.total_price,
                  provider=high.provider.id, price_model=high.model.id)


def _calc(gp: Any, model: str, provider: str | None, usage: dict[str, int]) -> Any:
    kept = {k: v for k, v in usage.items() if v}
    return gp.calc_price(gp.Usage(**kept), model, provider_id=provider)


def _part(gp: Any, model_price: Any, name: str, tokens: int, input_tokens: int) -> PricePart:
    """A part priced by genai-prices' ``calc_unit_price`` at the first price key it has."""
    calc_unit_price = gp.types.calc_unit_price
    unit = next((p for key in PART_KEYS[name] if (p := getattr(model_price, key)) is not None),
                None)
    if unit is None:
        return PricePart(name, tokens, Decimal(0), Decimal(0))
    per_mtok = calc_unit_price(unit, MTOK, input_tokens, MTOK)
    return PricePart(name, tokens, per_mtok, calc_unit_price(unit, tokens, input_tokens, MTOK))


def _no_price(model: str, provider: str | None) -> str:
    where = f" from provider {provider!r}" if provider else ""
    return (f"no price for model {shown(model, 100)}{where} in {SOURCE} "
            f"{_genai_prices().__version__}'s data; name a priced provider (e.g. "
            "provider=\"together\") or take a newer snapshot")


def _genai_prices() -> Any:
    try:
        import genai_prices  # noqa: PLC0415 (optional: the [prices] extra)
        import genai_prices.types  # noqa: PLC0415
    except ImportError:
        raise FailedPrecondition(
            "quotes need genai-prices: pip install 'tokend[prices]'") from None
    return genai_prices


def installed_version() -> str | None:
    """genai-prices' installed version, or None without it."""
    try:
        return metadata.version(SOURCE)
    except metadata.PackageNotFoundError:
        return None
