"""`tokend encode|decode|count|tokenizers --target`: plain and --json output, exit codes."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from tokend.cli import main


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


class TestRemoteCli:
    def test_encode_json(
        self, tokend_service: Any, capsys: pytest.CaptureFixture[str], o200k: tiktoken.Encoding
    ) -> None:
        """--json: one result per TEXT argument, ids equal tiktoken's."""
        texts = ["hello world", "naïve café 🙂"]
        status, out, _ = cli(capsys, "encode", "--target", tokend_service.target, "--json", *texts)
        assert status == 0
        payload = json.loads(out)
        assert payload["tokenizer"] == "o200k_base"
        assert [r["ids"] for r in payload["results"]] == o200k.encode_batch(texts)

    def test_encode_details_json(
        self, tokend_service: Any, capsys: pytest.CaptureFixture[str]
    ) -> None:
        text = "Grüße 🙂"
        status, out, _ = cli(
            capsys, "encode", "--target", tokend_service.target, "--json", "--details", text
        )
        assert status == 0
        details = json.loads(out)["results"][0]["details"]
        pieces = b"".join(base64.b64decode(d["piece"]) for d in details)
        assert pieces == text.encode("utf-8")

    def test_encode_plain_and_specials(
        self, tokend_service: Any, capsys: pytest.CaptureFixture[str], cl100k: tiktoken.Encoding
    ) -> None:
        """Plain output is the ids, space-separated; --allowed-special all admits specials."""
        text = "x<|endoftext|>"
        args = ("encode", "--target", tokend_service.target, "-t", "cl100k_base")
        status, out, _ = cli(capsys, *args, "--allowed-special", "all", text)
        assert status == 0
        assert out.split() == [str(i) for i in cl100k.encode(text, allowed_special="all")]
        status, out, _ = cli(capsys, *args, "--no-special-check", text)
        assert out.split() == [str(i) for i in cl100k.encode(text, disallowed_special=())]
        status, out, err = cli(capsys, *args, text)
        assert status == 1
        assert err.startswith("tokend: INVALID_ARGUMENT:")
        assert "<|endoftext|>" in err

    def test_decode(
        self, tokend_service: Any, capsys: pytest.CaptureFixture[str], o200k: tiktoken.Encoding
    ) -> None:
        text = "decode me, café"
        ids = [str(i) for i in o200k.encode(text)]
        status, out, _ = cli(capsys, "decode", "--target", tokend_service.target, *ids)
        assert (status, out) == (0, text + "\n")
        status, out, _ = cli(capsys, "decode", "--target", tokend_service.target, "--json", *ids)
        payload = json.loads(out)
        assert payload["text"] == text
        assert base64.b64decode(payload["data"]) == text.encode("utf-8")

    def test_count_texts_messages_and_budget(
        self,
        tokend_service: Any,
        capsys: pytest.CaptureFixture[str],
        o200k: tiktoken.Encoding,
        tmp_path: Path,
    ) -> None:
        target = ("--target", tokend_service.target)
        status, out, _ = cli(capsys, "count", *target, "--json", "one two", "three")
        payload = json.loads(out)
        assert payload["counts"] == [len(o200k.encode("one two")), len(o200k.encode("three"))]
        assert payload["total"] == sum(payload["counts"])

        messages = tmp_path / "chat.json"
        messages.write_text(json.dumps([{"role": "user", "content": "hi", "name": "bo"}]))
        expected = 3 + len(o200k.encode("user")) + len(o200k.encode("hi"))
        expected += len(o200k.encode("bo")) + 1 + 3
        status, out, _ = cli(capsys, "count", *target, "--json", "--messages", str(messages))
        assert json.loads(out)["messages_count"] == expected

        status, out, _ = cli(capsys, "count", *target, "--max-tokens", "1", "one two three")
        assert status == 0
        assert "does not fit in 1 tokens" in out

    def test_tokenizers(self, tokend_service: Any, capsys: pytest.CaptureFixture[str]) -> None:
        status, out, _ = cli(capsys, "tokenizers", "--target", tokend_service.target, "--json")
        assert status == 0
        names = {t["name"] for t in json.loads(out)}
        assert {"o200k_base", "cl100k_base", "r50k_base"} <= names
        status, out, _ = cli(
            capsys, "tokenizers", "--target", tokend_service.target, "--json", "gpt-4o"
        )
        assert json.loads(out)["name"] == "o200k_base"
        status, out, _ = cli(capsys, "tokenizers", "--target", tokend_service.target)
        assert "o200k_base" in out

    def test_errors_exit_1_with_json_error(
        self, tokend_service: Any, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A failed call: exit 1, `tokend: CODE: message` on stderr, and a JSON error object."""
        status, out, err = cli(
            capsys, "encode", "--target", tokend_service.target, "--json", "-t", "nope", "x"
        )
        assert status == 1
        assert err.startswith("tokend: NOT_FOUND:")
        assert json.loads(out)["error"]["code"] == "NOT_FOUND"

    def test_console_script_reads_stdin(
        self, tokend_service: Any, o200k: tiktoken.Encoding
    ) -> None:
        """The installed entry point, text from stdin (no TEXT argument)."""
        text = "from stdin\nwith two lines"
        result = subprocess.run(
            [sys.executable, "-m", "tokend.cli", "count", "--target", tokend_service.target],
            input=text,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert result.stdout.strip() == str(len(o200k.encode(text)))

    def test_remote_train_with_progress(
        self, tokend_service: Any, capsys: pytest.CaptureFixture[str], fixtures_dir: Path
    ) -> None:
        """`tokend train --target`: streams the corpus, draws progress, prints the published ref."""
        corpus = fixtures_dir / "corpora" / "tinystories_sample.txt"
        target = ("--target", tokend_service.target, "--token", tokend_service.admin_token)
        args = ("train", str(corpus), "--name", "clitok", "--vocab-size", "280", *target)
        status, out, err = cli(capsys, *args)
        assert status == 0, err
        assert out.strip().startswith("clitok@")
        assert "[" in err  # the progress bar
        status, out, _ = cli(capsys, *args, "--json")
        job = json.loads(out)
        assert (job["state"], job["name"]) == ("succeeded", "clitok")
        assert job["published"].startswith("clitok@")
        status, out, err = cli(capsys, *args[:-2])  # no token
        assert status == 1
        assert "UNAUTHENTICATED" in err
