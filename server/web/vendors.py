"""The vendors' count-tokens endpoints, on the same ``App.count`` as ``POST /count``.

``POST /v1/messages/count_tokens`` (Anthropic), ``POST /v1/responses/input_tokens`` (OpenAI's
Responses API) and ``POST /v1beta/models/{model}:countTokens`` (Gemini; ``/v1/models/...`` too)
take their vendor's body and answer its shape, so an SDK pointed at tokend's base URL gets its
count. The body is read and guarded as every JSON call's (``app.WebApi.json_call``: Host,
Content-Type, size, time); ``tokend.core.counting.vendor_requests`` turns it into chat messages
and tools; ``App.count`` counts them under the server's limits. tokend's own facts ride along
under ``"tokend"``, which the SDKs ignore. A refusal gets the vendor's error shape, naming the
vendor's field. Authentication headers (``x-api-key``, ``Authorization``, ``x-goog-api-key``)
are accepted and ignored: counting needs no key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tokend.core.counting.vendor_requests import ChatRequest
from tokend.core.counting.vendor_requests.anthropic import anthropic_request
from tokend.core.counting.vendor_requests.gemini import gemini_request
from tokend.core.counting.vendor_requests.responses import responses_request
from tokend.core.errors import TokendError
from tokend.server.app.counting import Counted
from tokend.server.app.quoting import count_request
from tokend.server.errors import with_field
from tokend.server.web.refusals import ErrorFacts, Shape

if TYPE_CHECKING:
    from tokend.server.web.app import WebApi
    from tokend.server.web.dispatch import JsonAnswer
    from tokend.server.web.dispatch import Route as DirectRoute

ANTHROPIC = "/v1/messages/count_tokens"
RESPONSES = "/v1/responses/input_tokens"
GEMINI = ("/v1beta/models/{model}:countTokens", "/v1/models/{model}:countTokens")
PATHS = [f"POST {ANTHROPIC}", f"POST {RESPONSES}", *(f"POST {p}" for p in GEMINI)]
# The request's own field (the typed CountRequest's) -> the vendor's, for refusals App.count
# makes after the translation; ``messages[i]`` maps through ChatRequest.origins.
_FIELDS = {"tools_json": "tools", "tool_choice": "tool_choice", "tokenizer": "model",
           "model": "model"}
_MESSAGE = re.compile(r"messages\[(\d+)\]")
_GEMINI_PREFIXES = ("/v1beta/models/", "/v1/models/")


def handler_label(path: str) -> str | None:
    """The metrics label of a vendor path (a fixed set), None for any other path.

    >>> handler_label("/v1beta/models/gemini-2.5-flash:countTokens")
    'gemini_count_tokens'
    """
    if path == ANTHROPIC:
        return "anthropic_count_tokens"
    if path == RESPONSES:
        return "openai_input_tokens"
    if gemini_model(path):
        return "gemini_count_tokens"
    return None


class VendorRoutes:
    """The three vendor calls, bound to one ``WebApi`` (its app, pool, guards)."""

    def __init__(self, api: WebApi) -> None:
        self.api = api

    async def anthropic(self, request: Request) -> Response | JsonAnswer:
        return await _call(self.api, request, anthropic_error, anthropic_request,
                           lambda counted: {"input_tokens": counted.total}, root="messages")

    async def responses(self, request: Request) -> Response | JsonAnswer:
        return await _call(self.api, request, openai_error, responses_request,
                           lambda counted: {"object": "response.input_tokens",
                                            "input_tokens": counted.total}, root="input")

    async def gemini(self, request: Request) -> Response | JsonAnswer:
        model = gemini_model(request.url.path) or ""
        return await _call(self.api, request, gemini_error,
                           lambda body: gemini_request(model, body),
                           lambda counted: {"totalTokens": counted.total}, root="contents")

    def routes(self) -> list[Route]:
        """Starlette routes (for other methods' 405s; POSTs are dispatched directly)."""
        return [Route(ANTHROPIC, self.anthropic, methods=["POST"]),
                Route(RESPONSES, self.responses, methods=["POST"]),
                *(Route(path, self.gemini, methods=["POST"]) for path in GEMINI)]

    def posts(self) -> dict[str, DirectRoute]:
        """The fixed POST paths, for ``dispatch.HttpMetrics``' direct dispatch."""
        return {ANTHROPIC: self.anthropic, RESPONSES: self.responses}

    def match(self, path: str) -> DirectRoute | None:
        """The route of a POST path that names a model (Gemini's), else None."""
        return self.gemini if gemini_model(path) else None


def gemini_model(path: str) -> str | None:
    """The model of a Gemini countTokens path, or None for any other path.

    >>> gemini_model("/v1beta/models/gemini-2.5-flash:countTokens")
    'gemini-2.5-flash'
    >>> gemini_model("/v1beta/models/a/b:countTokens") is None
    True
    """
    for prefix in _GEMINI_PREFIXES:
        if path.startswith(prefix) and path.endswith(":countTokens"):
            model = path[len(prefix):-len(":countTokens")]
            return model if model and "/" not in model else None
    return None


async def _call(
    api: WebApi,
    request: Request,
    shape: Shape,
    translate: Callable[[dict[str, Any]], ChatRequest],
    answer: Callable[[Counted], dict[str, Any]],
    *,
    root: str,
) -> Response | JsonAnswer:
    async def work(body: dict[str, Any], inline: bool) -> dict[str, Any]:
        chat = translate(body)
        req = count_request(chat)
        inline = inline and api.service.ready("", chat.model)
        try:
            counted = await api.run(inline, request, api.service.count, req)
        except TokendError as exc:
            raise vendor_field(exc, chat, root) from None
        return {**answer(counted), "tokend": facts(counted, chat)}
    return await api.json_call(request, work, shape=shape)


def facts(counted: Counted, chat: ChatRequest) -> dict[str, Any]:
    """tokend's facts about a count: exact or why not, the model, tokenizer, rule, window,
    and its breakdown (system, messages, tools, images, framing)."""
    reasons = [r for r in (counted.estimate_reason, *chat.notes) if r]
    return {
        "exact": counted.exact and not chat.notes,
        "estimate_reason": "; ".join(reasons),
        "model": counted.model,
        "tokenizer": counted.tokenizer,
        "chat_rule": counted.chat_rule,
        "context_window": counted.context_window,
        "max_output_tokens": counted.max_output_tokens,
        "tools_tokens": counted.tools_count,
        "images_tokens": counted.images_count,
        "breakdown": counted.breakdown.as_dict(),  # the parts, summing to the count
    }


def vendor_field(exc: TokendError, chat: ChatRequest, root: str) -> TokendError:
    """``exc`` named by the vendor's field: ``messages[i]`` becomes the field message i came
    from, the typed request's own names become the vendor's."""
    field = getattr(exc, "field", None)
    if not isinstance(field, str):
        return exc
    found = _MESSAGE.match(field)
    if found is not None and int(found[1]) < len(chat.origins):
        named = chat.origins[int(found[1])]
    elif field in ("texts", "messages"):
        named = root
    else:
        named = _FIELDS.get(field, field)
    message = str(exc)
    exc.args = (message.removeprefix(f"{field}: ").removeprefix(f"{field} "),)
    return with_field(exc, named)


# -- the vendors' error shapes ----------------------------------------------------------------


def _said(e: ErrorFacts) -> str:
    """The message, always starting with ``field: `` when there is a field."""
    if e.field is None or e.message.startswith(f"{e.field}: "):
        return e.message
    return f"{e.field}: {e.message}"


_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                    429: "rate_limit_error", 503: "overloaded_error"}


def anthropic_error(e: ErrorFacts) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}``, as Anthropic's API answers."""
    return {"type": "error",
            "error": {"type": _ANTHROPIC_TYPES.get(e.status, "api_error"),
                      "message": _said(e)}}


def openai_error(e: ErrorFacts) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}``, as OpenAI's API answers."""
    kind = "invalid_request_error" if e.status < 500 else "server_error"
    return {"error": {"message": _said(e), "type": kind, "param": e.field,
                      "code": e.code.lower()}}


def gemini_error(e: ErrorFacts) -> dict[str, Any]:
    """``{"error": {"code", "message", "status"}}`` (google.rpc.Status as JSON), with a
    BadRequest detail naming the field, as Google's APIs answer."""
    error: dict[str, Any] = {"code": e.status, "message": _said(e), "status": e.code}
    if e.field is not None:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                             "fieldViolations": [{"field": e.field,
                                                  "description": _said(e)}]}]
    return {"error": error}
