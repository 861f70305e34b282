"""Crash safety and concurrency of registry publishing, with real processes and SIGKILL."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tokend.core.registry import Registry

# A publisher process. argv: root, name, rows, mode, n
#   mode "count": publish once and print how many hooked syscalls that took
#   mode "kill":  SIGKILL itself just before the n-th hooked syscall of its publish
#   mode "loop":  publish n times (n=0: forever), printing each version
PUBLISHER = textwrap.dedent(
    """
    import os, signal, sys
    from tokend.core.patterns import GPT2_PATTERN
    from tokend.core.registry import Registry

    root, name, mode = sys.argv[1], sys.argv[2], sys.argv[4]
    rows, n = int(sys.argv[3]), int(sys.argv[5])
    ranks = {bytes([i]): i for i in range(256)}
    for i in range(rows):
        ranks[b"t%d" % i] = 256 + i
    calls = 0

    def hook(func):
        def hooked(*args, **kwargs):
            global calls
            calls += 1
            if mode == "kill" and calls == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return func(*args, **kwargs)
        return hooked

    reg = Registry(root, include_builtins=False)
    for fn in ("fsync", "rename", "replace", "mkdir", "unlink"):
        setattr(os, fn, hook(getattr(os, fn)))
    print("ready", flush=True)
    done = 0
    while mode != "loop" or n == 0 or done < n:
        specials = {"<|eot|>": 256 + rows}
        info = reg.publish(name, ranks=ranks, pat_str=GPT2_PATTERN, special_tokens=specials)
        done += 1
        print(info.version, flush=True)
        if mode == "count":
            print("calls", calls, flush=True)
            break
        if mode == "kill":
            break
    """
)


def expected_ranks(rows: int) -> dict[bytes, int]:
    ranks = {bytes([i]): i for i in range(256)}
    for i in range(rows):
        ranks[b"t%d" % i] = 256 + i
    return ranks


def run_publisher(root: Path, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PUBLISHER, str(root), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def assert_consistent(root: Path, rows: int, *, at_least: int) -> list[int]:
    """Open the registry (cleaning leftovers) and check every visible version is whole."""
    reg = Registry(root, include_builtins=False)
    assert list((root / ".staging").iterdir()) == [], "staging leftovers were not cleaned"
    assert reg.verify() == []
    versions = [v.version for v in reg.versions("tok")]
    for version in versions:
        assert reg.load_data(f"tok@{version}").ranks == expected_ranks(rows)
    assert len(versions) >= at_least
    return versions


class TestCrashSafety:
    def test_kill_before_every_step_of_a_publish(self, tmp_path: Path) -> None:
        """SIGKILL just before each fsync/rename/mkdir/unlink of a publish, one at a time.

        After each crash the registry holds only complete versions, staging is cleaned on the
        next open, and the next publish gets a number above every number seen before.
        """
        root = tmp_path / "reg"
        rows = 300
        # Count the steps of a publish into an existing name (the first one also makes dirs).
        assert run_publisher(root, "tok", rows, "loop", 1).returncode == 0
        counted = run_publisher(root, "tok", rows, "count", 0)
        assert counted.returncode == 0, counted.stderr
        steps = int(counted.stdout.split("calls")[1])
        assert steps >= 6  # the hooks saw the publish (fsyncs, renames...)
        highest = 2
        complete_crashes = 0
        for step in range(1, steps + 1):
            result = run_publisher(root, "tok", rows, "kill", step)
            assert result.returncode == -signal.SIGKILL, result.stderr
            versions = assert_consistent(root, rows, at_least=1)
            if versions[-1] > highest:
                complete_crashes += 1  # killed after the rename: the version is complete
            highest = max(highest, versions[-1])
        # Crashes before the rename leave nothing; the last few steps come after it.
        assert 0 < complete_crashes < steps
        after = run_publisher(root, "tok", rows, "loop", 1)
        assert int(after.stdout.split()[1]) > highest

    def test_kill_at_random_moments(self, tmp_path: Path) -> None:
        """A publisher looping on a large table is SIGKILLed at random instants, 20 times."""
        root = tmp_path / "reg"
        rows = 8_000
        rng = random.Random(1234)
        seen: set[int] = set()
        for _ in range(20):
            proc = subprocess.Popen(
                [sys.executable, "-c", PUBLISHER, str(root), "tok", str(rows), "loop", "0"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 0.25))
            proc.send_signal(signal.SIGKILL)
            out, err = proc.communicate(timeout=30)
            assert proc.returncode == -signal.SIGKILL, err
            announced = {int(line) for line in out.split()}
            versions = assert_consistent(root, rows, at_least=0)
            # Every version a publisher reported is visible; none was ever handed out twice.
            assert announced <= set(versions)
            assert not set(versions) & seen
            seen |= set(versions)
            # Keep the registry small (verify reads everything); numbers must still never recur.
            if versions:
                Registry(root, include_builtins=False).delete("tok", all_versions=True)
        final = Registry(root, include_builtins=False)
        nxt = final.publish("tok", ranks=expected_ranks(10), pat_str="a", special_tokens={})
        assert all(nxt.version > v for v in seen)


class TestConcurrency:
    def test_concurrent_publishers_get_distinct_versions(self, tmp_path: Path) -> None:
        """Four processes publishing the same name 5 times each get 20 distinct versions."""
        root = tmp_path / "reg"
        Registry(root, include_builtins=False)
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", PUBLISHER, str(root), "tok", "2000", "loop", "5"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        announced: list[int] = []
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
            announced += [int(x) for x in out.split()[1:]]
        assert sorted(announced) == list(range(1, 21))
        assert assert_consistent(root, 2000, at_least=20) == list(range(1, 21))
