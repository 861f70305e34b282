"""Decoders: token strings -> text, one class per HF ``decoders`` type.

A decoder maps the list of token strings to a new list (HF's ``decode_chain``); the tokenizer
joins the final list. Without a decoder HF joins the tokens with spaces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex

from tokend.core.formats import unicode_to_bytes
from tokend.core.pipeline._config import compile_pattern, component_type, field, unsupported


class Decoder:
    """Base: ``decode_chain(tokens) -> tokens``."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise NotImplementedError


class ByteLevel(Decoder):
    """Printable alphabet -> bytes -> text (invalid UTF-8 replaced)."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        table = unicode_to_bytes()
        data = bytearray()
        for token in tokens:
            try:
                data += bytes([table[c] for c in token])
            except KeyError:  # not in the alphabet (an added token): its own UTF-8
                data += token.encode("utf-8", "surrogatepass")
        return [data.decode("utf-8", errors="replace")]


class Metaspace(Decoder):
    """▁ -> space; the first token loses its ▁ unless the prefix is never prepended."""

    def __init__(self, replacement: str, prepend_scheme: str) -> None:
        self.replacement, self.prepend_scheme = replacement, prepend_scheme

    def decode_chain(self, tokens: list[str]) -> list[str]:
        rep = self.replacement
        out = []
        for i, token in enumerate(tokens):
            if i == 0 and self.prepend_scheme != "never":
                out.append(token.replace(rep, ""))
            else:
                out.append(token.replace(rep, " "))
        return out


_CLEANUP = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)


def cleanup(text: str) -> str:
    """BERT's detokenization cleanup (spaces before punctuation and contractions)."""
    for old, new in _CLEANUP:
        text = text.replace(old, new)
    return text


class WordPiece(Decoder):
    """Join subwords: ``##ing`` glues to the previous token, others get a space."""

    def __init__(self, prefix: str, cleanup: bool) -> None:
        self.prefix, self.cleanup = prefix, cleanup

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for i, token in enumerate(tokens):
            text = token
            if i:
                text = text[len(self.prefix):] if text.startswith(self.prefix) else " " + text
            out.append(cleanup(text) if self.cleanup else text)
        return out


def byte_of(token: str) -> int | None:
    """The byte of a ``<0xNN>`` byte-fallback token, else None."""
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        try:
            return int(token[3:5], 16)
        except ValueError:
            return None
    return None


class ByteFallback(Decoder):
    """Runs of ``<0xNN>`` tokens -> their UTF-8 text, or one U+FFFD per byte if invalid."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        pending = bytearray()

        def flush() -> None:
            if pending:
                try:
                    out.append(pending.decode("utf-8"))
                except UnicodeDecodeError:
                    out.extend("\ufffd" * len(pending))
                pending.clear()

        for token in tokens:
            byte = byte_of(token)
            if byte is not None:
                pending.append(byte)
                continue
            flush()
            out.append(token)
        flush()
        return out


class Fuse(Decoder):
    """All tokens into one string."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]


class Strip(Decoder):
    """Remove up to ``start`` leading and ``stop`` trailing ``content`` characters per token."""

    def __init__(self, content: str, start: int, stop: int) -> None:
        self.content, self.start, self.stop = content, start, stop

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for token in tokens:
            begin = 0
            while begin < min(self.start, len(token)) and token[begin] == self.content:
                begin += 1
            end = len(token)
            for _ in range(self.stop):
                if end > 0 and token[end - 1] == self.content:
                    end -= 1
                else:
                    break
            out.append(token[begin:max(begin, end)])
        return out


class Replace(Decoder):
    """Replace a literal or regex in every token."""

    def __init__(self, pattern: regex.Pattern[str], content: str) -> None:
        self.pattern, self.content = pattern, content

    def decode_chain(self, tokens: list[str]) -> list[str]:
        content = self.content
        return [self.pattern.sub(lambda _m: content, t) for t in tokens]


class BPEDecoder(Decoder):
    """End-of-word suffix -> a space (nothing after the last token)."""

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    def decode_chain(self, tokens: list[str]) -> list[str]:
        last = len(tokens) - 1
        return [t.replace(self.suffix, "" if i == last else " ") for i, t in enumerate(tokens)]


class Sequence(Decoder):
    """Decoders in order, each on the previous one's output."""

    def __init__(self, decoders: list[Decoder]) -> None:
        self.decoders = decoders

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for decoder in self.decoders:
            tokens = decoder.decode_chain(tokens)
        return tokens


def _metaspace(o: dict[str, Any], p: str) -> Decoder:
    if "prepend_scheme" in o:
        scheme = field(o, "prepend_scheme", str, p)
    else:
        scheme = "always" if field(o, "add_prefix_space", bool, p, default=True) else "never"
    return Metaspace(field(o, "replacement", str, p, default="▁"), scheme)


def _one_char(o: dict[str, Any], p: str) -> str:
    content = field(o, "content", str, p)
    if len(content) != 1:
        unsupported(f"Strip content {content!r}", f"{p}.content", "one character")
    return content


_BUILDERS: dict[str, Callable[[dict[str, Any], str], Decoder]] = {
    "ByteLevel": lambda o, p: ByteLevel(),
    "Metaspace": _metaspace,
    "WordPiece": lambda o, p: WordPiece(
        field(o, "prefix", str, p, default="##"), field(o, "cleanup", bool, p, default=True)
    ),
    "ByteFallback": lambda o, p: ByteFallback(),
    "Fuse": lambda o, p: Fuse(),
    "Strip": lambda o, p: Strip(
        _one_char(o, p), field(o, "start", int, p, default=0), field(o, "stop", int, p, 0)
    ),
    "Replace": lambda o, p: Replace(
        compile_pattern(o.get("pattern"), f"{p}.pattern"), field(o, "content", str, p)
    ),
    "BPEDecoder": lambda o, p: BPEDecoder(field(o, "suffix", str, p, default="</w>")),
    "Sequence": lambda o, p: Sequence([
        from_json(d, f"{p}.decoders[{i}]") for i, d in enumerate(field(o, "decoders", list, p))
    ]),
}


def from_json(obj: object, path: str = "decoder") -> Decoder:
    """Build a decoder from its ``tokenizer.json`` object; refuse unknown types."""
    kind = component_type(obj, path)
    builder = _BUILDERS.get(kind)
    if builder is None:
        unsupported(f"decoder {kind!r}", path, f"known: {', '.join(sorted(_BUILDERS))}")
    assert isinstance(obj, dict)
    return builder(obj, path)
