"""The Lint and Diff RPCs through a server: the same findings and differences as tokend.core.lint
computes on the same tokenizers, and the limits that bound them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from lint_reference import not_utf8_count, tiktoken_unreachable
from versioned import NAME as VTOK
from versioned import publish_versions

from tokend.core.lint import lint_tokenizer
from tokend.core.lint.diff import diff_tokenizers
from tokend.core.registry import Registry
from tokend.core.training import train_tokenizer
from tokend.v1 import tokenizer_pb2 as pb


def shared_id_json() -> bytes:
    """A trained WordPiece tokenizer.json whose [SEP] takes [CLS]'s id (an error finding)."""
    result = train_tokenizer(iter(["The quick brown fox jumps over the lazy dog. " * 20]), 80,
                             ["[CLS]", "[SEP]"], model="wordpiece")
    raw = json.loads(result.tokenizer_json_bytes())  # type: ignore[union-attr]
    by = {t["content"]: t for t in raw["added_tokens"]}
    by["[SEP]"]["id"] = by["[CLS]"]["id"]
    return json.dumps(raw).encode()


def finding_rows(response: pb.LintResponse) -> list[dict[str, Any]]:
    """The findings of a response in core's ``Finding.to_dict`` shape."""
    rows = []
    for f in response.findings:
        row: dict[str, Any] = {"kind": f.kind, "id": f.id if f.HasField("id") else None,
                               "severity": f.severity}
        if f.HasField("token"):
            row["token"] = {"text": f.token_text, "hex": f.token.hex()}
        row["message"] = f.message
        row.update(json.loads(f.extra_json))
        rows.append(row)
    return rows


SEVERITIES = ["error", "warning", "info"]


def core_rows(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Core's findings as the service lists them: errors, warnings, then info (stable)."""
    findings = sorted(findings, key=lambda row: SEVERITIES.index(row["severity"]))
    for row in findings:
        if "token" in row:
            row["token"] = {"text": row["token"]["text"], "hex": row["token"]["hex"]}
    return findings


@pytest.fixture
def served(fresh_server: Callable[..., Any], tmp_path: Path) -> Any:
    """A server whose registry holds ``wp`` (two specials on one id) and vtok@1 / vtok@2."""
    running = fresh_server()
    registry = Registry(running.config.registry)
    registry.publish_file("wp", fmt="hf-json", data=shared_id_json())
    publish_versions(running.config.registry)
    return running


class TestLint:
    def test_equals_core_lint_on_a_shared_special_id(self, served: Any) -> None:
        """Every finding, count, check and summary is core's; the error names both tokens."""
        response = served.stub.Lint(pb.LintRequest(tokenizer="wp"), timeout=60)
        ref, tok = Registry(served.config.registry).load("wp")
        expected = lint_tokenizer(tok, name=ref.ref).to_dict()
        assert response.tokenizer == "wp@1" and response.depth == pb.LINT_DEPTH_FULL
        assert finding_rows(response) == core_rows(expected["findings"])
        assert dict(response.summary) == expected["summary"]
        assert dict(response.checks) == expected["checks"]
        assert json.loads(response.summaries_json) == expected["summaries"]
        (error,) = [f for f in response.findings if f.severity == "error"]
        assert error.kind == "duplicate-special-id"
        assert "[CLS]" in error.message and "[SEP]" in error.message
        assert not response.truncated

    def test_o200k_base_import_depth_lists_the_12_unreachable(self, served: Any) -> None:
        """tiktoken's own answer, through the RPC; the partial-UTF-8 count, unlisted."""
        response = served.stub.Lint(pb.LintRequest(tokenizer="o200k_base",
                                                   depth=pb.LINT_DEPTH_IMPORT), timeout=60)
        ids = sorted(f.id for f in response.findings if f.kind == "unreachable")
        assert ids == tiktoken_unreachable("o200k_base") and len(ids) == 12
        assert response.summary["partial-utf8"] == not_utf8_count("o200k_base")
        assert not any(f.kind == "partial-utf8" for f in response.findings)
        assert response.checks["glitch-candidate"].startswith("skipped")
        assert json.loads(response.summaries_json) == {}

    def test_max_findings_cuts_the_list_not_the_counts(self, served: Any) -> None:
        response = served.stub.Lint(pb.LintRequest(
            tokenizer="gpt2", depth=pb.LINT_DEPTH_IMPORT, list_partial_utf8=True,
            max_findings=20), timeout=60)
        assert len(response.findings) == 20 and response.truncated
        assert response.summary["partial-utf8"] == not_utf8_count("r50k_base")

    def test_a_cut_list_keeps_the_warnings(self, served: Any) -> None:
        """o200k_base with its 1,562 partial-UTF-8 tokens listed and 40 findings: the 19 holes
        and the 12 unreachable tokens (warnings) come before the partial ones (info)."""
        response = served.stub.Lint(pb.LintRequest(
            tokenizer="o200k_base", depth=pb.LINT_DEPTH_IMPORT, list_partial_utf8=True,
            max_findings=40), timeout=60)
        kinds = [f.kind for f in response.findings]
        warnings = response.summary["hole"] + response.summary["unreachable"]
        assert kinds[:warnings] == ["hole"] * 19 + ["unreachable"] * 12
        assert kinds[warnings:] == ["partial-utf8"] * (40 - warnings) and response.truncated

    def test_a_passed_deadline_stops_the_lint(self, served: Any) -> None:
        with pytest.raises(grpc.RpcError) as err:
            served.stub.Lint(pb.LintRequest(tokenizer="o200k_base"), timeout=0.05)
        assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        # The worker is free again: the next call gets its slot (--max-lint-calls 1).
        again = served.stub.Lint(pb.LintRequest(tokenizer="gpt2", depth=pb.LINT_DEPTH_IMPORT),
                                 timeout=60)
        assert again.summary["unreachable"] == 0


class TestDiff:
    def test_equals_core_diff_of_two_versions(self, served: Any) -> None:
        """Added tokens, per-language ratios and texts, row for row as core's diff."""
        response = served.stub.Diff(pb.DiffRequest(a=f"{VTOK}@1", b=f"{VTOK}@stable"),
                                    timeout=60)
        assert (response.a, response.b) == (f"{VTOK}@1", f"{VTOK}@1")
        assert all(v == 0 for k, v in response.summary.items())
        response = served.stub.Diff(pb.DiffRequest(a=f"{VTOK}@1", b=f"{VTOK}@2"), timeout=60)
        registry = Registry(served.config.registry)
        (ra, a), (rb, b) = registry.load(f"{VTOK}@1"), registry.load(f"{VTOK}@2")
        expected = diff_tokenizers(a, b, name_a=ra.ref, name_b=rb.ref)
        assert dict(response.summary) == expected["summary"]
        assert expected["summary"]["added"] == 120
        assert (response.a_n_vocab, response.b_n_vocab) == (300, 420)
        # The special token moves from the end of v1's ids to v2's: an error line.
        assert list(response.specials_moved) == ["<|endoftext|>"]
        assert [(t.id, t.token.hex(), t.text) for t in response.added] == [
            (r["id"], r["token"]["hex"], r["token"]["text"]) for r in expected["added"]]
        assert list(response.errors) == expected["errors"]
        assert [(r.language, r.a_tokens, r.b_tokens, r.ratio) for r in response.languages] == [
            (r["language"], r["a"], r["b"], pytest.approx(r["ratio"]))
            for r in expected["languages"]]
        assert len(response.languages) == 20
        assert [(t.text, t.a_tokens, t.b_tokens) for t in response.texts] == [
            (r["text"], r["a"], r["b"]) for r in expected["texts"]]
        assert len(response.texts) == 10

    def test_top_bounds_the_texts(self, served: Any) -> None:
        response = served.stub.Diff(pb.DiffRequest(a=f"{VTOK}@1", b=f"{VTOK}@2", top=3),
                                    timeout=60)
        assert len(response.texts) == 3
