"""What the service serves: the :class:`Tokenizer` surface, and the one way to build one.

``Encoding`` (tiktoken-exact BPE, Tekken) and ``PipelineTokenizer`` (tokenizer.json,
SentencePiece) both offer this surface, so every RPC serves either unchanged.
:func:`build_tokenizer` turns a registry version's verified contents into a tokenizer; the
registry, the server and the CLI all go through it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Iterable, Iterator
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

from tokend.core.engine.cache import DEFAULT_CACHE_ENTRIES, CacheInfo
from tokend.core.errors import CorruptData

if TYPE_CHECKING:
    from tokend.core.engine.encoding import Encoding
    from tokend.core.registry import TokenizerData

Special: TypeAlias = Literal["all"] | AbstractSet[str]
Disallowed: TypeAlias = Literal["all"] | Collection[str]
NORMALIZER_FORMS = ("nfc", "nfd", "nfkc", "nfkd")


class Tokenizer(Protocol):
    """The surface the server uses (tiktoken's names; see ``Encoding`` for the semantics)."""

    name: str

    @property
    def n_vocab(self) -> int: ...
    @property
    def special_tokens_set(self) -> set[str]: ...
    @property
    def streams_in_bounded_memory(self) -> bool: ...

    def encode(
        self, text: str, *, allowed_special: Special = ..., disallowed_special: Disallowed = ...
    ) -> list[int]: ...
    def encode_ordinary(self, text: str) -> list[int]: ...
    def count(
        self, text: str, *, allowed_special: Special = ..., disallowed_special: Disallowed = ...
    ) -> int: ...
    def encode_iterable(
        self, chunks: Iterable[str], *, allowed_special: Special = ...,
        disallowed_special: Disallowed = ...,
    ) -> Iterator[int]: ...
    def decode(self, tokens: Iterable[int], errors: str = ...) -> str: ...
    def decode_bytes(self, tokens: Iterable[int]) -> bytes: ...
    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]: ...
    def is_special_token(self, token: int) -> bool: ...
    def cache_info(self) -> CacheInfo: ...


def add_special_tokens(tokenizer: Tokenizer, ids: list[int]) -> list[int]:
    """``ids`` framed by the model's post-processor (``[CLS] ... [SEP]``), if it has one.

    tiktoken-style encodings have none: their ids come back unchanged.
    """
    post_process = getattr(tokenizer, "post_process", None)
    return ids if post_process is None else list(post_process(ids))


class NormalizedEncoding:
    """An Encoding whose input is Unicode-normalized first (``--normalizer nfc``...).

    A ``.tiktoken`` file cannot say that its vendor normalizes text before BPE; the registry
    records it in the manifest and this wrapper applies it.
    """

    streams_in_bounded_memory = False  # normalization may join characters across chunks

    def __init__(self, encoding: Encoding, form: str) -> None:
        if form not in NORMALIZER_FORMS:
            raise CorruptData(f"normalizer {form!r} is not one of {NORMALIZER_FORMS}")
        self.encoding = encoding
        self.form: Literal["NFC", "NFD", "NFKC", "NFKD"] = form.upper()  # type: ignore[assignment]
        self.name = encoding.name

    def _norm(self, text: str) -> str:
        return text if text.isascii() else unicodedata.normalize(self.form, text)

    @property
    def n_vocab(self) -> int:
        return self.encoding.n_vocab

    @property
    def special_tokens_set(self) -> set[str]:
        return self.encoding.special_tokens_set

    @property
    def special_tokens(self) -> dict[str, int]:
        return self.encoding.special_tokens

    def encode(
        self, text: str, *, allowed_special: Special = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> list[int]:
        return self.encoding.encode(self._norm(text), allowed_special=allowed_special,
                                    disallowed_special=disallowed_special)

    def encode_ordinary(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(self._norm(text))

    def count(
        self, text: str, *, allowed_special: Special = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> int:
        return self.encoding.count(self._norm(text), allowed_special=allowed_special,
                                   disallowed_special=disallowed_special)

    def encode_iterable(
        self, chunks: Iterable[str], *, allowed_special: Special = frozenset(),
        disallowed_special: Disallowed = "all",
    ) -> Iterator[int]:
        yield from self.encode("".join(chunks), allowed_special=allowed_special,
                               disallowed_special=disallowed_special)

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        return self.encoding.decode(tokens, errors=errors)

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        return self.encoding.decode_bytes(tokens)

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        return self.encoding.decode_tokens_bytes(tokens)

    def is_special_token(self, token: int) -> bool:
        return self.encoding.is_special_token(token)

    def cache_info(self) -> CacheInfo:
        return self.encoding.cache_info()


def engine_path(tokenizer: object) -> str:
    """Which engine path a loaded tokenizer runs on, for people (`tokend registry show`,
    ``GET /tokenizers/{ref}``): ``compiled scanner`` (a hand-written one), ``compiled general
    pattern`` (pattern_compiler), ``regex fallback: <why>``, ``pure-Python engine (...)`` or
    ``pure-Python pipeline[: <why>]``; a normalizer run first is named before it."""
    if isinstance(tokenizer, NormalizedEncoding):
        return f"{tokenizer.form} normalizer, then {engine_path(tokenizer.encoding)}"
    path = getattr(tokenizer, "engine_path", None)
    return path if isinstance(path, str) else "pure-Python pipeline"


def build_tokenizer(data: TokenizerData, *, cache_entries: int | None = None) -> Tokenizer:
    """The tokenizer a registry version (or built-in) holds, fully loaded.

    The one place a registry version becomes a tokenizer: ``Registry.load``, the server's
    table and the CLI all call it.
    """
    from tokend.core.engine.encoding import Encoding  # noqa: PLC0415 - keeps the client import light
    from tokend.core.formats.files import load_file  # noqa: PLC0415

    name = data.resolved.ref
    if data.file is not None:
        return load_file(data.fmt, data.file, name=name, cache_entries=cache_entries)
    encoding = Encoding(
        name,
        pat_str=data.pat_str,
        mergeable_ranks=data.ranks,
        special_tokens=data.special_tokens,
        explicit_n_vocab=data.explicit_n_vocab,
        cache_entries=DEFAULT_CACHE_ENTRIES if cache_entries is None else cache_entries,
    )
    if data.normalizer is not None:
        return NormalizedEncoding(encoding, data.normalizer)
    return encoding
