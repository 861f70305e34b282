"""A thread pool for the gRPC handlers: few calls at once, the most recently idle thread.

Two rules, both measured with ``bench/bench_service.py`` (README, "Benchmarks: service"):

- **Few short calls at once** (``max_busy``, ``--busy-calls``): a worker process runs Python
  under one GIL, so 16 handler threads serving 8 calls at once do not go faster than 2; they
  hand the GIL and grpc's locks back and forth. With CPUs to spare (one worker, load from
  elsewhere), 2 at once served 1 KB calls with about two thirds of the CPU per call of 16.
  Calls beyond ``max_busy`` wait in a FIFO queue. A call that has run for ``long_after``
  seconds stops counting: streams, training uploads and huge texts never hold up short
  calls for much longer than that (a watchdog thread, polling while calls wait, starts a
  waiting call then).
- **The most recently idle thread takes the next call** (idle threads form a stack), where
  ``ThreadPoolExecutor`` wakes whichever idle thread the OS picks: under steady load the
  same few threads run, their stacks and caches warm, the rest asleep.

Threads are started lazily, up to ``max_workers``; beyond that calls wait whatever their age.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

# A task: its future, the callable and the arguments (None tells an idle thread to exit).
_Task = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]

LONG_CALL_SECONDS = 0.05  # a call running this long no longer counts against max_busy


class _Worker:
    """One thread; ``wake`` is held while it sleeps and released to hand it a task."""

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()
        self.task: _Task | None = None


class LifoThreadPool(Executor):
    """``submit`` runs the call on the most recently idle thread once fewer than
    ``max_busy`` calls younger than ``long_after`` seconds are running (see the module doc).

    >>> with LifoThreadPool(2) as pool:
    ...     pool.submit(pow, 2, 10).result()
    1024
    """

    def __init__(
        self,
        max_workers: int,
        thread_name_prefix: str = "",
        *,
        max_busy: int | None = None,
        long_after: float = LONG_CALL_SECONDS,
    ) -> None:
        if max_workers <= 0:
            raise ValueError(f"max_workers must be > 0, got {max_workers}")
        if max_busy is not None and max_busy <= 0:
            raise ValueError(f"max_busy must be > 0, got {max_busy}")
        self._max_workers = max_workers
        self._max_busy = max_workers if max_busy is None else min(max_busy, max_workers)
        self._long_after = long_after
        self._prefix = thread_name_prefix or "LifoThreadPool"
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []  # stack: the most recently idle on top
        self._queue: deque[_Task] = deque()  # waiting for a thread, oldest first
        self._started: dict[_Worker, float] = {}  # running worker -> when its call started
        self._threads: list[threading.Thread] = []
        self._watchdog: threading.Thread | None = None
        self._watchdog_wake = threading.Condition(self._lock)
        self._watchdog_asleep = False  # waiting for a queued call, not polling
        self._waited = 0  # calls that had to wait, ever
        self._shutdown = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        task: _Task = (future, fn, args, kwargs)
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queue.append(task)  # behind any waiting call: first come, first served
            self._drain_queue()
            if self._queue:  # (FIFO: the new call is among those left)
                self._waited += 1
                self._watch()
        return future

    def waits(self) -> tuple[int, int]:
        """(calls that ever had to wait, calls waiting now), for the metrics."""
        with self._lock:
            return self._waited, len(self._queue)

    # -- called with the lock held ----------------------------------------------------------

    def _busy(self, now: float) -> int:
        """Running calls that still count against max_busy (started under long_after ago)."""
        started = self._started
        if len(started) < self._max_busy:
            return len(started)
        young = now - self._long_after
        return sum(1 for t in started.values() if t > young)

    def _dispatch(self, task: _Task, now: float) -> bool:
        """Start ``task`` on an idle or new thread if the limits allow; False if not."""
        if self._busy(now) >= self._max_busy:
            return False
        if self._idle:
            worker = self._idle.pop()
            worker.task = task
            self._started[worker] = now
            worker.wake.release()
            return True
        if len(self._threads) < self._max_workers:
            self._start(task, now)
            return True
        return False

    def _drain_queue(self) -> None:
        """Start waiting calls while the limits allow (oldest first)."""
        now = time.monotonic()
        while self._queue and self._dispatch(self._queue[0], now):
            self._queue.popleft()

    def _watch(self) -> None:
        """Make sure the watchdog polls while calls wait (started once, on first need)."""
        if self._watchdog is None:
            self._watchdog = threading.Thread(
                target=self._watch_loop, name=f"{self._prefix}_watchdog", daemon=True
            )
            self._watchdog.start()
        elif self._watchdog_asleep:  # (a polling watchdog is not woken: no hand-off per call)
            self._watchdog_wake.notify()

    def _start(self, task: _Task, now: float) -> None:
        """A new thread with ``task`` as its first."""
        worker = _Worker()
        self._started[worker] = now
        thread = threading.Thread(
            target=self._run,
            args=(worker, task),
            name=f"{self._prefix}_{len(self._threads)}",
            # subtle: daemon, so an idle pool never holds up interpreter exit; the server
            # drains its calls before it exits, so no task is cut short by that.
            daemon=True,
        )
        self._threads.append(thread)
        thread.start()

    # -- threads ------------------------------------------------------------------------

    def _run(self, worker: _Worker, first: _Task) -> None:
        task: _Task | None = first
        while task is not None:
            _execute(task)
            task = None  # no reference to the finished call while asleep
            with self._lock:
                del self._started[worker]
                if self._queue and self._busy(now := time.monotonic()) < self._max_busy:
                    task = self._queue.popleft()  # this thread runs it: no hand-off
                    self._started[worker] = now
                    continue
                if self._shutdown:
                    return
                self._idle.append(worker)
            worker.wake.acquire()  # sleeps until submit() or shutdown() hands over a task
            task, worker.task = worker.task, None

    def _watch_loop(self) -> None:
        """While calls wait, look every ``long_after / 2`` seconds whether a running call
        turned long, and start waiting calls in its place. (Finishing threads take waiting
        calls themselves; this is only for calls that run long.)"""
        with self._lock:
            while not (self._shutdown and not self._queue):
                self._drain_queue()
                if self._queue:
                    self._watchdog_wake.wait(self._long_after / 2)
                else:
                    self._watchdog_asleep = True
                    self._watchdog_wake.wait()
                    self._watchdog_asleep = False

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No new tasks; queued ones still run unless ``cancel_futures``; idle threads exit."""
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while self._queue:
                    self._queue.popleft()[0].cancel()
            idle, self._idle = self._idle, []
            threads = list(self._threads)
            self._watchdog_wake.notify()
        for worker in idle:
            worker.task = None
            worker.wake.release()
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()


def _execute(task: _Task) -> None:
    future, fn, args, kwargs = task
    if not future.set_running_or_notify_cancel():
        return  # cancelled while queued
    try:
        result = fn(*args, **kwargs)
    except BaseException as exc:
        future.set_exception(exc)
    else:
        future.set_result(result)
