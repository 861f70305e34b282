"""Run the HTTP app with uvicorn on a thread of a worker process.

Every worker listens on the same ``--http-port`` with SO_REUSEPORT (the supervisor reserved
it, as it does the gRPC port), so the kernel spreads HTTP connections over the workers the way
it spreads gRPC ones, and each worker answers from its own loaded tokenizers. TLS is on
exactly when the gRPC side has it, with the same files (``--tls-client-ca`` then requires
client certificates on HTTP too).
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import ssl
import threading
import time

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from tokend.server import metrics
from tokend.server.config import ServerConfig
from tokend.server.logs import route_library_logs

START_TIMEOUT = 30.0


def listen_socket(host: str, port: int, *, reuse_port: bool) -> socket.socket:
    """A listening TCP socket on ``host:port`` (SO_REUSEPORT in the worker processes).

    subtle: the socket names its protocol (IPPROTO_TCP, not 0): asyncio sets TCP_NODELAY only
    on accepted sockets whose ``proto`` is IPPROTO_TCP, and they inherit it from this one.
    Without it, uvicorn's response (headers and body written separately) waited for the
    client's delayed ACK: ~40 ms on every request after the first on a keep-alive connection.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot serve HTTP on {host}:{port}: {exc.strerror} (choose another "
                      "--http-port, or 0 to turn HTTP off)") from None
    sock.setblocking(False)
    return sock


class GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with two guards against clients that hold connections:
    a request head must arrive within HEAD_SECONDS of the connection (or of the previous
    answer), and a worker keeps at most MAX_CONNECTIONS connections (more are closed at once),
    so stalled heads cost neither descriptors nor time (asyncio: no thread each)."""

    head_seconds = 10.0
    max_connections = 512

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        if len(self.connections) > self.max_connections:
            metrics.LIMIT_HITS.labels("http-max-connections").inc()
            transport.abort()
            return
        self._idle_since = self.loop.time()
        self._arm_head_timer(self._idle_since + self.head_seconds)

    def _arm_head_timer(self, when: float) -> None:
        self._head_timer = self.loop.call_at(when, self._head_timeout)

    def _head_timeout(self) -> None:
        """No complete request head in time: close (the client sent half a head, or none).

        subtle: one timer per connection, not one per request: each answer only notes the
        time (``on_response_complete``), and the timer, when it fires, checks whether a head
        came since and, if so, waits again from the last answer. Arming and cancelling a timer
        per keep-alive request cost ~2% of a 1 KB /count's CPU (bench/bench_http.py).
        """
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # A request is running: the app's own limits apply; look again a while later.
            self._arm_head_timer(self.loop.time() + self.head_seconds)
            return
        due = self._idle_since + self.head_seconds
        if self.loop.time() < due:  # an answer went out since: the next head has as long
            self._arm_head_timer(due)
            return
        metrics.LIMIT_HITS.labels("http-head-seconds").inc()
        self.transport.abort()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._idle_since = self.loop.time()  # keep-alive: the next head has as long

    def connection_lost(self, exc: Exception | None) -> None:
        if getattr(self, "_head_timer", None) is not None:
            self._head_timer.cancel()  # type: ignore[union-attr]
        super().connection_lost(exc)


def uvicorn_config(app: ASGIApp, config: ServerConfig) -> uvicorn.Config:
    """uvicorn's settings: quiet (tokend logs its own JSON events), TLS as gRPC has it."""
    tls: dict[str, object] = {}
    if config.tls_cert is not None and config.tls_key is not None:
        tls = {"ssl_certfile": str(config.tls_cert), "ssl_keyfile": str(config.tls_key)}
        if config.tls_client_ca is not None:
            tls |= {"ssl_ca_certs": str(config.tls_client_ca), "ssl_cert_reqs": ssl.CERT_REQUIRED}
    GuardedH11.head_seconds = config.http_head_seconds
    GuardedH11.max_connections = config.http_max_connections
    return uvicorn.Config(
        app,
        http=GuardedH11,
        lifespan="off",
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=math.ceil(config.grace_seconds),
        **tls,  # type: ignore[arg-type]
    )


class WebServer:
    """uvicorn serving ``app`` on an already listening socket, on its own thread."""

    def __init__(self, app: ASGIApp, config: ServerConfig, *, reuse_port: bool) -> None:
        logging.getLogger("uvicorn").setLevel(logging.WARNING)  # its start/stop chatter
        route_library_logs("uvicorn", "asyncio")  # one JSON line each, rate limited
        self.sock = listen_socket(config.http_host, config.http_port, reuse_port=reuse_port)
        self.port: int = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn_config(app, config))
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="http", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self.server.serve(sockets=[self.sock]))
        except BaseException as exc:  # reported by start()
            self._error = exc

    def start(self) -> None:
        """Start serving; raise what went wrong if uvicorn did not start (e.g. a bad key)."""
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop(0)
                raise RuntimeError(f"the HTTP server did not start: {self._error!r}")
            time.sleep(0.01)

    def stop(self, grace: float) -> None:
        """Stop accepting, let in-flight requests finish within ``grace`` seconds."""
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(grace + 2.0)
        self.sock.close()
