"""Assemble one worker's servers: the application layer (``server/app/``), the gRPC server
over it (servicer, interceptor, health, reflection) and, with --http-port, the HTTP API.

``make_server(config)`` builds and binds it without starting it, so tests run it in-process on
port 0; ``worker.py`` runs it in each process started by the supervisor.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from tokend import __version__
from tokend.core.engine import ENGINE
from tokend.server import metrics
from tokend.server.app.service import App
from tokend.server.config import ServerConfig
from tokend.server.errors import hide_paths
from tokend.server.executor import LifoThreadPool
from tokend.server.interceptors import ServerState, TokendInterceptor
from tokend.server.jobs import JobStore
from tokend.server.logs import log_event
from tokend.server.metrics import (
    CACHE_ENTRIES,
    CACHE_EVICTIONS,
    CACHE_HITS,
    CACHE_MISSES,
    CALLS_WAITED,
    CALLS_WAITING,
)
from tokend.server.reflection import enable_server_reflection
from tokend.server.servicer import TokenizerService, method_handlers
from tokend.server.tokenizers import Tokenizers
from tokend.v1 import tokenizer_pb2

if TYPE_CHECKING:
    from tokend.server.web.serve import WebServer

SERVICE_NAME = tokenizer_pb2.DESCRIPTOR.services_by_name["TokenizerService"].full_name


@dataclass
class TokendServer:
    """A bound gRPC server plus what it needs to reload and shut down cleanly."""

    server: grpc.Server
    port: int
    config: ServerConfig
    tokenizers: Tokenizers
    jobs: JobStore
    health: health.HealthServicer
    state: ServerState
    executor: LifoThreadPool  # the handlers' pool, shut down after the drain
    web: WebServer | None = None  # the HTTP API and page (--http-port), on the same pool
    _stopped: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self.server.start()
        if self.web is not None:
            self.web.start()
        self.tokenizers.start(self.config.reload_seconds, on_tick=self.update_gauges)
        for service in ("", SERVICE_NAME):
            self.health.set(service, health_pb2.HealthCheckResponse.SERVING)

    def drain(self, grace: float | None = None) -> None:
        """Shut down gracefully: NOT_SERVING, stop accepting, let in-flight RPCs finish.

        The grace period bounds how long a slow in-flight call may keep the process alive;
        after it, remaining calls are cancelled. Blocks until the server has stopped.
        """
        if self._stopped.is_set():
            return
        self._stopped.set()
        grace = self.config.grace_seconds if grace is None else grace
        self.health.enter_graceful_shutdown()  # every service NOT_SERVING, sticky
        end_health_watches(self.health)
        self.state.start_draining()
        log_event("draining", port=self.port, grace_seconds=grace)
        # subtle: a call that reaches a server inside stop() may be CANCELLED by gRPC, which
        # clients do not retry; during this window new calls get a retryable UNAVAILABLE.
        time.sleep(min(self.config.drain_delay_seconds, grace))
        stopped = self.server.stop(grace)
        if self.web is not None:
            self.web.stop(grace)
        stopped.wait()
        self.executor.shutdown(wait=False)
        self.tokenizers.stop()
        log_event("stopped", port=self.port)

    def update_gauges(self) -> None:
        """Publish the cache and handler-pool counters, the process's resources and the loaded
        versions as gauges (on the poll tick, so calls pay nothing for them)."""
        metrics.update_process_gauges(worker_slot())
        loaded = self.tokenizers.loaded()
        metrics.publish_tokenizers(loaded)
        waited, waiting = self.executor.waits()
        CALLS_WAITED.set(waited)
        CALLS_WAITING.set(waiting)
        for ref, encoding in loaded.items():
            info = encoding.cache_info()
            CACHE_HITS.labels(ref).set(info.hits)
            CACHE_MISSES.labels(ref).set(info.misses)
            CACHE_EVICTIONS.labels(ref).set(info.evictions)
            CACHE_ENTRIES.labels(ref).set(info.entries)


def worker_slot() -> str:
    """This worker's slot number ("0" in-process): the supervisor names them tokend-worker-N."""
    name = multiprocessing.current_process().name
    return name.rpartition("-")[2] if name.startswith("tokend-worker-") else "0"


def end_health_watches(servicer: health.HealthServicer) -> None:
    """Close every Health.Watch stream (after it was sent NOT_SERVING).

    A watch is an RPC like any other: left open, it would hold the drain for its whole grace
    period, and gRPC clients doing client-side health checking keep one per connection.
    Sending ``None`` to a watch's callback ends it (grpc_health's own close path); the
    registry of callbacks is private, so a grpc_health without it is left alone.
    """
    lock = getattr(servicer, "_lock", None)
    callbacks = getattr(servicer, "_send_response_callbacks", None)
    if lock is None or not isinstance(callbacks, dict):
        return
    with lock:
        watches = [cb for per_service in callbacks.values() for cb in list(per_service)]
    for callback in watches:
        callback(None)


def grpc_options(config: ServerConfig, *, reuse_port: bool) -> list[tuple[str, int]]:
    """Channel arguments: message size limits and SO_REUSEPORT for the worker processes."""
    return [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        # Responses (ids) may be larger than requests; --max-ids bounds them instead.
        ("grpc.max_send_message_length", -1),
        ("grpc.so_reuseport", 1 if reuse_port else 0),
    ]


def server_credentials(config: ServerConfig) -> grpc.ServerCredentials | None:
    if config.tls_cert is None or config.tls_key is None:
        return None
    key = config.tls_key.read_bytes()
    cert = config.tls_cert.read_bytes()
    client_ca = config.tls_client_ca.read_bytes() if config.tls_client_ca else None
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=client_ca, require_client_auth=client_ca is not None
    )


def make_server(config: ServerConfig, *, reuse_port: bool = False) -> TokendServer:
    """Build and bind (not start) a server for ``config``; ``port`` 0 picks a free port."""
    metrics.BUILD_INFO.labels(__version__, ENGINE).set(1)
    hide_paths(config.hidden_paths)
    app = App.from_config(config)
    tokenizers, jobs = app.tokenizers, app.training.jobs
    state = ServerState()
    # Few calls at once, each on the most recently idle thread (executor.py): one GIL runs
    # them all, and fewer threads contending for it cost less CPU per call.
    executor = LifoThreadPool(config.threads, thread_name_prefix="rpc", max_busy=config.busy_calls)
    server = grpc.server(
        # grpc's stubs name ThreadPoolExecutor, but grpc only calls submit() on it.
        cast(futures.ThreadPoolExecutor, executor),
        options=grpc_options(config, reuse_port=reuse_port),
    )
    # The service's handlers, each wrapped once by the interceptor (folded into them).
    interceptor = TokendInterceptor(state, admin_token=config.admin_token)
    server.add_generic_rpc_handlers(
        (interceptor.handlers(method_handlers(TokenizerService(app))),))
    health_servicer = health.HealthServicer(
        experimental_non_blocking=True,
        experimental_thread_pool=futures.ThreadPoolExecutor(max_workers=2),
    )
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for service in ("", SERVICE_NAME):
        health_servicer.set(service, health_pb2.HealthCheckResponse.NOT_SERVING)
    enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME), server)
    address = f"{config.host}:{config.port}"
    credentials = server_credentials(config)
    if credentials is None:
        port = server.add_insecure_port(address)
    else:
        port = server.add_secure_port(address, credentials)
    if port == 0:
        raise OSError(f"could not bind {address}")
    web = None
    if config.http_port:
        # Imported here: a server without --http-port never loads Starlette or uvicorn.
        from tokend.server.web.app import WebApi  # noqa: PLC0415
        from tokend.server.web.guards import HostRule  # noqa: PLC0415
        from tokend.server.web.serve import WebServer  # noqa: PLC0415

        hosts = HostRule(frozenset(h.strip().lower() for h in config.http_allowed_hosts.split(",")
                                   if h.strip()), bind=config.http_host)
        api = WebApi(app, executor, state, max_body_bytes=config.max_message_bytes,
                     body_seconds=config.http_body_seconds, hosts=hosts)
        web = WebServer(api.app(), config, reuse_port=reuse_port)
    return TokendServer(server, port, config, tokenizers, jobs, health_servicer, state, executor,
                        web)
