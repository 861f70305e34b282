"""A thread pool for the gRPC handlers that hands each call to the most recently idle thread.

``concurrent.futures.ThreadPoolExecutor`` wakes whichever idle thread the OS picks, so under
steady load the calls rotate over every thread of the pool: more context switches and GIL
hand-offs between threads whose stacks and caches are cold. Here idle threads form a stack
(last in, first out): a pool of 16 threads serving 3 calls at a time keeps using the same few,
and the rest stay asleep until a burst (or long streams) needs them. Threads are started
lazily, up to ``max_workers``; work beyond that waits in a FIFO queue.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

# A task: its future, the callable and the arguments (None tells an idle thread to exit).
_Task = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class _Worker:
    """One thread; ``wake`` is held while it sleeps and released to hand it a task."""

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()
        self.task: _Task | None = None


class LifoThreadPool(Executor):
    """``submit`` runs the call on the most recently idle thread (see the module doc).

    >>> with LifoThreadPool(2) as pool:
    ...     pool.submit(pow, 2, 10).result()
    1024
    """

    def __init__(self, max_workers: int, thread_name_prefix: str = "") -> None:
        if max_workers <= 0:
            raise ValueError(f"max_workers must be > 0, got {max_workers}")
        self._max_workers = max_workers
        self._prefix = thread_name_prefix or "LifoThreadPool"
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []  # stack: the most recently idle on top
        self._queue: deque[_Task] = deque()  # waiting for a thread, oldest first
        self._threads: list[threading.Thread] = []
        self._shutdown = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        task: _Task = (future, fn, args, kwargs)
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if self._idle:
                worker = self._idle.pop()
                worker.task = task
                worker.wake.release()
            elif len(self._threads) < self._max_workers:
                self._start(task)
            else:
                self._queue.append(task)
        return future

    def _start(self, task: _Task) -> None:
        """A new thread with ``task`` as its first (called with the lock held)."""
        worker = _Worker()
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

    def _run(self, worker: _Worker, first: _Task) -> None:
        task: _Task | None = first
        while task is not None:
            _execute(task)
            task = None  # no reference to the finished call while asleep
            with self._lock:
                if self._queue:
                    task = self._queue.popleft()
                    continue
                if self._shutdown:
                    return
                self._idle.append(worker)
            worker.wake.acquire()  # sleeps until submit() or shutdown() hands over a task
            task, worker.task = worker.task, None

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No new tasks; queued ones still run unless ``cancel_futures``; idle threads exit."""
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while self._queue:
                    self._queue.popleft()[0].cancel()
            idle, self._idle = self._idle, []
            threads = list(self._threads)
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
