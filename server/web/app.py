"""The HTTP JSON API and the inspector page: Starlette routes onto the application layer.

``/tokenize``, ``/detokenize``, ``/count`` and ``/tokenizers`` are the paths TEI and vLLM
use; each body is the RPC's request in JSON (checked by ``convert.py``, built into the app's
typed request by ``bodies.py``) and each call runs the same ``App`` method the gRPC servicer
calls (encode, decode, count, list_tokenizers, get_tokenizer) on the worker's handler pool, so
semantics, limits and refusals are the gRPC ones by construction; only the status code is
HTTP's (``server/errors.py``, ``HTTP_STATUS_TABLE``). The vendors' count-tokens paths
(Anthropic's, OpenAI's Responses, Gemini's) are routed onto the same ``count`` by
``vendors.py``, through the same ``json_call``. ``GET /tokenizers/{ref}/lint`` and
``GET /diff`` take their fields as query parameters (``convert.parse_query``) and answer in the
CLI's ``--json`` shapes (App.lint, App.diff; always on the handler pool, seconds of CPU that
stop when the client hangs up). ``/`` is the inspector page
(``static/``). None of these needs the admin token, as their RPCs do not; training stays on
gRPC.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote_to_bytes

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Scope

from tokend.core.errors import Cancelled, LimitExceeded, TokendError, Unavailable, shown
from tokend.server import limits
from tokend.server.app.context import UNBOUNDED, CallContext
from tokend.server.app.encoding import EncodeRequest
from tokend.server.app.service import App
from tokend.server.errors import bounded, field_of
from tokend.server.interceptors import REQUEST_ID_KEY, ServerState, new_request_id
from tokend.server.logs import log_event
from tokend.server.web import bodies, schema, vendors
from tokend.server.web.convert import invalid, parse_body, parse_query
from tokend.server.web.disconnect import HttpCall, watch
from tokend.server.web.dispatch import HttpMetrics, JsonAnswer
from tokend.server.web.guards import HostRule, check_content_type
from tokend.server.web.refusals import Shape, facts_of, internal, tokend_error

STATIC = Path(__file__).resolve().parent / "static"
JSON_API = ["POST /tokenize", "POST /detokenize", "POST /count", "POST /quote", "GET /tokenizers",
            "GET /tokenizers/{ref}", "GET /tokenizers/{ref}/lint", "GET /diff", "GET /health",
            *vendors.PATHS]
_MAX_REQUEST_ID = 128
_REQUEST_ID = REQUEST_ID_KEY.encode()
# How much of a refused (too large) body is read and dropped before the 413 goes out.
DRAIN_BYTES = 64 << 20
DRAIN_SECONDS = 5.0
# A call whose body is at most this many bytes, and whose tokenizer is loaded, runs on the HTTP
# thread itself: handing it to the handler pool (two thread wake-ups and a future chained
# across threads) cost more CPU than the call's own work (bench/bench_http.py,
# docs/benchmarks.md). Larger bodies, and calls that may load a tokenizer or read the
# registry, go to the pool under the same --busy-calls rule as gRPC calls.
INLINE_BYTES = 16 * 1024
T = TypeVar("T")
R = TypeVar("R")


class WebApi:
    """The routes, bound to one worker's app, handler pool and draining state."""

    def __init__(self, app: App, executor: Executor, state: ServerState,
                 *, max_body_bytes: int, body_seconds: float = 30.0,
                 hosts: HostRule | None = None) -> None:
        self.service = app
        self.executor = executor
        self.state = state
        self.max_body_bytes = max_body_bytes
        self.body_seconds = body_seconds
        self.hosts = hosts or HostRule(frozenset(), bind="127.0.0.1")
        self.vendors = vendors.VendorRoutes(self)

    def app(self) -> ASGIApp:
        routes = [  # the busiest first: the router tries them in order
            Route("/count", self.count, methods=["POST"]),
            Route("/quote", self.quote, methods=["POST"]),
            Route("/tokenize", self.tokenize, methods=["POST"]),
            Route("/detokenize", self.detokenize, methods=["POST"]),
            Route("/", self.page, methods=["GET"]),
            Route("/health", self.health, methods=["GET"]),
            Route("/tokenizers", self.list_tokenizers, methods=["GET"]),
            Route("/tokenizers/{ref:path}/lint", self.lint, methods=["GET"]),
            Route("/tokenizers/{ref:path}", self.get_tokenizer, methods=["GET"]),
            Route("/diff", self.diff, methods=["GET"]),
            *self.vendors.routes(),  # the vendors' count-tokens calls, on App.count too
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]
        app = Starlette(routes=routes, exception_handlers={HTTPException: _http_exception})
        posts = {"/count": self.count, "/quote": self.quote, "/tokenize": self.tokenize,
                 "/detokenize": self.detokenize, **self.vendors.posts()}
        return HttpMetrics(app, posts, self.vendors.match)

    # -- routes ---------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    async def health(self, request: Request) -> Response:
        serving = not self.state.draining
        return JSONResponse({"status": "serving" if serving else "draining"},
                            status_code=200 if serving else 503)

    async def tokenize(self, request: Request) -> Response | JsonAnswer:
        async def work(body: dict[str, Any], inline: bool) -> dict[str, Any]:
            req = bodies.encode_request(body)
            inline = inline and self.service.ready(req.tokenizer)
            return await self.run(inline, request, self._tokenize, req)
        return await self.json_call(request, work)

    def _tokenize(self, req: EncodeRequest, context: CallContext) -> dict[str, Any]:
        result = self.service.encode(req, context)
        fallback = self.service.byte_fallback_ids(result) if req.include_details \
            else frozenset()
        return bodies.tokens_json(result, fallback)

    async def detokenize(self, request: Request) -> Response | JsonAnswer:
        async def work(body: dict[str, Any], inline: bool) -> dict[str, Any]:
            req = bodies.decode_request(body)
            inline = inline and self.service.ready(req.tokenizer)
            return bodies.decoded_json(
                await self.run(inline, request, self.service.decode, req))
        return await self.json_call(request, work)

    async def count(self, request: Request) -> Response | JsonAnswer:
        async def work(body: dict[str, Any], inline: bool) -> dict[str, Any]:
            req = bodies.count_request(body)
            inline = inline and self.service.ready(req.tokenizer, req.model)
            return bodies.counted_json(await self.run(inline, request, self.service.count, req))
        return await self.json_call(request, work)

    async def quote(self, request: Request) -> Response | JsonAnswer:
        """What a call will cost (``App.quote``); the answer is ``Quote.as_dict``."""
        async def work(body: dict[str, Any], inline: bool) -> dict[str, Any]:
            req = bodies.quote_request(body)
            quoted = await self.run(False, request, self.service.quote, req)
            return quoted.as_dict()
        return await self.json_call(request, work)

    async def list_tokenizers(self, request: Request) -> Response | JsonAnswer:
        async def work(body: dict[str, Any], inline: bool) -> dict[str, Any]:
            return bodies.tokenizers_json(await self._pooled(self.service.list_tokenizers))
        return await self.json_call(request, work, body=False)

    async def get_tokenizer(self, request: Request) -> Response | JsonAnswer:
        async def work(body: dict[str, Any], inline: bool) -> dict[str, Any]:
            ref = _path_ref(request)
            return bodies.manifest_json(await self._pooled(self.service.get_tokenizer, ref))
        return await self.json_call(request, work, body=False)

    async def lint(self, request: Request) -> Response | JsonAnswer:
        async def work(body: dict[str, Any], inline: bool) -> dict[str, Any]:
            query = parse_query(request.scope.get("query_string", b""), schema.LINT)
            req = bodies.lint_request(_path_ref(request, suffix=b"/lint"), query)
            return bodies.lint_json(await self.run(False, request, self.service.lint, req))
        return await self.json_call(request, work, body=False)

    async def diff(self, request: Request) -> Response | JsonAnswer:
        async def work(body: dict[str, Any], inline: bool) -> dict[str, Any]:
            query = parse_query(request.scope.get("query_string", b""), schema.DIFF)
            req = bodies.diff_request(query)
            return bodies.diff_json(await self.run(False, request, self.service.diff, req))
        return await self.json_call(request, work, body=False)

    # -- the common path of a JSON call -----------------------------------------------------

    async def json_call(
        self,
        request: Request,
        work: Callable[[dict[str, Any], bool], Awaitable[dict[str, Any]]],
        *,
        body: bool = True,
        shape: Shape = tokend_error,
    ) -> Response | JsonAnswer:
        """Refuse while draining, read and parse the body, run ``work`` (told whether the body
        is small enough to run inline); a TokendError becomes its HTTP status with a JSON error
        naming the field, in ``shape`` (tokend's own, or a vendor's: ``vendors.py``)."""
        host, content_type, rid = _heads(request.scope)
        try:
            if self.state.draining:
                raise Unavailable("the server is draining (shutting down): retry on another "
                                  "instance or after its restart")
            self.hosts.check(host)
            if body:
                check_content_type(content_type)
            data = await self._timed_body(request) if body else b"{}"
            result = await work(parse_body(data), len(data) <= INLINE_BYTES)
            response: Response | JsonAnswer = JsonAnswer(result, rid)
        except TokendError as exc:
            response = error_response(exc, shape)
            log_event("http_error", path=request.url.path[:200], status=response.status_code,
                      request_id=rid, error=bounded(str(exc)), field=field_of(exc))
            response.headers[REQUEST_ID_KEY] = rid
        except Exception as exc:  # logged, never sent to the client
            log_event("http_internal_error", level=logging.ERROR, path=request.url.path[:200],
                      request_id=rid, error=repr(exc),
                      traceback="".join(traceback.format_exception(exc)))
            response = JSONResponse(shape(internal(rid)), status_code=500)
            response.headers[REQUEST_ID_KEY] = rid
        return response

    async def _timed_body(self, request: Request) -> bytes:
        """The body, which must arrive within --http-body-seconds (a stalled upload is
        refused instead of holding its connection)."""
        # subtle: when uvicorn holds the whole body already (its cycle's last message came
        # and receive() will not wait), the timeout is not armed: a timer and its handle cost
        # ~3% of a 1 KB /count's CPU (bench/bench_http.py). Any other receive is timed.
        cycle = getattr(request.receive, "__self__", None)
        event = getattr(cycle, "message_event", None)
        if getattr(cycle, "more_body", True) is False and event is not None and event.is_set():
            return await self._body(request)
        # subtle: asyncio.timeout, not wait_for: on Python 3.11 wait_for runs the read as a
        # task of its own, which cost ~15% of a 1 KB /count's CPU (two more event-loop turns).
        try:
            async with asyncio.timeout(self.body_seconds):
                return await self._body(request)
        except TimeoutError:
            raise limits.hit(LimitExceeded("seconds to receive the request body",
                                           math.ceil(self.body_seconds) + 1,
                                           math.ceil(self.body_seconds), "--http-body-seconds"),
                             "request") from None

    async def _body(self, request: Request) -> bytes:
        """The body, refused past --max-message-bytes (the gRPC message limit)."""
        limit = self.max_body_bytes
        declared = _header(request.scope, b"content-length")
        if declared.isdigit() and int(declared) > limit:
            await _discard(request.stream())
            limits.check("request body size in bytes", int(declared), limit,
                         "--max-message-bytes", field="request")
        chunks: list[bytes] = []
        size = 0
        # subtle: ASGI messages read here, not through request.stream(): its async generator
        # cost ~4% of a 1 KB /count's CPU (bench/bench_http.py).
        receive = request.receive
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":  # a 499 logged, not an internal error
                raise Cancelled(f"the client hung up after {size} bytes of its request body, "
                                "before the call ran")
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:
                    await _discard(request.stream())
                    limits.check("request body size in bytes", size, limit,
                                 "--max-message-bytes", field="request")
                chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def run(self, inline: bool, request: Request,
                  method: Callable[[R, CallContext], T], req: R) -> T:
        """``method(req, context)`` here (``inline``, see INLINE_BYTES) or on the handler pool,
        under the same --busy-calls rule as gRPC; a pooled call is cancelled (HTTP 499, its
        work stopped between items) when the client disconnects before it ends."""
        if inline:
            return method(req, UNBOUNDED)
        call = HttpCall()
        future = asyncio.wrap_future(self.executor.submit(method, req, call))
        watcher = asyncio.ensure_future(watch(request.receive, call))
        try:
            return await future
        finally:
            watcher.cancel()

    async def _pooled(self, method: Callable[..., T], *args: Any) -> T:
        """``method(*args)`` on the handler pool (a call that reads the registry)."""
        return await asyncio.wrap_future(self.executor.submit(method, *args))


def error_response(exc: TokendError, shape: Shape = tokend_error) -> JSONResponse:
    """The JSON error of a domain error (``refusals.py``): its HTTP status, and in ``shape``
    a message that starts with the field and quotes at most a bounded prefix of any value."""
    facts = facts_of(exc)
    return JSONResponse(shape(facts), status_code=facts.status)


async def _http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (unknown path 404, wrong method 405) in the same JSON shape."""
    assert isinstance(exc, HTTPException)
    path = shown(request.url.path)
    message = (f"no route {request.method} {path}; the JSON API: {JSON_API}, the page: GET /"
               if exc.status_code == 404 else f"{request.method} {path}: {exc.detail}")
    return JSONResponse(
        {"error": {"message": message, "code": exc.status_code, "status": "HTTP",
                   "type": "HTTPException", "field": None}},
        status_code=exc.status_code, headers=exc.headers,
    )


def _path_ref(request: Request, suffix: bytes = b"") -> str:
    """The ``{ref}`` of /tokenizers/{ref}[suffix] from the raw path, refusing bytes that are
    not UTF-8 (the decoded path would have replaced them)."""
    raw = request.scope.get("raw_path") or request.url.path.encode()
    path = raw.split(b"?", 1)[0].removeprefix(b"/tokenizers/")
    data = unquote_to_bytes(path.removesuffix(suffix) if suffix else path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise invalid("tokenizer", f"not valid UTF-8 (byte {exc.start} of the value): "
                      "string fields must be valid UTF-8") from None


async def _discard(stream: AsyncIterator[bytes]) -> None:
    """Read and drop the rest of a refused body, up to DRAIN_BYTES / DRAIN_SECONDS.

    subtle: answering 413 while the client is still sending makes the server close a socket
    with unread bytes, which the kernel turns into a reset: the client then sees a broken pipe
    instead of the 413 (3 of 60 1-MiB requests on loopback). Reading the rest first, as nginx's
    lingering close does, lets the answer arrive; past the bound the connection is just closed.
    """
    async def drain() -> None:
        seen = 0
        async for chunk in stream:
            seen += len(chunk)
            if seen > DRAIN_BYTES:
                return

    with contextlib.suppress(TimeoutError, ClientDisconnect):
        await asyncio.wait_for(drain(), DRAIN_SECONDS)


def _heads(scope: Scope) -> tuple[str, str, str]:
    """(Host, Content-Type, the request id: the caller's ``x-request-id`` if it is sane, else a
    fresh one) in one pass over the headers, each its first occurrence as Starlette reads it.

    subtle: Starlette's ``request.headers`` builds a Headers object and scans the list once
    per lookup, four lookups per call (~2% of a 1 KB /count's CPU, bench/bench_http.py).
    """
    host = content_type = rid = None
    for name, value in scope["headers"]:
        if name == b"host":
            if host is None:
                host = value
        elif name == b"content-type":
            if content_type is None:
                content_type = value
        elif name == _REQUEST_ID and rid is None:
            rid = value
    given = rid.decode("latin-1") if rid is not None else ""
    if not (0 < len(given) <= _MAX_REQUEST_ID and given.isprintable()):
        given = new_request_id()
    return ((host or b"").decode("latin-1"), (content_type or b"").decode("latin-1"), given)


def _header(scope: Scope, name: bytes) -> str:
    """The first value of header ``name`` (lowercase), or ""."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")  # type: ignore[no-any-return]
    return ""
