"""`tokend prices update` keeps a newer genai-prices snapshot in the registry; quotes over that
registry are then priced by genai-prices' own calculation on it, and say which snapshot."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import genai_prices
from genai_prices import data_snapshot
from genai_prices.types import _providers_from_raw

# genai-prices' data.json shape: one provider, one model, prices unlike the shipped ones.
RAW = [{"id": "openai", "name": "OpenAI", "api_pattern": "https://api\\.openai\\.com",
        "model_match": {"starts_with": "gpt-"},
        "models": [{"id": "gpt-4o", "match": {"equals": "gpt-4o"},
                    "prices": {"input_mtok": 1, "cache_read_mtok": 0.25, "output_mtok": 3}}]}]
CHAT = [{"role": "user", "content": "The snapshot decides the price. " * 200}]


def tokend(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "tokend"), *map(str, args)],
                          capture_output=True, text=True, timeout=120, check=False)


def test_update_then_quote_uses_the_snapshot(tmp_path: Path) -> None:
    source = tmp_path / "data.json"
    source.write_text(json.dumps(RAW))
    registry = tmp_path / "registry"
    done = tokend("prices", "update", "--from", source, "--registry", registry, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["models"] == 1
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(CHAT))
    quoted = tokend("quote", "--model", "gpt-4o", "--messages", chat, "--cache", "warm",
                    "--max-output-tokens", "100", "--registry", registry, "--json")
    assert quoted.returncode == 0, quoted.stderr
    answer = json.loads(quoted.stdout)
    assert str(source) in answer["prices"]["snapshot"]
    assert answer["prices"]["version"] == genai_prices.__version__
    ours = data_snapshot.DataSnapshot(_providers_from_raw(RAW), from_auto_update=True)
    usage = genai_prices.Usage(input_tokens=answer["input_tokens"],
                               cache_read_tokens=answer["cache_read_tokens"], output_tokens=100)
    expected = ours.calc(usage, "gpt-4o", "openai", None, None).total_price
    assert Decimal(answer["usd_max"]) == expected
    parts = {p["part"]: p for p in answer["parts"]}
    assert (parts["input"]["usd_per_mtok"], parts["cache_read"]["usd_per_mtok"],
            parts["output"]["usd_per_mtok"]) == ("1", "0.25", "3")
    # Without the registry's snapshot: the shipped prices.
    shipped = tokend("quote", "--model", "gpt-4o", "--messages", chat, "--registry",
                     tmp_path / "other", "--json")
    assert json.loads(shipped.stdout)["prices"]["snapshot"].startswith("bundled with")


def test_a_changed_or_bad_snapshot_is_refused_naming_the_file(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    source = tmp_path / "data.json"
    source.write_text(json.dumps(RAW))
    assert tokend("prices", "update", "--from", source, "--registry", registry).returncode == 0
    kept = registry / "prices.json"
    doc = json.loads(kept.read_text())
    doc["providers"][0]["models"][0]["prices"]["input_mtok"] = 0
    kept.write_text(json.dumps(doc))
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(CHAT))
    quoted = tokend("quote", "--model", "gpt-4o", "--messages", chat, "--registry", registry)
    assert quoted.returncode == 1
    assert "DATA_LOSS: prices.json: sha256 mismatch" in quoted.stderr  # server paths hidden
    source.write_text("{not json")
    bad = tokend("prices", "update", "--from", source, "--registry", registry)
    assert bad.returncode == 1 and "not JSON" in bad.stderr
    source.write_text(json.dumps([{"id": "x"}]))
    bad = tokend("prices", "update", "--from", source, "--registry", registry)
    assert bad.returncode == 1 and "not genai-prices' price data" in bad.stderr
    offline = tokend("prices", "update", "--from", "http://127.0.0.1:9/data.json",
                     "--registry", registry)
    assert offline.returncode == 1 and "cannot fetch" in offline.stderr
