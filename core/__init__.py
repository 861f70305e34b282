"""tokend.core: byte-level BPE encoding, training, file formats and the registry.

Knows nothing of gRPC, protobuf or Prometheus; the server and client build on it.
"""

from __future__ import annotations

from tokend.core.errors import (
    AlreadyExists,
    Cancelled,
    CorruptData,
    DisallowedSpecialToken,
    FailedPrecondition,
    InvalidInput,
    InvalidName,
    LimitExceeded,
    TokendError,
    UnknownTokenId,
    UnknownTokenizer,
)

__all__ = [
    "AlreadyExists",
    "Cancelled",
    "CorruptData",
    "DisallowedSpecialToken",
    "FailedPrecondition",
    "InvalidInput",
    "InvalidName",
    "LimitExceeded",
    "TokendError",
    "UnknownTokenId",
    "UnknownTokenizer",
]
