"""`tokend encode|decode|count|truncate|chunk|tokenizers` without --target: answered in process.

Side by side: every command runs once against a real `tokend serve` (--target) and once in
process over the same registry folder (--registry); stdout, stderr and the exit status must be
equal, refusals included. The no-server path is also run as a subprocess, as a user would.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fresh_python import run_fresh
from versioned import publish_versions

from tokend.cli import main
from tokend.client.responses import tokenizer_manifest
from tokend.v1 import tokenizer_pb2 as pb

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "name": "bo", "content": [
        {"type": "text", "text": "What is in this picture, and the weather in Oslo?"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"},
         "width": 640, "height": 480}]},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny <|endoftext|>"},
]
DOC = "One paragraph here. Two sentences, café 🙂.\n\n" * 12


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory,
           tokend_launcher: Callable[..., contextlib.AbstractContextManager[Any]]) -> Iterator[Any]:
    """A server at its default limits over a registry holding vtok@1, vtok@2, vtok@stable."""
    base = tmp_path_factory.mktemp("cli-in-process")
    publish_versions(base / "registry")
    with tokend_launcher(base, "--max-batch", "1024") as server:
        yield server


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("cli-in-process-files")
    paths = {"messages": folder / "messages.json", "request": folder / "request.json",
             "tools": folder / "tools.json", "doc": folder / "doc.txt",
             "bad": folder / "bad.json"}
    paths["messages"].write_text(json.dumps(MESSAGES))
    paths["request"].write_text(json.dumps({"model": "gpt-4o-mini", "messages": MESSAGES,
                                            "tools": TOOLS, "tool_choice": "auto"}))
    paths["tools"].write_text(json.dumps(TOOLS))
    paths["doc"].write_text(DOC, encoding="utf-8")
    paths["bad"].write_text(json.dumps([{"role": "user", "content": [{"type": "audio"}]}]))
    return {name: str(path) for name, path in paths.items()}


# Each case: argv after the command name, with {messages} etc. filled from `files`.
CASES: list[tuple[str, ...]] = [
    ("encode", "hello world", "naïve café 🙂"),
    ("encode", "--json", "--details", "Grüße 🙂"),
    ("encode", "-t", "cl100k_base", "x<|endoftext|>"),  # refused: a special token
    ("encode", "-t", "cl100k_base", "--allowed-special", "all", "x<|endoftext|>"),
    ("encode", "-t", "cl100k_base", "--allowed-special", "<|endoftext|>", "x<|endoftext|>"),
    ("encode", "-t", "cl100k_base", "--allowed-special", "<|nope|>", "x"),  # unknown name
    ("encode", "-t", "cl100k_base", "--no-special-check", "x<|endoftext|>"),
    ("encode", "-t", "vtok@1", "--json", "hello world"),
    ("encode", "-t", "vtok@stable", "hello world"),
    ("encode", "-t", "vtok@9", "hello"),  # no such version
    ("encode", "-t", "nope", "hello"),
    ("decode", "24912", "2375"),
    ("decode", "--json", "-t", "vtok@2", "104", "101"),
    ("decode", "99999999"),  # not in the vocabulary
    ("decode", "x"),  # not an integer: refused before any call
    ("count", "one two", "three"),
    ("count", "--json", "-t", "gpt-4o", "x<|endoftext|>"),
    ("count", "-t", "gpt-4o", "hello world"),
    ("count", "--model", "claude-sonnet-4-5", "hello world"),  # an estimate, flagged
    ("count", "--json", "--model", "claude-sonnet-4-5", "--messages", "{messages}"),
    ("count", "--messages", "{messages}", "--tools", "{tools}", "--model", "gpt-4"),
    ("count", "--json", "--messages", "{request}"),
    ("count", "--breakdown", "--messages", "{request}"),
    ("count", "--breakdown", "--model", "claude-sonnet-4-5", "--messages", "{messages}", "hi"),
    ("count", "--messages", "{messages}", "--tool-choice", "get_weather", "--model", "gpt-4o"),
    ("count", "--messages", "{messages}", "--plain-text", "-t", "cl100k_base"),
    ("count", "--max-tokens", "3", "one two three four five"),
    ("count", "--json", "-t", "vtok@1", "--messages", "{messages}"),
    ("count", "--model", "nope-model", "hi"),
    ("count", "--model", "llama-3.1-8b-instruct", "hi"),  # not installed: says how
    ("count", "--messages", "{bad}"),
    ("count", "--max-tokens", "-1", "hi"),  # refused by the client's checks
    ("truncate", "-n", "9", "--keep", "both", "-t", "cl100k_base", DOC),
    ("truncate", "--json", "-n", "5", "--keep", "tail", "--marker", "[…]", DOC),
    ("truncate", "-n", "0", "--keep", "both", DOC),
    ("chunk", "--json", "-n", "12", "--overlap", "2", "{doc}"),
    ("chunk", "-n", "20", "-t", "vtok@2", "{doc}"),
    ("chunk", "-n", "3", "--overlap", "3", "{doc}"),  # refused by the server's checks
    ("tokenizers",),
    ("tokenizers", "--json"),
    ("tokenizers", "--json", "vtok@stable"),
    ("tokenizers", "gpt-4o"),
    ("tokenizers", "vtok@7"),
]


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


class TestSideBySide:
    @pytest.mark.parametrize("case", CASES, ids=lambda case: " ".join(case)[:60])
    def test_same_output_as_the_server(self, case: tuple[str, ...], served: Any,
                                       files: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
        """stdout, stderr and the exit status of the command equal the server's."""
        for name in ("TOKEND_TARGET", "TOKEND_REGISTRY", "TOKEND_TOKEN"):
            monkeypatch.delenv(name, raising=False)
        command, *rest = case
        args = [arg.format(**files) if arg.startswith("{") else arg for arg in rest]
        remote = _run(capsys, [command, "--target", served.target, *args])
        local = _run(capsys, [command, "--registry", str(served.registry), *args])
        assert local == remote
        assert remote[0] == 0 or remote[2].startswith("tokend: ")


class TestStableOrder:
    def test_manifest_maps_in_a_fixed_order(self) -> None:
        """A protobuf map iterates in no fixed order: the result lists special tokens by id
        and aliases by name, so the CLI prints the same whichever process read the map."""
        response = pb.GetTokenizerResponse()
        for name, token_id in (("<|c|>", 9), ("<|a|>", 7), ("<|b|>", 8)):
            response.manifest.special_tokens[name] = token_id
        for alias, version in (("stable", 2), ("beta", 3), ("old", 1)):
            response.manifest.aliases[alias] = version
        manifest = tokenizer_manifest(response)
        assert list(manifest.special_tokens.items()) == [("<|a|>", 7), ("<|b|>", 8), ("<|c|>", 9)]
        assert list(manifest.aliases) == ["beta", "old", "stable"]


class TestNoServer:
    def test_count_without_a_server(self, tmp_path: Path) -> None:
        """`tokend count -t gpt-4o "hello world"` with no server: the count, exit 0, and the
        registry is only read (no jobs folder is created)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOKEND_")}
        env["TOKEND_REGISTRY"] = str(tmp_path / "registry")
        done = subprocess.run([_tokend(), "count", "-t", "gpt-4o", "hello world"], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout.splitlines() == [
            "2", "fits in 128000 tokens (gpt-4o's window) (remaining 127998)"]
        assert not (tmp_path / "registry" / ".jobs").exists()

    def test_refused_connection_says_how_to_start_a_server(self) -> None:
        port = _closed_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOKEND_")}
        env["TOKEND_TARGET"] = f"127.0.0.1:{port}"
        done = subprocess.run([_tokend(), "count", "hello world"], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 1
        assert done.stderr == (
            f"tokend: UNAVAILABLE: no tokend server at 127.0.0.1:{port} (connection refused): "
            "start one with `tokend serve`, or leave out --target (and TOKEND_TARGET) to "
            "answer in process\n")

    def test_in_process_loads_no_grpc(self, tmp_path: Path) -> None:
        """The in-process path never imports grpc (its import alone costs a fifth of a
        second); a refusal may (the status table lives with it)."""
        code = ("import sys, os\n"
                "os.environ.pop('TOKEND_TARGET', None)\n"
                "from tokend.cli import main\n"
                f"main(['count', '--registry', {str(tmp_path)!r}, '-t', 'gpt-4o', 'hi'])\n"
                "print(sorted(m for m in sys.modules if m.split('.')[0] == 'grpc'))\n")
        assert run_fresh(code).splitlines()[-1] == "[]"

    def test_connection_options_need_a_target(self, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
        monkeypatch.delenv("TOKEND_TARGET", raising=False)
        status, _, err = _run(capsys, ["count", "--tls", "hi"])
        assert status == 1
        assert err.startswith("tokend: CLIENT_ERROR: --tls configure the connection")
        status, _, err = _run(capsys, ["count", "--target", "127.0.0.1:1", "--registry", "r",
                                       "hi"])
        assert status == 1 and "--registry is for answers in process" in err


def _tokend() -> str:
    return str(Path(sys.executable).parent / "tokend")


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port
