"""Prometheus metrics of the service, recorded by the interceptor and the workers' poll loop.

Every worker is its own process, so metrics use prometheus_client's multiprocess mode: the
supervisor sets ``PROMETHEUS_MULTIPROC_DIR`` before any worker starts (and before this module is
imported), workers write their samples there, and the supervisor's ``/metrics`` endpoint
aggregates all of them. Without that variable (in-process tests) the default registry is used.
"""

from __future__ import annotations

import functools
import gc
import os
import queue
import threading
from collections.abc import Iterable
from typing import Any, TypeVar
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
# The HTTP JSON API and page (server/web/): by handler (a fixed set: tokenize, detokenize,
# count, tokenizers, tokenizer, page, static, health, other), method and HTTP status code.
HTTP_REQUESTS = Counter(
    "tokend_http_requests_total", "HTTP requests finished, by handler, method and status code",
    ["handler", "method", "code"],
)
HTTP_SECONDS = Histogram(
    "tokend_http_request_seconds",
    "HTTP request latency in seconds, by handler",
    ["handler"],
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
STREAMS_OPEN = Gauge(
    "tokend_streams_open", "Client streams (EncodeStream) open now, by method; "
    "at most --max-streams per worker", ["method"], multiprocess_mode="livesum",
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

# -- the standard gRPC server families (go-grpc-prometheus / py-grpc-prometheus names) ----------
# Labelled by the TokenizerService's methods only (a fixed set). Calls that grpcio ends before
# our code runs (a request over --max-message-bytes) are counted in started_total but never
# in handled_total: grpcio calls no handler and reports no status for them, so
# ``started - handled`` (summed over methods) is the number grpcio rejected.
_GRPC_LABELS = ["grpc_type", "grpc_service", "grpc_method"]
GRPC_STARTED = Counter(
    "grpc_server_started_total", "RPCs started on the server", _GRPC_LABELS
)
GRPC_HANDLED = Counter(
    "grpc_server_handled_total", "RPCs completed on the server, regardless of success or failure",
    [*_GRPC_LABELS, "grpc_code"],
)
GRPC_MSG_RECEIVED = Counter(
    "grpc_server_msg_received_total", "RPC stream messages received on the server", _GRPC_LABELS
)
GRPC_MSG_SENT = Counter(
    "grpc_server_msg_sent_total", "gRPC stream messages sent by the server", _GRPC_LABELS
)
GRPC_HANDLING_SECONDS = Histogram(
    "grpc_server_handling_seconds",
    "Response latency (seconds) of gRPC that had been application-level handled by the server",
    _GRPC_LABELS,
    buckets=(0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
             0.25, 0.5, 1, 2.5, 5, 10, 30),
)
REQUEST_BYTES = Counter(
    "tokend_request_bytes_total", "Serialized request bytes received, by method", ["method"]
)
TOKENS = Counter(
    "tokend_tokens_total",
    "Token ids produced or counted, by served tokenizer name (only loaded ones) and method",
    ["tokenizer", "method"],
)

# -- per worker process: "liveall" gauges carry a pid label per live worker (a dead worker's
# samples go with mark_process_dead), which bounds them by --workers; the worker label is its
# slot (0 .. --workers-1), stable across restarts. prometheus_client's own process and GC
# collectors read only the scraping process in multiprocess mode.
WORKER_RSS = Gauge(
    "tokend_worker_resident_memory_bytes", "Resident memory of each worker process",
    ["worker"], multiprocess_mode="liveall",
)
WORKER_CPU = Gauge(
    "tokend_worker_cpu_seconds", "CPU seconds (user + system) used by each worker process",
    ["worker"], multiprocess_mode="liveall",
)
WORKER_FDS = Gauge(
    "tokend_worker_open_fds", "Open file descriptors of each worker process",
    ["worker"], multiprocess_mode="liveall",
)
WORKER_GC = Gauge(
    "tokend_worker_gc_collections", "Python GC collections of each worker process, by generation",
    ["worker", "generation"], multiprocess_mode="liveall",
)
WORKER_RESTARTS = Counter(
    "tokend_worker_restarts_total",
    "Workers the supervisor restarted, by why the old one ended (killed by a signal, "
    "crashed with a non-zero status, exited 0 unasked)",
    ["reason"],
)
TRAIN_ACTIVE = Gauge(
    "tokend_train_jobs_active", "Training jobs queued or running now, by state", ["state"],
    multiprocess_mode="livemax",
)
TRAIN_MERGES = Gauge(
    "tokend_train_merges_done",
    "Merges learned so far by the running jobs in their merge phase (its rate: merges/s)",
    multiprocess_mode="livemax",
)
TRAIN_PROGRESS = Gauge(
    "tokend_train_progress_ratio",
    "Progress of the running jobs' current phases, done / total, averaged over the jobs",
    multiprocess_mode="livemax",
)
TOKENIZER_INFO = Gauge(
    "tokend_tokenizer_info",
    "1 per tokenizer version a worker has loaded (0 once no worker serves it any more)",
    ["name", "version"], multiprocess_mode="livemax",
)


@functools.cache
def child(metric: M, *labels: str) -> M:
    """``metric.labels(*labels)``, looked up once: per-call recording skips prometheus_client's
    label checks and lock."""
    return metric.labels(*labels)


def update_process_gauges(worker: str) -> None:
    """Publish this process's RSS, CPU seconds, open fds and GC collections (Linux /proc)."""
    times = os.times()
    child(WORKER_CPU, worker).set(times.user + times.system)
    try:
        with open("/proc/self/statm", "rb") as statm:
            pages = int(statm.read().split()[1])
        child(WORKER_RSS, worker).set(pages * os.sysconf("SC_PAGE_SIZE"))
        child(WORKER_FDS, worker).set(len(os.listdir("/proc/self/fd")))
    except OSError:  # no /proc (not Linux): RSS and fds stay unpublished
        pass
    for generation, stats in enumerate(gc.get_stats()):
        child(WORKER_GC, worker, str(generation)).set(stats["collections"])


_published_versions: set[tuple[str, str]] = set()


def publish_tokenizers(refs: Iterable[str]) -> None:
    """Set tokend_tokenizer_info{name, version} to 1 for the canonical refs loaded now, and to 0
    for the ones loaded before but not now (a multiprocess sample cannot be removed).

    A built-in encoding has no version: it shows as version="builtin".
    """
    current = set()
    for ref in refs:
        name, _, version = ref.partition("@")
        current.add((name, version or "builtin"))
    for gone in _published_versions - current:
        TOKENIZER_INFO.labels(*gone).set(0)
    for loaded in current:
        TOKENIZER_INFO.labels(*loaded).set(1)
    _published_versions.clear()
    _published_versions.update(current)


def restart_reason(exitcode: int | None) -> str:
    """The ``reason`` label of a worker that ended with ``exitcode`` (a bounded set).

    >>> restart_reason(-9), restart_reason(1), restart_reason(0)
    ('killed', 'crashed', 'exited')
    """
    if exitcode is None or exitcode < 0:
        return "killed"
    return "crashed" if exitcode else "exited"


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


# /metrics: a few threads serve scrapes; a connection that sends nothing for SCRAPE_TIMEOUT
# seconds is closed, and one arriving while SCRAPE_THREADS + SCRAPE_QUEUE are taken is closed at
# once, so stalled or flooding clients cost the supervisor neither threads nor CPU.
SCRAPE_THREADS = 4
SCRAPE_QUEUE = 16
SCRAPE_TIMEOUT = 5.0


class _QuietHandler(WSGIRequestHandler):
    timeout = SCRAPE_TIMEOUT  # socket timeout for reading the request and writing the answer

    def log_message(self, format: str, *args: object) -> None:
        """Scrapes are not significant events: keep them out of the logs."""


class MetricsServer(WSGIServer):
    """A WSGI server handing each connection to a small fixed pool (never a thread each)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._waiting: queue.Queue[tuple[Any, Any]] = queue.Queue(SCRAPE_QUEUE)
        for i in range(SCRAPE_THREADS):  # daemons: a stalled scrape never delays the exit
            threading.Thread(target=self._serve_waiting, name=f"metrics-scrape-{i}",
                             daemon=True).start()

    def process_request(self, request: Any, client_address: Any) -> None:
        try:
            self._waiting.put_nowait((request, client_address))
        except queue.Full:
            self.shutdown_request(request)  # too many at once: closed, the scraper retries

    def _serve_waiting(self) -> None:
        while True:
            request, client_address = self._waiting.get()
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that stalled or left: nothing to log (no traceback on stderr)."""


def start_metrics_server(host: str, port: int) -> tuple[MetricsServer, int]:
    """Serve ``/metrics`` on a daemon thread; returns the server and its bound port."""
    app = make_wsgi_app(_collector_registry())
    httpd = make_server(host, port, app, server_class=MetricsServer, handler_class=_QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, name="metrics", daemon=True)
    thread.start()
    return httpd, httpd.server_port
