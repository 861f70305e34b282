"""What a tokenizer does to some texts: bytes, characters and words per token, vocabulary used.

The figures a person compares tokenizers by. Every count is over the texts as given; nothing
is normalized first (a tokenizer that normalizes does so inside ``encode``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tokend.core.errors import InvalidInput
from tokend.core.tokenizer import Tokenizer


@dataclass(frozen=True)
class TokenizerMetrics:
    """Counts for one tokenizer over a set of texts, and the ratios derived from them.

    ``words`` are whitespace-separated runs (``str.split()``): the usual "tokens per word" of
    English. Scripts written without spaces (Chinese, Japanese, Thai) have few such "words";
    compare those languages by tokens relative to English instead (``language_costs``).
    """

    tokenizer: str  # the name or resolved reference, e.g. "o200k_base", "mytok@3"
    n_vocab: int  # ids the tokenizer can produce, special tokens included
    texts: int
    bytes: int  # UTF-8 bytes of the texts
    chars: int  # code points
    words: int  # whitespace-separated runs
    tokens: int
    distinct_tokens: int  # different ids among the tokens

    @property
    def bytes_per_token(self) -> float:
        """UTF-8 bytes per token (higher: the tokenizer compresses better); 0 with no tokens."""
        return self.bytes / self.tokens if self.tokens else 0.0

    @property
    def chars_per_token(self) -> float:
        """Code points per token; 0 with no tokens."""
        return self.chars / self.tokens if self.tokens else 0.0

    @property
    def tokens_per_word(self) -> float:
        """Tokens per whitespace-separated word (English is ~1.3 for GPT-4's); 0 with no words."""
        return self.tokens / self.words if self.words else 0.0

    @property
    def vocab_used(self) -> float:
        """Share of the vocabulary these texts used: distinct ids / ``n_vocab``."""
        return self.distinct_tokens / self.n_vocab if self.n_vocab else 0.0

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready dict: the counts and the four ratios."""
        return {
            "tokenizer": self.tokenizer,
            "n_vocab": self.n_vocab,
            "texts": self.texts,
            "bytes": self.bytes,
            "chars": self.chars,
            "words": self.words,
            "tokens": self.tokens,
            "distinct_tokens": self.distinct_tokens,
            "bytes_per_token": self.bytes_per_token,
            "chars_per_token": self.chars_per_token,
            "tokens_per_word": self.tokens_per_word,
            "vocab_used": self.vocab_used,
        }


def encode_text(tokenizer: Tokenizer, text: str) -> list[int]:
    """The ids of ``text`` with every special-token look-alike read as plain text.

    A report measures what text costs; text that happens to contain ``<|endoftext|>`` is
    text, so it is neither refused nor turned into the special id.
    """
    return tokenizer.encode(text, allowed_special=frozenset(), disallowed_special=())


def measure(tokenizer: Tokenizer, texts: Iterable[str], *, name: str | None = None) -> (
    TokenizerMetrics
):
    """Encode ``texts`` with ``tokenizer`` and count what came out.

    >>> from tokend.core import get_encoding
    >>> m = measure(get_encoding("o200k_base"), ["Hello world"])
    >>> (m.tokens, m.words, m.bytes_per_token)
    (2, 2, 5.5)
    """
    n_texts = n_bytes = n_chars = n_words = n_tokens = 0
    seen: set[int] = set()
    for text in texts:
        if not isinstance(text, str):
            raise InvalidInput(f"texts must be str, got {type(text).__name__}")
        ids = encode_text(tokenizer, text)
        n_texts += 1
        n_bytes += len(text.encode("utf-8", "surrogatepass"))
        n_chars += len(text)
        n_words += len(text.split())
        n_tokens += len(ids)
        seen.update(ids)
    return TokenizerMetrics(
        tokenizer=tokenizer.name if name is None else name,
        n_vocab=tokenizer.n_vocab,
        texts=n_texts,
        bytes=n_bytes,
        chars=n_chars,
        words=n_words,
        tokens=n_tokens,
        distinct_tokens=len(seen),
    )


def measure_all(
    tokenizers: Sequence[tuple[str, Tokenizer]], texts: Sequence[str]
) -> list[TokenizerMetrics]:
    """``measure`` for each (name, tokenizer), in order, on the same texts."""
    return [measure(tok, texts, name=name) for name, tok in tokenizers]
