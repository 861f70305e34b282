"""Tokens against vocabulary size: train one tokenizer per size and count a held-out text.

The curve shows what a bigger vocabulary buys: the held-out text's token count falls fast at
first and then flattens. Every training kind the trainer offers (``training_kinds``: the
trainer's ``MODEL_KINDS``) can be drawn; byte-level BPE is trained once at the largest size and
cut, because greedy BPE is prefix-consistent (the first ``k`` merges of a longer run are
exactly the merges of a run stopped at ``k``), so its curve costs one training run; the other
kinds (Unigram's pruning, WordPiece's scores) are trained once per size.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tokend.core.engine.encoding import Encoding
from tokend.core.errors import InvalidInput
from tokend.core.patterns import DEFAULT_TRAIN_PATTERN
from tokend.core.report.metrics import encode_text
from tokend.core.tokenizer import Tokenizer
from tokend.core.training.byte_bpe import train_bpe
from tokend.core.training.result import TrainedTokenizer

CorpusPaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
DEFAULT_SIZES = (300, 500, 1_000, 5_000, 10_000)
BYTE_BPE = "byte-bpe"


@dataclass(frozen=True)
class CurvePoint:
    """One trained size of one kind, measured on the held-out text."""

    kind: str  # training kind, e.g. "byte-bpe"
    vocab_size: int  # as requested
    n_vocab: int  # as trained (smaller when the corpus ran out of pairs)
    tokens: int  # tokens of the held-out text
    bytes: int  # UTF-8 bytes of the held-out text
    seconds: float  # wall seconds of training for this point (0 for a cut of a longer run)

    @property
    def bytes_per_token(self) -> float:
        """UTF-8 bytes of the held-out text per token; 0 with no tokens."""
        return self.bytes / self.tokens if self.tokens else 0.0

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready dict."""
        return {
            "kind": self.kind,
            "vocab_size": self.vocab_size,
            "n_vocab": self.n_vocab,
            "tokens": self.tokens,
            "bytes": self.bytes,
            "bytes_per_token": self.bytes_per_token,
            "seconds": self.seconds,
        }


def _training_module() -> Any | None:
    """``tokend.core.training`` (every kind's ``train_tokenizer``), if this build has it."""
    try:
        return importlib.import_module("tokend.core.training")
    except ImportError:
        return None


def training_kinds() -> tuple[str, ...]:
    """The training kinds a curve can be drawn for: the trainer's own list, so it grows."""
    module = _training_module()
    kinds = getattr(module, "MODEL_KINDS", None) if module is not None else None
    return tuple(kinds) if kinds else (BYTE_BPE,)


def train_kind(
    kind: str, corpus: CorpusPaths, vocab_size: int, *, name: str, workers: int | None = None,
    pattern: str = DEFAULT_TRAIN_PATTERN,
) -> Tokenizer:
    """A tokenizer of ``kind`` trained on ``corpus`` to ``vocab_size`` (the trainer's dispatch)."""
    if kind == BYTE_BPE:
        return train_bpe(corpus, vocab_size, pattern=pattern, workers=workers).to_encoding(name)
    module = _training_module()
    if module is None:
        raise InvalidInput(f"training kind {kind!r} is not known; known: {BYTE_BPE}")
    result = module.train_tokenizer(corpus, vocab_size, model=kind)
    tokenizer: Tokenizer = result.to_encoding(name)
    return tokenizer


def bpe_prefix_encoding(result: TrainedTokenizer[bytes], merges: int, name: str) -> Encoding:
    """The encoding of ``result`` cut to its first ``merges`` merges (no special tokens).

    >>> r = train_bpe(iter(["low lower lowest"]), 258)
    >>> bpe_prefix_encoding(r, 1, "cut").n_vocab
    257
    """
    if result.pattern is None:
        raise InvalidInput(f"a {result.model} tokenizer has no merges of byte tokens to cut")
    last = 256 + merges
    ranks: dict[bytes, int] = {}
    special_ids = set(result.special_tokens.values())
    for token_id in sorted(result.vocab):
        if token_id < last and token_id not in special_ids:
            ranks.setdefault(result.vocab[token_id], token_id)
    return Encoding(name, pat_str=result.pattern, mergeable_ranks=ranks, special_tokens={})


def _check_sizes(sizes: Sequence[int], kinds: Sequence[str]) -> list[int]:
    if not sizes:
        raise InvalidInput("vocabulary sizes are empty: give at least one, e.g. 300,1000")
    smallest = 257 if BYTE_BPE in kinds else 2
    for size in sizes:
        if isinstance(size, bool) or not isinstance(size, int) or size < smallest:
            raise InvalidInput(
                f"vocabulary size {size!r} is too small: "
                + ("byte-bpe needs at least 257 (256 byte tokens + 1)" if smallest == 257
                   else "give at least 2")
            )
    return sorted(set(sizes))


def vocab_curve(
    corpus: CorpusPaths,
    heldout: str,
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    kinds: Sequence[str] | None = None,
    pattern: str = DEFAULT_TRAIN_PATTERN,
    workers: int | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> list[CurvePoint]:
    """Train each kind at each size on ``corpus`` (files) and count ``heldout``'s tokens.

    ``progress(kind, vocab_size)`` is called before each training run. Points come kind by
    kind, sizes ascending.
    """
    available = training_kinds()
    chosen = list(available) if kinds is None else list(dict.fromkeys(kinds))
    for kind in chosen:
        if kind not in available:
            raise InvalidInput(
                f"training kind {kind!r} is not known; known: {', '.join(available)}"
            )
    wanted = _check_sizes(sizes, chosen)
    if not heldout.strip():
        raise InvalidInput("the held-out text is empty: the curve counts its tokens")
    n_bytes = len(heldout.encode("utf-8", "surrogatepass"))
    points: list[CurvePoint] = []
    for kind in chosen:
        if kind == BYTE_BPE:
            if progress is not None:
                progress(kind, wanted[-1])
            start = time.perf_counter()
            result = train_bpe(corpus, wanted[-1], pattern=pattern, workers=workers)
            seconds = time.perf_counter() - start
            for size in wanted:
                merges = min(size - 256, len(result.merges))
                enc: Tokenizer = bpe_prefix_encoding(result, merges, f"{kind}-{size}")
                points.append(CurvePoint(
                    kind=kind, vocab_size=size, n_vocab=256 + merges,
                    tokens=len(encode_text(enc, heldout)), bytes=n_bytes,
                    seconds=seconds if size == wanted[-1] else 0.0,
                ))
            continue
        for size in wanted:  # other kinds are not prefix-consistent: one run per size
            if progress is not None:
                progress(kind, size)
            start = time.perf_counter()
            tok = train_kind(kind, corpus, size, name=f"{kind}-{size}", workers=workers,
                             pattern=pattern)
            seconds = time.perf_counter() - start
            points.append(CurvePoint(
                kind=kind, vocab_size=size, n_vocab=tok.n_vocab,
                tokens=len(encode_text(tok, heldout)), bytes=n_bytes, seconds=seconds,
            ))
    return points
