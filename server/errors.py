"""The one table from tokend.core.errors classes to gRPC status codes, and how to abort with them.

Servicers raise domain errors and never call ``context.abort`` themselves; the interceptor
(``interceptors.py``) catches a ``TokendError`` and aborts with ``status_for(exc)``. Anything
else is logged with its traceback and becomes INTERNAL with no traceback on the wire.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]

from tokend.core import errors as E  # noqa: N812 - E.UnknownTokenizer reads as a table
from tokend.server.app.fields import MAX_MESSAGE_CHARS, bounded, field_of, with_field

__all__ = [
    "HTTP_STATUS_TABLE",
    "MAX_MESSAGE_CHARS",
    "STATUS_TABLE",
    "RpcStatus",
    "bounded",
    "code_for",
    "field_of",
    "hide_paths",
    "http_status_for",
    "public_message",
    "status_for",
    "with_field",
]

# Most specific first: the first class the error is an instance of wins.
STATUS_TABLE: tuple[tuple[type[E.TokendError], grpc.StatusCode], ...] = (
    (E.UnknownTokenizer, grpc.StatusCode.NOT_FOUND),
    (E.UnknownJob, grpc.StatusCode.NOT_FOUND),
    (E.LimitExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (E.StorageFull, grpc.StatusCode.RESOURCE_EXHAUSTED),  # gRPC's own example: a full disk
    (E.StorageError, grpc.StatusCode.UNAVAILABLE),  # read-only / unwritable: a server problem
    (E.InvalidInput, grpc.StatusCode.INVALID_ARGUMENT),  # incl. InvalidName, UnknownTokenId...
    (E.AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    (E.CorruptData, grpc.StatusCode.DATA_LOSS),
    (E.FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (E.Cancelled, grpc.StatusCode.CANCELLED),
    (E.Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (E.PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (E.Unavailable, grpc.StatusCode.UNAVAILABLE),
    (E.DeadlineExceeded, grpc.StatusCode.DEADLINE_EXCEEDED),
)

# The same classes, in the same order, for the HTTP JSON API (server/web/): google.rpc.Code's
# documented HTTP mapping, except that a limit is 413 (the request is too large; google's 429
# would invite a retry that cannot succeed) and a full disk 507. 499 is "client closed
# request" (nginx's, google's for CANCELLED).
HTTP_STATUS_TABLE: tuple[tuple[type[E.TokendError], int], ...] = (
    (E.UnknownTokenizer, 404),
    (E.UnknownJob, 404),
    (E.LimitExceeded, 413),
    (E.StorageFull, 507),
    (E.StorageError, 503),
    (E.InvalidInput, 400),
    (E.AlreadyExists, 409),
    (E.CorruptData, 500),
    (E.FailedPrecondition, 400),
    (E.Cancelled, 499),
    (E.Unauthenticated, 401),
    (E.PermissionDenied, 403),
    (E.Unavailable, 503),
    (E.DeadlineExceeded, 504),
)


def http_status_for(exc: E.TokendError) -> int:
    """The HTTP status of a domain error (500 for a TokendError missing from the table).

    >>> http_status_for(E.LimitExceeded("texts batch size", 3, 2, "--max-batch"))
    413
    """
    for cls, status in HTTP_STATUS_TABLE:
        if isinstance(exc, cls):
            return status
    return 500


# (absolute server path, what a client sees instead), longest first: set once per process by
# hide_paths; a status message names the tokenizer/version (``tok/1/manifest.json``) instead of
# the folder the server keeps it in. Log lines keep the full path.
_HIDDEN: list[tuple[str, str]] = []


def hide_paths(places: Mapping[str, str | os.PathLike[str] | None]) -> None:
    """Keep these folders (label -> path) out of client messages from now on."""
    hidden = dict(_HIDDEN)
    for label, path in places.items():
        if path is None or "://" in str(path):
            continue  # an s3:// registry names no server folder
        for form in {os.fspath(path), os.path.realpath(path)}:
            hidden[form.rstrip(os.sep)] = label
    _HIDDEN[:] = sorted(hidden.items(), key=lambda item: -len(item[0]))


def public_message(message: str) -> str:
    """``message`` with every hidden folder cut off (inside it) or named by its label.

    >>> hide_paths({"the registry": "/srv/reg"})
    >>> public_message("/srv/reg/tok/1/manifest.json: manifest is missing")
    'tok/1/manifest.json: manifest is missing'
    >>> public_message("no tokenizer named 'x' in /srv/reg")
    "no tokenizer named 'x' in the registry"
    """
    for path, label in _HIDDEN:
        if path in message:
            message = message.replace(path + os.sep, "").replace(path, label)
    return message


def code_for(exc: E.TokendError) -> grpc.StatusCode:
    """The status code of a domain error (UNKNOWN for a TokendError missing from the table)."""
    for cls, code in STATUS_TABLE:
        if isinstance(exc, cls):
            return code
    return grpc.StatusCode.UNKNOWN


@dataclass(frozen=True)
class RpcStatus(grpc.Status):
    """A status to pass to ``context.abort_with_status`` (code, message, trailing metadata)."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, str | bytes], ...]


def status_for(
    exc: E.TokendError, extra_metadata: tuple[tuple[str, str | bytes], ...] = ()
) -> RpcStatus:
    """Build the status for a domain error, with google.rpc details where they help.

    Invalid input and limits carry a ``BadRequest`` field violation naming the request field
    (when known); the message starts with that field and names the offending value (a bounded
    prefix of it) and the rule or limit.
    """
    code = code_for(exc)
    field = field_of(exc)
    message = public_message(str(exc) or type(exc).__name__)
    if field is not None and not message.startswith(field):
        message = f"{field}: {message}"  # every message names its request field
    message = bounded(message)
    status = status_pb2.Status(code=_code_number(code), message=message)
    if field is not None and code in (
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.NOT_FOUND,
    ):
        detail = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field=field, description=message)
            ]
        )
        status.details.add().Pack(detail)
    error_info = error_details_pb2.ErrorInfo(reason=type(exc).__name__, domain="tokend")
    status.details.add().Pack(error_info)
    metadata = (*extra_metadata, ("grpc-status-details-bin", status.SerializeToString()))
    return RpcStatus(code=code, details=message, trailing_metadata=metadata)


def _code_number(code: grpc.StatusCode) -> int:
    number = code.value[0]
    assert isinstance(number, int)
    return number


# code_pb2 is imported to keep the google.rpc code numbering visibly the same as grpc's.
assert grpc.StatusCode.NOT_FOUND.value[0] == code_pb2.NOT_FOUND
