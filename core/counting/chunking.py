"""Split a document into pieces of at most N tokens, overlapping by up to M tokens.

Each piece is the longest that fits (``fit.py``), then pulled back to the best boundary in its
second half: a paragraph break, else a sentence end, else whitespace, else the maximal cut
itself. The next piece starts where the previous one ended, or, with an overlap, at the
longest tail of the previous piece that fits in M tokens (moved forward to a word start when
one is there; never more than half the piece, so every piece moves forward). Every piece
carries its character and UTF-8 byte offsets and its exact count (the encoding of the piece
alone); the pieces cover the text in order with nothing lost.

>>> [c.text for c in chunk("o200k_base", "One two. Three four five.\\n\\nSix seven.", 9)]
['One two. Three four five.\\n\\n', 'Six seven.']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import regex

from tokend.core.counting.fit import Counter, fit_prefix, fit_suffix
from tokend.core.counting.prompt import count_plain, resolve_encoding
from tokend.core.errors import InvalidInput
from tokend.core.tokenizer import Tokenizer

# Cut *after* these (the next piece starts at the following non-space character).
PARAGRAPH = regex.compile(r"\n[^\S\n]*\n\s*")
SENTENCE = regex.compile(r"(?:[.!?。！？]+[\"')\]]*\s+|\n\s*)")
WHITESPACE = regex.compile(r"\s+")
BOUNDARIES = (PARAGRAPH, SENTENCE, WHITESPACE)
# Characters per token assumed for the first guess of a piece's end; the search corrects it.
GUESS_CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Chunk:
    """One piece: ``text == document[start:end]``, ``count`` = tokens of ``text`` alone."""

    index: int
    text: str
    start: int
    end: int
    byte_start: int
    byte_end: int
    count: int
    exact: bool = True
    estimate_reason: str = ""


def chunk(
    encoding: Tokenizer | str, text: str, max_tokens: int, *, overlap: int = 0
) -> list[Chunk]:
    """All pieces of ``text`` (see the module docstring)."""
    return list(iter_chunks(encoding, text, max_tokens, overlap=overlap))


def iter_chunks(
    encoding: Tokenizer | str, text: str, max_tokens: int, *, overlap: int = 0
) -> Iterator[Chunk]:
    """The pieces one at a time (a server streams them as they are cut)."""
    enc = resolve_encoding(encoding)
    if max_tokens < 1:
        raise InvalidInput(f"max_tokens must be >= 1, not {max_tokens}")
    if not 0 <= overlap < max_tokens:
        raise InvalidInput(f"overlap must be >= 0 and below max_tokens {max_tokens}, not {overlap}")

    def count(piece: str) -> int:
        return count_plain(enc, piece)

    n = len(text)
    start = 0
    byte_start = 0
    index = 0
    chars_per_token = float(GUESS_CHARS_PER_TOKEN)
    while start < n:
        # Guess where the budget ends from the previous piece's density, then search.
        guess = min(n, start + max(1, int(max_tokens * chars_per_token)))
        limit = fit_prefix(count, text, start, max_tokens, guess)
        if limit == start:
            raise InvalidInput(
                f"max_tokens {max_tokens} is too small: the character at offset {start} alone "
                f"is {count(text[start])} tokens"
            )
        end = limit if limit == n else _boundary(count, text, start, limit, max_tokens)
        piece = text[start:end]
        byte_end = byte_start + _utf8_len(piece)
        tokens = count(piece)
        yield Chunk(index, piece, start, end, byte_start, byte_end, tokens)
        index += 1
        if tokens and limit > start:
            chars_per_token = (limit - start) / max(tokens, 1)
        if end == n:
            return
        next_start = end
        if overlap:
            # The longest tail of the piece's second half within `overlap` tokens (never more
            # than half the piece, so every piece moves forward), started at a word if it can.
            low = start + (end - start + 1) // 2
            window = text[low:end]
            tail = low + fit_suffix(count, window, len(window), overlap,
                                    max(0, len(window) - overlap * GUESS_CHARS_PER_TOKEN))
            word = WHITESPACE.search(text, tail, end)
            if word is not None and word.end() < end and count(text[word.end():end]) <= overlap:
                tail = word.end()
            next_start = tail
        byte_start = byte_end - _utf8_len(text[next_start:end])
        start = next_start


def _boundary(count: Counter, text: str, start: int, limit: int, max_tokens: int) -> int:
    """The best cut in the second half of ``text[start:limit]`` that fits, else ``limit``."""
    floor = start + (limit - start) // 2
    for pattern in BOUNDARIES:
        cuts = [m.end() for m in pattern.finditer(text, floor, limit) if floor < m.end() <= limit]
        for cut in reversed(cuts):
            # Counts are not monotonic: check the shorter cut really fits.
            if count(text[start:cut]) <= max_tokens:
                return cut
    return limit


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))
