"""Client.report / AsyncClient.report / the Node client's report against a real server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from node_client import run_node
from tiktoken_reference import reference

from tokend.client import AsyncClient, Client, ReportResult, TokenizerNotFound
from tokend.core import errors as core
from tokend.core.report import load_parallel_corpus

TEXTS = ["The report counts these words.", "Und diese auch."]


def expected_tokens(name: str) -> int:
    return sum(len(reference(name).encode(t, disallowed_special=())) for t in TEXTS)


class TestClientReport:
    def test_sync_report(self, client: Client) -> None:
        result = client.report(["o200k_base", "cl100k_base"], TEXTS, languages=True)
        assert isinstance(result, ReportResult)
        assert [t.tokenizer for t in result.tokenizers] == ["o200k_base", "cl100k_base"]
        assert [t.tokens for t in result.tokenizers] == [expected_tokens("o200k_base"),
                                                         expected_tokens("cl100k_base")]
        corpus = load_parallel_corpus()
        assert len(result.languages) == 2 * len(corpus.languages)
        english = [r for r in result.languages if r.language == "en"]
        assert [r.relative for r in english] == [1.0, 1.0]

    def test_async_report(self, tokend_service: Any) -> None:
        async def main() -> ReportResult:
            async with AsyncClient(tokend_service.target, timeout=30) as c:
                return await c.report("r50k_base", TEXTS)

        result = asyncio.run(main())
        assert result.tokenizers[0].tokens == expected_tokens("r50k_base")
        assert result.languages == []

    def test_errors_are_typed(self, client: Client) -> None:
        with pytest.raises(TokenizerNotFound):
            client.report(["no-such-tok"])
        with pytest.raises(core.InvalidInput, match="not one string"):
            client.report("o200k_base", "a single string")  # type: ignore[arg-type]

    def test_node_report(self, tokend_service: Any) -> None:
        payload = {"tokenizer": "o200k_base", "texts": ["x"],
                   "report": {"tokenizers": ["o200k_base", "gpt2"], "texts": TEXTS,
                              "languages": True}}
        status, out, err = run_node(tokend_service.target, payload)
        assert status == 0, err
        rows = out["report"]["tokenizers"]
        assert [(r["tokenizer"], r["tokens"]) for r in rows] == [
            ("o200k_base", expected_tokens("o200k_base")), ("gpt2", expected_tokens("gpt2"))]
        assert len(out["report"]["languages"]) == 2 * len(load_parallel_corpus().languages)


class TestReportCli:
    def test_target_measures_on_the_server(
        self, tokend_service: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`tokend report --target`: the Report RPC's figures in the local command's JSON."""
        from tokend.cli import main

        path = tmp_path / "t.txt"
        path.write_text(TEXTS[0], "utf-8")
        status = main(["report", "o200k_base", "--target", tokend_service.target, "--text",
                       str(path), "--json", "--no-languages"])
        assert status == 0
        out = json_out(capsys)
        assert out["texts_source"] == "the request's texts"
        assert out["tokenizers"][0]["tokens"] == len(reference("o200k_base").encode(TEXTS[0]))

    def test_target_error_is_the_status(
        self, tokend_service: Any, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from tokend.cli import main

        status = main(["report", "no-such-tok", "--target", tokend_service.target, "--json"])
        assert status == 1
        assert json_out(capsys)["error"]["code"] == "NOT_FOUND"


def json_out(capsys: pytest.CaptureFixture[str]) -> Any:
    import json

    return json.loads(capsys.readouterr().out)
