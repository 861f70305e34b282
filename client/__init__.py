"""tokend.client: a small typed Python client for the tokend gRPC service.

``Client`` (blocking) and ``AsyncClient`` (asyncio) have the same methods and return the
dataclasses of ``tokend.client.results``; failed calls raise the exceptions of
``tokend.client.errors``, which are also the matching ``tokend.core.errors`` classes.
It imports only the generated stubs and ``tokend.core.errors`` (never the encoder).
"""

from __future__ import annotations

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
    EncodeResult,
    JobState,
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
    "EncodeResult",
    "FieldViolation",
    "InvalidArgument",
    "JobNotFound",
    "JobState",
    "PermissionDenied",
    "PreconditionFailed",
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
