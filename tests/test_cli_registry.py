"""``tokend registry ...`` end to end: real subprocesses on a tmp_path registry."""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from tokenizers import Tokenizer

from tokend.core.formats import load_tiktoken_bpe
from tokend.core.registry import Registry

SMALL_TIKTOKEN = b"".join(
    base64.b64encode(bytes([i])) + b" %d\n" % i for i in range(256)
) + b"".join(base64.b64encode(b"t%d" % i) + b" %d\n" % (256 + i) for i in range(50))


def tokend(
    *args: object,
    registry: Path | None,
    env: dict[str, str] | None = None,
    subprocess_run: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``tokend registry ARGS``: in a real subprocess, or in-process (fast) on request."""
    argv = ["registry", *map(str, args)]
    if registry is not None:
        argv += ["--registry", str(registry)]
    if not subprocess_run:
        from tokend.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
        return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())
    return subprocess.run(
        [sys.executable, "-m", "tokend.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def ok(*args: object, registry: Path | None, fast: bool = False) -> str:
    result = tokend(*args, registry=registry, subprocess_run=not fast)
    assert result.returncode == 0, result.stderr
    return result.stdout


def ok_json(*args: object, registry: Path, fast: bool = False) -> Any:
    return json.loads(ok(*args, "--json", registry=registry, fast=fast))


def refused(*args: object, registry: Path | None, status: int = 1, fast: bool = False) -> str:
    """Run a command that must be refused: exit status, one-line reason on stderr."""
    result = tokend(*args, registry=registry, subprocess_run=not fast)
    assert result.returncode == status, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tokend: error: ")
    return lines[0]


@pytest.fixture(scope="module")
def gpt2_pair(fixtures_dir: Path) -> list[Path]:
    enc = fixtures_dir / "encodings"
    return [enc / "gpt2_vocab.json.gz", enc / "gpt2_merges.txt.gz"]


@pytest.fixture(scope="module")
def text(fixtures_dir: Path) -> str:
    shakespeare = gzip.decompress((fixtures_dir / "corpora" / "shakespeare.txt.gz").read_bytes())
    german = (fixtures_dir / "corpora" / "german.txt").read_text()
    return shakespeare.decode()[:40_000] + german[:5000] + "\nПривет мир 世界 🤖 123456 it's"


class TestRegistryCLI:
    def test_import_alias_export_round_trip(
        self, tmp_path: Path, gpt2_pair: list[Path], text: str
    ) -> None:
        """Import GPT-2 files, alias, export to HF json and .tiktoken: all give tokend's ids."""
        reg = tmp_path / "reg"
        out = ok_json("import", "mytok", "--from", *gpt2_pair, registry=reg)
        assert out["ref"] == "mytok@1"
        ok("alias", "mytok", "stable", "1", registry=reg)
        shown = ok_json("show", "mytok@stable", registry=reg)
        assert shown["ref"] == "mytok@1"
        assert shown["aliases"] == {"stable": 1}
        assert shown["manifest"]["special_tokens"] == {"<|endoftext|>": 50256}

        hf_path = tmp_path / "tokenizer.json"
        ok("export", "mytok@stable", "--format", "hf-json", "--out", hf_path, registry=reg)
        tk_path = tmp_path / "mytok.tiktoken"
        ok("export", "mytok", "--format", "tiktoken", "--out", tk_path, registry=reg)

        _, enc = Registry(reg).load("mytok@stable")
        ids = enc.encode(text + "<|endoftext|>", allowed_special="all")
        hf = Tokenizer.from_file(str(hf_path))
        assert hf.encode(text + "<|endoftext|>", add_special_tokens=False).ids == ids
        tk = tiktoken.Encoding(
            "mytok",
            pat_str=enc.pat_str,
            mergeable_ranks=load_tiktoken_bpe(tk_path),
            special_tokens=enc.special_tokens,
        )
        assert tk.encode(text + "<|endoftext|>", allowed_special="all") == ids

        # The HF export imports back as an identical rank table, as version 2, and the file
        # itself is kept beside it: exported as "original", it comes back byte for byte.
        back = ok_json("import", "mytok", "--from", hf_path, registry=reg)
        assert back["ref"] == "mytok@2"
        files = {m["ref"]: m["manifest"]["files"] for m in (shown, back)}
        assert files["mytok@1"]["ranks.tiktoken"] == files["mytok@2"]["ranks.tiktoken"]
        again = tmp_path / "again.json"
        ok("export", "mytok@2", "--format", "original", "--out", again, registry=reg)
        assert again.read_bytes() == hf_path.read_bytes()

    def test_list_and_builtins(self, tmp_path: Path) -> None:
        reg = tmp_path / "reg"
        listing = ok_json("list", registry=reg)
        assert {"o200k_base", "cl100k_base", "gpt2"} <= {e["name"] for e in listing}
        assert all(e["builtin"] for e in listing)
        table = ok("list", registry=reg)
        assert table.splitlines()[0].split() == ["NAME", "LATEST", "VERSIONS", "ALIASES", "KIND"]
        assert ok_json("show", "gpt-4o", registry=reg)["ref"] == "o200k_base"
        assert ok_json("show", "o200k_base", registry=reg)["engine"] in (
            "compiled scanner", "pure-Python engine (regex module, safe-point chunks)")
        assert "built-in" in refused("delete", "o200k_base", registry=reg)
        assert "built-in" in refused("delete", "gpt-4o", registry=reg)

    def test_tiktoken_import_with_pattern_and_specials(self, tmp_path: Path) -> None:
        reg = tmp_path / "reg"
        path = tmp_path / "small.tiktoken"
        path.write_bytes(b"".join(SMALL_TIKTOKEN.splitlines(keepends=True)[:256]))
        assert "--pattern" in refused("import", "small", "--from", path, registry=reg, status=2)
        out = ok_json(
            "import",
            "small",
            "--from",
            path,
            "--pattern",
            "o200k",
            "--special",
            "<|eot|>=256",
            "--special",
            "<|pad|>=257",
            registry=reg,
        )
        manifest = out["manifest"]
        assert manifest["pattern_name"] == "o200k"
        assert manifest["special_tokens"] == {"<|eot|>": 256, "<|pad|>": 257}
        assert manifest["n_vocab"] == 258

    @pytest.mark.parametrize(
        "name", ["../x", "/abs", "", "A", "a" * 65, "..", "...", "\u0430bc", "x/../../y", "t\n"]
    )
    def test_hostile_names_are_refused(self, tmp_path: Path, name: str) -> None:
        """Exit status 2 naming the rule; nothing is created anywhere (in-process for speed)."""
        reg = tmp_path / "reg"
        path = tmp_path / "t.tiktoken"
        path.write_bytes(b"YQ== 0\n")
        line = refused(
            "import", name, "--from", path, "--pattern", "gpt2", registry=reg, status=2, fast=True
        )
        assert "^[a-z0-9][a-z0-9._-]{0,63}$" in line
        for command in (["show", name], ["delete", name], ["alias", name, "stable", "1"]):
            refused(*command, registry=reg, status=2, fast=True)
        assert all(p.name.startswith(".") for p in reg.iterdir())
        assert sorted(p.name for p in tmp_path.iterdir()) == ["reg", "t.tiktoken"]

    def test_hostile_name_in_a_real_process(self, tmp_path: Path) -> None:
        path = tmp_path / "t.tiktoken"
        path.write_bytes(b"YQ== 0\n")
        refused(
            "import", "../x", "--from", path, "--pattern", "gpt2", registry=tmp_path / "r", status=2
        )
        assert not (tmp_path / "x").exists()

    def test_refusals(self, tmp_path: Path) -> None:
        """Aliased deletes, unknown refs, bad versions and damage all exit non-zero."""
        reg = tmp_path / "reg"
        small = tmp_path / "small.tiktoken"
        small.write_bytes(SMALL_TIKTOKEN)
        src = [small, "--pattern", "cl100k"]
        ok("import", "tok", "--from", *src, registry=reg, fast=True)
        ok("import", "tok", "--from", *src, registry=reg, fast=True)
        ok("alias", "tok", "stable", "1", registry=reg, fast=True)
        assert "stable" in refused("delete", "tok@1", registry=reg, fast=True)
        assert "no version 9" in refused("show", "tok@9", registry=reg, fast=True)
        assert "no alias" in refused("show", "tok@canary", registry=reg, fast=True)
        refused("alias", "tok", "stable", "9", registry=reg, fast=True)
        refused("alias", "tok", "123", "1", registry=reg, status=2)
        refused("alias", "tok", "stable", "x", registry=reg, status=2)
        assert ok_json("delete", "tok@2", registry=reg, fast=True)["deleted_versions"] == [2]
        assert ok_json("import", "tok", "--from", *src, registry=reg, fast=True)["version"] == 3

        assert ok_json("verify", registry=reg, fast=True)["ok"] is True
        ranks = reg / "tok" / "3" / "ranks.tiktoken"
        ranks.write_bytes(ranks.read_bytes()[:100])
        result = tokend("verify", "--json", registry=reg, subprocess_run=False)
        assert result.returncode == 1
        report = json.loads(result.stdout)
        assert [p["ref"] for p in report["problems"]] == ["tok@3"]
        assert "truncated" in refused(
            "export", "tok@3", "--format", "tiktoken", "--out", tmp_path / "x", registry=reg
        )
        assert not (tmp_path / "x").exists()
        assert ok_json("show", "tok@1", registry=reg, fast=True)["version"] == 1

    def test_import_with_tokenizer_config(self, tmp_path: Path) -> None:
        """--tokenizer-config keeps the chat template and its tokens; a broken one is refused
        naming the file, and nothing is published."""
        reg = tmp_path / "reg"
        small = tmp_path / "small.tiktoken"
        small.write_bytes(SMALL_TIKTOKEN)
        chat_template = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"
        config = tmp_path / "tokenizer_config.json"
        config.write_text(json.dumps({
            "chat_template": [{"name": "default", "template": chat_template}],
            "bos_token": {"content": "<s>", "special": True}, "eos_token": "</s>"}))
        src = ["--from", small, "--pattern", "cl100k", "--tokenizer-config", config]
        out = ok_json("import", "chat", *src, registry=reg, fast=True)
        assert out["manifest"]["chat"] == {
            "chat_template": chat_template, "tool_chat_template": None,
            "special_tokens_map": {"bos_token": "<s>", "eos_token": "</s>"},
            "source": "tokenizer_config.json"}
        assert ok_json("show", "chat@1", registry=reg, fast=True)["manifest"]["chat"] == (
            out["manifest"]["chat"])
        table = ok("show", "chat@1", registry=reg, fast=True)
        assert "from tokenizer_config.json (bos_token=<s>, eos_token=</s>)" in table
        config.write_text(json.dumps({"chat_template": "{% if x %}never closed"}))
        reason = refused("import", "chat", *src, registry=reg, status=2, fast=True)
        assert str(config) in reason and "does not parse" in reason
        listed = {i["name"]: i["versions"] for i in ok_json("list", registry=reg, fast=True)}
        assert listed["chat"] == [1]

    def test_registry_from_environment(self, tmp_path: Path) -> None:
        reg = tmp_path / "env-reg"
        path = tmp_path / "t.tiktoken"
        path.write_bytes(b"YQ== 0\n")
        result = tokend(
            "import",
            "envtok",
            "--from",
            path,
            "--pattern",
            "gpt2",
            registry=None,
            env={"TOKEND_REGISTRY": str(reg)},
        )
        assert result.returncode == 0, result.stderr
        assert (reg / "envtok" / "1" / "manifest.json").exists()
