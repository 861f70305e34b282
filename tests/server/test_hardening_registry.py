"""Hardening II, registry side and defaults: a garbled aliases file keeps what was served,
DATA_LOSS messages name the version instead of the server's folders, a full disk under a
server-side corpus is RESOURCE_EXHAUSTED with nothing left behind, training is not served open
on a non-loopback address by accident, and stalled /metrics scrapes cost no threads."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from versioned import NAME, publish_versions

from tokend.core.registry import Registry
from tokend.server import jobs as jobs_module
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc


def stub_for(target: str) -> tuple[grpc.Channel, pb_grpc.TokenizerServiceStub]:
    channel = grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
    return channel, pb_grpc.TokenizerServiceStub(channel)


class TestGarbledAliases:
    def test_an_alias_being_served_keeps_its_version(self, tokend_factory, tmp_path) -> None:
        """aliases.json garbled while ``vtok@stable`` is served: Encode and GetTokenizer keep
        answering with version 1 (was DATA_LOSS for every client), verify reports the file."""
        registry = tmp_path / "serve0" / "registry"
        publish_versions(registry)
        served = tokend_factory(workers=1)
        assert served.registry == registry
        channel, stub = stub_for(served.target)
        with channel:
            before = stub.Encode(pb.EncodeRequest(tokenizer=f"{NAME}@stable", texts=["hi"]))
            assert before.tokenizer == f"{NAME}@1"
            assert stub.GetTokenizer(pb.GetTokenizerRequest(
                tokenizer=f"{NAME}@stable")).manifest.version == 1
            garbled = registry / NAME / ".aliases.tmp"
            garbled.write_bytes(b'{"stable": 1, garbled')
            os.replace(garbled, registry / NAME / "aliases.json")  # the generation changes
            time.sleep(1.0)  # a few registry polls (--reload-seconds 0.2)
            after = stub.Encode(pb.EncodeRequest(tokenizer=f"{NAME}@stable", texts=["hi"]))
            assert after.tokenizer == f"{NAME}@1"
            info = stub.GetTokenizer(pb.GetTokenizerRequest(tokenizer=f"{NAME}@stable"))
            assert info.manifest.version == 1
        served.wait_event("aliases_corrupt_kept", name=NAME, timeout=10)
        problems = Registry(registry).verify()
        assert [p.path.endswith("aliases.json") for p in problems] == [True]


    def test_a_worker_started_after_the_garbling_answers_the_same(
            self, tokend_factory, tmp_path) -> None:
        """aliases.json garbled before the workers start (as for a worker restarted after the
        garbling: it never saw the good file): every worker serves ``vtok@stable`` as version
        1 from the registry's kept copy (was DATA_LOSS from such a worker)."""
        registry = tmp_path / "serve0" / "registry"
        publish_versions(registry)  # sets stable -> 1 through the registry
        (registry / NAME / "aliases.json").write_bytes(b'{"stable": 1, garbled')
        served = tokend_factory(workers=2)
        answers = set()
        for _ in range(12):  # fresh channels: both workers answer some
            channel, stub = stub_for(served.target)
            with channel:
                answers.add(stub.Encode(pb.EncodeRequest(tokenizer=f"{NAME}@stable",
                                                         texts=["hi"])).tokenizer)
        assert answers == {f"{NAME}@1"}
        served.wait_event("aliases_corrupt_kept", name=NAME, timeout=10)


class TestDataLossMessages:
    def test_name_the_version_not_the_server_folder(self, tokend_factory, tmp_path) -> None:
        """A manifest with n_vocab over 2^32 is DATA_LOSS (was INTERNAL) whose message names
        ``vtok/1/manifest.json``, not the registry's absolute path; the log line keeps it."""
        registry = tmp_path / "serve0" / "registry"
        publish_versions(registry)
        manifest_path = registry / NAME / "1" / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        manifest["n_vocab"] = 2**40
        manifest_path.write_text(json.dumps(manifest))
        served = tokend_factory(workers=1)
        channel, stub = stub_for(served.target)
        with channel:
            with pytest.raises(grpc.RpcError) as info:
                stub.GetTokenizer(pb.GetTokenizerRequest(tokenizer=f"{NAME}@1"))
            err = info.value
            assert err.code() == grpc.StatusCode.DATA_LOSS, err.details()
            assert f"{NAME}/1/manifest.json" in err.details()
            assert "uint32" in err.details()
            assert str(tmp_path) not in err.details()
            assert os.path.realpath(tmp_path) not in err.details()
        logged = served.wait_event("rpc_error", method="GetTokenizer", code="DATA_LOSS")
        assert str(manifest_path) in logged["error"]


class TestFullDiskServerCorpus:
    def test_train_with_corpus_path_is_resource_exhausted(self, fresh_server,
                                                          monkeypatch) -> None:
        """ENOSPC while writing the job's state for a --train-dir corpus: RESOURCE_EXHAUSTED
        naming the cause (was INTERNAL), no job and no ``.state.json.*.tmp`` left behind."""
        server = fresh_server()
        train_dir = server.config.train_dir
        assert train_dir is not None
        train_dir.mkdir(parents=True, exist_ok=True)
        (train_dir / "corpus.txt").write_text("some corpus text for a job " * 50)
        real_open = open

        def full_open(path: object, mode: str = "r", *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            handle = real_open(path, mode, *args, **kwargs)  # type: ignore[call-overload]
            if "w" in mode and str(path).endswith(".tmp"):
                handle.write = _enospc  # the temp file exists, then the disk is full
            return handle

        monkeypatch.setattr(jobs_module, "open", full_open, raising=False)
        request = pb.TrainRequest(config=pb.TrainConfig(name="full", vocab_size=300,
                                                        corpus_path="corpus.txt"))
        with pytest.raises(grpc.RpcError) as info:
            server.stub.Train(iter([request]), metadata=(("authorization",
                                                          "Bearer secret-admin"),))
        err = info.value
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.details()
        assert os.strerror(errno.ENOSPC) in err.details()
        assert str(server.config.jobs_path) not in err.details()
        monkeypatch.undo()
        assert not server.stub.ListTrainJobs(pb.ListTrainJobsRequest()).jobs
        left = [p.name for p in Path(server.config.jobs_path).rglob("*") if p.suffix == ".tmp"]
        assert left == []
        assert [p for p in Path(server.config.jobs_path).iterdir() if p.is_dir()] == []


def _enospc(data: bytes) -> int:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def serve_briefly(tmp_path: Path, *args: str, env: dict[str, str] | None = None
                  ) -> tuple[int | None, str]:
    """Run ``tokend serve`` until it says "serving" (then SIGTERM) or exits; (code, stderr)."""
    command = [sys.executable, "-m", "tokend.cli", "serve", "--port", "0", "--workers", "1",
               "--metrics-port", "0", "--registry", str(tmp_path / "registry"), *args]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TOKEND_")}
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env={**clean, **(env or {})})
    assert process.stderr is not None
    lines = []
    for line in process.stderr:
        lines.append(line)
        if '"event": "serving"' in line:
            process.terminate()
            process.wait(60)
            return None, "".join(lines)
    return process.wait(60), "".join(lines)


class TestSecureDefaults:
    def test_open_training_on_a_public_bind_is_refused(self, tmp_path) -> None:
        code, err = serve_briefly(tmp_path, "--host", "0.0.0.0")
        assert code == 2, err
        assert "--admin-token" in err and "--allow-open-training" in err

    @pytest.mark.parametrize("token", ["", "   "])
    def test_an_empty_admin_token_is_refused(self, tmp_path, token: str) -> None:
        code, err = serve_briefly(tmp_path, "--admin-token", token)
        assert code == 2, err
        assert "--admin-token is empty" in err

    def test_opting_in_serves_with_a_warning(self, tmp_path) -> None:
        """--allow-open-training (or TOKEND_ALLOW_OPEN_TRAINING=1) starts, and says so."""
        code, err = serve_briefly(tmp_path, "--host", "0.0.0.0", "--allow-open-training")
        assert code is None, err
        assert '"event": "training_open"' in err
        code, err = serve_briefly(tmp_path, "--host", "0.0.0.0",
                                  env={"TOKEND_ALLOW_OPEN_TRAINING": "1"})
        assert code is None, err

    def test_loopback_without_a_token_warns(self, tmp_path) -> None:
        code, err = serve_briefly(tmp_path)
        assert code is None, err
        warning = next(json.loads(line) for line in err.splitlines()
                       if '"event": "training_open"' in line)
        assert warning["level"] == "WARNING"


def supervisor_threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines()
                    if line.startswith("Threads:")))


def closed_by_server(sock: socket.socket, deadline: float) -> bool:
    """True once the server ends the connection (EOF or reset, after any answer it sent);
    False if it is still open at ``deadline``."""
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if not sock.recv(65536):
                return True
        except TimeoutError:
            return False
        except ConnectionError:
            return True
    return False


class TestMetricsEndpoint:
    def test_stalled_scrapes_are_bounded(self, tokend_factory) -> None:
        """300 scrapes that send half a request: the supervisor stays under 100 threads (was
        303), a real scrape is answered once they time out, and the stalls are closed."""
        served = tokend_factory(workers=1)
        pid = served.process.pid
        before = supervisor_threads(pid)
        stalled = []
        try:
            for _ in range(300):
                sock = socket.create_connection(("127.0.0.1", served.metrics_port), timeout=10)
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # no blank line: stalled
                stalled.append(sock)
            time.sleep(1.0)
            during = supervisor_threads(pid)
            assert during < 100, during
            assert during <= before + 8, (before, during)
            # The stalled scrapes are closed within the scrape timeout (5 s) and a queue's turn.
            deadline = time.monotonic() + 60
            body = b""
            while time.monotonic() < deadline and b"tokend_build_info" not in body:
                try:
                    body = urllib.request.urlopen(
                        f"http://127.0.0.1:{served.metrics_port}/metrics", timeout=5).read()
                except OSError:
                    time.sleep(0.5)
            assert b"tokend_build_info" in body
            closing = time.monotonic() + 60
            open_still = [i for i, sock in enumerate(stalled)
                          if not closed_by_server(sock, closing)]
            assert not open_still, f"{len(open_still)} of 300 stalled scrapes still open"
        finally:
            for sock in stalled:
                sock.close()
