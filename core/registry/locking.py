"""Advisory file locks (``fcntl.flock``) shared between processes.

A flock is released by the kernel when its holder dies, so a publisher killed with SIGKILL
never leaves the registry locked.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tokend.core.errors import FailedPrecondition


@contextmanager
def file_lock(path: str | os.PathLike[str], *, timeout: float | None = 60.0) -> Iterator[int]:
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` body.

    Waits up to ``timeout`` seconds (``None``: forever) and raises FailedPrecondition naming
    the lock file when it cannot get the lock in time.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        _acquire(fd, path, timeout)
        yield fd
    finally:
        os.close(fd)  # closing the last descriptor releases the flock


def _acquire(fd: int, path: str | os.PathLike[str], timeout: float | None) -> None:
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise FailedPrecondition(
                    f"could not lock {path} within {timeout} s: another process holds it"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def try_lock(fd: int) -> bool:
    """Try to take an exclusive flock on an open descriptor without waiting."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def held_lock_file(path: Path) -> int:
    """Create ``path`` and lock it, retrying if a cleaner unlinked it meanwhile.

    Returns the open, locked descriptor; the caller closes it to release. Used by staging
    directories: a cleaner that can lock a staging lock file knows its owner is dead.
    """
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        # subtle: a cleaner locked and unlinked the file between our open and flock; retry
        # with a fresh file so our lock is on the path others will see.
        os.close(fd)
