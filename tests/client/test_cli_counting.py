"""`tokend count --messages/--tools/--model`, `tokend truncate`, `tokend chunk` against a real
server; expected values from tokend.core.counting (proven in tests/core/counting)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tokend.cli import main
from tokend.core.counting import chunk, count_chat, truncate

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
MESSAGES = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"}]
DOC = "One paragraph here. Two sentences.\n\n" * 8


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


class TestCountRequests:
    def test_whole_request_file(self, tokend_service: Any, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
        """A file holding an OpenAI chat request: model, messages, tools, tool_choice."""
        path = tmp_path / "request.json"
        path.write_text(json.dumps({"model": "gpt-4o-mini", "messages": MESSAGES,
                                    "tools": TOOLS, "tool_choice": "none"}))
        status, out, _ = cli(capsys, "count", "--target", tokend_service.target, "--json",
                             "--messages", str(path))
        assert status == 0
        payload = json.loads(out)
        expected = count_chat(MESSAGES, model="gpt-4o-mini", tools=TOOLS, tool_choice="none")
        assert payload["total"] == expected.total and payload["tokenizer"] == "o200k_base"
        assert payload["exact"] is False and payload["context_window"] == 128000
        assert payload["breakdown"] == expected.breakdown.as_dict()

    def test_messages_with_model_and_tools_files(self, tokend_service: Any, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
        messages, tools = tmp_path / "m.json", tmp_path / "t.json"
        messages.write_text(json.dumps(MESSAGES))
        tools.write_text(json.dumps(TOOLS))
        status, out, _ = cli(capsys, "count", "--target", tokend_service.target, "--messages",
                             str(messages), "--tools", str(tools), "--model", "gpt-4")
        expected = count_chat(MESSAGES, model="gpt-4", tools=TOOLS)
        assert status == 0
        assert f"messages: {expected.total} (openai rule, tools {expected.tools})" in out
        assert "estimate: tool definitions" in out
        assert f"fits in 8192 tokens (gpt-4's window) (remaining {8192 - expected.total})" in out
        assert "breakdown:" not in out

    def test_breakdown_when_asked(self, tokend_service: Any, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
        """--breakdown: one line naming every part, texts included."""
        messages = tmp_path / "m.json"
        messages.write_text(json.dumps(MESSAGES))
        status, out, _ = cli(capsys, "count", "--target", tokend_service.target, "--messages",
                             str(messages), "--model", "gpt-4o", "--breakdown", "one two")
        b = count_chat(MESSAGES, model="gpt-4o").breakdown.with_texts(2)
        assert status == 0
        assert (f"breakdown: system {b.system}, messages {b.messages}, tools 0, images 0, "
                f"framing {b.framing}, texts 2\n") in out


class TestTruncateAndChunk:
    def test_truncate(self, tokend_service: Any, capsys: pytest.CaptureFixture[str]) -> None:
        status, out, _ = cli(capsys, "truncate", "--target", tokend_service.target,
                             "-t", "cl100k_base", "-n", "9", "--keep", "both", DOC)
        assert status == 0
        assert out == truncate("cl100k_base", DOC, 9, keep="both").text + "\n"
        status, out, _ = cli(capsys, "truncate", "--target", tokend_service.target, "--json",
                             "-n", "5", DOC)
        payload = json.loads(out)
        assert payload["count"] <= 5 and payload["ids"]

    def test_chunk(self, tokend_service: Any, tmp_path: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
        path = tmp_path / "doc.txt"
        path.write_text(DOC, encoding="utf-8")
        status, out, _ = cli(capsys, "chunk", "--target", tokend_service.target, "--json",
                             "-n", "12", "--overlap", "2", str(path))
        assert status == 0
        got = [json.loads(line) for line in out.splitlines()]
        expected = chunk("o200k_base", DOC, 12, overlap=2)
        assert [(g["text"], g["start"], g["byte_end"], g["count"]) for g in got] == [
            (c.text, c.start, c.byte_end, c.count) for c in expected]

    def test_bad_budget_exits_1(self, tokend_service: Any,
                                capsys: pytest.CaptureFixture[str]) -> None:
        status, _, err = cli(capsys, "chunk", "--target", tokend_service.target, "-n", "3",
                             "--overlap", "3", "/dev/null")
        assert status == 1 and "overlap" in err
