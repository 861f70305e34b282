"""Tokenizer files kept as they are (tokenizer.json, SentencePiece, Tekken): names, loaders,
and content sniffing, so ``tokend registry import`` picks the format from the bytes.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from tokend.core.errors import InvalidInput

if TYPE_CHECKING:
    from tokend.core.tokenizer import Tokenizer

# format -> the file name a registry version stores it under
FILE_NAMES = {
    "hf-json": "tokenizer.json",
    "sentencepiece": "tokenizer.model",
    "tekken": "tekken.json",
}
_TIKTOKEN_LINE = re.compile(rb"[A-Za-z0-9+/=]+ \d+\r?\n")


def sniff_format(data: bytes) -> str | None:
    """The format of a file's contents: hf-json, tekken, sentencepiece, tiktoken, or None.

    >>> sniff_format(b"YQ== 0\\nYg== 1\\n")
    'tiktoken'
    """
    head = data[:64].lstrip()
    if head.startswith(b"{"):
        try:
            raw = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        if isinstance(raw, dict) and isinstance(raw.get("model"), dict):
            return "hf-json"
        if isinstance(raw, dict) and isinstance(raw.get("config"), dict) and isinstance(
            raw.get("vocab"), list
        ):
            return "tekken"
        return None
    if _TIKTOKEN_LINE.match(data):
        return "tiktoken"
    # A ModelProto starts with field 1 (pieces), wire type 2: the byte 0x0a.
    if data[:1] == b"\x0a":
        from tokend.core.formats.sentencepiece import parse_sentencepiece  # noqa: PLC0415

        try:
            parse_sentencepiece(data)
        except Exception:
            return None
        return "sentencepiece"
    return None


def load_file(
    fmt: str, data: bytes, *, name: str, cache_entries: int | None = None
) -> Tokenizer:
    """Build the tokenizer a stored file describes (any format in ``FILE_NAMES``)."""
    if fmt == "hf-json":
        from tokend.core.formats.tokenizer_json import load_tokenizer_json  # noqa: PLC0415

        return load_tokenizer_json(data, name=name, source=FILE_NAMES[fmt],
                                   cache_entries=cache_entries)
    if fmt == "sentencepiece":
        from tokend.core.formats.sentencepiece import load_sentencepiece  # noqa: PLC0415

        return load_sentencepiece(data, name=name, source=FILE_NAMES[fmt],
                                  cache_entries=cache_entries)
    if fmt == "tekken":
        from tokend.core.formats.tekken import load_tekken  # noqa: PLC0415

        return load_tekken(data, name=name, source=FILE_NAMES[fmt], cache_entries=cache_entries)
    raise InvalidInput(f"unknown file format {fmt!r}; known: {', '.join(FILE_NAMES)}")
