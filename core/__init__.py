"""tokend.core: byte-level BPE encoding, training, file formats and the registry.

Knows nothing of gRPC, protobuf or Prometheus; the server and client build on it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from tokend.core.counting import (
        ChatCount,
        Chunk,
        ModelCatalogue,
        ModelInfo,
        TruncateResult,
        chunk,
        count_chat,
        truncate,
    )
    from tokend.core.engine import ENGINE
    from tokend.core.engine.builtins import (
        BUILTIN_NAMES,
        encoding_for_model,
        encoding_name_for_model,
        get_encoding,
        list_encoding_names,
    )
    from tokend.core.engine.cache import CacheInfo
    from tokend.core.engine.encoding import Encoding
    from tokend.core.formats.hf_bpe import read_hf_tokenizer_json, write_hf_tokenizer_json
    from tokend.core.registry import (
        Problem,
        Registry,
        ResolvedRef,
        TokenizerData,
        TokenizerInfo,
        VersionInfo,
    )
    from tokend.core.registry.publish import publish_trained
    from tokend.core.training import (
        MODEL_KINDS,
        TrainedTokenizer,
        TrainResult,
        TrainSpec,
        TrainStats,
        train,
        train_tokenizer,
    )
    from tokend.core.training.byte_bpe import train_bpe

# Everything but the errors loads on first use (PEP 562), so that `import tokend.core.errors`
# (the client's only dependency on core) does not pull in the encoder, trainer and registry.
_LAZY: dict[str, str] = {
    "BUILTIN_NAMES": "tokend.core.engine.builtins",
    "CacheInfo": "tokend.core.engine.cache",
    "ChatCount": "tokend.core.counting",
    "Chunk": "tokend.core.counting",
    "ModelCatalogue": "tokend.core.counting",
    "ModelInfo": "tokend.core.counting",
    "TruncateResult": "tokend.core.counting",
    "chunk": "tokend.core.counting",
    "count_chat": "tokend.core.counting",
    "truncate": "tokend.core.counting",
    "ENGINE": "tokend.core.engine",
    "Encoding": "tokend.core.engine.encoding",
    "Problem": "tokend.core.registry",
    "Registry": "tokend.core.registry",
    "ResolvedRef": "tokend.core.registry",
    "TokenizerData": "tokend.core.registry",
    "TokenizerInfo": "tokend.core.registry",
    "MODEL_KINDS": "tokend.core.training",
    "TrainResult": "tokend.core.training",
    "TrainSpec": "tokend.core.training",
    "TrainedTokenizer": "tokend.core.training",
    "TrainStats": "tokend.core.training",
    "VersionInfo": "tokend.core.registry",
    "encoding_for_model": "tokend.core.engine.builtins",
    "encoding_name_for_model": "tokend.core.engine.builtins",
    "get_encoding": "tokend.core.engine.builtins",
    "list_encoding_names": "tokend.core.engine.builtins",
    "read_hf_tokenizer_json": "tokend.core.formats.hf_bpe",
    "train_bpe": "tokend.core.training.byte_bpe",
    "train": "tokend.core.training",
    "train_tokenizer": "tokend.core.training",
    "publish_trained": "tokend.core.registry.publish",
    "write_hf_tokenizer_json": "tokend.core.formats.hf_bpe",
}

__all__ = [
    "BUILTIN_NAMES",
    "ENGINE",
    "MODEL_KINDS",
    "AlreadyExists",
    "CacheInfo",
    "Cancelled",
    "ChatCount",
    "Chunk",
    "CorruptData",
    "DisallowedSpecialToken",
    "Encoding",
    "FailedPrecondition",
    "InvalidInput",
    "InvalidName",
    "LimitExceeded",
    "ModelCatalogue",
    "ModelInfo",
    "Problem",
    "Registry",
    "ResolvedRef",
    "TokendError",
    "TokenizerData",
    "TokenizerInfo",
    "TrainResult",
    "TrainSpec",
    "TrainStats",
    "TrainedTokenizer",
    "TruncateResult",
    "UnknownTokenId",
    "UnknownTokenizer",
    "VersionInfo",
    "chunk",
    "count_chat",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "list_encoding_names",
    "publish_trained",
    "read_hf_tokenizer_json",
    "train",
    "train_bpe",
    "train_tokenizer",
    "truncate",
    "write_hf_tokenizer_json",
]


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tokend.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
