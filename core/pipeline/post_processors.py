"""Post-processors: the special tokens a model adds around a sequence (``[CLS] ... [SEP]``).

Applied only when a request asks for ``add_special_tokens``: counting for an API call wants
the text's own tokens, so the default leaves the ids as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tokend.core.errors import CorruptData
from tokend.core.pipeline._config import component_type, field, unsupported


class PostProcessor:
    """Base: ``process(ids) -> ids`` for a single sequence."""

    def process(self, ids: list[int]) -> list[int]:
        raise NotImplementedError


class Surround(PostProcessor):
    """Fixed ids before and after the sequence (BertProcessing, RobertaProcessing, templates)."""

    def __init__(self, before: list[int], after: list[int]) -> None:
        self.before, self.after = before, after

    def process(self, ids: list[int]) -> list[int]:
        return [*self.before, *ids, *self.after]


class Identity(PostProcessor):
    """ByteLevel's post-processor only trims offsets: the ids stay."""

    def process(self, ids: list[int]) -> list[int]:
        return ids


class Sequence(PostProcessor):
    """Post-processors in order."""

    def __init__(self, processors: list[PostProcessor]) -> None:
        self.processors = processors

    def process(self, ids: list[int]) -> list[int]:
        for processor in self.processors:
            ids = processor.process(ids)
        return ids


def _pair_id(obj: dict[str, Any], key: str, path: str) -> int:
    value = obj.get(key)
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], int)
            and not isinstance(value[1], bool) and value[1] >= 0):
        raise CorruptData(f"{path}.{key} is {value!r:.60}, not [token, id]")
    return int(value[1])


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
    "RobertaProcessing": lambda o, p: Surround([_pair_id(o, "cls", p)], [_pair_id(o, "sep", p)]),
    "ByteLevel": lambda o, p: Identity(),
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
