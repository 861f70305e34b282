"""Lint on the real files of every served family (fetched by scripts/fetch-tokenizer-files.sh)."""

from __future__ import annotations

import base64
import json

from family_texts import real_file

from tokend.core.formats.files import load_file
from tokend.core.lint import lint_tokenizer


def not_utf8(tokens: list[bytes]) -> int:
    count = 0
    for token in tokens:
        try:
            token.decode("utf-8")
        except UnicodeDecodeError:
            count += 1
    return count


class TestRealFiles:
    def test_deepseek_bos_is_non_ascii_and_import_depth_is_quick(self) -> None:
        """DeepSeek's '<｜begin▁of▁sentence｜>' uses fullwidth bars: flagged. At import the
        pure-Python pipeline's unreachable check is left to the full lint (and says so)."""
        tok = load_file("hf-json", real_file("deepseek.json").read_bytes(), name="ds")
        report = lint_tokenizer(tok, full=False)
        flagged = {f.id for f in report.findings if f.kind == "special-non-ascii"}
        assert 0 in flagged
        assert report.checks["unreachable"].startswith("skipped")
        assert report.errors == []

    def test_tekken_partial_utf8_and_unreachable_run(self) -> None:
        data = real_file("tekken-240911.json").read_bytes()
        tok = load_file("tekken", data, name="tk")
        raw = json.loads(data)
        inner = raw["config"]["default_vocab_size"] - raw["config"]["default_num_special_tokens"]
        tokens = [base64.b64decode(e["token_bytes"]) for e in raw["vocab"][:inner]]
        report = lint_tokenizer(tok, full=False)
        assert report.summary()["partial-utf8"] == not_utf8(tokens)
        assert report.checks["unreachable"] == "ran"

    def test_sentencepiece_and_unigram_files(self) -> None:
        """Word-piece families: unreachable does not apply (said), the rest runs."""
        for name, fmt in (("mistral-v3.model", "sentencepiece"),
                          ("mon-unigram.json", "hf-json")):
            tok = load_file(fmt, real_file(name).read_bytes(), name=name)
            report = lint_tokenizer(tok)
            assert report.checks["unreachable"].startswith("skipped: tokens of this family")
            assert report.checks["glitch-candidate"] == "ran"
            assert report.summaries["digits"]["grouping"] in {"per-digit", "irregular",
                                                             "up-to-three"}
