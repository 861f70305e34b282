"""Fixtures of the service tests: tiktoken references and in-process servers with small limits.

The real ``tokend serve`` subprocess (``tokend_server``) lives in tests/conftest.py so the
client tests can share it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
import tiktoken
from bad_inputs import SERVER_FLAGS
from http_api import HttpServed, byte_fallback_tokenizer, call, free_port
from tiktoken_reference import reference
from tokend_process import start_tokend
from versioned import publish_versions

from tokend.core.registry import Registry
from tokend.server.config import ServerConfig
from tokend.server.serving import TokendServer, make_server
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

ADMIN_TOKEN = "secret-admin"


@pytest.fixture(scope="session")
def tiktoken_ref() -> Callable[[str], tiktoken.Encoding]:
    return reference


def small_config(base: Path, **overrides: object) -> ServerConfig:
    """A config with small limits so every limit is reachable with small requests."""
    (base / "train").mkdir(parents=True, exist_ok=True)
    config = ServerConfig(
        port=0,
        registry=base / "registry",
        metrics_port=0,
        workers=1,
        threads=8,
        max_message_bytes=1 << 20,
        max_batch=16,
        max_text_bytes=64 * 1024,
        max_ids=20_000,
        max_stream_bytes=256 * 1024,
        max_corpus_bytes=64 * 1024,
        max_train_jobs=2,
        admin_token=ADMIN_TOKEN,
        train_dir=base / "train",
        reload_seconds=0.1,
        grace_seconds=5.0,
    )
    return replace(config, **overrides)  # type: ignore[arg-type]


class InProcess:
    """A started in-process server, a channel to it and a stub."""

    def __init__(self, config: ServerConfig) -> None:
        self.server: TokendServer = make_server(config)
        self.server.start()
        self.config = config
        self.target = f"127.0.0.1:{self.server.port}"
        self.channel = grpc.insecure_channel(self.target)
        self.stub = pb_grpc.TokenizerServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        self.server.drain(0)


@pytest.fixture(scope="session")
def inproc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    """One in-process server with small limits, shared by the RPC tests."""
    running = InProcess(small_config(tmp_path_factory.mktemp("inproc")))
    yield running
    running.close()


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Callable[..., InProcess]]:
    """Start an in-process server of one's own (own registry and jobs), closed afterwards."""
    started: list[InProcess] = []

    def start(**overrides: object) -> InProcess:
        running = InProcess(small_config(tmp_path / f"s{len(started)}", **overrides))
        started.append(running)
        return running

    yield start
    for running in started:
        running.close()


# The catalogue's small limits (tests/support/bad_inputs.py) and a 1 MiB body limit, so a body
# over --max-message-bytes is cheap to send.
HTTP_FLAGS = (*SERVER_FLAGS, "--max-message-bytes", str(1 << 20))


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServed]:
    """One real server with the HTTP API on, shared by the HTTP, bad-input and page tests;
    its registry holds ``vtok`` (versions 1 and 2, alias stable -> 1)."""
    port = free_port()
    base = tmp_path_factory.mktemp("http")
    publish_versions(base / "registry")
    served = start_tokend(base, *HTTP_FLAGS, "--http-port", str(port), workers=2)
    yield HttpServed(f"http://127.0.0.1:{port}", served)
    served.stop()


@pytest.fixture(scope="session")
def bfbpe(http_server: HttpServed) -> Any:
    """A byte-fallback BPE (HF ``tokenizers``, Llama-style) published to ``http_server``'s
    registry as ``bfbpe`` and served; returns HF's own tokenizer object, the reference."""
    corpus = (Path(__file__).resolve().parents[1] / "fixtures" / "corpora" / "corpus.en")
    tok = byte_fallback_tokenizer(corpus.read_text(encoding="utf-8")[:20000])
    Registry(http_server.process.registry).publish_file(
        "bfbpe", fmt="hf-json", data=tok.to_str().encode())
    deadline = time.monotonic() + 30
    while call(http_server.base, "GET", "/tokenizers/bfbpe").status != 200:
        assert time.monotonic() < deadline, "bfbpe was not served within 30 s"
        time.sleep(0.1)
    return tok
