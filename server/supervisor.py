"""``tokend serve``: the supervisor process.

It reserves the port, starts ``--workers`` worker processes that each bind it with
SO_REUSEPORT (the kernel spreads connections over them), restarts a worker that dies, serves
``/metrics`` for all of them (prometheus multiprocess mode), and runs the training job runner.
On SIGTERM/SIGINT it forwards SIGTERM to every worker (each goes NOT_SERVING, stops accepting
and finishes in-flight RPCs within the grace period), waits for them and exits 0.
"""

from __future__ import annotations

import errno
import logging
import multiprocessing
import os
import queue
import signal
import socket
import tempfile
import threading
import time
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import FrameType

from tokend.core.engine import ENGINE
from tokend.core.registry import Registry
from tokend.core.registry.locking import file_lock
from tokend.server import metrics
from tokend.server.config import ServerConfig
from tokend.server.jobs import JobStore
from tokend.server.logs import log_event, setup_logging
from tokend.server.runner import JobRunner
from tokend.server.worker import worker_main

# Held (briefly) while a supervisor checks its port is free and reserves it.
PORT_LOCK_FILE = "tokend-reserve-port-{uid}.lock"  # per user: ports are shared per user
READY_TIMEOUT = 120.0
RESTART_DELAY = 1.0
# Beyond the grace period, how long a draining worker may take to exit before it is killed.
EXIT_MARGIN = 5.0


def reserve_port(host: str, port: int, *, flag: str = "--port") -> socket.socket:
    """Bind (not listen) a SO_REUSEPORT socket: it resolves port 0 and keeps the port ours.

    A bound socket that never listens receives no connections, so the workers' listening
    sockets get them all. SO_REUSEPORT would also let a second ``tokend serve`` bind the same
    port and the kernel would split connections between the two instances, so a fixed port is
    first probed *without* SO_REUSEPORT: that bind fails while anyone holds the port (another
    instance's reserved socket or listening workers, or another program). The probe and the
    reserving bind run under one machine-wide lock, so two instances starting at the same
    moment cannot both pass the probe before either reserves.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    lock = Path(tempfile.gettempdir()) / PORT_LOCK_FILE.format(uid=os.getuid())
    with file_lock(lock, timeout=30.0):
        if port != 0:
            _probe_free(family, host, port, flag)
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            raise OSError(f"cannot bind {host}:{port}: {exc.strerror}") from None
    return sock


def _probe_free(family: socket.AddressFamily, host: str, port: int, flag: str) -> None:
    """Raise OSError naming the port if anything holds it (see reserve_port)."""
    probe = socket.socket(family, socket.SOCK_STREAM)
    # SO_REUSEADDR only so that connections of a stopped instance in TIME_WAIT do not count;
    # a bound socket without it (our reserved one) or a listening one still refuses the bind.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise OSError(
                f"cannot serve on {format_target(host, port)}: the port is already in use "
                "(another tokend serve, or another program, holds it); stop that one or "
                f"choose another {flag}"
            ) from None
        raise OSError(f"cannot bind {host}:{port}: {exc.strerror}") from None
    finally:
        probe.close()


def check_files(config: ServerConfig) -> None:
    """Refuse to start with a TLS file that cannot be read or a --train-dir that is no folder."""
    for flag, path in (("--tls-cert", config.tls_cert), ("--tls-key", config.tls_key),
                       ("--tls-client-ca", config.tls_client_ca)):
        if path is not None and not (path.is_file() and os.access(path, os.R_OK)):
            raise OSError(f"{flag} {path}: not a readable file")
    if config.train_dir is not None and not config.train_dir.is_dir():
        raise OSError(f"--train-dir {config.train_dir}: not a directory")


def format_target(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Supervisor:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.ctx = multiprocessing.get_context("spawn")
        self.events: multiprocessing.Queue[tuple[str, int]] = self.ctx.Queue()
        self.workers: dict[int, BaseProcess] = {}  # slot -> process
        self.stopping = threading.Event()
        self.port = 0

    def _spawn(self, slot: int) -> BaseProcess:
        process = self.ctx.Process(
            target=worker_main,
            args=(self.config, self.port, self.events),
            name=f"tokend-worker-{slot}",
            daemon=False,
        )
        process.start()
        self.workers[slot] = process
        log_event("worker_started", slot=slot, pid=process.pid)
        return process

    def _wait_ready(self, count: int) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        ready = 0
        while ready < count:
            if any(not p.is_alive() for p in self.workers.values()):
                raise RuntimeError("a worker exited during start-up (see the log above)")
            try:
                self.events.get(timeout=min(1.0, max(deadline - time.monotonic(), 0.01)))
                ready += 1
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"workers not ready within {READY_TIMEOUT} s") from None

    def run(self) -> int:
        config = self.config
        check_files(config)
        Registry(config.registry)  # creates it if missing; fails early if it is unusable
        if config.admin_token is None:
            log_event("training_open", level=logging.WARNING, host=config.host,
                      message="Train and CancelTrainJob need no token: anyone who reaches "
                      f"{config.host} can train and cancel; set --admin-token to require one")
        store = JobStore(config.jobs_path)
        reserved = reserve_port(config.host, config.port)
        self.port = reserved.getsockname()[1]
        # The HTTP port is reserved the same way (a fixed port: 0 turns HTTP off).
        http_reserved = reserve_port(config.http_host, config.http_port, flag="--http-port") \
            if config.http_port else None
        metrics_server = None
        metrics_port = 0
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)
        try:
            if config.metrics_port:  # before the workers: a taken port fails fast
                try:
                    metrics_server, metrics_port = metrics.start_metrics_server(
                        config.host, config.metrics_port
                    )
                except OSError as exc:
                    raise OSError(
                        f"cannot serve /metrics on {config.host}:{config.metrics_port}: "
                        f"{exc.strerror} (choose another --metrics-port, or 0 to disable)"
                    ) from None
            for slot in range(config.workers):
                self._spawn(slot)
            self._wait_ready(config.workers)
            runner = JobRunner(
                store, config.registry, concurrency=config.train_concurrency,
                train_workers=config.train_workers,
            )
            runner.start()
            log_event(
                "serving",
                target=format_target(config.host, self.port),
                workers=config.workers,
                pids=[p.pid for p in self.workers.values()],
                metrics_port=metrics_port,
                registry=str(config.registry),
                tls=config.tls,
                engine=ENGINE,
                http_target=format_target(config.http_host, config.http_port)
                if config.http_port else None,
            )
            self._watch()
            self._shutdown()
            runner.stop()
        finally:
            for process in self.workers.values():
                if process.is_alive():
                    process.kill()
            if metrics_server is not None:
                metrics_server.shutdown()
            reserved.close()
            if http_reserved is not None:
                http_reserved.close()
        log_event("exited", target=format_target(config.host, self.port))
        return 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping.set()

    def _watch(self) -> None:
        """Restart workers that die until asked to stop."""
        while not self.stopping.wait(0.2):
            self._discard_events()
            for slot, process in list(self.workers.items()):
                if process.is_alive() or self.stopping.is_set():
                    continue
                log_event("worker_died", slot=slot, pid=process.pid, exitcode=process.exitcode)
                metrics.WORKER_RESTARTS.labels(metrics.restart_reason(process.exitcode)).inc()
                if process.pid is not None:
                    metrics.mark_process_dead(process.pid)
                time.sleep(RESTART_DELAY)  # a crash loop must not spin the CPU
                if not self.stopping.is_set():
                    self._spawn(slot)

    def _discard_events(self) -> None:
        """Drop the ready events of restarted workers (they are informative only)."""
        while True:
            try:
                self.events.get_nowait()
            except queue.Empty:
                return

    def _shutdown(self) -> None:
        log_event("shutting_down", grace_seconds=self.config.grace_seconds)
        for process in self.workers.values():
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.config.grace_seconds + EXIT_MARGIN
        for slot, process in self.workers.items():
            process.join(max(deadline - time.monotonic(), 0.1))
            if process.is_alive():
                log_event("worker_killed", slot=slot, pid=process.pid)
                process.kill()
                process.join()
            if process.pid is not None:
                metrics.mark_process_dead(process.pid)


def serve(config: ServerConfig) -> int:
    """Run the supervisor until SIGTERM/SIGINT; returns the exit status."""
    setup_logging(config.log_level)
    return Supervisor(config).run()
