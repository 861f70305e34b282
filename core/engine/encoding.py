"""The Encoding class: tiktoken's API and ids over an encoding engine.

``Encoding`` is the tiktoken-compatible surface only (like tiktoken's ``core.py`` over
``CoreBPE``): special-token policy, batching, streaming, decoding helpers. Ordinary text is
encoded by the engine (``tokend.core.engine``: compiled, or its pure-Python twin), which owns
the caches.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from typing import TYPE_CHECKING, Any, SupportsIndex

from tokend.core.engine import Engine, EngineName, make_engine
from tokend.core.engine.cache import DEFAULT_CACHE_ENTRIES, CacheInfo
from tokend.core.engine.decoding import Decoding
from tokend.core.engine.pretokenize import is_chunkable, last_safe_point
from tokend.core.engine.python import flatten
from tokend.core.engine.special_tokens import (
    AllowedSpecial,
    DisallowedSpecial,
    Run,
    fixing_surrogates,
    split_at_specials,
    usable_specials,
)
from tokend.core.engine.vocab_merges import tables_from_vocab_merges
from tokend.core.engine.wire import uint32_buffer, varints
from tokend.core.errors import InvalidInput
from tokend.core.patterns import GPT2_PATTERN

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# encode_iterable encodes its buffer once it holds this many characters (and a safe point).
ITERABLE_FLUSH_CHARS = 1 << 16


class Encoding(Decoding):
    """A byte-level BPE encoding with tiktoken's interface and exactly tiktoken's ids."""

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: dict[bytes, int],
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None = None,
        cache_entries: int = DEFAULT_CACHE_ENTRIES,
        engine: EngineName | None = None,
    ) -> None:
        """``engine``: ``"compiled"`` or ``"python"``; None takes ``tokend.core.engine``'s
        default (the compiled one when it was built)."""
        self._setup(
            name,
            pat_str=pat_str,
            ranks=mergeable_ranks,
            ids=mergeable_ranks,
            special_tokens=special_tokens,
            explicit_n_vocab=explicit_n_vocab,
            cache_entries=cache_entries,
            engine=engine,
        )

    def _setup(
        self,
        name: str,
        *,
        pat_str: str,
        ranks: Mapping[bytes, int],
        ids: Mapping[bytes, int],
        special_tokens: Mapping[str, int],
        explicit_n_vocab: int | None,
        cache_entries: int,
        extra_decoder: Mapping[int, bytes] | None = None,
        engine: EngineName | None = None,
    ) -> None:
        if not ranks:
            raise InvalidInput(f"encoding {name!r} has no mergeable tokens")
        self.name = name
        self._pat_str = pat_str
        self._ranks: Mapping[bytes, int] = ranks  # token bytes -> merge priority
        self._ids: Mapping[bytes, int] = ids  # token bytes -> output id
        self._special_tokens: dict[str, int] = dict(special_tokens)
        decoder: dict[int, bytes] = {token_id: s.encode() for s, token_id in special_tokens.items()}
        if extra_decoder:
            decoder.update(extra_decoder)
        self._extra_decoder = dict(extra_decoder or {})
        self._explicit_n_vocab = explicit_n_vocab
        decoder.update((token_id, token) for token, token_id in ids.items())
        self._decoder = decoder  # id -> bytes; a mergeable id wins over a special, as in tiktoken
        self.max_token_value = max(decoder)
        if explicit_n_vocab is not None:
            n_tokens = len(ranks) + len(special_tokens)
            if n_tokens != explicit_n_vocab or self.max_token_value != explicit_n_vocab - 1:
                raise InvalidInput(
                    f"encoding {name!r}: explicit_n_vocab is {explicit_n_vocab} but there are "
                    f"{n_tokens} tokens with a largest id of {self.max_token_value}"
                )
        self._special_ids = frozenset(self._special_tokens.values())
        self._special_set = frozenset(self._special_tokens)
        self._cache_entries = cache_entries
        self._shared_loader: Callable[[str], Encoding] | None = None
        self._engine: Engine = make_engine(
            engine,
            pat_str=pat_str,
            ranks=ranks,
            ids=ids,
            decoder=decoder,
            cache_entries=cache_entries,
        )
        # Special tokens with a space could straddle a safe point: stream them unsplit.
        self._iterable_splits = is_chunkable(pat_str) and not any(" " in s for s in special_tokens)

    @classmethod
    def from_vocab_merges(
        cls,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Sequence[str] | Mapping[str, int] | None = None,
        pat_str: str = GPT2_PATTERN,
        *,
        name: str = "custom",
        cache_entries: int = DEFAULT_CACHE_ENTRIES,
        engine: EngineName | None = None,
    ) -> Encoding:
        """Build an encoding from GPT-2 / HF style ``vocab`` (id -> bytes) and ordered ``merges``.

        Merge priority is the order of ``merges``; the ids produced are ``vocab``'s ids. Special
        tokens given as a list take their ids from ``vocab`` (or the next free ids). Vocabulary
        entries that are neither a byte, a merge result nor special can be decoded but are never
        produced, as in a merges-driven BPE.
        """
        ranks, ids, specials, extra = tables_from_vocab_merges(vocab, merges, special_tokens)
        encoding = cls.__new__(cls)
        encoding._setup(
            name,
            pat_str=pat_str,
            ranks=ranks,
            ids=ids,
            special_tokens=specials,
            explicit_n_vocab=None,
            cache_entries=cache_entries,
            extra_decoder=extra,
            engine=engine,
        )
        return encoding

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        """A shared built-in pickles as a call to its loader (unpickled: the shared instance)."""
        if self._shared_loader is not None:
            return (self._shared_loader, (self.name,))
        return super().__reduce_ex__(protocol)

    def __getstate__(self) -> object:
        """Pickle the tables, not the cache or its lock."""
        return {
            "name": self.name,
            "pat_str": self._pat_str,
            "ranks": self._ranks,
            "ids": self._ids,
            "special_tokens": self._special_tokens,
            "explicit_n_vocab": self._explicit_n_vocab,
            "cache_entries": self._cache_entries,
            "extra_decoder": self._extra_decoder,
            "engine": self._engine.name,
        }

    def __setstate__(self, state: object) -> None:
        if not isinstance(state, dict):
            raise TypeError(f"cannot unpickle an Encoding from {type(state).__name__}")
        name = state.pop("name")
        self._setup(name, **state)

    def share_as_builtin(self, loader: Callable[[str], Encoding]) -> None:
        """Mark this instance as the shared one ``loader(name)`` hands out, so that it pickles
        by name (``tokend.core.engine.builtins`` calls this; it keeps this module free of any
        import of the built-ins, which import it)."""
        self._shared_loader = loader

    # ----------------------------------------------------------------------------- properties

    @property
    def pat_str(self) -> str:
        """The pretokenization regex."""
        return self._pat_str

    @property
    def special_tokens(self) -> dict[str, int]:
        """Special token text -> id (a copy)."""
        return dict(self._special_tokens)

    @property
    def mergeable_ranks(self) -> dict[bytes, int]:
        """Token bytes -> id of every mergeable token (a copy, for export)."""
        return dict(self._ids)

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        """The special tokens' texts."""
        return set(self._special_tokens)

    @property
    def n_vocab(self) -> int:
        """``max_token_value + 1``, as in tiktoken."""
        return self.max_token_value + 1

    @property
    def eot_token(self) -> int:
        """Id of ``<|endoftext|>`` (KeyError if this encoding has none, as in tiktoken)."""
        return self._special_tokens["<|endoftext|>"]

    @property
    def streams_in_bounded_memory(self) -> bool:
        """Whether ``encode_iterable`` holds only a bounded tail of the text.

        True for the built-in patterns (safe cut points are proven for them) unless a special
        token contains a space; with a custom pattern the whole text is buffered.
        """
        return self._iterable_splits

    def is_special_token(self, token: int) -> bool:
        """True for the id of a special token."""
        return token in self._special_ids

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every mergeable token, sorted."""
        return sorted(self._ids)

    def cache_info(self) -> CacheInfo:
        """Hits, misses, evictions and size of the engine's caches."""
        return self._engine.cache_info()

    @property
    def engine_path(self) -> str:
        """Which pretokenizer this encoding runs on (see ``Engine.path``)."""
        return self._engine.path

    @property
    def engine(self) -> EngineName:
        """Which engine encodes for this encoding: ``"compiled"`` or ``"python"``."""
        return self._engine.name

    # ------------------------------------------------------------------------------- encoding

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` treating special-token text as ordinary text.

        >>> from tokend.core.engine.builtins import get_encoding
        >>> get_encoding("gpt2").encode_ordinary("hello world")
        [31373, 995]
        """
        return fixing_surrogates(self._engine.encode, text)

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[int]:
        """Encode ``text``; special-token text raises unless allowed (tiktoken's rules).

        By default any special-token text is an error, because letting user text turn into
        control tokens is how prompts get hijacked. ``allowed_special`` ("all" or a set) makes
        such text the special id; ``disallowed_special=()`` encodes it as ordinary text.

        >>> from tokend.core.engine.builtins import get_encoding
        >>> get_encoding("gpt2").encode("<|endoftext|>", allowed_special="all")
        [50256]
        """
        usable = self._allowed_in_text(text, allowed_special, disallowed_special)
        if usable is None:  # the common case: no runs list
            return fixing_surrogates(self._engine.encode, text)
        return flatten(self._runs_split_at(text, usable))

    def count(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> int:
        """``len(encode(text, ...))`` without building the list of ids."""
        usable = self._allowed_in_text(text, allowed_special, disallowed_special)
        if usable is None:
            return fixing_surrogates(self._engine.count, text)
        return sum(map(len, self._runs_split_at(text, usable)))

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> npt.NDArray[np.uint32]:
        """``encode`` as a numpy uint32 array (read-only, like tiktoken's), made from the
        engine's buffer without a list of ints. Needs numpy (``pip install numpy``)."""
        try:
            import numpy as np  # noqa: PLC0415 (optional: only this method needs it)
        except ImportError:
            raise ImportError(
                "Encoding.encode_to_numpy needs numpy, which is not installed; "
                "install it (pip install numpy) or use Encoding.encode for a list"
            ) from None
        usable = self._allowed_in_text(text, allowed_special, disallowed_special)
        if usable is None:
            buffer = fixing_surrogates(self._engine.encode_buffer, text)
        else:
            buffer = uint32_buffer(flatten(self._runs_split_at(text, usable)))
        return np.frombuffer(buffer, dtype=np.uint32)

    def encode_varints(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> tuple[bytes, int]:
        """The ids of ``encode`` as protobuf varints back to back (the payload of a packed
        ``repeated uint32`` field) and their count, written from the engine's buffer: a
        server sends ids without a list of ints or a protobuf conversion.

        >>> from tokend.core.engine.builtins import get_encoding
        >>> get_encoding("gpt2").encode_varints("hello world")
        (b'\x9f\xf5\x01\xe3\x07', 2)
        """
        usable = self._allowed_in_text(text, allowed_special, disallowed_special)
        if usable is None:
            result: tuple[bytes, int] = fixing_surrogates(self._engine.encode_varints, text)
            return result
        ids = flatten(self._runs_split_at(text, usable))
        return varints(ids), len(ids)

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        num_threads: int = 8,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[list[int]]:
        """Encode several texts (in a thread pool, like tiktoken)."""
        encoder = functools.partial(
            self.encode, allowed_special=allowed_special, disallowed_special=disallowed_special
        )
        if len(texts) <= 1 or num_threads <= 1:
            return [encoder(text) for text in texts]
        with ThreadPoolExecutor(num_threads) as pool:
            return list(pool.map(encoder, texts))

    def encode_ordinary_batch(
        self, texts: Sequence[str], *, num_threads: int = 8
    ) -> list[list[int]]:
        """Encode several texts ignoring special tokens."""
        return self.encode_batch(texts, num_threads=num_threads, disallowed_special=())

    def encode_iterable(
        self,
        chunks: Iterable[str],
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> Iterator[int]:
        """Yield the ids of ``"".join(chunks)``, holding only a bounded tail in memory.

        The buffer is encoded up to its last safe point whenever it grows past
        ``ITERABLE_FLUSH_CHARS``; what follows that point cannot change what precedes it.
        (For patterns without the safe-point proof the whole text is buffered.)
        """
        buffer = ""
        scanned = 0  # safe points before this index were already looked for
        for chunk in chunks:
            if not chunk:
                continue
            buffer += chunk
            if not self._iterable_splits or len(buffer) < ITERABLE_FLUSH_CHARS:
                continue
            cut = last_safe_point(buffer, max(scanned - 1, 0))
            scanned = len(buffer)
            if cut <= 0:
                continue
            head, buffer = buffer[:cut], buffer[cut:]
            scanned = len(buffer)
            yield from chain.from_iterable(self._runs(head, allowed_special, disallowed_special))
        if buffer:
            yield from chain.from_iterable(self._runs(buffer, allowed_special, disallowed_special))

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """Id of text that is exactly one token (special tokens included); KeyError otherwise."""
        if isinstance(text_or_bytes, str):
            special = self._special_tokens.get(text_or_bytes)
            if special is not None:
                return special
            text_or_bytes = text_or_bytes.encode("utf-8")
        token = self._ids.get(text_or_bytes)
        if token is None:
            special = self._special_tokens.get(text_or_bytes.decode("utf-8", "replace"))
            if special is not None and special in self._decoder:
                return special
            raise KeyError(text_or_bytes)
        return token

    # ------------------------------------------------------------------------------ internals

    def _runs(
        self, text: str, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> list[Run]:
        """Id sequences whose concatenation is the encoding of ``text`` (tiktoken's rules)."""
        usable = self._allowed_in_text(text, allowed_special, disallowed_special)
        return self._runs_split_at(text, usable)

    def _runs_split_at(self, text: str, usable: frozenset[str] | None) -> list[Run]:
        """:meth:`_special_runs`, with tiktoken's fix for lone surrogates."""
        return fixing_surrogates(functools.partial(self._special_runs, usable=usable), text)

    def _allowed_in_text(
        self, text: str, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> frozenset[str] | None:
        """Raise if ``text`` holds disallowed special-token text; else the usable specials."""
        return usable_specials(text, self._special_set, allowed_special, disallowed_special)

    def _special_runs(self, text: str, usable: frozenset[str] | None) -> list[Run]:
        """Split ``text`` at the ``usable`` special tokens; encode the ordinary text between."""
        return split_at_specials(text, usable, self._special_tokens, self._engine.encode)
