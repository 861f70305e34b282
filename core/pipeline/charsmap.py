"""SentencePiece's precompiled character map: a darts-clone double-array trie + a string blob.

Layout (``precompiled_charsmap`` in a ``.model`` file and in HF's ``Precompiled`` normalizer):
a little-endian uint32 giving the trie's size in bytes, the trie (uint32 units), then the
replacement strings, each ending in a NUL byte. A trie value is the offset of a replacement.
"""

from __future__ import annotations

import re
import struct
from array import array
from functools import cached_property

from tokend.core.errors import CorruptData


class CharsMap:
    """Longest- and shortest-prefix lookups of a precompiled charsmap."""

    def __init__(self, blob: bytes, *, source: str = "<charsmap>") -> None:
        if len(blob) < 4:
            raise CorruptData(f"{source}: precompiled charsmap of {len(blob)} bytes is truncated")
        (trie_size,) = struct.unpack_from("<I", blob)
        if trie_size % 4 or 4 + trie_size > len(blob):
            raise CorruptData(f"{source}: precompiled charsmap trie size {trie_size} is invalid")
        units = array("I")
        units.frombytes(blob[4 : 4 + trie_size])
        if struct.pack("=I", 1) != struct.pack("<I", 1):  # pragma: no cover - big-endian hosts
            units.byteswap()
        self._units = units.tolist()
        self._strings = blob[4 + trie_size :]
        self._replacements: dict[int, str] = {}

    # -- darts-clone units: label, leaf flag, offset, value ---------------------------------

    def prefixes(self, data: bytes, start: int) -> list[tuple[int, int]]:
        """Every ``(length, value)`` of a key that is a prefix of ``data[start:]``, shortest
        first (darts-clone's ``commonPrefixSearch``)."""
        units = self._units
        found: list[tuple[int, int]] = []
        unit = units[0]
        pos = (unit >> 10) << ((unit & (1 << 9)) >> 6)
        for i in range(start, len(data)):
            byte = data[i]
            if byte == 0:
                break
            pos ^= byte
            if pos >= len(units):
                break
            unit = units[pos]
            if (unit & ((1 << 31) | 0xFF)) != byte:
                break
            pos ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if (unit >> 8) & 1:
                found.append((i + 1 - start, units[pos] & ((1 << 31) - 1)))
        return found

    def replacement(self, value: int) -> str:
        """The NUL-terminated replacement string stored at ``value``."""
        cached = self._replacements.get(value)
        if cached is None:
            end = self._strings.find(b"\0", value)
            raw = self._strings[value : end if end >= 0 else len(self._strings)]
            cached = raw.decode("utf-8", errors="replace")
            self._replacements[value] = cached
        return cached

    @cached_property
    def first_bytes(self) -> re.Pattern[bytes]:
        """A bytes regex matching any byte that starts some key (a cheap pre-filter)."""
        units = self._units
        root = units[0]
        base = (root >> 10) << ((root & (1 << 9)) >> 6)
        starts = [
            b for b in range(1, 256) if (base ^ b) < len(units) and (units[base ^ b] & 0xFF) == b
            and not units[base ^ b] & (1 << 31)
        ]
        if not starts:
            return re.compile(b"(?!)")
        return re.compile(b"[" + b"".join(re.escape(bytes([b])) for b in starts) + b"]")

    # -- the two ways of applying it ---------------------------------------------------------

    def normalize_longest(self, text: str) -> list[tuple[str, str]]:
        """SentencePiece's rule: at each position the longest key wins; else one character.

        Returns ``(original, replacement)`` pieces covering ``text`` in order (unchanged spans
        as one piece each), so callers can apply SentencePiece's whitespace rules per piece.
        """
        return [(original, norm) for original, norm, _key in self.chunks_longest(text)]

    def chunks_longest(self, text: str) -> list[tuple[str, str, bool]]:
        """``normalize_longest`` with a flag per piece: True for a charsmap key, False for an
        unchanged span (which SentencePiece consumes one character at a time)."""
        data = text.encode("utf-8", errors="surrogatepass")
        out: list[tuple[str, str, bool]] = []
        pos = 0
        for match in self.first_bytes.finditer(data):
            at = match.start()
            if at < pos or 0x80 <= data[at] < 0xC0:  # keys start at character starts
                continue
            found = self.prefixes(data, at)
            if not found:
                continue
            length, value = max(found, key=lambda item: item[0])
            if pos < at:
                plain = data[pos:at].decode("utf-8", errors="surrogatepass")
                out.append((plain, plain, False))
            original = data[at : at + length].decode("utf-8", errors="replace")
            out.append((original, self.replacement(value), True))
            pos = at + length
        if pos < len(data):
            plain = data[pos:].decode("utf-8", errors="surrogatepass")
            out.append((plain, plain, False))
        return out

    def transform(self, chunk: str) -> str | None:
        """HF's lookup: the replacement of the *shortest* key that prefixes ``chunk``."""
        found = self.prefixes(chunk.encode("utf-8", errors="surrogatepass"), 0)
        return self.replacement(found[0][1]) if found else None
