"""Faults: a worker killed under load, the supervisor killed, a registry that cannot be written
during a publish or an upload, and SIGTERM in the middle of a training upload."""

from __future__ import annotations

import errno
import json
import os
import queue
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from tokend.core.errors import StorageError, StorageFull
from tokend.core.registry import Registry
from tokend.core.registry import local as registry_module
from tokend.core.training.byte_bpe import train_bpe
from tokend.server.app import training as training_module
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc


def new_stub(target: str) -> tuple[grpc.Channel, pb_grpc.TokenizerServiceStub]:
    channel = grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
    return channel, pb_grpc.TokenizerServiceStub(channel)


def process_alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def publish_small(registry: Path, name: str) -> str:
    result = train_bpe(iter([f"{name} is a small tokenizer for fault tests " * 10]), 270, [])
    info = Registry(registry).publish(name, ranks=result.mergeable_ranks(),
                                      pat_str=result.pattern, special_tokens={})
    return info.ref


class TestWorkerKilledUnderLoad:
    def test_failed_calls_are_counted_and_the_worker_restarts(self, tokend_factory,
                                                              record_property) -> None:
        """SIGKILL of a worker under a closed-loop load of 8 connections: 4 bare stubs (a call
        waits for a connection, ``wait_for_ready``, but is never retried) lose only the calls
        the killed worker took (at most two per connection, see below); 4 ``tokend.client``
        clients (UNAVAILABLE retried by the channel's retry policy) lose none. The supervisor
        starts a new worker and every call after that succeeds. The counts are printed (``-s``).
        """
        from tokend.client import Client

        served = tokend_factory(workers=2)
        victim = served.wait_event("serving")["pids"][0]
        stop = threading.Event()
        outcomes: list[tuple[str, float, str]] = []  # (kind, finish time, status code name)
        lock = threading.Lock()
        text = "under load " * 200

        def bare() -> None:
            channel, stub = new_stub(served.target)
            with channel:
                while not stop.is_set():
                    try:
                        stub.CountTokens(pb.CountTokensRequest(
                            tokenizer="o200k_base", texts=[text]), timeout=10,
                            wait_for_ready=True)
                        code = "OK"
                    except grpc.RpcError as err:
                        code = err.code().name
                    with lock:
                        outcomes.append(("bare", time.monotonic(), code))

        def client() -> None:
            options = [("grpc.use_local_subchannel_pool", 1)]
            with Client(served.target, timeout=10, options=options) as tok:
                while not stop.is_set():
                    try:
                        tok.count_tokens("o200k_base", text)
                        code = "OK"
                    except grpc.RpcError as err:
                        code = err.code().name
                    with lock:
                        outcomes.append(("client", time.monotonic(), code))

        threads = [threading.Thread(target=fn) for fn in [bare] * 4 + [client] * 4]
        for thread in threads:
            thread.start()
        # Every loader has had an answer (on a loaded host, starting takes a while).
        wait_until(lambda: len({k for k, _, c in list(outcomes) if c == "OK"}) == 2
                   and len(outcomes) >= 4 * len(threads), 60, "the load to run")
        killed_at = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        served.wait_event("worker_died", pid=victim, timeout=30)
        mark = len(served.events)
        served.wait_event("worker_ready", after=mark, timeout=60)
        restarted_at = time.monotonic()
        time.sleep(2.0)
        stop.set()
        for thread in threads:
            thread.join(30)
        failed = {kind: Counter(c for k, _, c in outcomes if k == kind and c != "OK")
                  for kind in ("bare", "client")}
        total = {kind: sum(1 for k, _, _ in outcomes if k == kind) for kind in failed}
        for kind, codes in failed.items():
            record_property(f"failed_calls_{kind}", sum(codes.values()))
            record_property(f"total_calls_{kind}", total[kind])
        print(f"worker killed under load: bare stubs {sum(failed['bare'].values())} of "
              f"{total['bare']} calls failed {dict(failed['bare'])}, tokend.client "
              f"{sum(failed['client'].values())} of {total['client']}; the new worker was "
              f"ready {restarted_at - killed_at:.2f} s after the kill")
        assert set(failed["bare"]) <= {"UNAVAILABLE"}, failed
        # At most two per connection: the call in flight, and one whose reconnect landed in
        # the dying worker's accept queue (SIGKILL tears the process's memory down before its
        # listening socket is closed, and the kernel keeps handing it connections meanwhile;
        # seen once: 5 of 4 x ~900 calls, on a fresh clone at 29eee7b). tokend.client retries
        # both kinds, so it loses none.
        assert sum(failed["bare"].values()) <= 2 * 4
        assert sum(failed["client"].values()) == 0, failed
        assert sum(1 for _, t, code in outcomes if t < killed_at and code == "OK") > 0
        late = [code for _, t, code in outcomes if t > restarted_at + 0.5]
        assert late and set(late) == {"OK"}


class TestSupervisorKilled:
    def test_workers_drain_and_exit_and_the_next_start_serves(self, tokend_factory) -> None:
        """SIGKILL of the supervisor: its workers notice, drain and exit; a new `tokend serve`
        on the same port and registry then serves."""
        served = tokend_factory(workers=2)
        ref = publish_small(served.registry, "survivor")
        pids = served.wait_event("serving")["pids"]
        port = served.target.rpartition(":")[2]
        served.process.kill()
        served.process.wait(10)
        wait_until(lambda: not any(process_alive(pid) for pid in pids), 30,
                   "orphaned workers to exit")
        again = tokend_factory("--port", port, "--registry", str(served.registry), workers=2)
        assert again.target == served.target
        channel, stub = new_stub(again.target)
        with channel:
            answer = stub.CountTokens(pb.CountTokensRequest(tokenizer="survivor",
                                                            texts=["survivor"]), timeout=30)
        assert answer.tokenizer == ref


def failing(error: int, calls_before: int = 0) -> Callable[..., object]:
    """A stand-in that raises OSError(error) (after ``calls_before`` successful calls)."""
    state = {"calls": 0}

    def fake(*args: object, **kwargs: object) -> object:
        state["calls"] += 1
        if state["calls"] > calls_before:
            raise OSError(error, os.strerror(error), str(args[0]) if args else None)
        return None

    return fake


class TestRegistryCannotBeWritten:
    @pytest.mark.parametrize("error", [errno.ENOSPC, errno.EROFS])
    @pytest.mark.parametrize("where", ["_write_synced", "atomic_write_bytes", "rename"])
    def test_publish_fails_cleanly_and_serving_continues(self, tokend_server, monkeypatch,
                                                         error: int, where: str) -> None:
        """Disk full / read-only at each write of a publish: a StorageError saying nothing was
        published, no new version visible to the registry or the server, which keeps serving."""
        name = f"faulty-{where.strip('_').replace('_', '-')}-{error}"
        ref = publish_small(tokend_server.registry, name)
        registry = Registry(tokend_server.registry)
        channel, stub = new_stub(tokend_server.target)
        with channel:
            wait_until(lambda: stub.CountTokens(pb.CountTokensRequest(
                tokenizer=name, texts=["a"]), timeout=10).tokenizer == ref, 10, "v1 served")
            if where == "rename":
                real_rename = os.rename

                def rename(src: object, dst: object) -> None:
                    if Path(str(dst)).parent.name == name:
                        raise OSError(error, os.strerror(error), str(dst))
                    real_rename(src, dst)  # type: ignore[arg-type]

                monkeypatch.setattr(registry_module.os, "rename", rename)
            else:
                monkeypatch.setattr(registry_module, where, failing(error))
            result = train_bpe(iter(["a different corpus entirely " * 10]), 270, [])
            with pytest.raises(StorageError) as info:
                registry.publish(name, ranks=result.mergeable_ranks(), pat_str=result.pattern,
                                 special_tokens={})
            assert isinstance(info.value, OSError)
            assert isinstance(info.value, StorageFull) == (error == errno.ENOSPC)
            message = str(info.value)
            assert os.strerror(error) in message and "nothing was published" in message
            monkeypatch.undo()
            assert [list(i.versions) for i in registry.list() if i.name == name] == [[1]]
            assert not [p for p in (tokend_server.registry / ".staging").iterdir()
                        if not p.name.endswith(".lock")]
            time.sleep(0.5)  # two reload ticks: the server has looked at the registry again
            for _ in range(5):
                answer = stub.CountTokens(pb.CountTokensRequest(tokenizer=name, texts=["a b"]),
                                          timeout=10)
                assert answer.tokenizer == ref
            listed = stub.ListTokenizers(pb.ListTokenizersRequest(), timeout=10)
            assert [list(t.versions) for t in listed.tokenizers if t.name == name] == [[1]]
            # Once the disk is back, publishing works again.
            again = registry.publish(name, ranks=result.mergeable_ranks(),
                                     pat_str=result.pattern, special_tokens={})
            assert again.version >= 2

    def test_upload_on_a_full_disk_is_resource_exhausted(self, fresh_server,
                                                         monkeypatch) -> None:
        """Train's corpus upload hits ENOSPC: RESOURCE_EXHAUSTED naming the cause, no job left
        behind, and the server keeps serving."""
        server = fresh_server()
        real_open = open

        class FullFile:
            def __init__(self, *args: object, **kwargs: object) -> None:
                self._file = real_open(*args, **kwargs)  # type: ignore[call-overload]

            def __enter__(self) -> FullFile:
                return self

            def __exit__(self, *exc: object) -> None:
                self._file.close()

            def write(self, data: bytes) -> int:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "corpus")

            def __getattr__(self, name: str) -> object:
                return getattr(self._file, name)

        monkeypatch.setattr(training_module, "open", FullFile, raising=False)
        requests = [pb.TrainRequest(config=pb.TrainConfig(name="full", vocab_size=300)),
                    pb.TrainRequest(corpus_chunk=b"some corpus text " * 100)]
        with pytest.raises(grpc.RpcError) as info:
            server.stub.Train(iter(requests), metadata=(("authorization",
                                                         "Bearer secret-admin"),))
        err = info.value
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.details()
        assert os.strerror(errno.ENOSPC) in err.details()
        assert not server.stub.ListTrainJobs(pb.ListTrainJobsRequest()).jobs
        assert server.stub.CountTokens(pb.CountTokensRequest(
            tokenizer="o200k_base", texts=["still here"])).total == 2


class TestSigtermDuringUpload:
    def _start_upload(self, served) -> tuple[queue.Queue[pb.TrainRequest | None],  # type: ignore[no-untyped-def]
                                             grpc.Future, grpc.Channel]:
        channel, stub = new_stub(served.target)
        outbox: queue.Queue[pb.TrainRequest | None] = queue.Queue()

        def requests() -> Iterator[pb.TrainRequest]:
            while (item := outbox.get()) is not None:
                yield item

        outbox.put(pb.TrainRequest(config=pb.TrainConfig(name="midway", vocab_size=300,
                                                         special_tokens=["<|endoftext|>"])))
        outbox.put(pb.TrainRequest(corpus_chunk=b"the first half of the corpus. " * 200))
        future = stub.Train.future(requests(), timeout=60, metadata=(
            ("authorization", f"Bearer {served.admin_token}"),))
        return outbox, future, channel

    def test_an_upload_finished_within_the_grace_period_survives_the_restart(
            self, tokend_factory) -> None:
        """SIGTERM mid-upload: the upload in flight may finish (within --grace-seconds), the
        job is kept on disk and runs after the next start."""
        served = tokend_factory("--grace-seconds", "20", workers=1)
        outbox, future, channel = self._start_upload(served)
        wait_until(lambda: any(e.get("event") == "worker_ready" for e in served.events), 10,
                   "a worker")
        time.sleep(0.5)  # the call has reached the worker and is writing the corpus
        served.process.send_signal(signal.SIGTERM)
        served.wait_event("draining", timeout=30)
        outbox.put(pb.TrainRequest(corpus_chunk=b"and the second half, sent while draining. "
                                   * 200))
        outbox.put(None)
        job = future.result(timeout=60).job
        channel.close()
        assert job.state == pb.TRAIN_JOB_STATE_QUEUED
        assert served.process.wait(60) == 0
        again = tokend_factory("--registry", str(served.registry), workers=1)
        channel, stub = new_stub(again.target)
        with channel:
            final = job
            for update in stub.WatchTrainJob(pb.WatchTrainJobRequest(job_id=job.job_id),
                                             timeout=120):
                final = update.job
        assert final.state == pb.TRAIN_JOB_STATE_SUCCEEDED, final.error
        assert final.published == "midway@1"

    def test_an_upload_abandoned_during_the_drain_leaves_no_job(self, tokend_factory) -> None:
        """SIGTERM mid-upload and the client gives up (cancels without ending its request
        stream): no job is queued, and a half-uploaded folder is removed by the next start."""
        served = tokend_factory("--grace-seconds", "20", workers=1)
        outbox, future, channel = self._start_upload(served)
        jobs_dir = served.registry / ".jobs"

        def job_dirs() -> list[Path]:
            return [p for p in jobs_dir.iterdir() if p.is_dir()] if jobs_dir.exists() else []

        wait_until(lambda: bool(job_dirs()), 30, "the upload to reach the worker")
        served.process.send_signal(signal.SIGTERM)
        served.wait_event("draining", timeout=30)
        future.cancel()
        channel.close()
        assert served.process.wait(60) == 0
        outbox.put(None)  # (only now: ending the request stream earlier would finish the upload)
        assert not any(e.get("event") == "train_job_created" for e in served.events)
        # Nothing was queued: any folder left (the worker may exit before its handler thread
        # has cleaned up) is a not-ready upload, which the next start's runner removes.
        for folder in job_dirs():
            state = json.loads((folder / "state.json").read_text())
            assert state["ready"] is False, state
        again = tokend_factory("--registry", str(served.registry), workers=1)
        wait_until(lambda: not job_dirs(), 30, "the stale upload to be removed")
        channel, stub = new_stub(again.target)
        with channel:
            assert not stub.ListTrainJobs(pb.ListTrainJobsRequest(), timeout=10).jobs
