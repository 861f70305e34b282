"""Tokenizer file formats: ``.tiktoken`` rank files and GPT-2 ``vocab.json`` + ``merges.txt``.

Readers name the file and line of any parse error; writers write a temporary file in the same
directory, fsync it and rename it into place, so a crash never leaves a half-written file.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import os
import tempfile
import zlib
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from tokend.core.errors import CorruptData

Rank = int
Pair = tuple[bytes, bytes]


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def read_maybe_gzip(path: str | os.PathLike[str]) -> bytes:
    """Read a file, transparently decompressing it when its name ends in ``.gz``."""
    raw = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:  # zlib.error: a damaged deflate stream
            raise CorruptData(f"{path}: not a valid gzip file ({exc})") from None
    return raw


def parse_tiktoken_bpe(contents: bytes, *, source: str = "<bytes>") -> dict[bytes, Rank]:
    """Parse ``.tiktoken`` contents: one ``base64(token) rank`` per line.

    >>> parse_tiktoken_bpe(b"YQ== 0\\nYg== 1\\n")
    {b'a': 0, b'b': 1}
    """
    ranks: dict[bytes, Rank] = {}
    seen_ranks: set[int] = set()
    for lineno, line in enumerate(contents.splitlines(), start=1):
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise CorruptData(f"{source}:{lineno}: expected 'base64 rank', got {line[:80]!r}")
        try:
            # what base64.b64decode(validate=True) runs, minus its per-call type checks
            token = binascii.a2b_base64(parts[0], strict_mode=True)
            rank = int(parts[1])
        except (binascii.Error, ValueError):
            raise CorruptData(f"{source}:{lineno}: cannot parse {line[:80]!r}") from None
        if rank < 0:
            raise CorruptData(f"{source}:{lineno}: negative rank {rank}")
        if token in ranks:
            raise CorruptData(f"{source}:{lineno}: token {token!r} appears twice")
        if rank in seen_ranks:
            raise CorruptData(f"{source}:{lineno}: rank {rank} appears twice")
        seen_ranks.add(rank)
        ranks[token] = rank
    return ranks


def load_tiktoken_bpe(
    path: str | os.PathLike[str], *, expected_sha256: str | None = None
) -> dict[bytes, Rank]:
    """Load a ``.tiktoken`` (or ``.tiktoken.gz``) rank file, checking its sha256 if given.

    The hash is of the uncompressed contents, as tiktoken publishes it.
    """
    contents = read_maybe_gzip(path)
    if expected_sha256 is not None:
        actual = sha256_hex(contents)
        if actual != expected_sha256:
            raise CorruptData(
                f"{path}: sha256 is {actual}, expected {expected_sha256}; the file is corrupt "
                "or not the one that was published"
            )
    return parse_tiktoken_bpe(contents, source=str(path))


def format_tiktoken_bpe(ranks: Mapping[bytes, Rank]) -> bytes:
    """Serialize ranks in ``.tiktoken`` format, ordered by rank (tiktoken's own layout)."""
    lines = [
        base64.b64encode(token) + b" " + str(rank).encode()
        for token, rank in sorted(ranks.items(), key=lambda item: item[1])
    ]
    return b"".join(line + b"\n" for line in lines)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` via a fsynced temp file and a rename: all or nothing."""
    target = Path(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory so a rename inside it survives a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def dump_tiktoken_bpe(ranks: Mapping[bytes, Rank], path: str | os.PathLike[str]) -> str:
    """Write ranks to a ``.tiktoken`` file atomically; returns the sha256 of what was written."""
    data = format_tiktoken_bpe(ranks)
    atomic_write_bytes(path, data)
    return sha256_hex(data)


@cache
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable byte-to-unicode map used by ``vocab.json`` and ``merges.txt``.

    Printable Latin-1 bytes map to themselves; the rest map to code points from 256 upward.

    >>> bytes_to_unicode()[ord("a")], bytes_to_unicode()[ord(" ")]
    ('a', 'Ġ')
    """
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    mapping: dict[int, str] = {}
    extra = 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return mapping


@cache
def unicode_to_bytes() -> dict[str, int]:
    """Inverse of :func:`bytes_to_unicode`."""
    return {char: byte for byte, char in bytes_to_unicode().items()}


def token_to_printable(token: bytes) -> str:
    """Render token bytes in GPT-2's printable form (``b' the'`` -> ``'Ġthe'``)."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in token)


def printable_to_token(text: str, *, source: str = "<str>") -> bytes:
    """Inverse of :func:`token_to_printable`; names the source on an unmappable character."""
    table = unicode_to_bytes()
    try:
        return bytes(table[ch] for ch in text)
    except KeyError as exc:
        raise CorruptData(
            f"{source}: {text!r} contains {exc.args[0]!r}, not in GPT-2's byte-to-unicode map"
        ) from None


def read_gpt2_vocab(path: str | os.PathLike[str]) -> dict[int, bytes]:
    """Read a GPT-2/HF ``vocab.json`` (printable token -> id) as ``{id: token bytes}``."""
    try:
        raw = json.loads(decode_utf8(read_maybe_gzip(path), path))
    except json.JSONDecodeError as exc:
        raise CorruptData(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    except RecursionError:
        raise CorruptData(f"{path}: JSON nested too deeply") from None
    if not isinstance(raw, dict):
        raise CorruptData(f"{path}: expected a JSON object of token -> id")
    vocab: dict[int, bytes] = {}
    for text, token_id in raw.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
            raise CorruptData(f"{path}: id of {text!r} is {token_id!r}, not a non-negative int")
        if token_id in vocab:
            raise CorruptData(f"{path}: id {token_id} is used twice")
        vocab[token_id] = printable_to_token(text, source=str(path))
    return vocab


def decode_utf8(data: bytes, path: str | os.PathLike[str]) -> str:
    """``data`` as UTF-8 text; CorruptData naming the file, line and byte if it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CorruptData(
            f"{path}:{line}: not valid UTF-8 at byte {exc.start} ({exc.reason})"
        ) from None


def read_gpt2_merges(path: str | os.PathLike[str]) -> list[Pair]:
    """Read a GPT-2/HF ``merges.txt``: an optional ``#version`` line, then ``left right`` pairs."""
    merges: list[Pair] = []
    text = decode_utf8(read_maybe_gzip(path), path)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line or (lineno == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise CorruptData(f"{path}:{lineno}: expected 'left right', got {line[:80]!r}")
        source = f"{path}:{lineno}"
        merges.append(
            (
                printable_to_token(parts[0], source=source),
                printable_to_token(parts[1], source=source),
            )
        )
    return merges


def format_gpt2_merges(merges: Iterable[Pair]) -> str:
    """Serialize merges in GPT-2's printable ``merges.txt`` form (with a ``#version`` line)."""
    lines = ["#version: 0.2"]
    lines += [f"{token_to_printable(a)} {token_to_printable(b)}" for a, b in merges]
    return "\n".join(lines) + "\n"
