"""Pre-tokenizers: cut normalized text into words, one class per HF ``pre_tokenizers`` type.

A piece is ``(text, at_start)``: ``at_start`` says the piece begins at offset 0 of the original
text, which only Metaspace's ``prepend_scheme: first`` asks about. Splitting follows HF's
``NormalizedString::split``: the pattern yields matches and the gaps between them, the
behaviour decides what happens to the matches, empty pieces are dropped.

An aligned piece (``pre_tokenize_aligned``, used only when offsets are asked for) also carries
the original span of each of its characters (:mod:`core.pipeline.alignment`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

import regex

from tokend.core.formats import bytes_to_unicode
from tokend.core.patterns import GPT2_PATTERN
from tokend.core.pipeline._config import (
    WHITESPACE_SET,
    compile_pattern,
    component_type,
    field,
    unsupported,
)
from tokend.core.pipeline._hf_punct import CLASS_BODY, RANGES
from tokend.core.pipeline.alignment import Align

Piece = tuple[str, bool]
AlignedPiece = tuple[str, bool, Align]  # text, at_start, the original span of each character
Span = tuple[int, int, bool]  # start, end, is a match

BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_HF_PUNCT = frozenset(chr(c) for a, b in RANGES for c in range(a, b + 1))
# Rust regex's Unicode \w and \s (UTS #18), which Python's own \w and \s do not match exactly.
_WORD = r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]"
_SPACE = r"\p{White_Space}"
_WHITESPACE_RE = regex.compile(rf"{_WORD}+|[^{_WORD[1:-1]}{_SPACE}]+")
_GPT2_RE = regex.compile(GPT2_PATTERN)


def is_punctuation(c: str) -> bool:
    """ASCII punctuation or a P* character of HF's Unicode tables (HF's ``is_punc``)."""
    return c in _ASCII_PUNCT or c in _HF_PUNCT


def is_numeric(c: str) -> bool:
    """Rust's ``char::is_numeric``: categories Nd, Nl, No."""
    return unicodedata.category(c).startswith("N")


def regex_spans(pattern: regex.Pattern[str], text: str) -> list[Span]:
    """Matches of ``pattern`` and the gaps between them, covering ``text``."""
    if not text:
        return [(0, 0, False)]
    spans: list[Span] = []
    prev = 0
    for match in pattern.finditer(text):
        start, end = match.span()
        if prev != start:
            spans.append((prev, start, False))
        spans.append((start, end, True))
        prev = end
    if prev != len(text):
        spans.append((prev, len(text), False))
    return spans


def char_spans(predicate: Callable[[str], bool], text: str) -> list[Span]:
    """Each character satisfying ``predicate`` is one match; runs of the others are gaps."""
    if not text:
        return [(0, 0, False)]
    spans: list[Span] = []
    last = 0
    for i, c in enumerate(text):
        if predicate(c):
            if last < i:
                spans.append((last, i, False))
            spans.append((i, i + 1, True))
            last = i + 1
    if last < len(text):
        spans.append((last, len(text), False))
    return spans


def apply_behavior(spans: list[Span], behavior: str) -> list[tuple[int, int]]:
    """What each behaviour keeps of the matches (HF's ``SplitDelimiterBehavior``)."""
    if behavior == "Isolated":
        return [(s, e) for s, e, _ in spans]
    if behavior == "Removed":
        return [(s, e) for s, e, is_match in spans if not is_match]
    out: list[list[int]] = []
    previous = False
    if behavior == "MergedWithNext":
        for s, e, is_match in reversed(spans):
            if is_match and not previous and out:
                out[-1][0] = s
            else:
                out.append([s, e])
            previous = is_match
        out.reverse()
    else:
        for s, e, is_match in spans:
            merge = (is_match == previous) if behavior == "Contiguous" else (
                is_match and not previous)
            if merge and out:
                out[-1][1] = e
            else:
                out.append([s, e])
            previous = is_match
    return [(s, e) for s, e in out]


def cut(piece: Piece, bounds: Iterable[tuple[int, int]]) -> list[Piece]:
    """The non-empty pieces of ``piece`` at ``bounds``; only one starting at 0 keeps at_start."""
    text, at_start = piece
    return [(text[s:e], at_start and s == 0) for s, e in bounds if e > s]


class PreTokenizer:
    """Base: ``pre_tokenize(pieces) -> pieces``."""

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        out: list[Piece] = []
        for piece in pieces:
            out += self.split(piece)
        return out

    def split(self, piece: Piece) -> list[Piece]:
        raise NotImplementedError

    def pre_tokenize_aligned(self, pieces: list[AlignedPiece]) -> list[AlignedPiece]:
        """``pre_tokenize`` with each piece's alignment carried along."""
        out: list[AlignedPiece] = []
        for piece in pieces:
            out += self.split_aligned(piece)
        return out

    def split_aligned(self, piece: AlignedPiece) -> list[AlignedPiece]:
        text, at_start, align = piece
        return [(text[s:e], at_start and s == 0, align[s:e]) for s, e in self.bounds(text)
                if e > s]

    def bounds(self, text: str) -> Iterable[tuple[int, int]]:
        """Where ``split`` cuts ``text`` (for the pre-tokenizers that only cut)."""
        raise NotImplementedError


class Split(PreTokenizer):
    """Split on a literal or regex with a behaviour, optionally inverted."""

    def __init__(self, pattern: regex.Pattern[str], behavior: str, invert: bool) -> None:
        self.pattern, self.behavior, self.invert = pattern, behavior, invert

    def split(self, piece: Piece) -> list[Piece]:
        text, at_start = piece
        if self.behavior == "Isolated" and not self.invert:
            # The common case, without span tuples: every match and every gap is a piece.
            out: list[Piece] = []
            prev = 0
            for match in self.pattern.finditer(text):
                start, end = match.span()
                if prev < start:
                    out.append((text[prev:start], at_start and prev == 0))
                if start < end:
                    out.append((text[start:end], at_start and start == 0))
                prev = end
            if prev < len(text):
                out.append((text[prev:], at_start and prev == 0))
            return out
        return cut(piece, self.bounds(text))

    def bounds(self, text: str) -> Iterable[tuple[int, int]]:
        spans = regex_spans(self.pattern, text)
        if self.invert:
            spans = [(s, e, not m) for s, e, m in spans]
        return apply_behavior(spans, self.behavior)


class CharSplit(PreTokenizer):
    """Split at characters of a class (Punctuation, Digits, CharDelimiterSplit...).

    ``char_class`` is the regex class (``[\\p{N}]``) equal to ``predicate``: the behaviours that
    allow it run as one regex ``findall`` (each class character a match, as HF's per-character
    pattern makes them); the others go through the predicate.
    """

    def __init__(self, predicate: Callable[[str], bool], behavior: str,
                 char_class: str | None = None) -> None:
        self.predicate, self.behavior = predicate, behavior
        self._findall = None
        if char_class is not None:
            inner = char_class[1:-1]
            fast = {
                "Isolated": f"{char_class}|[^{inner}]+",
                "Removed": f"[^{inner}]+",
                "Contiguous": f"{char_class}+|[^{inner}]+",
            }.get(behavior)
            self._findall = regex.compile(fast).findall if fast else None

    def split(self, piece: Piece) -> list[Piece]:
        if self._findall is not None:
            text, at_start = piece
            parts = self._findall(text)
            if not (at_start and parts):
                return [(p, False) for p in parts]
            # only a first part that starts at offset 0 keeps at_start
            return [(parts[0], text.startswith(parts[0])), *((p, False) for p in parts[1:])]
        return cut(piece, self.bounds(piece[0]))

    def bounds(self, text: str) -> Iterable[tuple[int, int]]:
        return apply_behavior(char_spans(self.predicate, text), self.behavior)


class Whitespace(PreTokenizer):
    r"""Words and runs of other non-space characters (``\w+|[^\w\s]+``)."""

    def split(self, piece: Piece) -> list[Piece]:
        return cut(piece, self.bounds(piece[0]))

    def bounds(self, text: str) -> Iterable[tuple[int, int]]:
        return [m.span() for m in _WHITESPACE_RE.finditer(text)]


# ASCII punctuation (Rust's) and HF's Unicode P* (core/pipeline/_hf_punct.py)
_PUNCT_CLASS = r"[!-/:-@\[-`{-~" + CLASS_BODY + "]"
_NUMERIC_CLASS = r"[\p{N}]"
_SPACE_CLASS = r"[\p{White_Space}]"


def WhitespaceSplit() -> PreTokenizer:  # noqa: N802 - named like the HF component it builds
    """Split on Unicode whitespace, dropping it."""
    return CharSplit(WHITESPACE_SET.__contains__, "Removed", _SPACE_CLASS)


class BertPreTokenizer(PreTokenizer):
    """Split on whitespace (dropped), then isolate each punctuation character."""

    def __init__(self) -> None:
        self._space = WhitespaceSplit()
        self._punct = CharSplit(is_punctuation, "Isolated", _PUNCT_CLASS)

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        return self._punct.pre_tokenize(self._space.pre_tokenize(pieces))

    def pre_tokenize_aligned(self, pieces: list[AlignedPiece]) -> list[AlignedPiece]:
        return self._punct.pre_tokenize_aligned(self._space.pre_tokenize_aligned(pieces))


# Latin-1 code point (= a byte) -> GPT-2's printable character, for str.translate.
_BYTE_CHARS = {byte: char for byte, char in bytes_to_unicode().items()}


def to_byte_chars(text: str) -> str:
    """UTF-8 bytes of ``text`` in GPT-2's printable alphabet (one C-level translate)."""
    return text.encode("utf-8", "surrogatepass").decode("latin-1").translate(_BYTE_CHARS)


class ByteLevel(PreTokenizer):
    """Optional prefix space, optional GPT-2 regex split, then bytes -> printable alphabet."""

    def __init__(self, *, add_prefix_space: bool, use_regex: bool) -> None:
        self.add_prefix_space, self.use_regex = add_prefix_space, use_regex

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        if self.add_prefix_space or self.use_regex:
            return super().pre_tokenize(pieces)
        return [(to_byte_chars(t), s) for t, s in pieces]

    def split(self, piece: Piece) -> list[Piece]:
        text, at_start = piece
        if self.add_prefix_space and not text.startswith(" "):
            text = " " + text
        pieces = [(text, at_start)]
        if self.use_regex:
            pieces = cut(pieces[0], apply_behavior(regex_spans(_GPT2_RE, text), "Isolated"))
        return [(to_byte_chars(t), s) for t, s in pieces]

    def split_aligned(self, piece: AlignedPiece) -> list[AlignedPiece]:
        text, at_start, align = piece
        if self.add_prefix_space and text and not text.startswith(" "):
            text, align = " " + text, [align[0], *align]  # HF's prepend: the first char's span
        pieces = [(text, at_start, align)]
        if self.use_regex:
            bounds = apply_behavior(regex_spans(_GPT2_RE, text), "Isolated")
            pieces = [(text[s:e], at_start and s == 0, align[s:e]) for s, e in bounds if e > s]
        out: list[AlignedPiece] = []
        for part, start, spans in pieces:
            chars = to_byte_chars(part)
            if len(chars) == len(part):
                out.append((chars, start, spans))
                continue
            expanded: Align = []  # every byte of a character shares that character's span
            for char, span in zip(part, spans, strict=True):
                expanded += [span] * len(char.encode("utf-8", "surrogatepass"))
            out.append((chars, start, expanded))
        return out


class Metaspace(PreTokenizer):
    """Spaces -> ``replacement`` (▁), a prepended ▁ per scheme, split before each ▁."""

    def __init__(self, replacement: str, prepend_scheme: str, split: bool) -> None:
        self.replacement, self.prepend_scheme, self.do_split = replacement, prepend_scheme, split
        # Split MergedWithNext on ▁ = each ▁ opens a word, text before the first is one too.
        rep = regex.escape(replacement)
        self._words = regex.compile(f"{rep}[^{rep}]*|[^{rep}]+").findall

    def split(self, piece: Piece) -> list[Piece]:
        text, at_start = piece
        rep = self.replacement
        text = text.replace(" ", rep)
        if not text.startswith(rep) and (
            self.prepend_scheme == "always" or (self.prepend_scheme == "first" and at_start)
        ):
            text = rep + text
        if not self.do_split:
            return [(text, at_start)] if text else []
        # subtle: one findall instead of per-character spans and the generic MergedWithNext
        # (split_aligned keeps that): the mon-tokenizer file's cold 1 MB encode went from
        # 0.39 to 0.18 s of CPU; the words start at 0, so only the first keeps at_start
        words = self._words(text)
        return [(word, at_start and i == 0) for i, word in enumerate(words)]

    def split_aligned(self, piece: AlignedPiece) -> list[AlignedPiece]:
        text, at_start, align = piece
        rep = self.replacement
        text = text.replace(" ", rep)  # one for one: each ▁ keeps its space's span
        if text and not text.startswith(rep) and (
            self.prepend_scheme == "always" or (self.prepend_scheme == "first" and at_start)
        ):
            text, align = rep + text, [align[0], *align]
        if not self.do_split:
            return [(text, at_start, align)] if text else []
        bounds = apply_behavior(char_spans(rep.__eq__, text), "MergedWithNext")
        return [(text[s:e], at_start and s == 0, align[s:e]) for s, e in bounds if e > s]


class Sequence(PreTokenizer):
    """Apply pre-tokenizers in order, each to every piece the previous one made."""

    def __init__(self, pre_tokenizers: list[PreTokenizer]) -> None:
        self.pre_tokenizers = pre_tokenizers

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        for pre_tokenizer in self.pre_tokenizers:
            pieces = pre_tokenizer.pre_tokenize(pieces)
        return pieces

    def pre_tokenize_aligned(self, pieces: list[AlignedPiece]) -> list[AlignedPiece]:
        for pre_tokenizer in self.pre_tokenizers:
            pieces = pre_tokenizer.pre_tokenize_aligned(pieces)
        return pieces


def _behavior(obj: dict[str, Any], path: str, default: str) -> str:
    behavior = field(obj, "behavior", str, path, default=default)
    if behavior not in BEHAVIORS:
        unsupported(f"behavior {behavior!r}", f"{path}.behavior", f"known: {BEHAVIORS}")
    return behavior


def _metaspace(obj: dict[str, Any], path: str) -> PreTokenizer:
    replacement = field(obj, "replacement", str, path, default="▁")
    if len(replacement) != 1:
        unsupported(f"Metaspace replacement {replacement!r}", path, "must be one character")
    if "prepend_scheme" in obj:
        scheme = field(obj, "prepend_scheme", str, path)
    else:  # files from before prepend_scheme existed
        scheme = "always" if field(obj, "add_prefix_space", bool, path, default=True) else "never"
    if scheme not in ("always", "first", "never"):
        unsupported(f"Metaspace prepend_scheme {scheme!r}", f"{path}.prepend_scheme")
    return Metaspace(replacement, scheme, field(obj, "split", bool, path, default=True))


def _char_delimiter(obj: dict[str, Any], path: str) -> PreTokenizer:
    delimiter = field(obj, "delimiter", str, path)
    if len(delimiter) != 1:
        unsupported(f"CharDelimiterSplit delimiter {delimiter!r}", path, "one character")
    return CharSplit(delimiter.__eq__, "Removed", f"[{regex.escape(delimiter)}]")


def _sequence(obj: dict[str, Any], path: str) -> PreTokenizer:
    items = field(obj, "pretokenizers", list, path)
    return Sequence([from_json(o, f"{path}.pretokenizers[{i}]") for i, o in enumerate(items)])


_BUILDERS: dict[str, Callable[[dict[str, Any], str], PreTokenizer]] = {
    "ByteLevel": lambda o, p: ByteLevel(
        add_prefix_space=field(o, "add_prefix_space", bool, p, default=True),
        use_regex=field(o, "use_regex", bool, p, default=True),
    ),
    "Split": lambda o, p: Split(
        compile_pattern(o.get("pattern"), f"{p}.pattern"),
        _behavior(o, p, "Isolated"),
        field(o, "invert", bool, p, default=False),
    ),
    "Metaspace": _metaspace,
    "Whitespace": lambda o, p: Whitespace(),
    "WhitespaceSplit": lambda o, p: WhitespaceSplit(),
    "BertPreTokenizer": lambda o, p: BertPreTokenizer(),
    "Punctuation": lambda o, p: CharSplit(
        is_punctuation, _behavior(o, p, "Isolated"), _PUNCT_CLASS
    ),
    "Digits": lambda o, p: CharSplit(
        is_numeric,
        "Isolated" if field(o, "individual_digits", bool, p, default=False) else "Contiguous",
        _NUMERIC_CLASS,
    ),
    "CharDelimiterSplit": _char_delimiter,
    "Sequence": _sequence,
}


def from_json(obj: object, path: str = "pre_tokenizer") -> PreTokenizer:
    """Build a pre-tokenizer from its ``tokenizer.json`` object; refuse unknown types."""
    kind = component_type(obj, path)
    builder = _BUILDERS.get(kind)
    if builder is None:
        unsupported(f"pre-tokenizer {kind!r}", path, f"known: {', '.join(sorted(_BUILDERS))}")
    assert isinstance(obj, dict)
    return builder(obj, path)
