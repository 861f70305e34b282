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

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from importlib import metadata
from pathlib import Path
from typing import Any

from tokend.core.errors import CorruptData, FailedPrecondition, NoPrice, shown

SOURCE = "genai-prices"
MTOK = 1_000_000
__all__ = ["NoPrice", "PricePart", "Priced", "Snapshot", "price", "price_source",
           "read_snapshot", "write_snapshot"]
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
    source: dict[str, str] = field(default_factory=dict)  # price_source() of the data used


@dataclass(frozen=True)
class Snapshot:
    """A newer price snapshot kept in a registry (``tokend prices update``): genai-prices'
    ``DataSnapshot`` of the file, and where and when it was taken."""

    data: Any
    fetched: str  # ISO date-time
    origin: str  # the URL or file it was taken from


def price_source(snapshot: Snapshot | None = None) -> dict[str, str]:
    """The price data's name, version and snapshot (shipped, or a registry's newer one)."""
    gp = _genai_prices()
    if snapshot is not None:
        return {"source": SOURCE, "version": gp.__version__,
                "snapshot": f"{snapshot.fetched} from {snapshot.origin}"}
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
    snapshot: Snapshot | None = None,
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
    data = snapshot.data if snapshot is not None else None
    try:
        low = _calc(gp, data, model, given, usage)
    except LookupError:
        if provider is not None or given is None:
            raise NoPrice(_no_price(model, provider)) from None
        try:  # priced by another host: genai-prices picks it from the name
            low = _calc(gp, data, model, None, usage)
        except LookupError:
            raise NoPrice(_no_price(model, None)) from None
    high = _calc(gp, data, model, low.provider.id,
                 {**usage, "output_tokens": output_tokens_max})
    writes_5m = cache_write_tokens - cache_write_1h_tokens
    counts = {"input": input_tokens - cache_write_tokens - cache_read_tokens,
              "cache_write": writes_5m, "cache_write_1h": cache_write_1h_tokens,
              "cache_read": cache_read_tokens, "output": output_tokens_max}
    parts = tuple(_part(gp, high.model_price, name, n, input_tokens)
                  for name, n in counts.items())
    return Priced(parts, usd_min=low.total_price, usd_max=high.total_price,
                  provider=high.provider.id, price_model=high.model.id,
                  source=price_source(snapshot))


def _calc(gp: Any, data: Any, model: str, provider: str | None, usage: dict[str, int]) -> Any:
    """genai-prices' calculation: ``calc_price`` on its shipped data, or the same
    ``DataSnapshot.calc`` it runs, on a registry's newer snapshot."""
    kept = gp.Usage(**{k: v for k, v in usage.items() if v})
    if data is None:
        return gp.calc_price(kept, model, provider_id=provider)
    return data.calc(kept, model, provider, None, None)


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


# -- a newer snapshot kept in the registry (tokend prices update) ------------------------------

PRICES_FILE = "prices.json"
PRICES_FORMAT = "tokend-prices"
_READ: dict[Path, tuple[tuple[int, int], Snapshot]] = {}  # file -> ((mtime_ns, size), snapshot)


def parse_providers(raw: Any, where: str) -> Any:
    """genai-prices' ``DataSnapshot`` of its JSON price data (a list of providers), read by the
    same function its own updater uses; CorruptData naming ``where`` when it is not that."""
    gp = _genai_prices()
    from genai_prices.types import _providers_from_raw  # noqa: PLC0415 (its updater's reader)

    try:
        providers = _providers_from_raw(raw)
    except Exception as exc:  # pydantic's ValidationError and the like: never a crash
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CorruptData(f"{where}: not {SOURCE}' price data ({shown(first, 200)})") from None
    if not providers:
        raise CorruptData(f"{where}: {SOURCE}' price data lists no provider")
    return gp.data_snapshot.DataSnapshot(providers, from_auto_update=True)


def write_snapshot(folder: Path, payload: bytes, origin: str, now: datetime) -> Snapshot:
    """Check ``payload`` (genai-prices' data.json) and keep it as ``folder/prices.json``
    (temp file, then rename), with where and when it was taken and its sha256."""
    try:
        raw = json.loads(payload)
    except ValueError as exc:
        raise CorruptData(f"{origin}: not JSON ({exc})") from None
    data = parse_providers(raw, origin)
    body = json.dumps(raw, ensure_ascii=False, sort_keys=True)
    fetched = now.isoformat(timespec="seconds")
    doc = {"format": PRICES_FORMAT, "version": 1, "fetched": fetched, "origin": origin,
           "genai_prices": _genai_prices().__version__,
           "sha256": hashlib.sha256(body.encode()).hexdigest(), "providers": raw}
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / PRICES_FILE
    temp = target.with_name(f".{PRICES_FILE}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    os.replace(temp, target)
    return Snapshot(data, fetched, origin)


def read_snapshot(folder: Path) -> Snapshot | None:
    """The registry's newer snapshot (``folder/prices.json``), None without one; re-read when
    the file changes; CorruptData naming the file when it fails its checks."""
    path = folder / PRICES_FILE
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (stat.st_mtime_ns, stat.st_size)
    kept = _READ.get(path)
    if kept is not None and kept[0] == key:
        return kept[1]
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptData(f"{path}: not a prices file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != PRICES_FORMAT or doc.get("version") != 1:
        raise CorruptData(f'{path}: not a prices file: expected {{"format": "{PRICES_FORMAT}", '
                          '"version": 1, ...}; rewrite it with `tokend prices update`')
    body = json.dumps(doc.get("providers"), ensure_ascii=False, sort_keys=True)
    if hashlib.sha256(body.encode()).hexdigest() != doc.get("sha256"):
        raise CorruptData(f"{path}: sha256 mismatch: the file changed since `tokend prices "
                          "update` wrote it; run it again")
    snapshot = Snapshot(parse_providers(doc["providers"], str(path)), str(doc.get("fetched")),
                        str(doc.get("origin")))
    _READ[path] = (key, snapshot)
    return snapshot
