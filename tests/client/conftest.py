"""Fixtures of the client tests: one real ``tokend serve`` subprocess per session, and tiktoken.

The server runs with an admin token (so auth paths can be tested), a small --max-batch (so the
batch limit is reachable cheaply), a --train-dir and one worker process (quick to start).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import tiktoken
from tiktoken_reference import reference

from tokend.client import Client

ADMIN_TOKEN = "client-tests-admin-token"
MAX_BATCH = 64
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class TokendServer:
    """A running ``tokend serve``: where it listens and how it was configured."""

    target: str
    admin_token: str
    max_batch: int
    train_dir: Path
    registry: Path
    log: Path


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _tokend_executable() -> str:
    found = shutil.which("tokend", path=str(Path(sys.executable).parent))
    if found is None:
        raise RuntimeError("the tokend console script is not installed: run scripts/setup.sh")
    return found


def _wait_serving(target: str, proc: subprocess.Popen[bytes], log: Path, client: Client) -> None:
    """Until CountTokens answers (the port may be bound before the workers are ready)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"tokend serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            client.count_tokens("o200k_base", "ready?")
            return
        except Exception:
            time.sleep(0.1)
    raise TimeoutError(f"tokend serve not ready after {START_TIMEOUT}s:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def serve(
    base: Path,
    *extra_args: str,
    probe: Callable[[str], Client] | None = None,
    host: str = "127.0.0.1",
) -> Iterator[TokendServer]:
    """Run ``tokend serve`` with a fresh registry under ``base``; stop it with SIGTERM after.

    ``probe`` builds the client used to wait for readiness (e.g. with TLS settings).
    """
    registry, train_dir = base / "registry", base / "train"
    train_dir.mkdir(parents=True, exist_ok=True)
    log = base / "serve.log"
    port = _free_port(host)
    cmd = [
        _tokend_executable(), "serve",
        "--host", host, "--port", str(port), "--metrics-port", "0",
        "--registry", str(registry), "--train-dir", str(train_dir),
        "--workers", "1", "--max-batch", str(MAX_BATCH), "--admin-token", ADMIN_TOKEN,
        *extra_args,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKEND_")}
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    target = f"{host}:{port}"
    try:
        make_probe = probe or (lambda t: Client(t, timeout=2, max_attempts=1))
        with make_probe(target) as probe_client:
            _wait_serving(target, proc, log, probe_client)
        yield TokendServer(target, ADMIN_TOKEN, MAX_BATCH, train_dir, registry, log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="session")
def tokend_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TokendServer]:
    """A real ``tokend serve`` on a free loopback port for the whole session."""
    with serve(tmp_path_factory.mktemp("tokend-client-server")) as server:
        yield server


@pytest.fixture(scope="session")
def tokend_launcher() -> Callable[..., contextlib.AbstractContextManager[TokendServer]]:
    """``serve`` itself, for tests that need a differently configured server (TLS)."""
    return serve


@pytest.fixture(scope="session")
def client(tokend_service: TokendServer) -> Iterator[Client]:
    """A sync client without the admin token (shared: one channel, as intended)."""
    with Client(tokend_service.target, timeout=30) as c:
        yield c


@pytest.fixture(scope="session")
def admin_client(tokend_service: TokendServer) -> Iterator[Client]:
    with Client(tokend_service.target, timeout=30, token=tokend_service.admin_token) as c:
        yield c


@pytest.fixture(scope="session")
def o200k() -> tiktoken.Encoding:
    return reference("o200k_base")


@pytest.fixture(scope="session")
def cl100k() -> tiktoken.Encoding:
    return reference("cl100k_base")


@pytest.fixture(scope="session")
def sample_texts() -> list[str]:
    return list(SAMPLE_TEXTS)


# Texts that exercise the pre-tokenizer: contractions, digits, whitespace runs, non-Latin
# scripts, emoji (multi-byte tokens), a lone combining mark, and an empty text.
SAMPLE_TEXTS = [
    "hello world",
    "I'm sure they'll've   done it... 12345 apples\n\n\tand 3.14159!",
    "Grüße aus Köln — naïve café, Ελληνικά, русский, 東京タワー, 한국어",
    "emoji 🙂👍🏽 and ZWJ 👩‍👩‍👧 sequences",
    "e\u0301 combining, \u200b zero width, trailing spaces   ",
    "",
]
