"""One worker process: a gRPC server on the shared port (SO_REUSEPORT), drained on SIGTERM.

Started by the supervisor with the ``spawn`` method (never ``fork``: gRPC's threads do not
survive a fork). It reports ``("ready", pid)`` on the queue once it serves, and on SIGTERM or
SIGINT goes NOT_SERVING, stops accepting and lets in-flight RPCs finish within the grace
period, then exits 0. It drains the same way if its supervisor dies.
"""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import replace
from multiprocessing.queues import Queue
from types import FrameType

from tokend.server.config import ServerConfig
from tokend.server.logs import log_event, setup_logging


def worker_main(config: ServerConfig, port: int, events: Queue[tuple[str, int]]) -> None:
    """Entry point of a worker process (``port`` is the one the supervisor reserved)."""
    setup_logging(config.log_level)
    # Imported here so the supervisor (which imports this module) never loads gRPC servers.
    from tokend.server.serving import make_server  # noqa: PLC0415

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    supervisor = os.getppid()
    server = make_server(replace(config, port=port), reuse_port=True)
    server.start()
    log_event("worker_ready", port=server.port)
    events.put(("ready", server.port))
    while not stop.wait(1.0):
        if os.getppid() != supervisor:  # the supervisor was killed: do not serve orphaned
            log_event("supervisor_gone", supervisor=supervisor)
            break
    server.drain()
