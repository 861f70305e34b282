"""What a refused HTTP call answers: the facts of the refusal, in the shape its API uses.

``ErrorFacts`` holds the HTTP status, the gRPC status name, the error class, a bounded message
that starts with the field, and the field; a *shape* turns them into the JSON body: tokend's own
(``tokend_error``, every JSON API route) or a vendor's (``vendors.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokend.core.errors import TokendError
from tokend.server.errors import bounded, code_for, field_of, http_status_for, public_message


@dataclass(frozen=True, slots=True)
class ErrorFacts:
    status: int  # the HTTP status (server/errors.py's HTTP_STATUS_TABLE)
    code: str  # the gRPC status name: INVALID_ARGUMENT, NOT_FOUND...
    kind: str  # the tokend.core.errors class name
    message: str  # bounded, starts with the field when there is one
    field: str | None


Shape = Callable[[ErrorFacts], dict[str, Any]]


def facts_of(exc: TokendError) -> ErrorFacts:
    """The facts of a domain error: status from the one table, message naming the field, with
    server folders hidden and at most a bounded prefix of any value."""
    field = field_of(exc)
    message = public_message(str(exc) or type(exc).__name__)
    if field is not None and not message.startswith(field):
        message = f"{field}: {message}"
    return ErrorFacts(http_status_for(exc), code_for(exc).name, type(exc).__name__,
                      bounded(message), field)


def internal(request_id: str) -> ErrorFacts:
    """The facts of an unexpected failure: nothing of it is sent but the request id."""
    return ErrorFacts(500, "INTERNAL", "InternalError",
                      f"internal error (request id {request_id})", None)


def tokend_error(e: ErrorFacts) -> dict[str, Any]:
    """tokend's JSON error: ``{"error": {"message", "code", "status", "type", "field"}}``."""
    return {"error": {"message": e.message, "code": e.status, "status": e.code,
                      "type": e.kind, "field": e.field}}
