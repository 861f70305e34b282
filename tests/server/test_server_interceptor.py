"""The interceptor's per-call pieces: request ids it makes when a caller sends none (uuid-shaped,
unique, per process) and the DEBUG-only access log line."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import grpc
import pytest
from fresh_python import run_fresh

from tokend.server.interceptors import _record, _RequestIds, new_request_id


class TestRequestIds:
    def test_ids_are_32_lowercase_hex_digits(self) -> None:
        for rid in (new_request_id() for _ in range(100)):
            assert len(rid) == 32 and int(rid, 16) >= 0 and rid == rid.lower()

    def test_ids_are_unique_across_threads(self) -> None:
        """Handler threads share one generator: no two calls get the same id."""
        got: list[list[str]] = [[] for _ in range(8)]

        def make(out: list[str]) -> None:
            out.extend(new_request_id() for _ in range(2000))

        threads = [threading.Thread(target=make, args=(out,)) for out in got]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        every = [rid for out in got for rid in out]
        assert len(set(every)) == len(every) == 16000

    def test_reseeding_changes_the_prefix(self) -> None:
        """What a forked child does: a new random prefix, so ids never repeat the parent's."""
        ids = _RequestIds()
        before = ids.new()
        ids.reseed()
        after = ids.new()
        assert before[:16] != after[:16]

    def test_processes_draw_different_prefixes(self) -> None:
        """Worker processes (spawned) each draw their own prefix."""
        code = "from tokend.server.interceptors import new_request_id; print(new_request_id())"
        prefixes = {run_fresh(code).strip()[:16] for _ in range(2)}
        assert len(prefixes) == 2


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


_Log = tuple[logging.Logger, _Collect]


@pytest.fixture
def server_log() -> Iterator[_Log]:
    logger = logging.getLogger("tokend.server")
    handler, level = _Collect(), logger.level
    logger.addHandler(handler)
    yield logger, handler
    logger.removeHandler(handler)
    logger.setLevel(level)


class TestAccessLog:
    def test_each_call_is_logged_at_debug(self, server_log: _Log) -> None:
        logger, handler = server_log
        logger.setLevel(logging.DEBUG)
        _record("Encode", grpc.StatusCode.OK, time.perf_counter(), "rid-1")
        [record] = [r for r in handler.records if r.getMessage() == "rpc"]
        fields = record.fields  # type: ignore[attr-defined]
        assert fields["request_id"] == "rid-1" and fields["code"] == "OK"
        assert fields["method"] == "Encode" and fields["ms"] >= 0

    def test_calls_are_not_logged_at_info(self, server_log: _Log) -> None:
        logger, handler = server_log
        logger.setLevel(logging.INFO)
        _record("Encode", grpc.StatusCode.OK, time.perf_counter(), "rid-2")
        assert [r for r in handler.records if r.getMessage() == "rpc"] == []
