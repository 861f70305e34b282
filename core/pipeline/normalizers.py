"""Normalizers: text -> text before pre-tokenization, one class per HF ``normalizers`` type.

Each works on a plain ``str``; ``normalize_aligned`` does the same and also keeps where each
character came from (:mod:`core.pipeline.alignment`), only when a request asks for offsets.
Semantics follow HF ``tokenizers/src/normalizers/*.rs``; where Rust and Python disagree on a
Unicode definition (whitespace, lowercasing Σ) the Rust one is spelled out, and where HF's
Unicode tables are older than Python's (marks, controls, decompositions of characters assigned
since) HF's view is frozen in ``_hf_unicode.py`` (tools/gen_hf_unicode.py).
"""

from __future__ import annotations

import base64
import binascii
import unicodedata
from collections.abc import Callable
from typing import Any

import regex

from tokend.core.errors import CorruptData
from tokend.core.formats import bytes_to_unicode
from tokend.core.pipeline import _hf_unicode as hfu
from tokend.core.pipeline import alignment as al
from tokend.core.pipeline._config import (
    WHITESPACE,
    compile_pattern,
    component_type,
    field,
    unsupported,
)
from tokend.core.pipeline.charsmap import CharsMap


def _chars(ranges: hfu.Ranges) -> frozenset[str]:
    return frozenset(chr(c) for a, b in ranges for c in range(a, b + 1))


def _class(ranges: hfu.Ranges) -> str:
    """A regex character class of the ranges."""
    return "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]"


# Characters HF's Unicode normalization leaves alone (unassigned to its tables: starters
# without a decomposition), what its StripAccents and BERT's accent stripping remove.
OPAQUE = _chars(hfu.OPAQUE)
_OPAQUE_SPLIT = regex.compile(f"({_class(hfu.OPAQUE)})")
_MARKS = _chars(hfu.MARKS)
_NONSPACING = _chars(hfu.NONSPACING)


class Normalizer:
    """Base: ``normalize(text) -> text``."""

    def normalize(self, text: str) -> str:
        raise NotImplementedError

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        """``normalize`` that also maps each new character to its original span (``align`` has
        one span per character of ``text``; ``base`` is where the segment starts)."""
        raise NotImplementedError


class Unicode(Normalizer):
    """NFC / NFD / NFKC / NFKD."""

    def __init__(self, form: str) -> None:
        self.form: Any = form

    def normalize(self, text: str) -> str:
        if text.isascii():
            return text
        parts = _OPAQUE_SPLIT.split(text)
        if len(parts) == 1:
            return unicodedata.normalize(self.form, text)
        # HF's starters without decomposition: each run between them is normalized alone
        return "".join(p if i % 2 else unicodedata.normalize(self.form, p)
                       for i, p in enumerate(parts))

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        if text.isascii():
            return text, align
        return al.transform(align, al.unicode_changes(text, self.form, OPAQUE), 0, base)


class Lowercase(Normalizer):
    """Rust's per-character ``to_lowercase`` (no final-sigma rule, unlike ``str.lower``)."""

    def normalize(self, text: str) -> str:
        if "Σ" not in text:
            return text.lower()
        return "".join(c.lower() for c in text)

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        return al.expand_each(text, align, str.lower)


class Strip(Normalizer):
    """Strip Unicode White_Space on the left and/or right."""

    def __init__(self, left: bool, right: bool) -> None:
        self.left, self.right = left, right

    def normalize(self, text: str) -> str:
        if self.left:
            text = text.lstrip(WHITESPACE)
        if self.right:
            text = text.rstrip(WHITESPACE)
        return text

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        start, end = 0, len(text)
        if self.left:
            start = end - len(text.lstrip(WHITESPACE))
        if self.right:
            end = start + len(text[start:].rstrip(WHITESPACE))
        return text[start:end], align[start:end]


class StripAccents(Normalizer):
    """Drop combining marks (categories Mn, Mc, Me); usually after NFD."""

    def normalize(self, text: str) -> str:
        if text.isascii():
            return text
        return "".join(c for c in text if c not in _MARKS)

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        return al.keep(text, align, (c not in _MARKS for c in text))


class Replace(Normalizer):
    """Replace every match of a literal or regex with ``content``."""

    def __init__(self, pattern: regex.Pattern[str], content: str) -> None:
        self.pattern, self.content = pattern, content

    def normalize(self, text: str) -> str:
        content = self.content
        return self.pattern.sub(lambda _m: content, text)

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        # HF: the content is inserted after the match's characters are removed, so each of
        # its characters shares the alignment of the match's last character.
        parts: list[str] = []
        out: al.Align = []
        last = 0
        content = self.content
        for match in self.pattern.finditer(text):
            start, end = match.span()
            parts.append(text[last:start])
            out += align[last:start]
            if content:
                span = align[end - 1] if end >= 1 else (base, base)
                parts.append(content)
                out += [span] * len(content)
            last = end
        parts.append(text[last:])
        out += align[last:]
        return "".join(parts), out


class Prepend(Normalizer):
    """Prepend a string to any non-empty text."""

    def __init__(self, prepend: str) -> None:
        self.prepend = prepend

    def normalize(self, text: str) -> str:
        return self.prepend + text if text else text

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        if not text:
            return text, align
        return self.prepend + text, [align[0]] * len(self.prepend) + align


# BERT's control test is Rust's unicode_categories ``is_other`` (Cc, Cf, Co, Cs of its old
# tables, not the unassigned Cn), plus NUL and U+FFFD; \t \n \r are spaces instead.
_BERT_CONTROL = regex.compile(_class(hfu.BERT_DROP))
_BERT_SPACE = regex.compile(r"[\t\n\r\p{White_Space}]")
_CJK = regex.compile(
    "[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f"
    "\U0002b740-\U0002b81f\U0002b920-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f]"
)


class BertNormalizer(Normalizer):
    """BERT's cleanup: drop controls, whitespace -> space, pad CJK, strip accents, lowercase."""

    def __init__(
        self, *, clean_text: bool, handle_chinese_chars: bool, strip_accents: bool | None,
        lowercase: bool,
    ) -> None:
        self.clean_text = clean_text
        self.handle_chinese_chars = handle_chinese_chars
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        self.lowercase = lowercase

    def normalize(self, text: str) -> str:
        ascii_only = text.isascii()
        if self.clean_text and not (ascii_only and text.isprintable()):
            # subtle: controls go first, so \x0c and \x85 (controls *and* spaces) are dropped.
            text = _BERT_SPACE.sub(" ", _BERT_CONTROL.sub("", text))
        if self.handle_chinese_chars and not ascii_only:
            text = _CJK.sub(r" \g<0> ", text)
        if self.strip_accents and not ascii_only:
            text = "".join(  # BERT drops only non-spacing marks (Mn), unlike StripAccents
                c for c in Unicode("NFD").normalize(text) if c not in _NONSPACING
            )
        if self.lowercase:
            text = Lowercase().normalize(text)
        return text

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        if self.clean_text:
            text, align = al.keep(text, align, (_BERT_CONTROL.match(c) is None for c in text))
            text = _BERT_SPACE.sub(" ", text)  # one character for one: alignment unchanged
        if self.handle_chinese_chars:
            # HF: [(' ', 0), (c, 1), (' ', 1)]: all three aligned to the CJK character
            text, align = al.expand_each(
                text, align, lambda c: f" {c} " if _CJK.match(c) else c)
        if self.strip_accents:
            text, align = Unicode("NFD").normalize_aligned(text, align, base)
            text, align = al.keep(text, align, (c not in _NONSPACING for c in text))
        if self.lowercase:
            text, align = Lowercase().normalize_aligned(text, align, base)
        return text, align


_NMT_DROP = frozenset(
    [chr(c) for c in range(0x01, 0x09)] + ["\x0b"] + [chr(c) for c in range(0x0E, 0x20)]
    + ["\x7f", "\x8f", "\x9f"]
)
_NMT_SPACE = frozenset(
    ["\t", "\n", "\x0c", "\r", "\u1680", "\u2028", "\u2029", "\u2581", "\ufeff", "\ufffd"]
    + [chr(c) for c in range(0x200B, 0x2010)]
)


class Nmt(Normalizer):
    """SentencePiece's ``nmt`` cleanup: drop ASCII controls, map odd spaces to a space."""

    def normalize(self, text: str) -> str:
        return "".join(
            "" if c in _NMT_DROP else " " if c in _NMT_SPACE else c for c in text
        )

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        text, align = al.keep(text, align, (c not in _NMT_DROP for c in text))
        return "".join(" " if c in _NMT_SPACE else c for c in text), align


class Precompiled(Normalizer):
    """SentencePiece's precompiled charsmap, applied the way HF does: per grapheme cluster
    (under 6 bytes) and otherwise per character, each by its shortest matching key."""

    def __init__(self, charsmap: CharsMap) -> None:
        self.charsmap = charsmap

    def normalize(self, text: str) -> str:
        if not text or self.charsmap.first_bytes.search(text.encode("utf-8", "surrogatepass")) \
                is None:
            return text
        transform = self.charsmap.transform
        out: list[str] = []
        for grapheme in regex.findall(r"\X", text):
            if len(grapheme.encode("utf-8", "surrogatepass")) < 6:
                norm = transform(grapheme)
                if norm is not None:
                    out.append(norm)
                    continue
            for c in grapheme:
                norm = transform(c)
                out.append(c if norm is None else norm)
        return "".join(out)

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        if not text or self.charsmap.first_bytes.search(text.encode("utf-8", "surrogatepass")) \
                is None:
            return text, align
        transform = self.charsmap.transform
        changes: list[al.Change] = []
        for grapheme in regex.findall(r"\X", text):
            if len(grapheme.encode("utf-8", "surrogatepass")) < 6:
                norm = transform(grapheme)
                if norm is not None:
                    _replace(changes, grapheme, norm)
                    continue
            for c in grapheme:
                norm = transform(c)
                if norm is None:
                    changes.append((c, 0))
                else:
                    _replace(changes, c, norm)
        return al.transform(align, changes, 0, base)


def _replace(changes: list[al.Change], old: str, new: str) -> None:
    """HF precompiled.rs ``replace``: the change tags of swapping ``old`` for ``new``.

    subtle: a shrink is charged to the *last tag so far*, even one from an earlier grapheme
    (and lost at the very start), as HF does; the offsets follow its quirk exactly.
    """
    diff = len(new) - len(old)
    changes += [(c, 0) for c in new]
    if diff > 0:
        for i in range(len(changes) - diff, len(changes)):
            changes[i] = (changes[i][0], 1)
    elif diff < 0 and changes:
        char, change = changes[-1]
        changes[-1] = (char, change + diff)


class Sequence(Normalizer):
    """Apply normalizers in order (an empty sequence changes nothing)."""

    def __init__(self, normalizers: list[Normalizer]) -> None:
        self.normalizers = normalizers

    def normalize(self, text: str) -> str:
        for normalizer in self.normalizers:
            text = normalizer.normalize(text)
        return text

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        for normalizer in self.normalizers:
            text, align = normalizer.normalize_aligned(text, align, base)
        return text, align


class ByteLevel(Normalizer):
    """Map every UTF-8 byte to GPT-2's printable alphabet."""

    def normalize(self, text: str) -> str:
        table = bytes_to_unicode()
        return "".join(table[b] for b in text.encode("utf-8", "surrogatepass"))

    def normalize_aligned(self, text: str, align: al.Align, base: int) -> tuple[str, al.Align]:
        return al.expand_each(text, align, self.normalize)


def _precompiled(obj: dict[str, Any], path: str) -> Normalizer:
    raw = field(obj, "precompiled_charsmap", str, path, default="")
    try:
        blob = base64.b64decode(raw, validate=True)
    except binascii.Error:
        raise CorruptData(f"{path}.precompiled_charsmap is not base64") from None
    if not blob:
        return Sequence([])  # HF treats an empty charsmap as the identity
    return Precompiled(CharsMap(blob, source=f"{path}.precompiled_charsmap"))


def _sequence(obj: dict[str, Any], path: str) -> Normalizer:
    items = field(obj, "normalizers", list, path)
    return Sequence([from_json(item, f"{path}.normalizers[{i}]") for i, item in enumerate(items)])


_BUILDERS: dict[str, Callable[[dict[str, Any], str], Normalizer]] = {
    "NFC": lambda o, p: Unicode("NFC"),
    "NFD": lambda o, p: Unicode("NFD"),
    "NFKC": lambda o, p: Unicode("NFKC"),
    "NFKD": lambda o, p: Unicode("NFKD"),
    "Lowercase": lambda o, p: Lowercase(),
    "Strip": lambda o, p: Strip(
        field(o, "strip_left", bool, p, default=True), field(o, "strip_right", bool, p, True)
    ),
    "StripAccents": lambda o, p: StripAccents(),
    "Replace": lambda o, p: Replace(
        compile_pattern(o.get("pattern"), f"{p}.pattern"), field(o, "content", str, p)
    ),
    "Prepend": lambda o, p: Prepend(field(o, "prepend", str, p)),
    "BertNormalizer": lambda o, p: BertNormalizer(
        clean_text=field(o, "clean_text", bool, p, default=True),
        handle_chinese_chars=field(o, "handle_chinese_chars", bool, p, default=True),
        strip_accents=field(o, "strip_accents", bool, p, default=None),
        lowercase=field(o, "lowercase", bool, p, default=True),
    ),
    "Nmt": lambda o, p: Nmt(),
    "Precompiled": _precompiled,
    "Sequence": _sequence,
    "ByteLevel": lambda o, p: ByteLevel(),
}

NAMES = ("NFC", "NFD", "NFKC", "NFKD")


def from_json(obj: object, path: str = "normalizer") -> Normalizer:
    """Build a normalizer from its ``tokenizer.json`` object; refuse unknown types."""
    kind = component_type(obj, path)
    builder = _BUILDERS.get(kind)
    if builder is None:
        unsupported(f"normalizer {kind!r}", path, f"known: {', '.join(sorted(_BUILDERS))}")
    assert isinstance(obj, dict)
    return builder(obj, path)
