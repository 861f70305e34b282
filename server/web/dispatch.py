"""What every HTTP call passes through: its metrics, the JSON API's direct dispatch, and
the 200 answer sent as two ASGI messages."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from tokend.server import cells, metrics
from tokend.server.interceptors import REQUEST_ID_KEY
from tokend.server.web.vendors import handler_label as vendor_label

# The ``handler`` label of the HTTP metrics: a fixed set, never the client's path.
HANDLERS = {"/": "page", "/tokenize": "tokenize", "/detokenize": "detokenize",
            "/count": "count", "/tokenizers": "tokenizers", "/health": "health", "/diff": "diff"}
HANDLERS["/quote"] = "quote"  # issue 32: price quotes


# The JSON of every answer: compact, UTF-8 as is, no NaN (Starlette's JSONResponse settings).
_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class JsonAnswer:
    """A 200 JSON answer as the two ASGI messages it is.

    subtle: Starlette's JSONResponse builds an encoder and a header object per answer; sent
    this way a 1 KB /count costs ~3% less CPU (bench/bench_http.py). Errors, rare, keep using
    JSONResponse (``error_response``).
    """

    __slots__ = ("body", "request_id")
    status_code = 200

    def __init__(self, content: dict[str, Any], request_id: str) -> None:
        self.body = _JSON.encode(content).encode("utf-8")
        self.request_id = request_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-length", str(len(self.body)).encode()),
            (b"content-type", b"application/json"),
            (REQUEST_ID_KEY.encode(), self.request_id.encode())]})
        await send({"type": "http.response.body", "body": self.body})


Route = Callable[[Request], Awaitable["Response | JsonAnswer"]]


class HttpMetrics:
    """ASGI middleware: ``tokend_http_requests_total{handler, method, code}`` and
    ``tokend_http_request_seconds{handler}`` for every request (handler: a fixed set).

    It also hands the JSON API's POST calls (``posts``: path -> route) to their route at once.
    subtle: Starlette's stack (its two exception middlewares, the router's regex matching, the
    route's own exception wrapper) cost ~20% of a 1 KB /count's CPU, and the JSON routes need
    none of it: ``WebApi._json_call`` answers every error itself. Other paths and methods go
    through Starlette as before (404 / 405 / redirects included).
    """

    def __init__(self, app: ASGIApp,
                 posts: Mapping[str, Route] | None = None,
                 match: Callable[[str], Route | None] | None = None) -> None:
        self.app = app
        self.posts = posts or {}
        self.match = match  # the POST route of a path with a parameter (vendors.py), or None
        # (handler, method, status) labels -> the cells of tokend_http_request_seconds and
        # tokend_http_requests_total (a bounded set: the labels are).
        self._cells: dict[tuple[str, str, int],
                          tuple[tuple[cells.HistogramCells], cells.Cell]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500
        recorded = False

        def record() -> None:
            nonlocal recorded
            recorded = True
            seconds = time.perf_counter() - start
            method = scope.get("method", "")
            key = (handler_label(scope.get("path", "")),
                   method if method in ("GET", "POST", "HEAD") else "other", status)
            bound = self._cells.get(key)
            if bound is None:  # a race binds two equal entries to the same values: harmless
                bound = self._cells[key] = (
                    (cells.HistogramCells(metrics.HTTP_SECONDS, key[0]),),
                    cells.counter_cell(metrics.HTTP_REQUESTS, key[0], key[1], str(status)))
            cells.observe(bound[0], seconds, bound[1], 1.0)

        async def send_status(message: AsgiMessage) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                record()  # before the last byte goes out: a client that got it sees it counted
            await send(message)

        route = None
        if scope["method"] == "POST":
            route = self.posts.get(scope["path"])
            if route is None and self.match is not None:
                route = self.match(scope["path"])
        try:
            if route is not None:
                response = await route(Request(scope, receive))
                await response(scope, receive, send_status)
            else:
                await self.app(scope, receive, send_status)
        finally:
            if not recorded:  # no answer went out (the client left, or an error escaped)
                record()


def handler_label(path: str) -> str:
    """The metrics label of a path.

    >>> handler_label("/tokenize"), handler_label("/tokenizers/gpt2"), handler_label("/x")
    ('tokenize', 'tokenizer', 'other')
    """
    if path in HANDLERS:
        return HANDLERS[path]
    if path.startswith("/tokenizers/"):
        return "lint" if path.endswith("/lint") else "tokenizer"
    if path.startswith("/static/"):
        return "static"
    return vendor_label(path) or "other"
