"""Strict UTF-8 for training input: decode a byte stream block by block, measure text.

Files (``corpus``) and ``s3://`` objects (``objects``) share it, so both refuse the same bytes
with the same words; it imports neither, so neither imports the other.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator

from tokend.core.errors import InvalidInput

READ_BLOCK_BYTES = 1 << 18


def utf8_blocks(
    read: Callable[[int], bytes], what: str, block_bytes: int = READ_BLOCK_BYTES
) -> Iterator[str]:
    """Decode a byte stream strictly, block by block; a bad byte is named by ``what`` and offset.

    Files and ``s3://`` objects share it, so both refuse the same bytes with the same words.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    while True:
        raw = read(block_bytes)
        try:
            text = decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{what} is not valid UTF-8 at byte {offset + exc.start}") from None
        if text:
            yield text
        if not raw:
            return
        offset += len(raw)


def utf8_length(text: str) -> int:
    """Bytes ``text`` takes in UTF-8, cheaply for ASCII; lone surrogates are refused."""
    if text.isascii():
        return len(text)
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"corpus text contains {text[exc.start]!r} (a lone surrogate), "
            "which has no UTF-8 encoding"
        ) from None
