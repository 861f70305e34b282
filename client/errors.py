"""gRPC status code -> typed exception: the client's half of tokend's one boundary table.

The server turns ``tokend.core.errors`` classes into status codes; this module turns the codes
back into exceptions that are *both* a ``RemoteError`` (carrying the status code, the server's
message and any ``google.rpc`` details) and the matching core class, so code written against
the local library (``except UnknownTokenizer``) keeps working against the service:

>>> issubclass(TokenizerNotFound, core.UnknownTokenizer)
True
>>> STATUS_ERRORS[grpc.StatusCode.INVALID_ARGUMENT].__name__
'InvalidArgument'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import grpc
from google.rpc import (  # type: ignore[import-untyped]  # ships .pyi without py.typed
    error_details_pb2,
    status_pb2,
)

from tokend.client.results import JobState, TrainJob
from tokend.core import errors as core

# Trailing-metadata key of the rich status (a serialized google.rpc.Status), set by grpcio-status.
STATUS_DETAILS_KEY = "grpc-status-details-bin"
# Metadata key of the request id the server logs and echoes back.
REQUEST_ID_KEY = "x-request-id"


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One ``google.rpc.BadRequest`` field violation: which request field, and why."""

    field: str
    description: str


class RemoteError(core.TokendError):
    """A call to the tokend service failed; ``code`` is the gRPC status code.

    ``details`` is the server's message (it names the offending value and the limit),
    ``violations`` the BadRequest field violations it attached, ``reason`` the server's error
    class name (``"DisallowedSpecialToken"``), ``request_id`` the call's id in the server log.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        details: str,
        *,
        violations: tuple[FieldViolation, ...] = (),
        reason: str | None = None,
        request_id: str | None = None,
    ) -> None:
        # subtle: skip the core classes' own __init__ (LimitExceeded, DisallowedSpecialToken take
        # structured arguments); the server already formatted the message.
        Exception.__init__(self, f"{code.name}: {details}" if details else code.name)
        self.code = code
        self.details = details
        self.violations = violations
        self.reason = reason  # the server-side error class (google.rpc.ErrorInfo), if sent
        self.request_id = request_id  # the call's x-request-id, to find it in the server log


class TokenizerNotFound(RemoteError, core.UnknownTokenizer):
    """NOT_FOUND: no such tokenizer, version, alias (or training job)."""


class JobNotFound(RemoteError, core.UnknownJob):
    """NOT_FOUND for a training job id (the server's ErrorInfo reason is ``UnknownJob``)."""


class InvalidArgument(RemoteError, core.InvalidInput):
    """INVALID_ARGUMENT: bad reference, disallowed special token, unknown id, empty batch."""


class ResourceExhausted(RemoteError, core.LimitExceeded):
    """RESOURCE_EXHAUSTED: over a size, batch or job limit (the message names the limit).

    Only the message crosses the wire: LimitExceeded's ``what``/``value``/``limit`` attributes
    are not set on this remote form; read ``details`` (or ``violations`` for the field).
    """


class AlreadyExistsError(RemoteError, core.AlreadyExists):
    """ALREADY_EXISTS: something with that name exists and may not be replaced."""


class PreconditionFailed(RemoteError, core.FailedPrecondition):
    """FAILED_PRECONDITION: refused in the current state (e.g. a job that already ended)."""


class CallCancelled(RemoteError, core.Cancelled):
    """CANCELLED: the call (or the job it waited on) was cancelled."""


class DataLoss(RemoteError, core.CorruptData):
    """DATA_LOSS: a registry file on the server failed its checksum."""


class Unauthenticated(RemoteError, core.Unauthenticated):
    """UNAUTHENTICATED: the call needs ``token=`` (an admin token) and had none or a bad one."""


class PermissionDenied(RemoteError, core.PermissionDenied):
    """PERMISSION_DENIED: the token is valid but not allowed to do this."""


class DeadlineExceeded(RemoteError, core.DeadlineExceeded):
    """DEADLINE_EXCEEDED: the call took longer than its ``timeout``."""


class Unavailable(RemoteError, core.Unavailable):
    """UNAVAILABLE: server down or draining; already retried per the channel's retry policy."""


class Unimplemented(RemoteError, NotImplementedError):
    """UNIMPLEMENTED: the server does not offer this method (an older tokend?)."""


class ServerError(RemoteError):
    """INTERNAL, UNKNOWN or any other status: a server-side bug; see the server log."""


class TrainingFailed(core.TokendError):
    """A training job ended FAILED; ``job`` is its final snapshot, ``job.error`` the reason."""

    def __init__(self, job: TrainJob) -> None:
        super().__init__(f"training job {job.job_id} ({job.name!r}) failed: {job.error}")
        self.job = job


class TrainingCancelled(core.Cancelled):
    """A training job ended CANCELLED; nothing was published."""

    def __init__(self, job: TrainJob) -> None:
        super().__init__(f"training job {job.job_id} ({job.name!r}) was cancelled")
        self.job = job


def job_outcome(job: TrainJob) -> str:
    """The published reference of a finished job, or the exception saying how it ended."""
    if job.state is JobState.SUCCEEDED:
        return job.published
    if job.state is JobState.CANCELLED:
        raise TrainingCancelled(job)
    if job.state is JobState.FAILED:
        raise TrainingFailed(job)
    raise TrainingFailed(replace(job, error=f"the job has not ended (state {job.state.value})"))


# The one fixed table. Every status code not listed here becomes ServerError.
STATUS_ERRORS: Mapping[grpc.StatusCode, type[RemoteError]] = MappingProxyType(
    {
        grpc.StatusCode.NOT_FOUND: TokenizerNotFound,
        grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
        grpc.StatusCode.OUT_OF_RANGE: InvalidArgument,
        grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
        grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
        grpc.StatusCode.FAILED_PRECONDITION: PreconditionFailed,
        grpc.StatusCode.CANCELLED: CallCancelled,
        grpc.StatusCode.DATA_LOSS: DataLoss,
        grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
        grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
        grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
        grpc.StatusCode.UNAVAILABLE: Unavailable,
        grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    }
)


# Refinements of a status by the server's ErrorInfo reason (the core class it raised), where the
# status alone is ambiguous (NOT_FOUND: a tokenizer or a training job?).
REASON_ERRORS: Mapping[tuple[grpc.StatusCode, str], type[RemoteError]] = MappingProxyType(
    {(grpc.StatusCode.NOT_FOUND, "UnknownJob"): JobNotFound}
)


def error_for_status(
    code: grpc.StatusCode,
    details: str,
    *,
    violations: tuple[FieldViolation, ...] = (),
    reason: str | None = None,
    request_id: str | None = None,
) -> RemoteError:
    """Build the exception for one status (the table lookup, with ServerError as fallback)."""
    cls = REASON_ERRORS.get((code, reason or ""), STATUS_ERRORS.get(code, ServerError))
    return cls(code, details, violations=violations, reason=reason, request_id=request_id)


def error_from_rpc(err: grpc.RpcError) -> RemoteError:
    """Translate a failed call (sync ``grpc.RpcError`` or ``grpc.aio.AioRpcError``)."""
    code: grpc.StatusCode = _call_attr(err, "code", grpc.StatusCode.UNKNOWN)
    details: str = _call_attr(err, "details", "") or ""
    trailing = _call_attr(err, "trailing_metadata", None) or ()
    return error_from_status(code, details, trailing)


def error_from_status(
    code: grpc.StatusCode, details: str, trailing: Iterable[tuple[str, str | bytes]]
) -> RemoteError:
    """The exception for a status as the server sends it: code, message, trailing metadata
    (its google.rpc details and request id). The CLI's in-process backend raises the same
    for the status the server would have sent (``tokend.server.errors.status_for``)."""
    violations: tuple[FieldViolation, ...] = ()
    reason: str | None = None
    request_id: str | None = None
    for key, value in trailing:
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            violations, reason = _rich_details(value)
        elif key == REQUEST_ID_KEY and isinstance(value, str):
            request_id = value
    return error_for_status(
        code, details, violations=violations, reason=reason, request_id=request_id
    )


def _call_attr(err: grpc.RpcError, name: str, default: Any) -> Any:
    """``err.name()`` if the error is also a call (it always is in practice), else ``default``."""
    method = getattr(err, name, None)
    return method() if callable(method) else default


def _rich_details(blob: bytes) -> tuple[tuple[FieldViolation, ...], str | None]:
    """BadRequest field violations and the ErrorInfo reason in a serialized google.rpc.Status."""
    status = status_pb2.Status()
    try:
        status.ParseFromString(blob)
    except Exception:  # a malformed detail must not hide the real error
        return (), None
    found: list[FieldViolation] = []
    reason: str | None = None
    for detail in status.details:
        bad_request = error_details_pb2.BadRequest()
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(bad_request):
            found.extend(
                FieldViolation(v.field, v.description) for v in bad_request.field_violations
            )
        elif detail.Unpack(info):
            reason = info.reason or None
    return tuple(found), reason


__all__ = [
    "STATUS_ERRORS",
    "AlreadyExistsError",
    "CallCancelled",
    "DataLoss",
    "DeadlineExceeded",
    "FieldViolation",
    "InvalidArgument",
    "JobNotFound",
    "PermissionDenied",
    "PreconditionFailed",
    "RemoteError",
    "ResourceExhausted",
    "ServerError",
    "TokenizerNotFound",
    "TrainingCancelled",
    "TrainingFailed",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "error_for_status",
    "error_from_rpc",
    "error_from_status",
    "job_outcome",
]
