"""One server interceptor for every tokend RPC: request ids, auth, draining, errors, metrics.

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
from typing import TYPE_CHECKING, Any

import grpc

from tokend.core.errors import (
    PermissionDenied,
    TokendError,
    Unauthenticated,
    Unavailable,
)
from tokend.server import metrics
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
    _Interceptor = grpc.ServerInterceptor[Any, Any]
    _Handler = grpc.RpcMethodHandler[Any, Any]
else:
    _Interceptor = grpc.ServerInterceptor
    _Handler = grpc.RpcMethodHandler


class TokendInterceptor(_Interceptor):
    def __init__(self, state: ServerState, *, admin_token: str | None) -> None:
        self.state = state
        self.admin_token = admin_token
        # path -> (original, ours, its grpc_server_started_total child)
        self._wrapped: dict[str, tuple[_Handler, _Handler, Any]] = {}

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], _Handler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> _Handler | None:
        handler = continuation(handler_call_details)
        method_path: str = handler_call_details.method
        if handler is None or not method_path.startswith(SERVICE_PREFIX):
            return handler
        # The service's handlers never change, so each method is wrapped once, not per call.
        cached = self._wrapped.get(method_path)
        if cached is None or cached[0] is not handler:
            method = method_path[len(SERVICE_PREFIX) :]
            labels = (_grpc_type(handler), SERVICE, method)
            wrapped = self._wrap_handler(method, labels, handler)
            cached = (handler, wrapped, metrics.child(metrics.GRPC_STARTED, *labels))
            self._wrapped[method_path] = cached
        # Counted here, before grpcio reads the request: a call it then refuses still counts.
        cached[2].inc()
        return cached[1]

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
        sent = metrics.child(metrics.GRPC_MSG_SENT, *labels)

        def wrapped(request: Any, context: grpc.ServicerContext) -> Any:
            start = time.perf_counter()
            rid = ""
            code = grpc.StatusCode.OK
            try:
                rid = self._before(method, context)
                response = behavior(_decoded(request, streaming), context)
                sent.inc()
                return response
            except Exception as exc:
                code = _code_of(exc, context)
                self._fail(method, context, exc, rid, code)
            finally:
                _record(method, code, start, rid, labels)

        return wrapped

    def _wrap_stream(
        self, method: str, labels: _Labels, behavior: Callable[..., Any], *, streaming: bool
    ) -> Callable[..., Any]:
        sent = metrics.child(metrics.GRPC_MSG_SENT, *labels)

        def wrapped(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            start = time.perf_counter()
            rid = ""
            code = grpc.StatusCode.OK
            recorded = threading.Lock()

            def record(final: grpc.StatusCode) -> None:
                if recorded.acquire(blocking=False):  # once: by the finally or the callback
                    _record(method, final, start, rid, labels)

            # subtle: when the client cancels while this generator waits at a `yield`, gRPC
            # never resumes it, so the `finally` below would only run at garbage collection.
            # The termination callback records the call then (it is a no-op after a finish).
            context.add_callback(lambda: record(grpc.StatusCode.CANCELLED))
            try:
                rid = self._before(method, context, streaming=True)
                yield from _counted(behavior(_decoded(request, streaming), context), sent)
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
    received = metrics.child(metrics.GRPC_MSG_RECEIVED, *labels)
    received_bytes = metrics.child(metrics.REQUEST_BYTES, method)

    def counted(data: bytes) -> Any:
        received.inc()
        received_bytes.inc(len(data))
        return deserialize(data)

    return counted


def _counted(responses: Iterator[Any], sent: Any) -> Iterator[Any]:
    """``responses``, counting each one sent; closing this closes them."""
    try:
        for response in responses:
            sent.inc()
            yield response
    finally:
        close = getattr(responses, "close", None)
        if close is not None:
            close()


def _record(
    method: str, code: grpc.StatusCode, start: float, rid: str, labels: _Labels | None = None
) -> None:
    seconds = time.perf_counter() - start
    labels = labels or ("unary", SERVICE, method)
    metrics.child(metrics.RPCS, method, code.name).inc()
    metrics.child(metrics.RPC_SECONDS, method).observe(seconds)
    metrics.child(metrics.GRPC_HANDLED, *labels, code.name).inc()
    metrics.child(metrics.GRPC_HANDLING_SECONDS, *labels).observe(seconds)
    # An access log line per call only at DEBUG (--log-level DEBUG): calls are not events.
    if log_enabled(logging.DEBUG):  # (its fields are not even built otherwise)
        log_event("rpc", level=logging.DEBUG, method=method, code=code.name,
                  ms=round(seconds * 1000, 3), request_id=rid)


def _format_exc(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))
