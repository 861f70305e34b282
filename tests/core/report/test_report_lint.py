"""``tokend report``'s lint section: each tokenizer's counts, as ``lint_tokenizer`` gives them."""

from __future__ import annotations

import contextlib
import io
import json

from tokend.core import get_encoding
from tokend.core.lint import lint_tokenizer
from tokend.core.report import build_report, format_report, report_from_dict


class TestReportLint:
    def test_counts_per_tokenizer_in_json_and_tables(self) -> None:
        tokenizers = [("o200k_harmony", get_encoding("o200k_harmony")),
                      ("r50k_base", get_encoding("r50k_base"))]
        report = build_report(tokenizers, ["hello"], languages=False, lint=True)
        data = report.to_dict()
        for name, tok in tokenizers:
            assert data["lint"][name] == lint_tokenizer(tok, full=False).summary()
        assert data["lint"]["o200k_harmony"]["duplicate-special-id"] == 1
        assert report_from_dict(data).to_dict() == data
        text = format_report(report)
        assert "Lint findings" in text and "duplicate-special-id" in text

    def test_off_by_default_in_the_library_on_in_the_cli(self) -> None:
        assert build_report([("r", get_encoding("r50k_base"))], ["x"]).to_dict()["lint"] == {}
        from tokend.cli import main

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["report", "r50k_base", "--no-languages", "--json"]) == 0
        assert json.loads(out.getvalue())["lint"]["r50k_base"]["unreachable"] == 0
