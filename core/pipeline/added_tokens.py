"""Added tokens: strings matched in the text before the model sees it (``<s>``, ``[MASK]``...).

HF's ``AddedVocabulary``: tokens with ``normalized: false`` are found in the raw text, the
others in each normalized segment; at one position the longest token wins (leftmost-longest);
``single_word`` refuses a match inside a word, ``lstrip`` / ``rstrip`` swallow the whitespace
beside it. Special tokens the caller does not allow are skipped, i.e. read as plain text.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import regex

from tokend.core.errors import CorruptData
from tokend.core.pipeline._config import field

_WORD = r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]"
_ENDS_WITH_WORD = regex.compile(_WORD + r"\Z")
_STARTS_WITH_WORD = regex.compile(_WORD)
_TRAILING_SPACE = regex.compile(r"\p{White_Space}*\Z")
_LEADING_SPACE = regex.compile(r"\p{White_Space}*")

Segment = tuple[int, int, int | None]  # start, end, added token id (None: ordinary text)


@dataclass(frozen=True)
class AddedToken:
    """One ``added_tokens`` entry of a tokenizer.json."""

    id: int
    content: str
    special: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = True
    single_word: bool = False

    @classmethod
    def from_json(cls, obj: object, path: str) -> AddedToken:
        if not isinstance(obj, dict):
            raise CorruptData(f"{path} is {obj!r:.60}, not an added token object")
        special = field(obj, "special", bool, path, default=False)
        return cls(
            id=field(obj, "id", int, path),
            content=field(obj, "content", str, path),
            special=special,
            lstrip=field(obj, "lstrip", bool, path, default=False),
            rstrip=field(obj, "rstrip", bool, path, default=False),
            normalized=field(obj, "normalized", bool, path, default=not special),
            single_word=field(obj, "single_word", bool, path, default=False),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "content": self.content, "single_word": self.single_word,
            "lstrip": self.lstrip, "rstrip": self.rstrip, "normalized": self.normalized,
            "special": self.special,
        }


class _Matcher:
    """Leftmost-longest search for a set of strings (an alternation, longest first)."""

    def __init__(self, tokens: dict[str, AddedToken]) -> None:
        self.tokens = tokens
        ordered = sorted(tokens, key=lambda t: (-len(t), t))
        self.pattern = (
            regex.compile("|".join(regex.escape(t) for t in ordered)) if ordered else None
        )

    def segments(self, text: str, skip: Collection[int]) -> list[Segment]:
        """HF's ``find_matches``: segments covering ``text``, matched tokens marked by id."""
        if self.pattern is None or not text:
            return [(0, len(text), None)]
        out: list[Segment] = []
        offset = 0
        for match in self.pattern.finditer(text):
            start, stop = match.span()
            token = self.tokens[match.group()]
            if token.id in skip or start < offset:
                continue
            if token.single_word and not (
                (start == 0 or not _ENDS_WITH_WORD.search(text, 0, start))
                and (stop == len(text) or not _STARTS_WITH_WORD.match(text, stop))
            ):
                continue
            if token.lstrip:
                trailing = _TRAILING_SPACE.search(text, 0, start)
                start = max(trailing.start() if trailing else start, offset)
            if token.rstrip:
                leading = _LEADING_SPACE.match(text, stop)
                stop = leading.end() if leading else stop
            if offset < start:
                out.append((offset, start, None))
            out.append((start, stop, token.id))
            offset = stop
        if offset != len(text):
            out.append((offset, len(text), None))
        return out


class AddedVocabulary:
    """The added tokens of a tokenizer, split into the raw-text and normalized-text matchers."""

    def __init__(
        self, tokens: list[AddedToken], normalize: Callable[[str], str] | None
    ) -> None:
        self.tokens = tokens
        self.by_id = {t.id: t for t in tokens}
        raw: dict[str, AddedToken] = {}
        normalized: dict[str, AddedToken] = {}
        self.texts = {t.id: t.content for t in tokens}  # id -> what decoding shows
        for token in tokens:
            if not token.content:
                continue
            if token.normalized and normalize is not None:
                # HF matches (and decodes) a normalized token by its normalized form.
                form = normalize(token.content) or token.content
                normalized.setdefault(form, token)
                self.texts[token.id] = form
            elif token.normalized:
                normalized.setdefault(token.content, token)
            else:
                raw.setdefault(token.content, token)
        self.raw = _Matcher(raw)
        self.normalized = _Matcher(normalized)
        self.special = {t.content: t.id for t in tokens if t.special}
        self.special_ids = frozenset(self.special.values())
