"""deploy/haproxy/haproxy.cfg, the balancer of docker-compose.yml, run here as it is in front of
two ``tokend serve`` instances sharing one registry (and a third address where nothing listens):
calls spread over both, a published version is served by both, and when one instance is killed
clients keep being served. haproxy is Debian's (scripts/setup-test-tools.sh)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tokend_process import ServedProcess, start_tokend

from tokend.client import Client

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "deploy" / "haproxy" / "haproxy.cfg"
SERVING = bytes.fromhex("00000000020801")  # the gRPC frame of HealthCheckResponse{SERVING}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    """One HTTP/2 frame: 24-bit length, type, flags, 31-bit stream id, payload."""
    head = len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big")
    return head + payload


def literal(name: bytes, value: bytes) -> bytes:
    """An HPACK literal without indexing (no Huffman), ``name`` an encoded name index."""
    return name + bytes([len(value)]) + value


def health_check_bytes() -> bytes:
    """An HTTP/2 prior-knowledge Health/Check call, byte by byte (what the config sends)."""
    headers = (
        b"\x83"  # :method POST (static table entry 3)
        + b"\x86"  # :scheme http (6)
        + literal(b"\x04", b"/grpc.health.v1.Health/Check")  # :path (4)
        + literal(b"\x01", b"tokend")  # :authority (1)
        + literal(b"\x0f\x10", b"application/grpc")  # content-type (31 = 15 + 16)
        + literal(b"\x00\x02te", b"trailers")  # te (a new name)
    )
    empty_request = b"\x00\x00\x00\x00\x00"  # not compressed, length 0
    return (
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        + frame(4, 0, 0, b"")  # SETTINGS (defaults)
        + frame(1, 4, 1, headers)  # HEADERS, END_HEADERS, stream 1
        + frame(0, 1, 1, empty_request)  # DATA, END_STREAM
    )


def handled(served: ServedProcess, method: str) -> float:
    """grpc_server_handled_total of ``method`` (all codes) on one instance."""
    url = f"http://127.0.0.1:{served.metrics_port}/metrics"
    body = urllib.request.urlopen(url, timeout=10).read().decode()
    return sum(
        s.value for family in text_string_to_metric_families(body) for s in family.samples
        if s.name == "grpc_server_handled_total" and s.labels.get("grpc_method") == method
    )


class Balanced:
    def __init__(self, a: ServedProcess, b: ServedProcess, target: str) -> None:
        self.a, self.b, self.target = a, b, target


@pytest.fixture(scope="module")
def balanced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Balanced]:
    base = tmp_path_factory.mktemp("balanced")
    shared = base / "registry"
    a = start_tokend(base / "a", "--registry", str(shared), workers=1)
    b = start_tokend(base / "b", "--registry", str(shared), workers=1)
    port = free_port()
    env = {**os.environ, "LB_BIND": f"127.0.0.1:{port}", "BACKEND_1": a.target,
           "BACKEND_2": b.target, "BACKEND_3": f"127.0.0.1:{free_port()}"}  # nothing there
    log = (base / "haproxy.log").open("w")
    haproxy = subprocess.Popen(
        [shutil.which("haproxy") or "/usr/sbin/haproxy", "-db", "-f", str(CONFIG)],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    target = f"127.0.0.1:{port}"
    try:
        with Client(target, timeout=5) as client:
            deadline = time.monotonic() + 30
            while True:
                assert haproxy.poll() is None, (base / "haproxy.log").read_text()
                try:
                    client.count_tokens("o200k_base", "ready?")
                    break
                except Exception:
                    assert time.monotonic() < deadline, (base / "haproxy.log").read_text()
                    time.sleep(0.2)
        time.sleep(1.5)  # the first health checks mark both replicas up, the third down
        yield Balanced(a, b, target)
    finally:
        haproxy.terminate()
        haproxy.wait(10)
        log.close()
        for served in (a, b):
            served.stop()


class TestBalancer:
    def test_the_config_sends_the_health_check_built_here(self) -> None:
        config = CONFIG.read_text()
        [sent] = re.findall(r"^\s*tcp-check send-binary ([0-9a-f]+)$", config, flags=re.M)
        assert bytes.fromhex(sent) == health_check_bytes()
        [expected] = re.findall(r"^\s*tcp-check expect binary ([0-9a-f]+)$", config, flags=re.M)
        assert bytes.fromhex(expected) == SERVING

    def test_the_health_check_bytes_get_serving_from_tokend(self, balanced: Balanced) -> None:
        host, port = balanced.a.target.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(health_check_bytes())
            got = b""
            deadline = time.monotonic() + 5
            while SERVING not in got and time.monotonic() < deadline:
                got += sock.recv(4096)
        assert SERVING in got

    def test_calls_spread_over_both_instances(self, balanced: Balanced) -> None:
        before = [handled(s, "CountTokens") for s in (balanced.a, balanced.b)]
        with Client(balanced.target, timeout=10) as client:  # one client, one connection
            for i in range(40):
                assert client.count_tokens("o200k_base", f"spread {i}").total > 0
        after = [handled(s, "CountTokens") for s in (balanced.a, balanced.b)]
        moved = [y - x for x, y in zip(before, after, strict=True)]
        assert sum(moved) == 40
        assert min(moved) >= 10, moved  # round robin per call, not per connection

    def test_a_version_published_through_one_is_served_by_both(self, balanced: Balanced) -> None:
        corpus = "".join(f"balanced words {i} and more words {i % 17}\n" for i in range(2000))
        with Client(balanced.a.target, timeout=60, token=balanced.a.admin_token) as admin:
            ref = admin.train("lbtest", corpus, vocab_size=300).result(timeout=120)
        deadline = time.monotonic() + 10  # the reload interval is 0.2 s
        for served in (balanced.a, balanced.b):
            with Client(served.target, timeout=10) as client:
                while True:
                    try:
                        ids = client.encode(ref, "balanced words 7").ids
                        break
                    except Exception:
                        assert time.monotonic() < deadline, f"{served.target} never served {ref}"
                        time.sleep(0.2)
                assert client.decode(ref, ids).text == "balanced words 7"
        with Client(balanced.target, timeout=10) as client:
            assert all(client.encode(ref, "balanced words 7").ids == ids for _ in range(10))

    def test_clients_keep_being_served_when_one_is_killed(self, balanced: Balanced) -> None:
        victim = balanced.b
        for pid in [*victim.wait_event("serving")["pids"], victim.process.pid]:
            os.kill(pid, signal.SIGKILL)
        with Client(balanced.target, timeout=10) as client:
            results = [client.count_tokens("o200k_base", f"after the kill {i}").total
                       for i in range(30)]
        assert all(total > 0 for total in results)
