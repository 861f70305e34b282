"""`pip install tokend` is the client and the in-process library; `tokend[server]` serves.

A fresh venv gets the package built from this checkout's files with no extras: the client calls
a running server and counting (chat templates included) answers in process with none of the
server's, S3's or the plots' dependencies installed; `tokend serve` says which extra it needs,
and serves once the `server` extra's requirements are added.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from tiktoken_reference import reference
from tokend_process import ServedProcess, start_tokend

from tokend.client import Client

ROOT = Path(__file__).resolve().parent.parent
LEFT_OUT = ("starlette", "uvicorn", "boto3", "botocore", "matplotlib", "grpc_health")
CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello world"}]
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# What the snippets below print, computed in the fresh venv and here alike.
IN_PROCESS = f"""
import json
from tokend.core import count_chat, get_encoding
from tokend.core.counting.templates import render_chat_template
prompt = render_chat_template({CHATML!r}, {CHAT!r})
enc = get_encoding("o200k_base")
print(json.dumps({{
    "chat": count_chat({CHAT!r}, model="gpt-4o").total,
    "prompt": prompt,
    "ids": enc.encode(prompt, allowed_special="all"),
}}))
"""

pytestmark = pytest.mark.timeout(900)


def _run(*command: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with `pip install <this checkout>`: no extras."""
    base = tmp_path_factory.mktemp("client-only")
    source = base / "src"
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        if name.split("/")[0] in {"tests", "docs", "bench", "deploy", "loadtest"}:
            continue
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    venv = base / "venv"
    made = _run(sys.executable, "-m", "venv", venv)
    assert made.returncode == 0, made.stderr
    installed = _run(
        venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
        source, timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return venv


def test_leaves_out_the_server_s3_and_plot_dependencies(client_venv: Path) -> None:
    code = (
        "import importlib.util, json\n"
        f"print(json.dumps([m for m in {LEFT_OUT!r} if importlib.util.find_spec(m)]))"
    )
    done = _run(client_venv / "bin" / "python", "-c", code)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_the_client_calls_a_running_server(client_venv: Path, tokend_server: ServedProcess) -> None:
    code = (
        "import json, sys\n"
        "from tokend.client import Client\n"
        "with Client(sys.argv[1]) as c:\n"
        "    print(json.dumps({'ids': c.encode('o200k_base', 'hello world').ids,\n"
        f"                      'chat': c.count_tokens('gpt-4o', messages={CHAT!r}).total}}))\n"
    )
    done = _run(client_venv / "bin" / "python", "-c", code, tokend_server.target)
    assert done.returncode == 0, done.stderr
    with Client(tokend_server.target) as here:
        expected_chat = here.count_tokens("gpt-4o", messages=CHAT).total
    assert json.loads(done.stdout) == {
        "ids": reference("o200k_base").encode("hello world"),
        "chat": expected_chat,
    }


def test_counting_and_chat_templates_answer_in_process(client_venv: Path) -> None:
    there = _run(client_venv / "bin" / "python", "-c", IN_PROCESS)
    assert there.returncode == 0, there.stderr
    here = _run(sys.executable, "-c", IN_PROCESS)
    assert here.returncode == 0, here.stderr
    answer = json.loads(there.stdout)
    assert answer == json.loads(here.stdout)
    assert answer["prompt"].startswith("<|im_start|>system\nBe brief.<|im_end|>")
    enc = reference("o200k_base")
    assert answer["ids"] == enc.encode(answer["prompt"], allowed_special="all")
    cli = _run(client_venv / "bin" / "tokend", "count", "-t", "gpt-4o", "hello world")
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.splitlines()[0] == str(len(enc.encode("hello world")))


def test_serve_names_the_extra_it_needs(client_venv: Path, tmp_path: Path) -> None:
    done = _run(client_venv / "bin" / "tokend", "serve", "--port", "0",
                "--registry", tmp_path / "registry")
    assert done.returncode == 2
    assert "pip install 'tokend[server]'" in done.stderr
    assert "starlette" in done.stderr


def test_the_server_extra_serves(
    client_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `server` extra's requirements (read from pyproject.toml) make the same install serve;
    they go to a folder of their own on PYTHONPATH, so the venv stays client-only."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["server"]
    added = _run(client_venv / "bin" / "python", "-m", "pip", "install", "-q",
                 "--disable-pip-version-check", "--target", tmp_path / "extra", *extra)
    assert added.returncode == 0, added.stderr[-3000:]
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "extra"))
    served = start_tokend(tmp_path, workers=1, python=str(client_venv / "bin" / "python"))
    try:
        with Client(served.target) as client:
            assert client.encode("cl100k_base", "hello world").ids == (
                reference("cl100k_base").encode("hello world")
            )
    finally:
        assert served.stop() == 0
