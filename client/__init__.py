"""tokend.client: a small typed Python client for the tokend gRPC service.

``Client`` (blocking) and ``AsyncClient`` (asyncio) have the same methods and return the
dataclasses of ``tokend.client.results``; failed calls raise the exceptions of
``tokend.client.errors``, which are also the matching ``tokend.core.errors`` classes.
It imports only the generated stubs and ``tokend.core.errors`` (never the encoder).

Everything loads on first use (PEP 562): ``tokend.client.results`` and ``requests`` (the
typed results and the requests they answer) work without grpc imported, e.g. for ``tokend
count`` run in process.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokend.client.async_client import AsyncClient, AsyncTrainHandle
    from tokend.client.channel import TlsConfig, service_config
    from tokend.client.errors import (
        STATUS_ERRORS,
        AlreadyExistsError,
        CallCancelled,
        DataLoss,
        DeadlineExceeded,
        FieldViolation,
        InvalidArgument,
        JobNotFound,
        PermissionDenied,
        PreconditionFailed,
        RemoteError,
        ResourceExhausted,
        ServerError,
        TokenizerNotFound,
        TrainingCancelled,
        TrainingFailed,
        Unauthenticated,
        Unavailable,
        Unimplemented,
    )
    from tokend.client.results import (
        ChatMessage,
        CountBreakdown,
        CountResult,
        DecodeResult,
        DiffChange,
        DiffLanguage,
        DiffMove,
        DiffResult,
        DiffText,
        DiffToken,
        EncodeResult,
        JobState,
        LintFinding,
        LintResult,
        QuotePart,
        QuoteResult,
        ReportLanguage,
        ReportResult,
        ReportTokenizer,
        TextChunk,
        TokenDetail,
        TokenizerManifest,
        TokenizerSummary,
        TrainJob,
        TruncateResult,
    )
    from tokend.client.sync_client import Client, TrainHandle

_LAZY: dict[str, str] = {
    "AlreadyExistsError": "tokend.client.errors",
    "AsyncClient": "tokend.client.async_client",
    "AsyncTrainHandle": "tokend.client.async_client",
    "CallCancelled": "tokend.client.errors",
    "ChatMessage": "tokend.client.results",
    "CountBreakdown": "tokend.client.results",
    "Client": "tokend.client.sync_client",
    "CountResult": "tokend.client.results",
    "DataLoss": "tokend.client.errors",
    "DeadlineExceeded": "tokend.client.errors",
    "DecodeResult": "tokend.client.results",
    "DiffChange": "tokend.client.lint_results",
    "DiffLanguage": "tokend.client.lint_results",
    "DiffMove": "tokend.client.lint_results",
    "DiffResult": "tokend.client.lint_results",
    "DiffText": "tokend.client.lint_results",
    "DiffToken": "tokend.client.lint_results",
    "EncodeResult": "tokend.client.results",
    "FieldViolation": "tokend.client.errors",
    "InvalidArgument": "tokend.client.errors",
    "JobNotFound": "tokend.client.errors",
    "JobState": "tokend.client.results",
    "LintFinding": "tokend.client.lint_results",
    "LintResult": "tokend.client.lint_results",
    "PermissionDenied": "tokend.client.errors",
    "PreconditionFailed": "tokend.client.errors",
    "QuotePart": "tokend.client.results",
    "QuoteResult": "tokend.client.results",
    "RemoteError": "tokend.client.errors",
    "ReportLanguage": "tokend.client.results",
    "ReportResult": "tokend.client.results",
    "ReportTokenizer": "tokend.client.results",
    "ResourceExhausted": "tokend.client.errors",
    "STATUS_ERRORS": "tokend.client.errors",
    "ServerError": "tokend.client.errors",
    "TextChunk": "tokend.client.results",
    "TlsConfig": "tokend.client.channel",
    "TokenDetail": "tokend.client.results",
    "TokenizerManifest": "tokend.client.results",
    "TokenizerNotFound": "tokend.client.errors",
    "TokenizerSummary": "tokend.client.results",
    "TrainHandle": "tokend.client.sync_client",
    "TrainJob": "tokend.client.results",
    "TrainingCancelled": "tokend.client.errors",
    "TrainingFailed": "tokend.client.errors",
    "TruncateResult": "tokend.client.results",
    "Unauthenticated": "tokend.client.errors",
    "Unavailable": "tokend.client.errors",
    "Unimplemented": "tokend.client.errors",
    "service_config": "tokend.client.channel",
}

__all__ = [
    "STATUS_ERRORS",
    "AlreadyExistsError",
    "AsyncClient",
    "AsyncTrainHandle",
    "CallCancelled",
    "ChatMessage",
    "Client",
    "CountBreakdown",
    "CountResult",
    "DataLoss",
    "DeadlineExceeded",
    "DecodeResult",
    "DiffChange",
    "DiffLanguage",
    "DiffMove",
    "DiffResult",
    "DiffText",
    "DiffToken",
    "EncodeResult",
    "FieldViolation",
    "InvalidArgument",
    "JobNotFound",
    "JobState",
    "LintFinding",
    "LintResult",
    "PermissionDenied",
    "PreconditionFailed",
    "QuotePart",
    "QuoteResult",
    "RemoteError",
    "ReportLanguage",
    "ReportResult",
    "ReportTokenizer",
    "ResourceExhausted",
    "ServerError",
    "TextChunk",
    "TlsConfig",
    "TokenDetail",
    "TokenizerManifest",
    "TokenizerNotFound",
    "TokenizerSummary",
    "TrainHandle",
    "TrainJob",
    "TrainingCancelled",
    "TrainingFailed",
    "TruncateResult",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "service_config",
]


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tokend.client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
