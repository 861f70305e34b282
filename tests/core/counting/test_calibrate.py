"""``tokend calibrate``: fitted on synthetic bills from a hidden tokenizer, measured held out.

The bills come from a tokenizer the estimate does not know: o200k_base counts times 1.35, plus
6 per message and 14 per call, plus Anthropic's tool-use prompt, with ±2% noise (a fixed seed).
Requests are Anthropic-shaped bodies over the shipped parallel corpus (20 languages).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from tokend.core import InvalidInput, get_encoding
from tokend.core.counting import ModelCatalogue, count_chat, default_catalogue
from tokend.core.counting.calibrate import HOLD_OUT_EVERY, calibrate, read_usage, request_chat
from tokend.core.counting.prompt import count_plain

TOOLS = [{"name": "get_weather", "description": "Weather in a city",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]


def sentences() -> list[str]:
    doc = json.loads((resources.files("tokend.core") / "data" / "parallel.json").read_text())
    return [s for language in doc["languages"] for s in language["sentences"] if s.strip()]


def hidden_bill(body: dict[str, Any], rng: random.Random) -> int:
    enc = get_encoding("o200k_base")
    messages, tools, _ = request_chat(body)
    text = sum(count_plain(enc, m["content"]) for m in messages)
    bill = 1.35 * text + 6 * len(messages) + 14
    if tools:
        bill += 1.35 * count_plain(enc, json.dumps(tools, ensure_ascii=False,
                                                   separators=(",", ":"), sort_keys=True)) + 346
    return round(bill * rng.uniform(0.98, 1.02))


def usage_file(path: Path, calls: int = 400) -> list[tuple[dict[str, Any], int]]:
    rng = random.Random(7)
    pool = sentences()
    rows = []
    for _ in range(calls):
        turns = rng.randint(1, 6)
        messages = [{"role": "user" if i % 2 == 0 else "assistant",
                     "content": " ".join(rng.sample(pool, rng.randint(1, 8)))}
                    for i in range(turns if turns % 2 else turns + 1)]
        body: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 100,
                                "messages": messages}
        if rng.random() < 0.5:
            body["system"] = " ".join(rng.sample(pool, rng.randint(1, 3)))
        if rng.random() < 0.3:
            body["tools"] = TOOLS
        rows.append((body, hidden_bill(body, rng)))
    path.write_text("".join(json.dumps({"request": b, "input_tokens": n}) + "\n"
                            for b, n in rows))
    return rows


class TestCalibrate:
    def test_held_out_estimates_land_within_5_percent(self, tmp_path: Path) -> None:
        rows = usage_file(tmp_path / "usage.jsonl")
        info = default_catalogue().get("claude-sonnet-4-5")
        enc = get_encoding("o200k_base")
        result = calibrate(info, read_usage(tmp_path / "usage.jsonl"),
                           lambda text: count_plain(enc, text))
        cal = result.calibration
        assert (cal.calls, cal.held_out) == (400, 80)
        assert cal.error_pct < 5 < result.before_pct  # the guess is off, the fit is not
        assert abs(result.estimate.factor - 1.35) < 0.05
        catalogue = default_catalogue()
        for i, (body, billed) in enumerate(rows):
            if i % HOLD_OUT_EVERY != HOLD_OUT_EVERY - 1:
                continue
            messages, tools, choice = request_chat(body)
            calibrated = count_chat(messages, model="claude-sonnet-4-5", tools=tools,
                                    tool_choice=choice, catalogue=catalogue,
                                    model_info=_with(info, result.estimate))
            assert abs(calibrated.total - billed) / billed < 0.05, (i, calibrated.total, billed)

    def test_cli_stores_the_fit_and_counts_report_it(self, tmp_path: Path) -> None:
        usage_file(tmp_path / "usage.jsonl")
        registry = tmp_path / "registry"
        done = subprocess.run([sys.executable, "-m", "tokend.cli", "calibrate",
                               "anthropic/claude-sonnet-4-5", str(tmp_path / "usage.jsonl"),
                               "--registry", str(registry), "--json"],
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["model"] == "claude-sonnet-4-5-20250929" and report["error_pct"] < 5
        catalogue = ModelCatalogue.for_registry(registry)
        result = count_chat([{"role": "user", "content": "hello"}], model="claude-sonnet-4-5",
                            catalogue=catalogue)
        assert not result.exact
        assert f"±{report['error_pct']:.1f}% over 400 calls" in result.estimate_reason
        assert "held out" in result.estimate_reason
        # The other entries are untouched; the alias still resolves to the calibrated entry.
        info = catalogue.find("claude-sonnet-4-5-20250929")
        assert info is not None and info.estimate is not None and info.estimate.calibration
        assert catalogue.find("claude-opus-4-1") is not None

    def test_refusals(self, tmp_path: Path) -> None:
        usage = tmp_path / "usage.jsonl"
        usage.write_text('{"request": {"messages": []}, "input_tokens": 5}\nnot json\n')
        with pytest.raises(InvalidInput, match=r"usage.jsonl:2: not JSON"):
            read_usage(usage)
        usage.write_text('{"request": {"messages": []}, "input_tokens": 5}\n' * 3)
        info = default_catalogue().get("gemini-2.5-pro")
        with pytest.raises(InvalidInput, match="at least 10 calls"):
            calibrate(info, read_usage(usage), len)
        with pytest.raises(InvalidInput, match="only models counted by an estimate"):
            calibrate(default_catalogue().get("gpt-4o"), read_usage(usage), len)


def _with(info: Any, estimate: Any) -> Any:
    import dataclasses

    return dataclasses.replace(info, estimate=estimate)
