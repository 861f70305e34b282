"""Image sizes read from the bytes a request carries, never fetched; PDF pages counted.

A vendor's SDK sends an image as base64 data (or a URL / file id tokend never fetches). The
image formulas need width and height: they are read from the image's header (PNG, GIF, JPEG,
WebP), decoding only the first :data:`HEADER_CHARS` base64 characters. An image whose size cannot
be read (a URL, a file id, a format not listed) is counted as :data:`DEFAULT_SIZE` and the count
says so. A tokend extension: ``width`` and ``height`` on the image block win over both.

>>> import base64, struct, zlib
>>> png = b"\\x89PNG\\r\\n\\x1a\\n" + struct.pack(">I4sII", 13, b"IHDR", 640, 480)
>>> image_size(base64.b64encode(png).decode())
(640, 480)
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from collections.abc import Mapping
from typing import Any

from tokend.core.counting.vendor_requests.shapes import invalid
from tokend.core.errors import shown

# What an image whose size tokend cannot know is counted as (docs/http.md).
DEFAULT_SIZE = (1024, 1024)
# Base64 characters decoded to find a size: 64 KiB of image, past a JPEG's EXIF block.
HEADER_CHARS = 4 * 16 * 1024
DEFAULT_NOTE = (f"an image's size could not be read from the request (a URL or file tokend "
                f"does not fetch, or no PNG/GIF/JPEG/WebP header): counted as "
                f"{DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]}")
# The largest width or height given on a block (the proto's int32, as POST /count takes).
MAX_SIDE = 2**31 - 1
_URLSAFE = str.maketrans("-_", "+/")
# A character no base64 alphabet has (padding only at the end).
_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/=]|=(?=[^=])")
# A PDF page object (``/Type /Page``, not ``/Pages``).
_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def _decoded(data: str, chars: int | None) -> bytes:
    """The bytes of base64 ``data`` (its first ``chars`` characters; a data: URL's payload).

    subtle: Google's SDK sends bytes in the URL-safe alphabet (``-`` and ``_``), which the
    standard decoder would silently drop, shifting every later byte.
    """
    if data.startswith("data:"):
        data = data.partition(",")[2]
    if chars is not None:
        data = data[: chars - chars % 4]
    data = data.translate(_URLSAFE)
    try:
        return base64.b64decode(data + "=" * (-len(data) % 4))
    except (binascii.Error, ValueError):
        return b""


def checked_base64(data: str, field: str) -> str:
    """``data`` (base64, or a data: URL) when all of it decodes; else refused naming ``field``,
    as the vendors refuse it (an image that cannot be decoded is no image of any size).

    >>> checked_base64("aGk=", "source.data")
    'aGk='
    >>> try:
    ...     checked_base64("not base64!", "source.data")
    ... except ValueError as exc:
    ...     print(exc)
    source.data: is not valid base64 (character 3 of the value): send the file's bytes ...
    """
    payload = data.partition(",")[2] if data.startswith("data:") else data
    payload = payload.translate(_URLSAFE)
    bad = _NOT_BASE64.search(payload)
    if bad is None and len(payload.rstrip("=")) % 4 != 1:
        try:
            base64.b64decode(payload + "=" * (-len(payload) % 4), validate=True)
            return data
        except (binascii.Error, ValueError):
            pass
    at = bad.start() if bad is not None else len(payload)
    raise invalid(field, f"is not valid base64 (character {at} of the value): send the "
                  "file's bytes base64-encoded")


def image_size(data: str) -> tuple[int, int] | None:
    """``(width, height)`` of a base64 image (or data: URL) from its header, else None."""
    head = _decoded(data, HEADER_CHARS)
    if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        width, height = struct.unpack(">II", head[16:24])
        return int(width), int(height)
    if head[:6] in (b"GIF87a", b"GIF89a"):
        width, height = struct.unpack("<HH", head[6:10])
        return int(width), int(height)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp(head)
    if head[:2] == b"\xff\xd8":
        return _jpeg(head)
    return None


def _webp(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and len(head) >= 30:
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(head) >= 25:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(head) >= 30:
        width = int.from_bytes(head[24:27], "little") + 1
        height = int.from_bytes(head[27:30], "little") + 1
        return width, height
    return None


def _jpeg(head: bytes) -> tuple[int, int] | None:
    """The size in a JPEG's first start-of-frame marker (SOF0-SOF15 but DHT, JPG, DAC)."""
    at = 2
    while at + 9 <= len(head):
        if head[at] != 0xFF:
            return None
        marker = head[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if 0xD0 <= marker <= 0xD9 or marker == 0x01:  # markers without a length
            at += 2
            continue
        (length,) = struct.unpack(">H", head[at + 2:at + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", head[at + 5:at + 9])
            return int(width), int(height)
        at += 2 + length
    return None


def pdf_pages(data: str) -> int:
    """Pages of a base64 PDF (its ``/Type /Page`` objects), at least 1.

    >>> import base64
    >>> pdf_pages(base64.b64encode(b"%PDF-1.4 /Type /Pages /Type /Page /Type/Page").decode())
    2
    """
    return max(1, len(_PAGE.findall(_decoded(data, None))))


def given_size(block: Mapping[str, Any], where: str) -> tuple[int, int] | None:
    """``width`` and ``height`` given on a block (tokend's extension), or None when either is
    missing; refused (naming the field) unless both are integers from 1 to MAX_SIDE."""
    width, height = block.get("width"), block.get("height")
    if width is None or height is None:
        return None
    for key, value in (("width", width), ("height", height)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_SIDE:
            raise invalid(f"{where}.{key}", f"must be an integer from 1 to {MAX_SIDE} "
                          f"(pixels), not {shown(value, 40)}")
    return width, height


def image_part(size: tuple[int, int] | None, detail: str, notes: list[str]) -> dict[str, Any]:
    """The OpenAI-style image part ``count_chat`` reads, at ``size`` (else the default)."""
    if size is None:
        notes.append(DEFAULT_NOTE)
        size = DEFAULT_SIZE
    return {"type": "image_url", "width": size[0], "height": size[1],
            "image_url": {"url": "", "detail": detail}}
