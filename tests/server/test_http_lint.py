"""GET /tokenizers/{ref}/lint and GET /diff: the JSON of ``tokend registry lint --json`` and
``tokend registry diff --json`` (core's shapes), from the same App methods as the RPCs."""

from __future__ import annotations

from typing import Any

from http_api import HttpServed, call
from versioned import NAME as VTOK

from tokend.core import get_encoding
from tokend.core.lint import lint_tokenizer
from tokend.core.lint.diff import diff_tokenizers
from tokend.core.registry import Registry


def without_seconds(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "seconds"}


class TestHttpLint:
    def test_import_depth_equals_core(self, http_server: HttpServed) -> None:
        answer = call(http_server.base, "GET", "/tokenizers/gpt-2/lint?depth=import")
        assert answer.status == 200, answer.body
        expected = lint_tokenizer(get_encoding("gpt2"), name="gpt2", full=False).to_dict()
        body = answer.body
        assert (body.pop("depth"), body.pop("truncated")) == ("import", False)
        assert without_seconds(body) == without_seconds(expected)

    def test_full_depth_of_a_version_equals_core(self, http_server: HttpServed) -> None:
        answer = call(http_server.base, "GET",
                      f"/tokenizers/{VTOK}%40stable/lint?list_partial_utf8=true&max_findings=40")
        assert answer.status == 200, answer.body
        ref, tok = Registry(http_server.process.registry).load(f"{VTOK}@1")
        expected = lint_tokenizer(tok, name=ref.ref, list_partial=True).to_dict()
        body = answer.body
        assert body["tokenizer"] == f"{VTOK}@1" and body["depth"] == "full"
        assert body["truncated"] == (len(expected["findings"]) > 40)
        severities = ["error", "warning", "info"]
        ordered = sorted(expected["findings"], key=lambda f: severities.index(f["severity"]))
        assert body["findings"] == ordered[:40]
        assert body["summary"] == expected["summary"] and body["summary"]["partial-utf8"] > 0
        assert body["summaries"] == expected["summaries"]

    def test_diff_of_two_versions_equals_core(self, http_server: HttpServed) -> None:
        answer = call(http_server.base, "GET", f"/diff?a={VTOK}@1&b={VTOK}@2&top=5")
        assert answer.status == 200, answer.body
        registry = Registry(http_server.process.registry)
        (ra, a), (rb, b) = registry.load(f"{VTOK}@1"), registry.load(f"{VTOK}@2")
        expected = diff_tokenizers(a, b, name_a=ra.ref, name_b=rb.ref, top=5)
        assert answer.body == expected
        assert answer.body["summary"]["added"] > 0 and len(answer.body["languages"]) == 20
