"""What every tokend RPC passes through: request ids, auth, draining, errors, metrics.

It is folded into the service's handlers rather than installed as a grpcio interceptor:
``TokendInterceptor.handlers`` wraps each method's handler once, at start-up, and serves them
from one generic handler, which counts the call as started when grpcio looks it up.
subtle: grpcio's interceptor pipeline runs per call (its continuation closures and a second
handler lookup): folded, a 1 KB CountTokens costs ~8 µs less server CPU (bench_service.py).
Per call, metrics go through ``cells.py`` (values bound at start-up, one lock per write).

Around each call it
- reads ``x-request-id`` from the metadata (or makes one) and echoes it in the trailing
  metadata (streams: also the initial), so a client can quote it and the logs can be searched;
- refuses new work while the worker drains (UNAVAILABLE), and checks the admin token
  (``authorization: Bearer <token>``) on the admin methods;
- turns a ``TokendError`` into its status code (errors.py) and any other exception into
  INTERNAL (logged with its traceback, never sent to the client);
- counts the call and its latency by method and status code, in tokend's own families and in
  the standard ``grpc_server_*`` ones (metrics.py says which calls those cannot see).
Health checking and reflection pass through untouched.
"""

from __future__ import annotations

import hmac
import itertools
import logging
import os
import secrets
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import grpc

from tokend.core.errors import (
    PermissionDenied,
    TokendError,
    Unauthenticated,
    Unavailable,
)
from tokend.server import cells, metrics
from tokend.server.errors import bounded, code_for, field_of, status_for
from tokend.server.logs import log_enabled, log_event
from tokend.server.wire import Undecodable, lenient

SERVICE_PREFIX = "/tokend.v1.TokenizerService/"
SERVICE = SERVICE_PREFIX.strip("/")
ADMIN_METHODS = frozenset({"Train", "CancelTrainJob"})
REQUEST_ID_KEY = "x-request-id"
_MAX_REQUEST_ID = 128


class ServerState:
    """Mutable, thread-safe state the interceptor consults (the draining flag)."""

    def __init__(self) -> None:
        self._draining = threading.Event()

    @property
    def draining(self) -> bool:
        return self._draining.is_set()

    def start_draining(self) -> None:
        self._draining.set()
        metrics.DRAINING.set(1)


class _RequestIds:
    """Fresh request ids: 32 hex digits, a random per-process prefix and a counter.

    Unique like a uuid4 (64 random bits tell the processes apart, the counter the calls) but
    without reading the OS's random source on every call. A forked child draws a new prefix.
    """

    def __init__(self) -> None:
        self.reseed()
        os.register_at_fork(after_in_child=self.reseed)

    def reseed(self) -> None:
        self._prefix = secrets.token_hex(8)
        self._counter = itertools.count(1)  # subtle: next() on it is atomic under the GIL

    def new(self) -> str:
        return f"{self._prefix}{next(self._counter) & 0xFFFF_FFFF_FFFF_FFFF:016x}"


new_request_id = _RequestIds().new


def request_id(context: grpc.ServicerContext) -> str:
    """The caller's ``x-request-id`` if it is sane (printable, short), else a fresh one."""
    for key, value in context.invocation_metadata():
        if key == REQUEST_ID_KEY and isinstance(value, str):
            if 0 < len(value) <= _MAX_REQUEST_ID and value.isprintable():
                return value
            break
    return new_request_id()


def bearer_token(context: grpc.ServicerContext) -> str | None:
    for key, value in context.invocation_metadata():
        if key == "authorization" and isinstance(value, str):
            scheme, _, token = value.partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return None


if TYPE_CHECKING:
    _Handler = grpc.RpcMethodHandler[Any, Any]
    _GenericHandler = grpc.GenericRpcHandler[Any, Any]
else:
    _Handler = grpc.RpcMethodHandler
    _GenericHandler = grpc.GenericRpcHandler


class ServiceHandlers(_GenericHandler):
    """The service's wrapped handlers by method path; a lookup counts the call as started.

    Counted here, before grpcio reads the request: a call it then refuses (over
    --max-message-bytes) still counts in grpc_server_started_total.
    """

    def __init__(self, handlers: dict[str, tuple[_Handler, cells.Cell]]) -> None:
        self._handlers = handlers

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> _Handler | None:
        entry = self._handlers.get(handler_call_details.method)
        if entry is None:
            return None
        cells.write(entry[1], 1.0)
        return entry[0]


class TokendInterceptor:
    """Wraps the TokenizerService's handlers: request ids, auth, draining, errors, metrics."""

    def __init__(self, state: ServerState, *, admin_token: str | None) -> None:
        self.state = state
        self.admin_token = admin_token

    def handlers(self, methods: dict[str, _Handler]) -> ServiceHandlers:
        """``methods`` (name -> the servicer's handler), each wrapped once."""
        wrapped = {}
        for method, handler in methods.items():
            labels = (_grpc_type(handler), SERVICE, method)
            wrapped[SERVICE_PREFIX + method] = (
                self._wrap_handler(method, labels, handler),
                cells.counter_cell(metrics.GRPC_STARTED, *labels),
            )
        return ServiceHandlers(wrapped)

    def _wrap_handler(self, method: str, labels: _Labels, handler: _Handler) -> _Handler:
        deserializer = handler.request_deserializer
        kwargs = {
            # A request that does not decode reaches the wrapper as an Undecodable (wire.py)
            # instead of failing inside grpcio as an uncounted INTERNAL.
            "request_deserializer": (
                None if deserializer is None
                else _counting(lenient(deserializer), method, labels)
            ),
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(method, labels, handler.unary_unary, streaming=False), **kwargs
            )
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                self._wrap_unary(method, labels, handler.stream_unary, streaming=True), **kwargs
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(method, labels, handler.unary_stream, streaming=False), **kwargs
            )
        assert handler.stream_stream is not None
        return grpc.stream_stream_rpc_method_handler(
            self._wrap_stream(method, labels, handler.stream_stream, streaming=True), **kwargs
        )

    # -- wrappers -------------------------------------------------------------------------

    def _before(
        self, method: str, context: grpc.ServicerContext, *, streaming: bool = False
    ) -> str:
        rid = request_id(context)
        if streaming:
            # A stream's caller may want the id before the stream ends. (Not for unary
            # calls: a separate initial-metadata send costs a round of gRPC work per call.)
            context.send_initial_metadata(((REQUEST_ID_KEY, rid),))
        context.set_trailing_metadata(((REQUEST_ID_KEY, rid),))
        if self.state.draining:
            raise Unavailable("the server is shutting down; retry on another instance")
        if method in ADMIN_METHODS and self.admin_token is not None:
            token = bearer_token(context)
            if token is None:
                raise Unauthenticated(
                    f"{method} needs the admin token: send metadata "
                    "'authorization: Bearer <token>'"
                )
            if not hmac.compare_digest(token.encode(), self.admin_token.encode()):
                raise PermissionDenied(
                    f"{method}: the admin token in 'authorization: Bearer <token>' is wrong"
                )
        return rid

    def _wrap_unary(
        self, method: str, labels: _Labels, behavior: Callable[..., Any], *, streaming: bool
    ) -> Callable[..., Any]:
        calls = _Calls.of(method, labels)
        ok = grpc.StatusCode.OK

        def wrapped(request: Any, context: grpc.ServicerContext) -> Any:
            start = time.perf_counter()
            rid = ""
            code = ok
            try:
                rid = self._before(method, context)
                return behavior(_decoded(request, streaming), context)
            except Exception as exc:
                code = _code_of(exc, context)
                self._fail(method, context, exc, rid, code)
            finally:
                calls.finish(code, start, rid, sent=code is ok)

        return wrapped

    def _wrap_stream(
        self, method: str, labels: _Labels, behavior: Callable[..., Any], *, streaming: bool
    ) -> Callable[..., Any]:
        calls = _Calls.of(method, labels)

        def wrapped(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            start = time.perf_counter()
            rid = ""
            code = grpc.StatusCode.OK
            recorded = threading.Lock()

            def record(final: grpc.StatusCode) -> None:
                if recorded.acquire(blocking=False):  # once: by the finally or the callback
                    calls.finish(final, start, rid)

            # subtle: when the client cancels while this generator waits at a `yield`, gRPC
            # never resumes it, so the `finally` below would only run at garbage collection.
            # The termination callback records the call then (it is a no-op after a finish).
            context.add_callback(lambda: record(grpc.StatusCode.CANCELLED))
            try:
                rid = self._before(method, context, streaming=True)
                yield from _counted(behavior(_decoded(request, streaming), context), calls.sent)
            except Exception as exc:
                code = _code_of(exc, context)
                self._fail(method, context, exc, rid, code)
            except GeneratorExit:
                code = grpc.StatusCode.CANCELLED
                raise
            finally:
                record(code)

        return wrapped

    def _fail(
        self,
        method: str,
        context: grpc.ServicerContext,
        exc: Exception,
        rid: str,
        code: grpc.StatusCode,
    ) -> None:
        """Abort the call with the status of ``exc`` (this raises, as context.abort does)."""
        if not context.is_active():  # the client left (cancelled / deadline): nobody to tell
            return
        metadata = ((REQUEST_ID_KEY, rid),) if rid else ()
        if isinstance(exc, TokendError):
            log_event("rpc_error", method=method, code=code.name, request_id=rid,
                      error=bounded(str(exc)), field=field_of(exc))
            context.abort_with_status(status_for(exc, metadata))
        log_event("rpc_internal_error", level=logging.ERROR, method=method, request_id=rid,
                  error=repr(exc), traceback=_format_exc(exc))
        context.abort(grpc.StatusCode.INTERNAL, f"internal error (request id {rid})")


def _decoded(request: Any, streaming: bool) -> Any:
    """The request (or request iterator), raising the error of one that did not decode."""
    if streaming:
        return _checked_stream(request)
    if isinstance(request, Undecodable):
        raise request.error
    return request


def _checked_stream(requests: Iterator[Any]) -> Iterator[Any]:
    for request in requests:
        if isinstance(request, Undecodable):
            raise request.error
        yield request


def _code_of(exc: Exception, context: grpc.ServicerContext) -> grpc.StatusCode:
    if isinstance(exc, TokendError):
        return code_for(exc)
    if not context.is_active():
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.INTERNAL


_Labels = tuple[str, str, str]  # (grpc_type, grpc_service, grpc_method)


def _grpc_type(handler: _Handler) -> str:
    """The go-grpc-prometheus ``grpc_type`` of a handler."""
    if handler.request_streaming:
        return "bidi_stream" if handler.response_streaming else "client_stream"
    return "server_stream" if handler.response_streaming else "unary"


def _counting(
    deserialize: Callable[[bytes], Any], method: str, labels: _Labels
) -> Callable[[bytes], Any]:
    """Count every request message grpcio hands us (and its bytes) as it is deserialized."""
    received = cells.counter_cell(metrics.GRPC_MSG_RECEIVED, *labels)
    received_bytes = cells.counter_cell(metrics.REQUEST_BYTES, method)
    write = cells.write

    def counted(data: bytes) -> Any:
        write(received, 1.0, received_bytes, len(data))
        return deserialize(data)

    return counted


def _counted(responses: Iterator[Any], sent: cells.Cell) -> Iterator[Any]:
    """``responses``, counting each one sent; closing this closes them."""
    try:
        for response in responses:
            cells.write(sent, 1.0)
            yield response
    finally:
        close = getattr(responses, "close", None)
        if close is not None:
            close()


class _Calls:
    """One method's per-call metric cells (``cells.py``), bound on first use: its latency
    histograms, messages sent, and by status code its calls and handled calls."""

    __slots__ = ("_codes", "labels", "latency", "method", "sent")
    _all: ClassVar[dict[tuple[str, _Labels], _Calls]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, method: str, labels: _Labels) -> None:
        self.method = method
        self.labels = labels
        self.latency = (cells.HistogramCells(metrics.RPC_SECONDS, method),
                        cells.HistogramCells(metrics.GRPC_HANDLING_SECONDS, *labels))
        self.sent = cells.counter_cell(metrics.GRPC_MSG_SENT, *labels)
        self._codes: dict[grpc.StatusCode, tuple[cells.Cell, cells.Cell]] = {}

    @classmethod
    def of(cls, method: str, labels: _Labels) -> _Calls:
        key = (method, labels)
        calls = cls._all.get(key)
        if calls is None:
            with cls._lock:
                calls = cls._all.setdefault(key, cls(method, labels))
        return calls

    def _by_code(self, code: grpc.StatusCode) -> tuple[cells.Cell, cells.Cell]:
        pair = self._codes.get(code)
        if pair is None:  # a race makes two equal pairs bound to the same values: harmless
            pair = self._codes[code] = (
                cells.counter_cell(metrics.RPCS, self.method, code.name),
                cells.counter_cell(metrics.GRPC_HANDLED, *self.labels, code.name))
        return pair

    def finish(self, code: grpc.StatusCode, start: float, rid: str, *, sent: bool = False
               ) -> None:
        """Record a finished call (and its one response message, when ``sent``)."""
        seconds = time.perf_counter() - start
        calls, handled = self._by_code(code)
        if sent:
            cells.observe(self.latency, seconds, calls, 1.0, handled, 1.0, self.sent, 1.0)
        else:
            cells.observe(self.latency, seconds, calls, 1.0, handled, 1.0)
        # An access log line per call only at DEBUG (--log-level DEBUG): calls are not events.
        if log_enabled(logging.DEBUG):  # (its fields are not even built otherwise)
            log_event("rpc", level=logging.DEBUG, method=self.method, code=code.name,
                      ms=round(seconds * 1000, 3), request_id=rid)


def _record(
    method: str, code: grpc.StatusCode, start: float, rid: str, labels: _Labels | None = None
) -> None:
    """Record a finished call of ``method`` that started at ``start`` (perf_counter)."""
    _Calls.of(method, labels or ("unary", SERVICE, method)).finish(code, start, rid)


def _format_exc(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))
