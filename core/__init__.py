"""tokend.core: byte-level BPE encoding, training, file formats and the registry.

Knows nothing of gRPC, protobuf or Prometheus; the server and client build on it.
"""

from __future__ import annotations

from tokend.core.builtins import (
    BUILTIN_NAMES,
    encoding_for_model,
    encoding_name_for_model,
    get_encoding,
    list_encoding_names,
)
from tokend.core.cache import CacheInfo
from tokend.core.encoding import Encoding
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
from tokend.core.hf_format import read_hf_tokenizer_json, write_hf_tokenizer_json
from tokend.core.registry import (
    Problem,
    Registry,
    ResolvedRef,
    TokenizerData,
    TokenizerInfo,
    VersionInfo,
)
from tokend.core.train import TrainResult, TrainStats, train_bpe

__all__ = [
    "BUILTIN_NAMES",
    "AlreadyExists",
    "CacheInfo",
    "Cancelled",
    "CorruptData",
    "DisallowedSpecialToken",
    "Encoding",
    "FailedPrecondition",
    "InvalidInput",
    "InvalidName",
    "LimitExceeded",
    "Problem",
    "Registry",
    "ResolvedRef",
    "TokendError",
    "TokenizerData",
    "TokenizerInfo",
    "TrainResult",
    "TrainStats",
    "UnknownTokenId",
    "UnknownTokenizer",
    "VersionInfo",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "list_encoding_names",
    "read_hf_tokenizer_json",
    "train_bpe",
    "write_hf_tokenizer_json",
]
