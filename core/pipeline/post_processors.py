"""Post-processors: the special tokens a model adds around a sequence (``[CLS] ... [SEP]``).

Applied only when a request asks for ``add_special_tokens``: counting for an API call wants
the text's own tokens, so the default leaves the ids as they are. With offsets
(``process_offsets``) they also do what HF does to ``Encoding.offsets`` either way: ByteLevel
and RobertaProcessing trim spaces off each token's span (``trim_offsets``); added special
tokens span ``(0, 0)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tokend.core.errors import CorruptData
from tokend.core.pipeline._config import WHITESPACE, component_type, field, unsupported

Offsets = list[tuple[int, int]]


class PostProcessor:
    """Base: ``process(ids) -> ids`` for a single sequence."""

    def process(self, ids: list[int]) -> list[int]:
        raise NotImplementedError

    def process_offsets(
        self, ids: list[int], offsets: Offsets, strings: list[str], add_special_tokens: bool
    ) -> tuple[list[int], Offsets, list[str]]:
        """HF's ``process_encodings`` on ids, character offsets and token strings."""
        if add_special_tokens:
            ids = self.process(ids)
        return ids, offsets, strings


def trim_offsets(offsets: Offsets, strings: list[str], add_prefix_space: bool) -> Offsets:
    """HF byte_level.rs ``process_offsets``: a span loses the spaces (Ġ or White_Space) its
    token starts or ends with; the one prefix space ByteLevel added to the first is kept."""
    out: Offsets = []
    for i, (span, token) in enumerate(zip(offsets, strings, strict=True)):
        start, end = span
        leading = len(token) - len(token.lstrip(_SPACES))
        trailing = len(token) - len(token.rstrip(_SPACES))
        if leading and not (leading == 1 and add_prefix_space and (i == 0 or start == 0)):
            start = min(start + leading, end)
        if trailing and end >= trailing:
            end = max(end - trailing, start)
        out.append((start, end))
    return out


_SPACES = WHITESPACE + "\u0120"  # Ġ is the byte-level alphabet's space

class Surround(PostProcessor):
    """Fixed ids before and after the sequence (BertProcessing, RobertaProcessing, templates)."""

    def __init__(self, before: list[int], after: list[int], *,
                 trim: bool | None = None) -> None:
        self.before, self.after = before, after
        self.trim = trim  # RobertaProcessing's add_prefix_space when it trims offsets

    def process(self, ids: list[int]) -> list[int]:
        return [*self.before, *ids, *self.after]

    def process_offsets(
        self, ids: list[int], offsets: Offsets, strings: list[str], add_special_tokens: bool
    ) -> tuple[list[int], Offsets, list[str]]:
        if self.trim is not None:
            offsets = trim_offsets(offsets, strings, self.trim)
        if not add_special_tokens:
            return ids, offsets, strings
        before, after = [(0, 0)] * len(self.before), [(0, 0)] * len(self.after)
        return (self.process(ids), [*before, *offsets, *after],
                [""] * len(before) + strings + [""] * len(after))


class Identity(PostProcessor):
    """ByteLevel's post-processor only trims offsets: the ids stay."""

    def __init__(self, trim: bool | None = None) -> None:
        self.trim = trim  # add_prefix_space when it trims offsets, else None

    def process(self, ids: list[int]) -> list[int]:
        return ids

    def process_offsets(
        self, ids: list[int], offsets: Offsets, strings: list[str], add_special_tokens: bool
    ) -> tuple[list[int], Offsets, list[str]]:
        if self.trim is not None:
            offsets = trim_offsets(offsets, strings, self.trim)
        return ids, offsets, strings


class Sequence(PostProcessor):
    """Post-processors in order."""

    def __init__(self, processors: list[PostProcessor]) -> None:
        self.processors = processors

    def process(self, ids: list[int]) -> list[int]:
        for processor in self.processors:
            ids = processor.process(ids)
        return ids

    def process_offsets(
        self, ids: list[int], offsets: Offsets, strings: list[str], add_special_tokens: bool
    ) -> tuple[list[int], Offsets, list[str]]:
        for processor in self.processors:
            ids, offsets, strings = processor.process_offsets(ids, offsets, strings,
                                                              add_special_tokens)
        return ids, offsets, strings


def _pair_id(obj: dict[str, Any], key: str, path: str) -> int:
    value = obj.get(key)
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], int)
            and not isinstance(value[1], bool) and value[1] >= 0):
        raise CorruptData(f"{path}.{key} is {value!r:.60}, not [token, id]")
    return int(value[1])


def _trim(obj: dict[str, Any], path: str) -> bool | None:
    """``add_prefix_space`` if the processor trims offsets (both default to true), else None."""
    if not field(obj, "trim_offsets", bool, path, default=True):
        return None
    return bool(field(obj, "add_prefix_space", bool, path, default=True))


def _template(obj: dict[str, Any], path: str) -> PostProcessor:
    single = field(obj, "single", list, path)
    specials = field(obj, "special_tokens", dict, path, default={})
    before: list[int] = []
    after: list[int] = []
    seen_sequence = False
    for i, piece in enumerate(single):
        where = f"{path}.single[{i}]"
        if isinstance(piece, dict) and "Sequence" in piece:
            if seen_sequence:
                unsupported("a template repeating the sequence", where)
            seen_sequence = True
            continue
        if not (isinstance(piece, dict) and isinstance(piece.get("SpecialToken"), dict)):
            raise CorruptData(f"{where} is {piece!r:.60}, not a SpecialToken or Sequence")
        name = piece["SpecialToken"].get("id")
        entry = specials.get(name) if isinstance(name, str) else None
        ids = entry.get("ids") if isinstance(entry, dict) else None
        if not isinstance(ids, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in ids
        ):
            raise CorruptData(f"{where} names {name!r:.40}, without ids in {path}.special_tokens")
        (after if seen_sequence else before).extend(ids)
    return Surround(before, after)


_BUILDERS: dict[str, Callable[[dict[str, Any], str], PostProcessor]] = {
    "TemplateProcessing": _template,
    "BertProcessing": lambda o, p: Surround([_pair_id(o, "cls", p)], [_pair_id(o, "sep", p)]),
    "RobertaProcessing": lambda o, p: Surround(
        [_pair_id(o, "cls", p)], [_pair_id(o, "sep", p)], trim=_trim(o, p)),
    "ByteLevel": lambda o, p: Identity(_trim(o, p)),
    "Sequence": lambda o, p: Sequence([
        from_json(x, f"{p}.processors[{i}]")
        for i, x in enumerate(field(o, "processors", list, p))
    ]),
}


def from_json(obj: object, path: str = "post_processor") -> PostProcessor:
    """Build a post-processor from its ``tokenizer.json`` object; refuse unknown types."""
    kind = component_type(obj, path)
    builder = _BUILDERS.get(kind)
    if builder is None:
        unsupported(f"post-processor {kind!r}", path, f"known: {', '.join(sorted(_BUILDERS))}")
    assert isinstance(obj, dict)
    return builder(obj, path)
