"""The handlers' thread pool: futures like ThreadPoolExecutor's, the most recently idle thread
takes the next task, at most max_workers threads, FIFO queue beyond, clean shutdown."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from tokend.server.executor import LifoThreadPool


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.001)


def peak_concurrency(pool: LifoThreadPool, tasks: int, seconds: float) -> int:
    """Run ``tasks`` sleeping tasks on ``pool``; the most that ran at the same time."""
    running, peak, lock = [0], [0], threading.Lock()

    def task() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(seconds)
        with lock:
            running[0] -= 1

    for future in [pool.submit(task) for _ in range(tasks)]:
        future.result(timeout=10)
    return peak[0]


class TestLifoThreadPool:
    def test_results_and_exceptions_reach_the_future(self) -> None:
        with LifoThreadPool(2) as pool:
            assert pool.submit(sum, [1, 2, 3]).result(timeout=10) == 6
            with pytest.raises(ZeroDivisionError):
                pool.submit(lambda: 1 // 0).result(timeout=10)
            assert pool.submit(dict, a=1).result(timeout=10) == {"a": 1}

    def test_most_recently_idle_thread_takes_the_next_task(self) -> None:
        with LifoThreadPool(4) as pool:
            first, second = threading.Event(), threading.Event()
            a = pool.submit(lambda: (first.wait(10), threading.get_ident())[1])
            b = pool.submit(lambda: (second.wait(10), threading.get_ident())[1])
            first.set()
            ident_a = a.result(timeout=10)
            wait_until(lambda: len(pool._idle) == 1)
            second.set()
            ident_b = b.result(timeout=10)
            wait_until(lambda: len(pool._idle) == 2)
            assert ident_a != ident_b
            # b's thread went idle last: it takes the next task, and the one after.
            assert pool.submit(threading.get_ident).result(timeout=10) == ident_b
            assert pool.submit(threading.get_ident).result(timeout=10) == ident_b

    def test_sequential_tasks_use_one_thread(self) -> None:
        """Steady light load keeps one warm thread instead of rotating over the pool."""
        with LifoThreadPool(16) as pool:
            idents = set()
            for _ in range(50):
                idents.add(pool.submit(threading.get_ident).result(timeout=10))
                wait_until(lambda: len(pool._idle) == len(pool._threads))
            assert len(idents) == 1 and len(pool._threads) == 1

    def test_never_more_than_max_workers_at_once(self) -> None:
        with LifoThreadPool(3) as pool:
            assert peak_concurrency(pool, 20, 0.01) == 3
            assert len(pool._threads) == 3

    @pytest.mark.parametrize(
        "make_pool",
        [
            lambda: LifoThreadPool(1),  # waiting for a thread
            lambda: LifoThreadPool(4, max_busy=1, long_after=60),  # waiting for the busy limit
        ],
        ids=["max_workers", "max_busy"],
    )
    def test_waiting_tasks_run_in_submission_order(
        self, make_pool: Callable[[], LifoThreadPool]
    ) -> None:
        order: list[int] = []
        release = threading.Event()
        with make_pool() as pool:
            blocker = pool.submit(release.wait, 10)
            futures = [pool.submit(order.append, i) for i in range(5)]
            release.set()
            blocker.result(timeout=10)
            for future in futures:
                future.result(timeout=10)
        assert order == [0, 1, 2, 3, 4]

    def test_shutdown_refuses_new_tasks_and_ends_the_threads(self) -> None:
        pool = LifoThreadPool(4)
        for future in [pool.submit(time.sleep, 0.01) for _ in range(4)]:
            future.result(timeout=10)
        pool.shutdown(wait=True)
        assert not any(thread.is_alive() for thread in pool._threads)
        with pytest.raises(RuntimeError, match="after shutdown"):
            pool.submit(print)

    def test_shutdown_runs_or_cancels_queued_tasks(self) -> None:
        for cancel in (False, True):
            release = threading.Event()
            pool = LifoThreadPool(1)
            blocker = pool.submit(release.wait, 10)
            queued = pool.submit(int, "7")
            pool.shutdown(wait=False, cancel_futures=cancel)  # the blocker is still running
            release.set()
            assert blocker.result(timeout=10) is True
            if cancel:
                assert queued.cancelled()
            else:
                assert queued.result(timeout=10) == 7
            wait_until(lambda pool=pool: not any(t.is_alive() for t in pool._threads))

    def test_max_workers_must_be_positive(self) -> None:
        with pytest.raises(ValueError, match="max_workers must be > 0, got 0"):
            LifoThreadPool(0)

    def test_max_busy_must_be_positive(self) -> None:
        with pytest.raises(ValueError, match="max_busy must be > 0, got 0"):
            LifoThreadPool(4, max_busy=0)


class TestBusyLimit:
    """At most max_busy calls run at once, unless some have run longer than long_after."""

    def test_short_calls_run_at_most_max_busy_at_once(self) -> None:
        with LifoThreadPool(8, max_busy=2, long_after=60) as pool:
            assert peak_concurrency(pool, 30, 0.005) == 2
            assert len(pool._threads) == 2  # no thread beyond the limit was ever needed

    def test_a_call_waits_while_the_busy_one_is_young(self) -> None:
        release = threading.Event()
        with LifoThreadPool(4, max_busy=1, long_after=60) as pool:
            blocker = pool.submit(release.wait, 10)
            waiting = [pool.submit(threading.get_ident) for _ in range(3)]
            time.sleep(0.2)
            assert not any(w.done() for w in waiting)
            assert pool.waits() == (3, 3)  # (ever waited, waiting now): the metrics' source
            release.set()
            for w in waiting:
                w.result(timeout=10)
            blocker.result(timeout=10)
            assert pool.waits() == (3, 0)

    def test_long_calls_stop_counting(self) -> None:
        """Calls that outlive long_after (streams, huge texts) do not hold up short ones:
        both blockers still wait while the short calls run and finish."""
        release = threading.Event()
        with LifoThreadPool(8, max_busy=1, long_after=0.05) as pool:
            blockers = [pool.submit(release.wait, 30) for _ in range(2)]
            shorts = [pool.submit(threading.get_ident) for _ in range(5)]
            for future in shorts:
                future.result(timeout=10)
            assert not any(b.done() for b in blockers)
            release.set()
            assert all(b.result(timeout=10) for b in blockers)

    def test_max_workers_still_caps_threads(self) -> None:
        """All threads taken by long calls: the next call waits for one to finish."""
        release = threading.Event()
        with LifoThreadPool(2, max_busy=1, long_after=0.01) as pool:
            blockers = [pool.submit(release.wait, 30) for _ in range(2)]
            waiting = pool.submit(threading.get_ident)
            time.sleep(0.2)
            assert not waiting.done() and len(pool._threads) == 2
            release.set()
            waiting.result(timeout=10)
            assert all(b.result(timeout=10) for b in blockers)

    def test_shutdown_still_runs_waiting_calls(self) -> None:
        release = threading.Event()
        pool = LifoThreadPool(4, max_busy=1, long_after=60)
        blocker = pool.submit(release.wait, 10)
        queued = [pool.submit(int, str(i)) for i in range(3)]
        pool.shutdown(wait=False)
        release.set()
        assert blocker.result(timeout=10) is True
        assert [f.result(timeout=10) for f in queued] == [0, 1, 2]
        wait_until(lambda: not any(t.is_alive() for t in pool._threads))
