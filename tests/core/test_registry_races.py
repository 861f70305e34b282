"""Registries under contention and crashes, with real processes, on both backends.

Several processes race for version numbers and aliases of one name; a publisher on S3 is
SIGKILLed before each of its requests and at random instants. Whatever happens: no partial
version is ever visible, no version number is issued twice, no alias change is lost. (The
local store's own crash tests, hooked on its syscalls, are in test_registry_crash.py.)
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from registry_backends import Backend

from tokend.core.errors import FailedPrecondition, UnknownTokenizer
from tokend.core.patterns import GPT2_PATTERN
from tokend.core.registry import Registry

# argv: location, name, rows, mode, n
#   mode "loop":  publish n times (n=0: forever), printing each version
#   mode "alias": publish once, then point n aliases of its own (p<pid>-<i>) at it
#   mode "kill":  SIGKILL itself just before the n-th S3 PUT/DELETE of one publish
#   mode "count": publish once and print how many S3 PUT/DELETE requests that took
WORKER = textwrap.dedent(
    """
    import os, signal, sys
    from tokend.core.patterns import GPT2_PATTERN
    from tokend.core.registry import Registry

    location, name, mode = sys.argv[1], sys.argv[2], sys.argv[4]
    rows, n = int(sys.argv[3]), int(sys.argv[5])
    ranks = {bytes([i]): i for i in range(256)}
    for i in range(rows):
        ranks[b"t%d" % i] = 256 + i
    reg = Registry(location, include_builtins=False)
    calls = 0
    store = reg.store
    if hasattr(store, "client"):
        real = store.client._make_api_call

        def hooked(operation, params):
            global calls
            if operation in ("PutObject", "DeleteObject"):
                calls += 1
                if mode == "kill" and calls == n:
                    os.kill(os.getpid(), signal.SIGKILL)
            return real(operation, params)

        store.client._make_api_call = hooked
    print("ready", flush=True)

    def publish():
        info = reg.publish(name, ranks=ranks, pat_str=GPT2_PATTERN,
                           special_tokens={"<|eot|>": 256 + rows})
        print(info.version, flush=True)
        return info.version

    if mode == "loop":
        done = 0
        while n == 0 or done < n:
            publish()
            done += 1
    elif mode == "alias":
        version = publish()
        for i in range(n):
            reg.set_alias(name, f"p{os.getpid()}-{i}", version)
    else:
        publish()
        print("calls", calls, flush=True)
    """
)


def expected_ranks(rows: int) -> dict[bytes, int]:
    ranks = {bytes([i]): i for i in range(256)}
    for i in range(rows):
        ranks[b"t%d" % i] = 256 + i
    return ranks


def start(backend: Backend, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, backend.location, *map(str, args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **backend.env},
    )


def run(backend: Backend, *args: object) -> subprocess.CompletedProcess[str]:
    proc = start(backend, *args)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def announced(out: str) -> list[int]:
    return [int(line) for line in out.split() if line.isdigit()]


def assert_whole(reg: Registry, rows: int) -> list[int]:
    """Every visible version loads, sha256-checked, with exactly the published table."""
    assert reg.verify() == []
    versions = [v.version for v in reg.versions("tok")]
    for version in versions:
        assert reg.load_data(f"tok@{version}").ranks == expected_ranks(rows)
    return versions


class TestRaces:
    def test_concurrent_publishers_get_distinct_versions(self, backend: Backend) -> None:
        """Four processes publishing one name 4 times each get 16 distinct versions, 1-16."""
        procs = [start(backend, "tok", 300, "loop", 4) for _ in range(4)]
        numbers: list[int] = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            numbers += announced(out)
        assert sorted(numbers) == list(range(1, 17))
        assert assert_whole(backend.open(), 300) == list(range(1, 17))

    def test_concurrent_alias_writers_lose_nothing(self, backend: Backend) -> None:
        """Four processes each set 5 aliases of one name at once: all 20 survive (CAS)."""
        procs = [start(backend, "tok", 10, "alias", 5) for _ in range(4)]
        expected: dict[str, int] = {}
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            version = announced(out)[0]
            expected |= {f"p{proc.pid}-{i}": version for i in range(5)}
        reg = backend.open()
        assert {i.name: i.aliases for i in reg.list()} == {"tok": expected}


class TestS3Crashes:
    def test_kill_before_every_request_of_a_publish(self, s3_backend_env: dict[str, str]) -> None:
        """SIGKILL just before each PUT of a publish (marker, files, manifest, stamp).

        Before the manifest nothing is visible; after it the version is whole. Either way the
        next publish gets a number above every number tried before.
        """
        from registry_backends import s3_backend

        backend = s3_backend(s3_backend_env)
        rows = 300
        assert run(backend, "tok", rows, "loop", 1).returncode == 0
        counted = run(backend, "tok", rows, "count", 0)
        assert counted.returncode == 0, counted.stderr
        steps = int(counted.stdout.split("calls")[1])
        assert steps == 4  # marker, ranks.tiktoken, manifest.json, .generation
        reg = backend.open()
        for step in range(1, steps + 1):
            before = reg.store.last_version("tok")
            result = run(backend, "tok", rows, "kill", step)
            assert result.returncode == -signal.SIGKILL, result.stderr
            versions = assert_whole(reg, rows)
            # Killed before the manifest's PUT (step 3): the number is burnt, nothing shows.
            assert (versions[-1] > before) == (step > 3)
        # 1 and 2 published; 3 and 4 burnt (killed before their manifests); 5 complete.
        after = run(backend, "tok", rows, "loop", 1)
        assert announced(after.stdout)[0] == 6

    def test_kill_at_random_moments(self, s3_backend_env: dict[str, str]) -> None:
        """A publisher looping on a large table is SIGKILLed at random instants, 8 times."""
        from registry_backends import s3_backend

        backend = s3_backend(s3_backend_env)
        rows = 8_000
        rng = random.Random(4321)
        seen: set[int] = set()
        reg = backend.open()
        for _ in range(8):
            proc = start(backend, "tok", rows, "loop", 0)
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 0.4))
            proc.send_signal(signal.SIGKILL)
            out, err = proc.communicate(timeout=30)
            assert proc.returncode == -signal.SIGKILL, err
            versions = assert_whole(reg, rows)
            # Every version a publisher reported is visible; none was ever handed out twice.
            assert set(announced(out)) <= set(versions)
            assert not set(versions) & seen
            seen |= set(versions)
            if versions:
                reg.delete("tok", all_versions=True)
        nxt = reg.publish("tok", ranks=expected_ranks(10), pat_str=GPT2_PATTERN,
                          special_tokens={})
        assert all(nxt.version > v for v in seen)
        assert reg.store.clean() == []  # young leftovers are never touched (writer may live)


class TestAliasAgainstDelete:
    def test_an_alias_set_during_a_delete_is_undone(
        self, backend: Backend, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """set_alias lands after a delete checked the aliases: the alias is taken back (a
        folder serializes the two under its lock, S3 through the delete's mark)."""
        reg = backend.open()
        for _ in range(2):
            reg.publish("tok", ranks=expected_ranks(5), pat_str=GPT2_PATTERN, special_tokens={})
        reg.set_alias("tok", "stable", 2)
        checked, release = threading.Event(), threading.Event()
        remove = reg.store.remove_versions

        def slow_remove(name: str, versions: list[int]) -> None:
            checked.set()  # the delete has read the aliases: none points at version 1
            assert release.wait(30)
            remove(name, versions)

        monkeypatch.setattr(reg.store, "remove_versions", slow_remove)
        deleter = threading.Thread(target=reg.delete, args=("tok@1",))
        deleter.start()
        assert checked.wait(30)
        other = backend.open()
        if backend.kind == "local":
            # The folder's delete holds the lock: the alias waits and then finds no version 1.
            release.set()
            with pytest.raises(UnknownTokenizer):
                other.set_alias("tok", "stable", 1)
        else:
            with pytest.raises(FailedPrecondition, match="being deleted"):
                other.set_alias("tok", "stable", 1)
            release.set()
        deleter.join(30)
        assert reg.versions("tok")[0].version == 2
        assert reg.resolve("tok@stable").version == 2  # the earlier alias is back
        assert reg.verify() == []

    def test_racing_aliases_and_deletes_never_leave_a_dangling_alias(
        self, backend: Backend
    ) -> None:
        """Threads alias versions while others delete them: afterwards verify() is clean."""
        reg = backend.open()
        for _ in range(6):
            reg.publish("tok", ranks=expected_ranks(5), pat_str=GPT2_PATTERN, special_tokens={})
        errors: list[BaseException] = []

        def alias(version: int) -> None:
            try:
                backend.open().set_alias("tok", f"a{version}", version)
            except (FailedPrecondition, UnknownTokenizer):
                pass  # refused: the version was (being) deleted
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        def delete(version: int) -> None:
            try:
                backend.open().delete(f"tok@{version}")
            except (FailedPrecondition, UnknownTokenizer):
                pass  # refused: an alias got there first
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=fn, args=(v,))
                   for v in range(1, 7) for fn in (alias, delete)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        assert reg.verify() == []
        aliases = reg.list()[0].aliases if reg.list() else {}
        assert set(aliases.values()) <= {v.version for v in reg.versions("tok")}
