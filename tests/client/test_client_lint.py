"""Client.lint / diff, AsyncClient's and the Node client's, against a real server: core's
findings and differences, typed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lint_reference import not_utf8_count, tiktoken_unreachable
from node_client import run_node

from tokend.client import AsyncClient, Client, DiffResult, LintResult, TokenizerNotFound
from tokend.core import errors as core
from tokend.core import get_encoding
from tokend.core.lint.diff import diff_tokenizers


def core_diff() -> dict[str, Any]:
    return diff_tokenizers(get_encoding("r50k_base"), get_encoding("p50k_base"))


class TestClientLint:
    def test_sync_lint_lists_o200k_bases_12_unreachable(self, client: Client) -> None:
        result = client.lint("o200k_base", depth="import", timeout=60)
        assert isinstance(result, LintResult) and result.depth == "import"
        unreachable = [f for f in result.findings if f.kind == "unreachable"]
        assert sorted(f.id for f in unreachable if f.id is not None) == \
            tiktoken_unreachable("o200k_base")
        assert all(f.token is not None and f.text == f.token.decode() for f in unreachable)
        assert all(f.extra["encodes_to"] for f in unreachable)
        assert result.summary["partial-utf8"] == not_utf8_count("o200k_base")
        assert result.summaries == {} and not result.truncated

    def test_async_diff_equals_core(self, tokend_service: Any) -> None:
        async def main() -> DiffResult:
            async with AsyncClient(tokend_service.target, timeout=60) as c:
                return await c.diff("r50k_base", "p50k_base", top=4)

        result = asyncio.run(main())
        expected = core_diff()
        assert result.summary == expected["summary"]
        assert [(t.id, t.token.hex()) for t in result.added] == [
            (r["id"], r["token"]["hex"]) for r in expected["added"]]
        assert [(r.language, r.ratio) for r in result.languages] == [
            (r["language"], pytest.approx(r["ratio"])) for r in expected["languages"]]
        assert len(result.texts) == min(4, len(expected["texts"]))

    def test_errors_are_typed(self, client: Client) -> None:
        with pytest.raises(TokenizerNotFound):
            client.diff("r50k_base", "no-such-tok")
        with pytest.raises(core.InvalidInput, match="depth must be"):
            client.lint("gpt2", depth="deep")  # type: ignore[arg-type]

    def test_node_lint_and_diff(self, tokend_service: Any) -> None:
        payload = {"tokenizer": "gpt2", "texts": ["x"],
                   "lint": {"tokenizer": "gpt2", "depth": "import", "list_partial": True,
                            "max_findings": 5},
                   "diff": {"a": "r50k_base", "b": "p50k_base", "top": 2}}
        status, out, err = run_node(tokend_service.target, payload)
        assert status == 0, err
        lint = out["lint"]
        assert lint["depth"] == "LINT_DEPTH_IMPORT" and lint["truncated"] is True
        assert [f["kind"] for f in lint["findings"]] == ["partial-utf8"] * 5
        assert int(lint["summary"]["partial-utf8"]) == not_utf8_count("r50k_base")
        assert {k: int(v) for k, v in out["diff"]["summary"].items()} == core_diff()["summary"]
