"""Replicas sharing one registry in object storage (a real SeaweedFS on loopback).

Two ``tokend serve`` processes run on the same ``s3://`` registry, as replicas on different
machines would. A version published from outside (the CLI, as from a laptop) or by a training
job on one replica is served by both, and hot reload moves both to a new version or alias.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken
from registry_backends import Backend, s3_backend
from seaweed import Seaweed
from tokend_process import ServedProcess, start_tokend

from tokend.cli import main
from tokend.client import Client
from tokend.core.patterns import GPT2_PATTERN
from tokend.core.registry import Registry

TEXT = "t1 t2 t3 tokens on a shared registry t40 t41"


def tiktoken_file(rows: int) -> bytes:
    """A little rank table: all bytes, then ``t0``..``t<rows-1>``."""
    lines = [base64.b64encode(bytes([i])) + b" %d" % i for i in range(256)]
    lines += [base64.b64encode(b"t%d" % i) + b" %d" % (256 + i) for i in range(rows)]
    return b"\n".join(lines) + b"\n"


def reference(rows: int) -> tiktoken.Encoding:
    ranks = {bytes([i]): i for i in range(256)} | {b"t%d" % i: 256 + i for i in range(rows)}
    return tiktoken.Encoding("ref", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                             special_tokens={})


def cli(backend: Backend, *args: str, subprocess_run: bool = False) -> str:
    """``tokend registry ARGS --registry s3://...``: in-process (fast), or as a real process."""
    argv = ["registry", *args, "--registry", backend.location]
    if not subprocess_run:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main(argv) == 0, err.getvalue()
        return out.getvalue()
    result = subprocess.run(
        [sys.executable, "-m", "tokend.cli", *argv], capture_output=True, text=True,
        timeout=60, check=False, env={**os.environ, **backend.env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def eventually(servers: list[ServedProcess], ref: str, expected: str, rows: int) -> None:
    """Every server resolves ``ref`` to ``expected`` (within the poll) and encodes exactly."""
    want = reference(rows).encode(TEXT)
    for server in servers:
        with Client(server.target) as client:
            deadline = time.monotonic() + 20
            while True:
                got = client.encode(ref, TEXT)
                if got.tokenizer == expected:
                    break
                assert time.monotonic() < deadline, f"{server.target} still serves {got.tokenizer}"
                time.sleep(0.1)
            assert got.ids == want


@pytest.fixture(scope="module")
def replicas(
    seaweed_server: Seaweed, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Backend, list[ServedProcess]]]:
    """Two one-worker replicas on one fresh S3 prefix (the AWS variables set meanwhile)."""
    base = tmp_path_factory.mktemp("replicas")
    servers: list[ServedProcess] = []
    with pytest.MonkeyPatch.context() as patch:
        for key, value in seaweed_server.env().items():
            patch.setenv(key, value)
        backend = s3_backend(seaweed_server.env())
        try:
            for i in range(2):
                servers.append(start_tokend(
                    base / f"replica{i}", "--registry", backend.location,
                    "--jobs-dir", str(base / f"jobs{i}"), "--grace-seconds", "1",
                    "--drain-delay-seconds", "0", workers=1,
                ))
            yield backend, servers
        finally:
            for server in servers:
                server.stop()


class TestReplicasOnS3:
    def test_a_cli_publish_reaches_every_replica(
        self, replicas: tuple[Backend, list[ServedProcess]], tmp_path: Path
    ) -> None:
        """Import v1 and v2 with the CLI, move an alias: both replicas follow each change."""
        backend, servers = replicas
        for rows in (30, 45):
            (tmp_path / f"r{rows}.tiktoken").write_bytes(tiktoken_file(rows))
        cli(backend, "import", "tok", "--from", str(tmp_path / "r30.tiktoken"),
            "--pattern", "gpt2", subprocess_run=True)
        eventually(servers, "tok", "tok@1", 30)
        cli(backend, "alias", "tok", "stable", "1")
        eventually(servers, "tok@stable", "tok@1", 30)
        cli(backend, "import", "tok", "--from", str(tmp_path / "r45.tiktoken"),
            "--pattern", "gpt2")
        eventually(servers, "tok", "tok@2", 45)  # hot reload: "tok" was served as tok@1
        cli(backend, "alias", "tok", "stable", "2")
        eventually(servers, "tok@stable", "tok@2", 45)
        assert "tok" in cli(backend, "list")
        exported = tmp_path / "out.tiktoken"
        cli(backend, "export", "tok@1", "--format", "tiktoken", "--out", str(exported))
        assert exported.read_bytes() == tiktoken_file(30)

    def test_a_training_job_on_one_replica_is_served_by_the_other(
        self, replicas: tuple[Backend, list[ServedProcess]], fixtures_dir: Path
    ) -> None:
        """Jobs run and keep their state on the replica that took them; the tokenizer they
        publish goes to the shared registry and so to every replica."""
        backend, (first, second) = replicas
        corpus = (fixtures_dir / "corpora" / "tinystories_sample.txt").read_bytes()
        with Client(first.target, token=first.admin_token) as client:
            published = client.train("shared", corpus, vocab_size=300).result(timeout=120)
        assert published == "shared@1"
        assert Registry(backend.location).verify() == []
        with Client(second.target) as client:
            assert client.encode("shared", "Once upon a time").tokenizer == "shared@1"
