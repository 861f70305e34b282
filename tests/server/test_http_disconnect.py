"""A client that hangs up mid-call stops the call's work (Hardening II): a call on the handler
pool checks between items whether its HTTP client is still there, as a cancelled gRPC call
does, and ends as 499 ("client closed request") instead of finishing for nobody."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from conditions import row
from http_api import byte_fallback_tokenizer, call, free_port

from tokend.core.registry import Registry

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpora" / "corpus.en"
TEXT_BYTES = 56_000  # under the fixture's --max-text-bytes 65536 (corpus.en is mostly ASCII)


def texts(count: int) -> list[str]:
    """``count`` different texts of about TEXT_BYTES (no cache can answer them)."""
    corpus = CORPUS.read_text(encoding="utf-8")
    step = max(1, (len(corpus) - TEXT_BYTES) // count)
    return [corpus[i * step:i * step + TEXT_BYTES // 2] * 2 for i in range(count)]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def post(port: int, path: str, body: dict[str, Any]) -> socket.socket:
    """Send the whole request on a new connection; the caller reads or hangs up."""
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % (path.encode(), len(data)) + data)
    return sock


@pytest.fixture
def slow_server(tokend_factory: Any, tmp_path: Path) -> tuple[Any, int, Any]:
    """A server whose limits admit a /count of seconds: 512 texts of 56 KB on ``bf`` (a
    byte-fallback tokenizer.json, served by the Python pipeline: ~0.05 s CPU per 16 texts on
    an idle machine, so ~1.6 s for all)."""
    corpus = CORPUS.read_text(encoding="utf-8")
    tok = byte_fallback_tokenizer(corpus[:20000])
    Registry(tmp_path / "serve0" / "registry").publish_file(
        "bf", fmt="hf-json", data=tok.to_str().encode())
    port = free_port()
    served = tokend_factory("--http-port", str(port), "--max-batch", "512",
                            "--max-message-bytes", str(64 << 20), workers=1)
    return served, port, tok


class TestClientGone:
    def test_count_stops_when_its_client_hangs_up(self, slow_server: Any) -> None:
        """A /count of 512 texts (seconds of work on the pool); its client hangs up once the
        call is under way: the work stops between texts, the call ends as 499 logged with the
        cancellation (it was 200, the whole batch counted for nobody), and the next call is
        answered."""
        served, port, tok = slow_server
        after = len(served.events)
        worker = served.wait_event("worker_started")["pid"]
        before = cpu_seconds(worker)
        sock = post(port, "/count", {"tokenizer": "bf", "texts": texts(512)})
        # subtle: hang up by the worker's CPU, not the clock: once it has spent 0.5 s (the
        # body read and parsed, the counting under way), most of the ~1.6 s of work is left
        # whatever the machine's speed or load (a fixed 1 s sleep outlasted the whole call on
        # an idle machine, 0.8 s).
        deadline = time.monotonic() + 60
        while cpu_seconds(worker) - before < 0.5:
            assert time.monotonic() < deadline, "the worker never started the call"
            time.sleep(0.01)
        sock.close()
        status = int(row("http-hang-up").answer.split()[0])
        gone = served.wait_event("http_error", after=after, status=status, timeout=60)
        assert gone["path"] == "/count"
        assert "cancelled the call" in gone["error"]
        answer = call(f"http://127.0.0.1:{port}", "POST", "/count",
                      {"tokenizer": "bf", "texts": ["still here"]})
        assert answer.status == 200 and answer.body["total"] == len(
            tok.encode("still here", add_special_tokens=False).ids)

    def test_a_client_that_stays_gets_the_answer(self, slow_server: Any) -> None:
        """The same kind of call from a client that waits is answered in full: the watch for
        a disconnect does not end calls whose client is there."""
        _, port, tok = slow_server
        sent = texts(32)
        answer = call(f"http://127.0.0.1:{port}", "POST", "/count",
                      {"tokenizer": "bf", "texts": sent}, timeout=120)
        assert answer.status == 200, answer.body
        assert answer.body["counts"] == [
            len(tok.encode(t, add_special_tokens=False).ids) for t in sent]

    def test_a_client_gone_before_its_body_arrived_is_499_not_500(
            self, slow_server: Any) -> None:
        """Half a body, then the client hangs up: 499 naming the body (was logged as an
        internal error, 500)."""
        served, port, _ = slow_server
        after = len(served.events)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"POST /count HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                         b"application/json\r\nContent-Length: 1000\r\n\r\n{\"tokenizer\"")
            time.sleep(0.5)
        status = int(row("http-hang-up-body").answer.split()[0])
        gone = served.wait_event("http_error", after=after, status=status, timeout=30)
        assert "request body" in gone["error"]
        assert not [e for e in served.events[after:] if e.get("event") == "http_internal_error"]
