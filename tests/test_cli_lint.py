"""``tokend registry lint`` / ``diff`` and lint at import, end to end on tmp_path registries."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lint_reference import not_utf8_count, tiktoken_unreachable

from tokend.core import get_encoding
from tokend.core.registry import Registry
from tokend.core.report import load_parallel_corpus
from tokend.core.training import train_tokenizer


def run(*args: object, registry: Path) -> subprocess.CompletedProcess[str]:
    """``tokend registry ARGS --registry DIR`` in-process."""
    from tokend.cli import main

    argv = ["registry", *map(str, args), "--registry", str(registry)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


def run_json(*args: object, registry: Path) -> Any:
    result = run(*args, "--json", registry=registry)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def wordpiece_json(tmp_path: Path, *, share_id: bool) -> Path:
    """A trained WordPiece tokenizer.json; with ``share_id`` [SEP] takes [CLS]'s id."""
    result = train_tokenizer(iter(["The quick brown fox jumps over the lazy dog. " * 20]), 80,
                             ["[CLS]", "[SEP]"], model="wordpiece")
    raw = json.loads(result.tokenizer_json_bytes())  # type: ignore[union-attr]
    if share_id:
        by = {t["content"]: t for t in raw["added_tokens"]}
        by["[SEP]"]["id"] = by["[CLS]"]["id"]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(raw), "utf-8")
    return path


class TestLintCommand:
    def test_o200k_lists_exactly_the_unreachable_tokens(self, tmp_path: Path) -> None:
        """The 12 of o200k_base (tiktoken's own answer), r50k_base none; partial count."""
        for name in ("o200k_base", "r50k_base"):
            report = run_json("lint", name, registry=tmp_path)
            ids = sorted(f["id"] for f in report["findings"] if f["kind"] == "unreachable")
            assert ids == tiktoken_unreachable(name)
            assert report["summary"]["partial-utf8"] == not_utf8_count(name)
        assert len(tiktoken_unreachable("o200k_base")) == 12

    def test_table_output_and_strict_exit(self, tmp_path: Path) -> None:
        out = run("lint", "o200k_harmony", registry=tmp_path)
        assert out.returncode == 0
        assert "duplicate-special-id" in out.stdout and "<|reserved_200018|>" in out.stdout
        assert "digits: up-to-three (1234567 -> 123 | 456 | 7)" in out.stdout
        assert run("lint", "o200k_harmony", "--strict", registry=tmp_path).returncode == 1

    def test_a_file_is_linted_as_import_reads_it(self, tmp_path: Path) -> None:
        path = wordpiece_json(tmp_path, share_id=True)
        report = run_json("lint", path, registry=tmp_path / "reg")
        (error,) = [f for f in report["findings"] if f["severity"] == "error"]
        assert error["kind"] == "duplicate-special-id" and error["texts"] == ["[CLS]", "[SEP]"]


class TestLintAtImport:
    def test_strict_import_refuses_a_shared_special_id_naming_both(self, tmp_path: Path) -> None:
        path = wordpiece_json(tmp_path, share_id=True)
        refused = run("import", "wp", "--from", path, "--strict", registry=tmp_path / "reg")
        assert refused.returncode != 0
        assert "[CLS]" in refused.stderr and "[SEP]" in refused.stderr
        assert "--strict" in refused.stderr
        assert Registry(tmp_path / "reg").list() == [] or all(
            i.name != "wp" for i in Registry(tmp_path / "reg").list())

    def test_import_stores_the_summary_and_show_prints_it(self, tmp_path: Path) -> None:
        path = wordpiece_json(tmp_path, share_id=True)
        reg = tmp_path / "reg"
        run_json("import", "wp", "--from", path, registry=reg)
        manifest = run_json("show", "wp", registry=reg)["manifest"]
        assert manifest["lint"]["summary"]["duplicate-special-id"] == 1
        assert "[SEP]" in manifest["lint"]["errors"][0]
        shown = run("show", "wp", registry=reg).stdout
        assert "lint" in shown and "1 error" in shown

    def test_strict_import_of_a_clean_file_and_old_manifests(self, tmp_path: Path) -> None:
        """A clean file passes --strict; a manifest without "lint" (older tokend) still
        loads and shows."""
        reg = tmp_path / "reg"
        run_json("import", "wp", "--from", wordpiece_json(tmp_path, share_id=False),
                 "--strict", registry=reg)
        registry = Registry(reg)
        info = registry.versions("wp")[0]
        manifest_path = Path(info.path) / "manifest.json"
        manifest = json.loads(manifest_path.read_text("utf-8"))
        assert manifest["lint"]["errors"] == []
        del manifest["lint"]
        manifest_path.write_text(json.dumps(manifest), "utf-8")
        registry.load("wp")
        assert "not recorded" in run("show", "wp", registry=reg).stdout


class TestDiffCommand:
    def test_two_versions(self, tmp_path: Path) -> None:
        """Added and removed tokens, per-language ratios B/A for every bundled language."""
        reg = tmp_path / "reg"
        registry = Registry(reg)
        text = "the cat sat on the mat. " * 40 + "der Hund lief über die Straße. " * 40
        for size in (280, 300):
            result = train_tokenizer(iter([text]), size, ["<|end|>"], pattern="gpt2")
            registry.publish("tok", ranks=result.mergeable_ranks(),  # type: ignore[union-attr]
                             pat_str=result.pattern,  # type: ignore[union-attr]
                             special_tokens=result.special_tokens)  # type: ignore[union-attr]
        diff = run_json("diff", "tok@1", "tok@2", registry=reg)
        a = registry.load("tok@1")[1]
        b = registry.load("tok@2")[1]
        ranks_a = set(registry.load_data("tok@1").ranks)
        ranks_b = set(registry.load_data("tok@2").ranks)
        assert diff["summary"]["added"] == len(ranks_b - ranks_a) > 0
        assert diff["summary"]["removed"] == len(ranks_a - ranks_b)
        assert {bytes.fromhex(r["token"]["hex"]) for r in diff["added"]} <= ranks_b - ranks_a
        corpus = load_parallel_corpus()
        assert [r["language"] for r in diff["languages"]] == [
            lang.code for lang in corpus.languages]
        for row, lang in zip(diff["languages"], corpus.languages, strict=True):
            count_a = sum(len(a.encode_ordinary(s)) for s in lang.sentences)
            count_b = sum(len(b.encode_ordinary(s)) for s in lang.sentences)
            assert (row["a"], row["b"]) == (count_a, count_b)
            assert row["ratio"] == pytest.approx(count_b / count_a, abs=1e-4)
        # The same corpus: v2's merges extend v1's, so no id changes bytes; the special token,
        # placed after the merges, moves (an error-level line: it breaks embeddings too).
        assert diff["summary"]["changed"] == 0 and diff["summary"]["removed"] == 0
        assert diff["specials"]["changed_id"] == ["<|end|>"]
        assert len(diff["errors"]) == 1 and "'<|end|>' moved" in diff["errors"][0]

    def test_changed_bytes_are_errors(self, tmp_path: Path) -> None:
        reg = tmp_path / "reg"
        registry = Registry(reg)
        base = {bytes([i]): i for i in range(256)}
        registry.publish("t", ranks={**base, b"ab": 256, b"cd": 257}, pat_str=get_encoding(
            "gpt2").pat_str, special_tokens={})
        registry.publish("t", ranks={**base, b"ab": 256, b"xy": 257}, pat_str=get_encoding(
            "gpt2").pat_str, special_tokens={})
        diff = run_json("diff", "t@1", "t@2", registry=reg)
        assert diff["summary"]["changed"] == 1
        assert diff["changed"][0]["id"] == 257
        assert "257" in diff["errors"][0] and "b'cd'" in diff["errors"][0]
        out = run("diff", "t@1", "t@2", registry=reg).stdout
        assert "error: id 257" in out


class TestTrainStrict:
    def test_train_strict_publishes_a_clean_tokenizer_with_its_lint(self, tmp_path: Path) -> None:
        from tokend.cli import main

        corpus = tmp_path / "c.txt"
        corpus.write_text("hello world, hello there " * 50, "utf-8")
        reg = tmp_path / "reg"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["train", str(corpus), "--vocab-size", "270", "--name", "t",
                         "--registry", str(reg), "--strict", "--workers", "1"]) == 0
        lint = Registry(reg).manifest("t")["lint"]
        assert lint["errors"] == [] and lint["summary"]["unreachable"] >= 0
        assert lint["checks"]["glitch-candidate"].startswith("skipped")
