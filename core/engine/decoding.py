"""Decoding ids to bytes and text: tiktoken's decode methods, shared by ``Encoding``.

A mixin over the two things decoding needs, the engine (``decode_bytes`` of many ids, compiled
or Python) and the id -> bytes table (one token at a time); the encoding side, with its
special-token policy and caches, stays in ``encoding.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from tokend.core.engine import Engine
from tokend.core.errors import UnknownTokenId


class Decoding:
    """tiktoken's decode methods over ``_engine`` and ``_decoder`` (set by ``Encoding``)."""

    _engine: Engine
    _decoder: dict[int, bytes]

    @property
    def n_vocab(self) -> int:
        raise NotImplementedError

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        """The bytes of ``tokens`` concatenated; an unknown id raises UnknownTokenId."""
        if not isinstance(tokens, list | tuple):
            tokens = list(tokens)
        return self._engine.decode_bytes(tokens)

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        """Decode to text; invalid UTF-8 is replaced by default (tiktoken's lossy default)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (special tokens included)."""
        try:
            return self._decoder[token]
        except (KeyError, TypeError):
            raise UnknownTokenId(token, self.n_vocab) from None

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """The bytes of each token, for visualising a tokenization."""
        return [self.decode_single_token_bytes(token) for token in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """Decode and give each token's character offset, as tiktoken defines it.

        The offset is the index of the first character holding bytes of the token; a token
        that starts with a UTF-8 continuation byte belongs to the character before it.
        Raises UnicodeDecodeError if the tokens do not decode to valid UTF-8 (like tiktoken).

        >>> from tokend.core.engine.builtins import get_encoding
        >>> get_encoding("gpt2").decode_with_offsets([31373, 995])
        ('hello world', [0, 5])
        """
        token_bytes = self.decode_tokens_bytes(tokens)
        text_len = 0
        offsets: list[int] = []
        for token in token_bytes:
            offsets.append(max(0, text_len - (0x80 <= token[0] < 0xC0)))
            text_len += sum(1 for c in token if not 0x80 <= c < 0xC0)
        text = b"".join(token_bytes).decode("utf-8", errors="strict")
        return text, offsets

    def decode_batch(
        self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = 8
    ) -> list[str]:
        """Decode several token lists (in a thread pool of ``num_threads``, like tiktoken)."""
        decoder = functools.partial(self.decode, errors=errors)
        if len(batch) <= 1 or num_threads <= 1:
            return [decoder(tokens) for tokens in batch]
        with ThreadPoolExecutor(num_threads) as pool:
            return list(pool.map(decoder, batch))

    def decode_bytes_batch(
        self, batch: Sequence[Sequence[int]], *, num_threads: int = 8
    ) -> list[bytes]:
        """The bytes of several token lists (in a thread pool of ``num_threads``)."""
        if len(batch) <= 1 or num_threads <= 1:
            return [self.decode_bytes(tokens) for tokens in batch]
        with ThreadPoolExecutor(num_threads) as pool:
            return list(pool.map(self.decode_bytes, batch))
