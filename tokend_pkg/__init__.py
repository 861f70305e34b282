"""tokend: a gRPC tokenization service built on tiktoken-exact byte-level BPE."""

from __future__ import annotations

__version__ = "0.1.0"
