"""Incremental encoding for EncodeStream: send ids as soon as they are final.

``Encoding.encode_iterable`` pulls chunks and yields ids; it only pulls the next chunk once the
ids of what it has seen are final. So the encoder runs on its own thread, and just before it
pulls the next chunk from the client we hand the ids gathered so far to the RPC thread, which
sends them. Memory stays bounded: the queue between the threads is small (backpressure), and
the encoder keeps only the unfinished tail of the text.
"""

from __future__ import annotations

import contextlib
import math
import queue
import threading
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from typing import Any, Literal, TypeVar

from tokend.core.errors import Cancelled, LimitExceeded
from tokend.core.tokenizer import Tokenizer
from tokend.server import limits, metrics

T = TypeVar("T")


def idle_bounded(messages: Iterator[T], idle_seconds: float, *, what: str,
                 flag: str = "--stream-idle-seconds") -> Iterator[T]:
    """``messages`` (a client's request stream), refusing a client silent for ``idle_seconds``.

    A pump thread reads the stream (a read blocks until the client sends or half-closes) and
    the caller waits on it with a timeout, so a half-open stream holds no handler thread past
    the limit: LimitExceeded (RESOURCE_EXHAUSTED) naming the flag. The pump ends with the call.
    """
    waiting: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=2)
    taken = threading.Event()

    def pump() -> None:
        try:
            for message in messages:
                while not taken.is_set():
                    try:
                        waiting.put(("message", message), timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if taken.is_set():
                    return
            waiting.put(("end", None))
        except BaseException as exc:
            with contextlib.suppress(queue.Full):
                waiting.put(("error", exc), timeout=0.5)

    threading.Thread(target=pump, name="stream-pump", daemon=True).start()
    try:
        while True:
            try:
                kind, value = waiting.get(timeout=idle_seconds)
            except queue.Empty:
                raise limits.hit(LimitExceeded(
                    f"{what}: seconds without a message from the client", math.ceil(idle_seconds),
                    math.floor(idle_seconds), flag), None) from None
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        taken.set()


class StreamSlots:
    """At most ``limit`` client streams (EncodeStream) open in this worker, so
    streams can never hold every handler thread: one more is refused at once, naming the flag.
    Also bounds other long calls (Lint and Diff: ``--max-lint-calls``, no gauge).
    """

    def __init__(self, limit: int, flag: str = "--max-streams",
                 what: str = "client streams open in this worker", *, gauge: bool = True) -> None:
        self.limit = limit
        self.flag = flag
        self.what = what
        self.gauge = gauge  # count the holders in tokend_streams_open{method}
        self._open = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def hold(self, method: str) -> Iterator[None]:
        with self._lock:
            limits.check(self.what, self._open + 1, self.limit, self.flag)
            self._open += 1
        gauge = metrics.child(metrics.STREAMS_OPEN, method) if self.gauge else None
        if gauge is not None:
            gauge.inc()
        try:
            yield
        finally:
            if gauge is not None:
                gauge.dec()
            with self._lock:
                self._open -= 1


class _Abandoned(Exception):
    """The RPC side went away; the encoder thread stops quietly."""


class StreamEncoder:
    """Iterate ``(final_ids, done)`` batches for a text arriving in ``chunks``."""

    def __init__(
        self,
        encoding: Tokenizer,
        chunks: Iterator[str],
        *,
        allowed_special: Literal["all"] | AbstractSet[str],
        disallowed_special: Literal["all"] | AbstractSet[str],
        max_bytes: int,
        flag: str = "--max-stream-bytes",
    ) -> None:
        self._encoding = encoding
        self._chunks = chunks
        self._allowed = allowed_special
        self._disallowed = disallowed_special
        self._max_bytes = max_bytes
        self._flag = flag
        self._queue: queue.Queue[object] = queue.Queue(maxsize=4)
        self._closed = threading.Event()
        self._pending: list[int] = []  # touched by the encoder thread only
        self._thread = threading.Thread(target=self._run, name="encode-stream", daemon=True)
        self._thread.start()

    def _put(self, item: object) -> None:
        while not self._closed.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
        raise _Abandoned

    def _flush(self) -> None:
        if self._pending:
            batch, self._pending = self._pending, []
            self._put((batch, False))

    def _pull(self) -> Iterator[str]:
        received = 0
        for chunk in self._chunks:
            received += limits.utf8_len(chunk)
            limits.check("EncodeStream text size in bytes", received, self._max_bytes,
                         self._flag, field="text")
            yield chunk
            self._flush()  # the encoder wants the next chunk: what it produced is final

    def _run(self) -> None:
        try:
            for token in self._encoding.encode_iterable(
                self._pull(), allowed_special=self._allowed, disallowed_special=self._disallowed
            ):
                self._pending.append(token)
            self._put((self._pending, True))
        except _Abandoned:
            return
        except BaseException as exc:  # handed to the RPC thread, which raises it
            try:
                self._put(exc)
            except _Abandoned:
                return

    def __iter__(self) -> Iterator[tuple[list[int], bool]]:
        """Batches of final ids; the last one has ``done`` set (possibly with no ids)."""
        while True:
            try:
                item = self._queue.get(timeout=0.1)
            except queue.Empty:
                # subtle: after close() the encoder thread may exit without a last item;
                # never wait for one that cannot come (a stuck handler thread blocks exit).
                if (self._closed.is_set() or not self._thread.is_alive()) \
                        and self._queue.empty():
                    raise Cancelled("the stream was closed before the text ended") from None
                continue
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, tuple)
            ids, done = item
            yield ids, done
            if done:
                return

    def close(self) -> None:
        """Stop the encoder thread (client gone, error, or done)."""
        self._closed.set()
