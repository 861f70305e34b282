"""What ``train_tokenizer`` returns for the pipeline-served kinds, and its tokenizer.json.

A trained tokenizer *is* its tokenizer.json: ``to_encoding`` builds the served tokenizer from
those exact bytes (``core/formats/tokenizer_json``), so what tokend serves, what the registry
stores and what HF ``tokenizers`` loads are one file with the same ids.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tokend.core.formats import atomic_write_bytes

if TYPE_CHECKING:
    from tokend.core.pipeline.tokenizer import PipelineTokenizer


@dataclass(frozen=True)
class KindStats:
    """What training saw and how long each phase took."""

    bytes_read: int  # UTF-8 bytes of input, special tokens included
    documents: int  # non-empty documents (text between special tokens / stream ends)
    words: int  # pre-tokenized word occurrences (characters for ``char``)
    distinct_words: int
    steps: int  # merges (BPE kinds, WordPiece) or pieces kept (char, unigram)
    stopped_early: bool  # True when the corpus ran out of material before vocab_size
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> wall seconds

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready dict (for manifests and job state)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class TrainedTokenizer:
    """A trained char / word-bpe / wordpiece / unigram tokenizer (see ``train_tokenizer``)."""

    model: str  # the kind: "char", "word-bpe", "wordpiece", "unigram"
    vocab: dict[int, str]  # id -> token string, as in the tokenizer.json (specials included)
    merges: list[tuple[str, str]]  # BPE kinds: in the order learned; [] for the others
    special_tokens: dict[str, int]  # text -> id
    vocab_size: int  # as requested; len(vocab) is smaller when stats.stopped_early
    stats: KindStats
    tokenizer_json: dict[str, Any] = field(repr=False)

    def tokenizer_json_bytes(self) -> bytes:
        """The tokenizer.json as stored in the registry and written by save_tokenizer_json."""
        return json.dumps(self.tokenizer_json, ensure_ascii=False, indent=2).encode("utf-8")

    def save_tokenizer_json(self, path: str | os.PathLike[str]) -> None:
        """Write the tokenizer.json (temp file, then rename) that HF ``tokenizers`` loads."""
        atomic_write_bytes(path, self.tokenizer_json_bytes())

    def to_encoding(self, name: str = "custom") -> PipelineTokenizer:
        """The served tokenizer, built from the exported tokenizer.json itself."""
        from tokend.core.formats.tokenizer_json import load_tokenizer_json  # noqa: PLC0415

        return load_tokenizer_json(self.tokenizer_json_bytes(), name=name)


def added_tokens(special_tokens: Mapping[str, int]) -> list[dict[str, Any]]:
    """HF ``added_tokens`` entries for special tokens (matched verbatim, never normalized)."""
    return [
        {"id": token_id, "content": text, "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}
        for text, token_id in sorted(special_tokens.items(), key=lambda kv: kv[1])
    ]


def tokenizer_json(
    *,
    model: dict[str, Any],
    special_tokens: Mapping[str, int],
    normalizer: dict[str, Any] | None = None,
    pre_tokenizer: dict[str, Any] | None = None,
    decoder: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A complete tokenizer.json object (HF ``tokenizers`` 0.21 layout)."""
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens(special_tokens),
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": None,
        "decoder": decoder,
        "model": model,
    }
