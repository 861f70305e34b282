"""Streaming training input: read files or str chunks and cut them into independent pieces.

A piece can be pretokenized on its own with exactly the same result as pretokenizing the whole
document it came from, so pieces can be counted in any order, in any process. Pieces end at
special tokens (a document boundary) and, for the named patterns only, at a *safe cut*.

Safe cut (named patterns ``gpt2``, ``cl100k``, ``o200k``): a cut right before a U+0020 space
whose left neighbour X is not whitespace (``\\S`` in the same ``regex`` engine). Why it is safe:

1. No match of those patterns contains a non-whitespace character followed by a space. In every
   alternative a space can only be the optional first character (`` ?\\p{L}+``,
   ``[^\\r\\n\\p{L}\\p{N}]?\\p{L}+``, `` ?[^\\s\\p{L}\\p{N}]+``), or part of an all-whitespace
   match (``\\s+(?!\\S)``, ``\\s*[\\r\\n]``, ``\\s+``, ``\\s++$``); what may follow a non-whitespace
   run is letters, digits, punctuation, a contraction, ``[\\r\\n]*`` (cl100k) or ``[\\r\\n/]*``
   (o200k) — never a space. So the match holding X ends at X and the next one starts at the space.
2. The match holding X cannot tell a following space from the end of the text: every test the
   engine makes right after X (a letter, digit, punctuation, quote or ``[\\r\\n/]`` class) fails
   on both. The only anchor (cl100k ``\\s++$``) follows whitespace only, and no pattern has a
   lookbehind, so matching from the space onward depends only on the text from the space on.

Custom patterns get no such proof, so their documents are cut only at special tokens (a file
without special tokens is then held in memory whole while it is counted); the same holds for a
long stretch of text with no safe cut (e.g. Chinese without spaces) under a named pattern.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import regex

from tokend.core.errors import InvalidInput
from tokend.core.training.utf8 import utf8_blocks

# How many bytes to read from a file at a time.
# How many characters to gather before looking for pieces to hand out (small enough that
# counting work spreads evenly over the worker processes).
TARGET_PIECE_CHARS = 1 << 18

_WHITESPACE = regex.compile(r"\s")

CorpusInput = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Iterable[str]


@dataclass(frozen=True)
class Source:
    """One input stream: a file (``path`` set, ``size`` known) or the caller's str chunks."""

    name: str
    blocks: Iterable[str]
    size: int | None


def open_sources(corpus: CorpusInput) -> list[Source]:
    """Turn the ``corpus`` argument of ``train_bpe`` into streams, checking files exist first.

    A ``str`` or path-like is one file (or an ``s3://bucket/key`` object, or every object under
    ``s3://bucket/prefix/``); a list or tuple is a list of those; any other iterable
    (a generator, an iterator, an open text file) is a stream of text chunks. Documents never
    span two files, but do span chunk boundaries of one stream. Files are decoded as strict
    UTF-8 exactly as stored: no newline translation, so ``\r\n`` stays two characters.
    """
    obj: object = corpus  # checked at run time: callers may pass anything
    if isinstance(obj, str | os.PathLike):
        return _file_sources([obj])
    if isinstance(obj, list | tuple):
        if not obj:
            raise InvalidInput("corpus is an empty list of files; pass at least one path")
        return _file_sources(obj)
    if isinstance(obj, bytes | bytearray):
        raise InvalidInput("corpus must be text or a path, not bytes; decode it first")
    if not isinstance(obj, Iterable):
        raise InvalidInput(
            f"corpus must be a path, a list of paths or an iterable of str, "
            f"not {type(obj).__name__}"
        )
    return [Source("<chunks>", _checked_chunks(obj), None)]


def _file_sources(items: Sequence[object]) -> list[Source]:
    """Local files, and ``s3://`` objects (a prefix ending in ``/``: every object under it)."""
    # subtle: imported here, as tokend.core.training's package imports this module.
    from tokend.core.training import objects  # noqa: PLC0415

    out: list[Source] = []
    for item in items:
        if isinstance(item, str) and objects.is_s3_url(item):
            listed = objects.s3_list(item)
            out += [Source(url, objects.s3_blocks(url), size) for url, size in listed]
        else:
            out.append(_file_source(item))
    return out


def _file_source(path: object) -> Source:
    if not isinstance(path, str | os.PathLike):
        raise InvalidInput(
            f"corpus list items must be paths, got {type(path).__name__}; "
            "to train on text, pass an iterator of str chunks, e.g. iter([text])"
        )
    p = Path(path)
    try:
        is_file = p.is_file()
    except (OSError, ValueError) as e:  # a name too long for the OS, or with a NUL in it
        raise InvalidInput(
            f"corpus path {str(p)[:100]!r} cannot be a file ({e.__class__.__name__}); "
            "to train on text, pass an iterator of str chunks, e.g. iter([text])"
        ) from None
    if not is_file:
        raise InvalidInput(
            f"corpus file {str(p)[:100]!r} does not exist or is not a file; "
            "to train on text, pass an iterator of str chunks, e.g. iter([text])"
        )
    return Source(str(p), _read_utf8_blocks(p), p.stat().st_size)


def _checked_chunks(chunks: Iterable[object]) -> Iterator[str]:
    for chunk in chunks:
        if not isinstance(chunk, str):
            raise InvalidInput(f"corpus chunks must be str, got {type(chunk).__name__}")
        yield chunk


def file_blocks(path: Path) -> Iterator[str]:
    """A file's text in blocks, strict UTF-8 as stored (what ``open_sources`` reads)."""
    return _read_utf8_blocks(path)


def _read_utf8_blocks(path: Path) -> Iterator[str]:
    """Yield the file's text in blocks; a multi-byte character may straddle two reads."""
    with path.open("rb") as f:
        yield from utf8_blocks(f.read, f"corpus file {str(path)[:100]!r}")


def find_safe_cut(buf: str, start: int, end: int) -> int:
    """Rightmost safe cut in ``buf[start+1:end]`` (a space after non-whitespace), or -1.

    >>> find_safe_cut("ab  cd ef", 0, 9), find_safe_cut("ab  cd ef", 0, 6)
    (6, 2)
    """
    if end <= start + 1:  # subtle: a negative end would count from the back in rfind
        return -1
    c = buf.rfind(" ", start + 1, end)
    while c > start:
        if _WHITESPACE.match(buf, c - 1) is None:
            return c
        c = buf.rfind(" ", start + 1, c)
    return -1


class Splitter:
    """Cut one stream of text into independent pieces (see the module docstring).

    Feed it chunks with ``feed`` and end the stream with ``finish``; both return the pieces
    that are complete. Empty documents yield nothing. ``documents`` counts non-empty ones.

    >>> s = Splitter(["<|eot|>"], safe_cuts=False)
    >>> s.feed("a b<|eot|>c"), s.finish(), s.documents
    ([], ['a b', 'c'], 2)
    """

    def __init__(
        self,
        special_tokens: Sequence[str],
        *,
        safe_cuts: bool,
        target_chars: int = TARGET_PIECE_CHARS,
    ) -> None:
        # Longest first, so a special token that extends another one wins at the same spot.
        ordered = sorted(special_tokens, key=lambda s: (-len(s), s))
        self._special_re = (
            regex.compile("|".join(regex.escape(s) for s in ordered)) if ordered else None
        )
        # A match starting this close to the end of the buffer may still grow with more text.
        self._lookahead = max((len(s) for s in ordered), default=1)
        self._safe_cuts = safe_cuts
        self._target = target_chars
        self._threshold = target_chars
        self._pending: list[str] = []
        self._pending_len = 0
        self._doc_has_text = False
        self.documents = 0

    def feed(self, text: str) -> list[str]:
        """Add text; return the pieces that can no longer change."""
        if not text:
            return []
        self._pending.append(text)
        self._pending_len += len(text)
        if self._pending_len < self._threshold:
            return []
        return self._drain(final=False)

    def finish(self) -> list[str]:
        """End the stream (its last document ends here); the splitter can then be reused."""
        out = self._drain(final=True)
        self._doc_has_text = False
        return out

    def _drain(self, *, final: bool) -> list[str]:
        buf = "".join(self._pending)
        out: list[str] = []
        pos = 0
        # Match starts at or past `limit` could still be part of a longer special token.
        limit = len(buf) - self._lookahead + 1
        if self._special_re is not None:
            for m in self._special_re.finditer(buf):
                if not final and m.start() >= limit:
                    break
                self._emit(out, buf[pos : m.start()], doc_end=True)
                pos = m.end()
        if final:
            self._emit(out, buf[pos:], doc_end=True)
            pos = len(buf)
        elif self._safe_cuts:
            cut = find_safe_cut(buf, pos, min(len(buf), limit + 1))
            if cut > pos:
                self._emit(out, buf[pos:cut], doc_end=False)
                pos = cut
        rest = buf[pos:]
        self._pending = [rest] if rest else []
        self._pending_len = len(rest)
        # subtle: grow geometrically when nothing could be cut, or joins go quadratic.
        self._threshold = max(self._target, 2 * len(rest))
        return out

    def _emit(self, out: list[str], piece: str, *, doc_end: bool) -> None:
        if piece:
            out.append(piece)
            self._doc_has_text = True
        if doc_end:
            if self._doc_has_text:
                self.documents += 1
            self._doc_has_text = False
