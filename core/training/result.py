"""What every trainer returns (one ``TrainedTokenizer`` type), and the tokenizer.json it writes.

Byte-level BPE is served from its rank table; every other kind *is* its tokenizer.json:
``to_encoding`` builds the served tokenizer from those exact bytes
(``core/formats/tokenizer_json``), so what tokend serves, what the registry stores and what HF
``tokenizers`` loads are one file with the same ids.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from tokend.core.errors import FailedPrecondition
from tokend.core.formats import atomic_write_bytes

if TYPE_CHECKING:
    from tokend.core.engine.encoding import Encoding
    from tokend.core.pipeline.tokenizer import PipelineTokenizer


@dataclass(frozen=True)
class TrainStats:
    """What byte-level BPE training saw and how long each phase took."""

    bytes_read: int  # UTF-8 bytes of input, special tokens included
    documents: int  # non-empty documents (text between special tokens / stream ends)
    pretokens: int  # pretoken occurrences
    distinct_pretokens: int
    merges: int  # merges learned
    stopped_early: bool  # True when the corpus ran out of pairs before vocab_size
    workers: int  # counting processes used (1 = counted in this process; Ray: tasks)
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> wall seconds

    # The names every kind's stats share (KindStats), so callers need not ask which kind.
    @property
    def words(self) -> int:
        return self.pretokens

    @property
    def distinct_words(self) -> int:
        return self.distinct_pretokens

    @property
    def steps(self) -> int:
        return self.merges

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready dict (for manifests and the Train RPC)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class KindStats:
    """What training saw and how long each phase took (char, word-bpe, wordpiece, unigram)."""

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


TokenT = TypeVar("TokenT", bytes, str)
Stats = TrainStats | KindStats


@dataclass(frozen=True)
class TrainedTokenizer(Generic[TokenT]):
    """What every trainer returns: one type for every kind (``model``).

    Byte-level BPE (``TrainedTokenizer[bytes]``) has byte tokens, a ``pattern`` and is served
    from its rank table (``mergeable_ranks``) by the tiktoken-exact ``Encoding``; the other
    kinds (``TrainedTokenizer[str]``) *are* their tokenizer.json, built into the served
    tokenizer from those exact bytes, so what tokend serves, what the registry stores and what
    HF ``tokenizers`` loads are one file with the same ids. ``served_format`` says which.
    """

    model: str  # the kind: "byte-bpe", "char", "word-bpe", "wordpiece", "unigram"
    vocab: dict[int, TokenT]  # id -> token (byte-bpe: bytes; others: the tokenizer.json text)
    merges: list[tuple[TokenT, TokenT]]  # BPE kinds: in the order learned; [] for the others
    special_tokens: dict[str, int]  # text -> id
    vocab_size: int  # as requested; len(vocab) is smaller when stats.stopped_early
    stats: Stats
    tokenizer_json: dict[str, Any] | None = field(default=None, repr=False)  # not byte-bpe
    pattern: str | None = None  # byte-bpe: the pretokenization regex
    pattern_name: str | None = None  # byte-bpe: "gpt2" / "cl100k" / "o200k", None if custom

    @property
    def served_format(self) -> str:
        """How the registry stores and the server serves it: "tiktoken" ranks or "hf-json"."""
        return "tiktoken" if self.pattern is not None else "hf-json"

    def mergeable_ranks(self) -> dict[bytes, int]:
        """Byte-level BPE: token bytes -> rank (= id) without the special tokens, as
        ``.tiktoken`` files hold (if two merges make the same bytes, the lower id is kept)."""
        if self.pattern is None:
            raise FailedPrecondition(
                f"a {self.model} tokenizer has no rank table; it is served from its "
                "tokenizer.json (tokenizer_json_bytes)"
            )
        special_ids = set(self.special_tokens.values())
        ranks: dict[bytes, int] = {}
        for token_id in sorted(self.vocab):
            token = self.vocab[token_id]
            if token_id not in special_ids and isinstance(token, bytes):
                ranks.setdefault(token, token_id)
        return ranks

    def tokenizer_json_bytes(self) -> bytes:
        """The tokenizer.json (byte-bpe: ByteLevel BPE with tiktoken-identical ids)."""
        if self.tokenizer_json is not None:
            return json.dumps(self.tokenizer_json, ensure_ascii=False, indent=2).encode("utf-8")
        from tokend.core.formats.hf_bpe import format_hf_tokenizer_json  # noqa: PLC0415

        assert self.pattern is not None  # byte-bpe: the only kind built without the JSON
        return format_hf_tokenizer_json(
            ranks=self.mergeable_ranks(), pat_str=self.pattern,
            special_tokens=dict(self.special_tokens),
        )

    def save_tokenizer_json(self, path: str | os.PathLike[str]) -> None:
        """Write the tokenizer.json (temp file, then rename) that HF ``tokenizers`` loads."""
        atomic_write_bytes(path, self.tokenizer_json_bytes())

    def to_encoding(self, name: str = "custom") -> Encoding | PipelineTokenizer:
        """The served tokenizer: an ``Encoding`` for byte-bpe, else the pipeline built from
        the exported tokenizer.json itself."""
        if self.pattern is not None:
            from tokend.core.engine.encoding import Encoding  # noqa: PLC0415 (the engine)

            return Encoding(name, pat_str=self.pattern, mergeable_ranks=self.mergeable_ranks(),
                            special_tokens=dict(self.special_tokens))
        from tokend.core.formats.tokenizer_json import load_tokenizer_json  # noqa: PLC0415

        return load_tokenizer_json(self.tokenizer_json_bytes(), name=name)


# The name train_bpe's result had before every kind shared one type (kept for callers).
TrainResult = TrainedTokenizer


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
