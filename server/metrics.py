"""Prometheus metrics of the service, recorded by the interceptor and the workers' poll loop.

Every worker is its own process, so metrics use prometheus_client's multiprocess mode: the
supervisor sets ``PROMETHEUS_MULTIPROC_DIR`` before any worker starts (and before this module is
imported), workers write their samples there, and the supervisor's ``/metrics`` endpoint
aggregates all of them. Without that variable (in-process tests) the default registry is used.
"""

from __future__ import annotations

import functools
import os
import threading
from http.server import ThreadingHTTPServer
from typing import TypeVar
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    make_wsgi_app,
    multiprocess,
)
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import REGISTRY

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
M = TypeVar("M", bound=MetricWrapperBase)

RPCS = Counter(
    "tokend_rpcs_total", "RPCs finished, by method and status code", ["method", "code"]
)
RPC_SECONDS = Histogram(
    "tokend_rpc_seconds",
    "RPC latency in seconds, by method",
    ["method"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
TOKENS_ENCODED = Counter(
    "tokend_tokens_encoded_total", "Token ids produced by Encode/EncodeStream/CountTokens",
    ["method"],
)
LIMIT_HITS = Counter(
    "tokend_limit_hits_total", "Requests refused by a configured limit, by limit", ["limit"]
)
RELOADS = Counter(
    "tokend_reloads_total", "Registry hot reloads, by outcome (ok / failed)", ["outcome"]
)
TRAIN_JOBS = Counter(
    "tokend_train_jobs_total", "Training jobs that reached a state, by state", ["state"]
)
CACHE_HITS = Gauge(
    "tokend_cache_hits", "Pretoken cache hits of the loaded encodings", ["tokenizer"],
    multiprocess_mode="livesum",
)
CACHE_MISSES = Gauge(
    "tokend_cache_misses", "Pretoken cache misses of the loaded encodings", ["tokenizer"],
    multiprocess_mode="livesum",
)
CACHE_EVICTIONS = Gauge(
    "tokend_cache_evictions", "Pretoken cache evictions of the loaded encodings", ["tokenizer"],
    multiprocess_mode="livesum",
)
CACHE_ENTRIES = Gauge(
    "tokend_cache_entries", "Pretoken cache entries of the loaded encodings", ["tokenizer"],
    multiprocess_mode="livesum",
)
CALLS_WAITED = Gauge(
    "tokend_calls_waited",
    "Calls that waited for the --busy-calls limit since the workers started",
    multiprocess_mode="livesum",
)
CALLS_WAITING = Gauge(
    "tokend_calls_waiting", "Calls waiting for the --busy-calls limit now",
    multiprocess_mode="livesum",
)
BUILD_INFO = Gauge(
    "tokend_build_info",
    "1 per running version and encoding engine (compiled or python)",
    ["version", "engine"],
    multiprocess_mode="livemax",
)
DRAINING = Gauge(
    "tokend_draining", "1 while a worker is draining for shutdown", multiprocess_mode="livemax"
)


@functools.cache
def child(metric: M, *labels: str) -> M:
    """``metric.labels(*labels)``, looked up once: per-call recording skips prometheus_client's
    label checks and lock."""
    return metric.labels(*labels)


def render() -> bytes:
    """The current metrics in the Prometheus text format (all processes in multiprocess mode)."""
    return generate_latest(_collector_registry())


def _collector_registry() -> CollectorRegistry:
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return registry
    return REGISTRY


def mark_process_dead(pid: int) -> None:
    """Drop a dead worker's live gauges (its counters stay summed in)."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Scrapes are not significant events: keep them out of the logs."""


def start_metrics_server(host: str, port: int) -> tuple[ThreadingHTTPServer, int]:
    """Serve ``/metrics`` on a daemon thread; returns the server and its bound port."""
    class _Server(ThreadingHTTPServer, WSGIServer):
        daemon_threads = True

    app = make_wsgi_app(_collector_registry())
    httpd = make_server(host, port, app, server_class=_Server, handler_class=_QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, name="metrics", daemon=True)
    thread.start()
    return httpd, httpd.server_port
