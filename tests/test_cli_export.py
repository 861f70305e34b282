"""``tokend registry export`` end to end: every (stored format x requested format) pair
(tests/support/export_versions.py), the file written, the message, and refusals as one
``tokend: error:`` line (exit 2) with nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from export_versions import EXPECTED, FORMATS, build_registry, check_same_ids, stored_bytes

PAIRS = [(variant, fmt, EXPECTED[variant][i]) for variant in sorted(EXPECTED)
         for i, fmt in enumerate(FORMATS)]


def tokend(*args: object, in_process: bool = True) -> subprocess.CompletedProcess[str]:
    """``tokend registry ARGS``: in-process (fast) or in a real subprocess."""
    argv = ["registry", *map(str, args)]
    if in_process:
        import contextlib
        import io

        from tokend.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
        return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())
    return subprocess.run([sys.executable, "-m", "tokend.cli", *argv], capture_output=True,
                          text=True, timeout=120, check=False)


class TestExportCommand:
    @pytest.mark.parametrize(("variant", "fmt", "expected"), PAIRS,
                             ids=[f"{v}-{f}" for v, f, _ in PAIRS])
    def test_every_pair(self, variant: str, fmt: str, expected: str, tmp_path: Path) -> None:
        """The file written (the version's own bytes, or a conversion giving the served ids)
        and --json's answer; a refusal exits 2 (InvalidInput), says why in one line on stderr
        and in --json's error, and writes nothing."""
        registry, refs = build_registry()
        out = tmp_path / "out"
        result = tokend("export", refs[variant], "--format", fmt, "--out", out,
                        "--registry", registry, "--json")
        if expected not in ("stored", "converted"):
            assert result.returncode == 2, result.stdout
            assert result.stderr.startswith("tokend: error: ")
            assert len(result.stderr.strip().splitlines()) == 1
            assert expected in result.stderr
            assert expected in json.loads(result.stdout)["error"]["message"]
            assert not out.exists()
            return
        assert result.returncode == 0, result.stderr
        answer = json.loads(result.stdout)
        assert answer["ref"] == refs[variant]
        assert (answer["format"], answer["unchanged"]) == (fmt, expected == "stored")
        if expected == "stored":
            assert out.read_bytes() == stored_bytes(registry, refs[variant], fmt)
        if fmt != "original":
            check_same_ids(registry, refs[variant], fmt, out.read_bytes())

    def test_a_trained_tokenizer_exports_as_the_readme_shows(self, tmp_path: Path) -> None:
        """The issue's command in a real process: ``tokend train --model wordpiece``, then
        ``registry export NAME@stable --format hf-json``: the tokenizer.json it holds."""
        registry = tmp_path / "reg"
        corpus = Path(__file__).parent / "fixtures" / "corpora" / "corpus.en"
        trained = subprocess.run(
            [sys.executable, "-m", "tokend.cli", "train", str(corpus), "--model", "wordpiece",
             "--vocab-size", "300", "--name", "bert", "--registry", str(registry)],
            capture_output=True, text=True, timeout=300, check=False)
        assert trained.returncode == 0, trained.stderr
        assert tokend("alias", "bert", "stable", "1", "--registry", registry).returncode == 0
        out = tmp_path / "tokenizer.json"
        result = tokend("export", "bert@stable", "--format", "hf-json", "--out", out,
                        "--registry", registry, in_process=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"wrote {out} (the hf-json file bert@1 holds, unchanged)\n"
        assert out.read_bytes() == stored_bytes(registry, "bert@1", "hf-json")
        check_same_ids(registry, "bert@1", "hf-json", out.read_bytes())

    def test_refusal_in_a_real_process(self, tmp_path: Path) -> None:
        """A .model asked for as tokenizer.json: exit 2, the reason, no file."""
        registry, refs = build_registry()
        out = tmp_path / "tokenizer.json"
        result = tokend("export", refs["spm-unigram"], "--format", "hf-json", "--out", out,
                        "--registry", registry, in_process=False)
        assert result.returncode == 2
        assert result.stderr == (
            f"tokend: error: {refs['spm-unigram']} holds a SentencePiece Unigram model "
            "(tokenizer.model): HF's Unigram sums scores in f64 per pre-token where "
            "sentencepiece sums float32 over the whole text, so tied segmentations "
            "(whitespace runs) get other ids (docs/families.md); export it with --format "
            "original\n")
        assert not out.exists()
