"""The catalogue keeps up with the price data: every model genai-prices prices for OpenAI,
Anthropic, Google, Meta, Mistral, DeepSeek and Qwen is listed by `tokend models list --all
--json`, either counted (exact or estimate, said) or not counted with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import genai_prices
from genai_prices import data_snapshot

from tokend.core.counting.catalogue import default_catalogue

SEVEN = ("openai", "anthropic", "google", "meta", "mistral", "deepseek")


def priced_by_genai_prices() -> set[tuple[str, str]]:
    """(provider, model id) of every model of the seven vendors, read from genai-prices'
    shipped data (Qwen's: every model whose id says qwen, whoever hosts it)."""
    out = set()
    for provider in data_snapshot.get_snapshot().providers:
        for model in provider.models:
            if provider.id in SEVEN or "qwen" in model.id.lower():
                out.add((provider.id, model.id))
    return out


def test_models_list_all_covers_every_priced_model(tmp_path: Path) -> None:
    tokend = Path(sys.executable).parent / "tokend"
    done = subprocess.run([str(tokend), "models", "list", "--all", "--json", "--registry",
                           str(tmp_path / "registry")], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    rows = {(r["provider"], r["price_model"]): r for r in answer["priced"]}
    expected = priced_by_genai_prices()
    assert len(expected) > 400
    assert set(rows) == expected
    catalogue = default_catalogue()
    for key, row in rows.items():
        if row["counted"]:
            assert row["exactness"] in ("exact", "framing-estimate", "estimate"), key
            assert catalogue.get(row["model"]).exactness == row["exactness"], key
            if row["exactness"] == "estimate":
                assert row["reason"], key
        else:
            assert row["model"] is None and row["reason"], key
    assert answer["prices"]["version"] == genai_prices.__version__
    # Spot checks: a dated spelling resolves, a closed model is an estimate, an audio model
    # whose name starts like a chat model's is not counted, an unknown one says why.
    assert rows[("openai", "gpt-4o")]["exactness"] == "exact"
    assert rows[("anthropic", "claude-sonnet-4-5")]["model"] == "claude-sonnet-4-5-20250929"
    assert rows[("anthropic", "claude-sonnet-4-5")]["exactness"] == "estimate"
    tts = rows[("openai", "gpt-4o-mini-tts")]
    assert not tts["counted"] and "text-to-speech" in tts["reason"]
    assert "not catalogued" in rows[("meta", "muse-spark-1.1")]["reason"]
    assert rows[("groq", "qwen/qwen3-32b")]["model"] == "qwen3-32b"
