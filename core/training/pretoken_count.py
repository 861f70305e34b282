"""Pretoken counting for training: in this process, or in a pool of spawned worker processes.

Each worker keeps one running count of the batches it is given and sends it back once, at
the end, so memory grows with the number of distinct pretokens and not with the corpus. The
worker function is spawn-safe (it depends on no state inherited by ``fork``); fork is used only
where it is safe, because it starts workers without re-importing tokend.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.process
import multiprocessing.queues
import os
import queue
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from tokend.core.engine import ENGINE
from tokend.core.engine.pretokenize import SCANNER_KINDS, compile_ascii_pattern, compile_pattern
from tokend.core.errors import Cancelled, InvalidInput, TokendError
from tokend.core.training.corpus import find_safe_cut

if TYPE_CHECKING:
    from tokend.core.engine._compiled import PretokenCounter

# How long a blocked queue operation waits before checking for cancellation again.
POLL_SECONDS = 0.05
# None: "fork" on Linux when this process runs a single thread (fast start, and safe: no
# other thread can hold a lock across the fork), else "spawn". Tests force "spawn".
START_METHOD: str | None = None
# None: count with the compiled scanner when the compiled engine is in use
# (``tokend.core.engine.ENGINE``), else with ``re``/``regex``; the same counts either way.
# Decided once per training run and handed to its workers. Tests force each.
COMPILED: bool | None = None


def start_method() -> str:
    """The multiprocessing start method for counting workers (see START_METHOD)."""
    if START_METHOD is not None:
        return START_METHOD
    return "fork" if _single_threaded() else "spawn"


def _single_threaded() -> bool:
    """True only on Linux with exactly one OS thread (native library threads count too)."""
    if sys.platform != "linux" or threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def use_compiled() -> bool:
    """Whether counting uses the compiled scanner (see COMPILED)."""
    return ENGINE == "compiled" if COMPILED is None else COMPILED


def to_byte_counts(counts: Counter[str]) -> dict[bytes, int]:
    """Key pretoken counts by their UTF-8 bytes, refusing lone surrogates clearly."""
    try:
        return {word.encode("utf-8"): n for word, n in counts.items()}
    except UnicodeEncodeError as exc:
        raise _lone_surrogate(exc) from None


def _lone_surrogate(exc: UnicodeEncodeError) -> InvalidInput:
    return InvalidInput(
        f"corpus text contains {exc.object[exc.start]!r} (a lone surrogate), "
        "which has no UTF-8 encoding"
    )


class PieceCounter:
    """Pretokenize and count independent pieces of text; the totals are keyed by UTF-8 bytes.

    With the compiled engine, a named pattern's pieces are scanned and counted in C
    (``PretokenCounter`` of core/engine/_pretok.pxi: no str, list or dict entry per pretoken,
    ~5x faster). Otherwise, ASCII stretches go through the stdlib ``re`` twin of the pattern
    (``tokend.core.engine.pretokenize.ASCII_PATTERNS``, ~2.5x faster than ``regex``); a piece
    with some non-ASCII text is first cut at safe points (``tokend.core.training.corpus``) into
    stretches of about STRETCH_CHARS, so one accented letter does not send a whole piece down
    the slow path.
    Custom patterns always use ``regex`` (whole matches, whatever groups they have). Both
    routes give the same counts.
    """

    STRETCH_CHARS = 4096

    def __init__(self, pat_str: str, *, compiled: bool) -> None:
        # The encoder's own pretokenizer: training sees exactly the pretokens encoding will.
        self._findall = compile_pattern(pat_str)
        self._ascii_findall = compile_ascii_pattern(pat_str)
        self._counts: Counter[str] = Counter()
        self._native: PretokenCounter | None = None
        kind = SCANNER_KINDS.get(pat_str)
        if compiled and kind is not None:
            from tokend.core.engine._compiled import PretokenCounter  # noqa: PLC0415 (built)

            self._native = PretokenCounter(kind)

    def findall(self, piece: str) -> list[str]:
        """The pretokens of ``piece``, exactly as ``compile_pattern(pattern)(piece)``."""
        fast = self._ascii_findall
        if fast is None:
            return self._findall(piece)
        if piece.isascii():
            return fast(piece)
        out: list[str] = []
        start, n = 0, len(piece)
        while start < n:
            cut = n
            if n - start > self.STRETCH_CHARS:
                for window in (self.STRETCH_CHARS, 64 * self.STRETCH_CHARS):
                    c = find_safe_cut(piece, start, min(n, start + window))
                    if c > start:
                        cut = c
                        break
            stretch = piece[start:cut]
            out += fast(stretch) if stretch.isascii() else self._findall(stretch)
            start = cut
        return out

    def count(self, pieces: Iterable[str]) -> int:
        """Add the pretokens of each piece to the totals; return how many pretokens were seen."""
        seen = 0
        if self._native is not None:
            add = self._native.add
            for piece in pieces:
                try:
                    seen += add(piece)
                except UnicodeEncodeError as exc:
                    raise _lone_surrogate(exc) from None
            return seen
        counts = self._counts
        findall = self.findall
        for piece in pieces:
            found = findall(piece)
            seen += len(found)
            counts.update(found)
        return seen

    def byte_counts(self) -> dict[bytes, int]:
        """The totals so far: pretoken UTF-8 bytes -> occurrences."""
        if self._native is not None:
            return self._native.to_dict()
        return to_byte_counts(self._counts)


def _exit_with_parent() -> None:
    """Exit this worker as soon as its parent dies, wherever the main thread is blocked.

    subtle: a parent killed outright (SIGKILL) may die halfway through writing a batch; the
    worker then waits forever for the rest, since it holds the queue's write end itself.
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()  # returns when the parent's sentinel closes, i.e. the parent is gone
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _worker_main(pat_str: str, compiled: bool, inbox: Any, outbox: Any) -> None:
    """Worker loop: count every batch until ``None`` arrives, then send the totals back."""
    try:
        counter = PieceCounter(pat_str, compiled=compiled)
        seen = 0
        _exit_with_parent()
        while True:
            batch = inbox.get()
            if batch is None:
                break
            seen += counter.count(batch)
        outbox.put(("ok", counter.byte_counts(), seen))
    except BaseException as exc:  # report anything, so the parent never waits forever
        outbox.put(("error", f"{type(exc).__name__}: {exc}", 0))


class CountPool:
    """A fixed set of counting processes fed through a bounded queue.

    Use as a context manager: leaving the block (normally or by an exception such as
    Cancelled) terminates every worker that is still running, so nothing is left behind.
    """

    def __init__(
        self,
        pat_str: str,
        workers: int,
        should_stop: Callable[[], bool] | None,
        *,
        compiled: bool,
    ) -> None:
        ctx = (
            multiprocessing.get_context("fork")
            if start_method() == "fork"
            else multiprocessing.get_context("spawn")
        )
        self._should_stop = should_stop
        self._inbox: multiprocessing.queues.Queue[list[str] | None] = ctx.Queue(
            maxsize=2 * workers
        )
        self._outbox: multiprocessing.queues.Queue[tuple[str, Any, int]] = ctx.Queue()
        self._procs: list[multiprocessing.process.BaseProcess] = [
            ctx.Process(
                target=_worker_main,
                args=(pat_str, compiled, self._inbox, self._outbox),
                name=f"tokend-train-count-{i}",
                daemon=True,
            )
            for i in range(workers)
        ]
        for p in self._procs:
            p.start()

    def __enter__(self) -> CountPool:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.close(graceful=exc_type is None)

    def _check(self) -> None:
        if self._should_stop is not None and self._should_stop():
            raise Cancelled("training was cancelled while counting pretokens")
        self._check_alive()

    def _check_alive(self) -> None:
        for p in self._procs:
            if p.exitcode not in (None, 0):
                hint = " (killed: out of memory?)" if p.exitcode == -9 else ""
                raise TokendError(f"a counting worker died (exit code {p.exitcode}){hint}")

    def try_submit(self, batch: list[str]) -> bool:
        """Queue a batch if a worker can take it soon; False when the queue is full."""
        self._check_alive()
        try:
            self._inbox.put_nowait(batch)
        except queue.Full:
            return False
        return True

    def submit(self, batch: list[str] | None) -> None:
        """Queue a batch (``None`` tells one worker to finish), waiting while the queue is full."""
        while True:
            try:
                self._inbox.put(batch, timeout=POLL_SECONDS)
                return
            except queue.Full:
                self._check()

    def results(self) -> tuple[dict[bytes, int], int]:
        """Finish all workers and merge their counts: (pretoken bytes -> count, pretokens seen)."""
        for _ in self._procs:
            self.submit(None)
        parts: list[dict[bytes, int]] = []
        seen = 0
        while len(parts) < len(self._procs):
            try:
                status, payload, n = self._outbox.get(timeout=POLL_SECONDS)
            except queue.Empty:
                self._check()
                continue
            if status != "ok":
                if payload.startswith("InvalidInput: "):
                    raise InvalidInput(payload.removeprefix("InvalidInput: "))
                raise TokendError(f"a counting worker failed: {payload}")
            parts.append(payload)
            seen += n
        parts.sort(key=len, reverse=True)
        total = parts[0]
        for part in parts[1:]:
            get = total.get
            for word, n in part.items():
                total[word] = get(word, 0) + n
        return total, seen

    def close(self, *, graceful: bool = False) -> None:
        """Stop every worker (a no-op for those that already exited) and release the queues.

        ``graceful`` gives workers that were told to finish a moment to exit on their own.
        """
        deadline = time.monotonic() + (1.0 if graceful else 0.0)
        for p in self._procs:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in self._procs:
            if p.is_alive():
                p.terminate()
        for p in self._procs:
            p.join(timeout=1.0)
            if p.is_alive():
                p.kill()
                p.join()
        for q in (self._inbox, self._outbox):
            q.cancel_join_thread()
            q.close()
