"""A tokenizer's vocabulary as lint sees it: each id's bytes, the special tokens, the holes.

Built through the ``Tokenizer`` protocol (``decode_tokens_bytes``) so every family the registry
serves (``Encoding``, ``NormalizedEncoding``, ``PipelineTokenizer``) reads the same way.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from tokend.core.errors import TokendError
from tokend.core.tokenizer import NormalizedEncoding, Tokenizer

Normalize = Callable[[str], str]


@dataclass(frozen=True)
class Vocabulary:
    """``tokens[i]``: the bytes of id ``i`` (None for a hole); ``specials``: text -> id.

    ``standalone``: whether a token's text, encoded alone, should give the token back -- true
    for byte-level BPE (every ``Encoding``, byte-level tokenizer.json); false for WordPiece
    (``##`` pieces) and SentencePiece-style vocabularies (a piece's meaning depends on whether
    it starts a word), where the unreachable check does not apply.
    """

    tokens: list[bytes | None]
    specials: dict[str, int]
    added: frozenset[int]  # ids of added tokens (special or not): matched before the model
    standalone: bool
    normalize: Normalize | None
    normalized_specials: frozenset[str]  # special texts matched after the normalizer ran

    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset(self.specials.values())

    @functools.cached_property
    def ordinary(self) -> list[tuple[int, bytes]]:
        """``(id, bytes)`` of every token that is neither special nor added, in id order."""
        skip = self.special_ids | self.added
        return [(i, b) for i, b in enumerate(self.tokens) if b is not None and i not in skip]

    @functools.cached_property
    def texts(self) -> dict[int, str]:
        """Ordinary id -> its text, for the tokens whose bytes are valid UTF-8 alone."""
        out: dict[int, str] = {}
        for token_id, data in self.ordinary:
            try:
                out[token_id] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
        return out


def token_bytes(tokenizer: Tokenizer, *, block: int = 4096) -> list[bytes | None]:
    """Each id's bytes up to ``n_vocab`` (None where the tokenizer knows no such id).

    Asked ``block`` ids at a time; only a block holding a hole is asked id by id.
    """
    n = tokenizer.n_vocab
    out: list[bytes | None] = []
    for start in range(0, n, block):
        ids = range(start, min(start + block, n))
        try:
            out.extend(tokenizer.decode_tokens_bytes(ids))
            continue
        except TokendError:  # a hole in this block
            pass
        for i in ids:
            try:
                out.append(tokenizer.decode_tokens_bytes([i])[0])
            except TokendError:
                out.append(None)
    return out


def normalizer_of(tokenizer: Tokenizer) -> Normalize | None:
    """The text normalization the tokenizer applies before its model, if any."""
    if isinstance(tokenizer, NormalizedEncoding):
        form = tokenizer.form
        return lambda text: unicodedata.normalize(form, text)
    normalizer = getattr(tokenizer, "normalizer", None)
    normalize = getattr(normalizer, "normalize", None)
    return normalize if callable(normalize) else None


def vocabulary(tokenizer: Tokenizer) -> Vocabulary:
    """Read ``tokenizer``'s vocabulary for lint."""
    from tokend.core.pipeline.tokenizer import PipelineTokenizer  # noqa: PLC0415 - light import

    specials: dict[str, int] = dict(getattr(tokenizer, "special_tokens", {}))
    added: frozenset[int] = frozenset()
    standalone = True
    # A NormalizedEncoding normalizes the whole text before it looks for special tokens.
    normalized = frozenset(specials)
    if isinstance(tokenizer, PipelineTokenizer):
        added = frozenset(tokenizer.added.by_id)
        standalone = tokenizer.byte_level
        normalized = frozenset(
            t.content for t in tokenizer.added.by_id.values() if t.special and t.normalized
        )
    return Vocabulary(
        tokens=token_bytes(tokenizer),
        specials=specials,
        added=added,
        standalone=standalone,
        normalize=normalizer_of(tokenizer),
        normalized_specials=normalized,
    )
