"""The Encoding class: tiktoken's API and ids, with a chunk cache in front of the BPE.

``encode`` = special-token handling, then per segment: cut at safe points (see
``tokend.core.pretokenize``), look every chunk up in the cache at C speed, and only for the
misses run the regex and the rank-table BPE (``tokend.core.bpe``). A long segment whose sampled
chunks are new to the cache is encoded directly instead (one regex pass, a token table, BPE
for the rest), and cached when it comes again (see ``ChunkCache.mostly_new``).
"""

from __future__ import annotations

import functools
import os
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from itertools import accumulate, chain, compress, count, filterfalse, islice, pairwise, repeat
from operator import add, is_, is_not, not_, sub
from typing import Literal, TypeAlias, TypeVar

import regex

from tokend.core.bpe import encode_piece
from tokend.core.cache import DEFAULT_CACHE_ENTRIES, CacheInfo, ChunkCache
from tokend.core.errors import DisallowedSpecialToken, InvalidInput, UnknownTokenId
from tokend.core.patterns import GPT2_PATTERN
from tokend.core.pretokenize import (
    UNSAFE_SPACE,
    compile_ascii_pattern,
    compile_pattern,
    is_chunkable,
    last_safe_point,
    mark_unsafe_spaces,
    split_at_safe_points,
)

AllowedSpecial: TypeAlias = Literal["all"] | AbstractSet[str]
DisallowedSpecial: TypeAlias = Literal["all"] | Collection[str]
Ids: TypeAlias = tuple[int, ...]
# Cache keys: a str is a chunk that follows a safe-point space (the value encodes " " + key);
# a 1-tuple is a chunk at the start of a segment. (BPE'd pretokens have a cache of their own.)
CacheKey: TypeAlias = str | tuple[str]

# Chunks longer than this are encoded but not cached: they rarely repeat and would pin memory.
MAX_CACHED_CHUNK_CHARS = 1024
_FRESH = ("", "")  # "".join-style copy: part.join(_FRESH) == part, as a new object
_EMPTY: Ids = ()
# A batch of chunks with at most this many pretokens each concatenates them with sum().
_SUM_PIECES = 64
# Up to this many misses are looked up one by one; more make a batch (one pass over all parts).
FEW_MISSES = 128
# encode_iterable encodes its buffer once it holds this many characters (and a safe point).
ITERABLE_FLUSH_CHARS = 1 << 16
# An ASCII segment longer than this is first judged on the chunks of its first this-many
# characters: mostly new to the cache (and to its doorkeeper) means it is encoded directly.
NEW_TEXT_SAMPLE_CHARS = 4096


def _flatten(runs: list[Ids]) -> list[int]:
    """The runs concatenated: list.extend driven by a C loop, faster than chain here."""
    out: list[int] = []
    deque(map(out.extend, runs), maxlen=0)
    return out


@functools.lru_cache(maxsize=128)
def _special_matcher(tokens: frozenset[str]) -> tuple[str, regex.Pattern[str]]:
    """(common prefix, regex) finding any of ``tokens``; the prefix is a cheap pre-filter."""
    ordered = sorted(tokens, key=lambda t: (-len(t), t))
    prefix = os.path.commonprefix(ordered)  # noqa: RUF071 (strings, not paths)
    return prefix, regex.compile("|".join(regex.escape(t) for t in ordered))


def _token_table(ids: Mapping[bytes, int]) -> dict[str, Ids]:
    """Text of every token that is valid UTF-8 -> ``(id,)``: pretokens are looked up as they
    come from the regex (no ``str.encode``), and the 1-tuples are shared, not made per lookup.

    Exact: a pretoken is a str, so its UTF-8 bytes equal a token's bytes iff the pretoken
    equals that token's strict decoding; tokens that are not valid UTF-8 on their own (pieces
    of a character) can only come out of the BPE, which works on bytes.
    """
    table: dict[str, Ids] = {}
    for token, token_id in ids.items():
        try:  # noqa: SIM105 (contextlib.suppress made this 200k-token loop 3.7x slower)
            table[token.decode()] = (token_id,)
        except UnicodeDecodeError:
            pass
    return table


def _replace_surrogates(text: str) -> str:
    """tiktoken's fallback for text that is not valid UTF-8: pair surrogates, replace the rest."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


_T = TypeVar("_T")


def _fixing_surrogates(encode: Callable[[str], _T], text: str) -> _T:
    """``encode(text)``; if lone surrogates make that fail, of the text as tiktoken fixes it."""
    try:
        return encode(text)
    except UnicodeEncodeError:
        return encode(_replace_surrogates(text))


class Encoding:
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
    ) -> None:
        self._setup(
            name,
            pat_str=pat_str,
            ranks=mergeable_ranks,
            ids=mergeable_ranks,
            special_tokens=special_tokens,
            explicit_n_vocab=explicit_n_vocab,
            cache_entries=cache_entries,
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
        # The same as a list indexed by id (None in gaps): indexing beats hashing in decode.
        self._decoder_list: list[bytes | None] = [None] * (max(decoder) + 1)
        for token_id, token_bytes in decoder.items():
            self._decoder_list[token_id] = token_bytes
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
        self._findall = compile_pattern(pat_str)
        self._chunkable = is_chunkable(pat_str)
        self._findall_ascii = compile_ascii_pattern(pat_str)
        self._token_ids = _token_table(ids)  # token text -> (id,)
        # Chunks and BPE'd pretokens are kept apart: the chunk dict, probed for every part of
        # every text, stays smaller and denser in memory. Pretokens get an eighth of the budget.
        pieces = cache_entries // 8
        self._cache: ChunkCache[CacheKey, Ids] = ChunkCache(cache_entries - pieces)
        self._piece_cache: ChunkCache[bytes, Ids] = ChunkCache(pieces)
        # Special tokens with a space could straddle a safe point: stream them unsplit.
        self._iterable_splits = self._chunkable and not any(" " in s for s in special_tokens)

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
    ) -> Encoding:
        """Build an encoding from GPT-2 / HF style ``vocab`` (id -> bytes) and ordered ``merges``.

        Merge priority is the order of ``merges``; the ids produced are ``vocab``'s ids. Special
        tokens given as a list take their ids from ``vocab`` (or the next free ids). Vocabulary
        entries that are neither a byte, a merge result nor special can be decoded but are never
        produced, as in a merges-driven BPE.
        """
        by_bytes = {token: token_id for token_id, token in vocab.items()}
        specials: dict[str, int] = {}
        if isinstance(special_tokens, Mapping):
            specials = dict(special_tokens)
        elif special_tokens is not None:
            next_id = max(vocab, default=-1) + 1
            for token in special_tokens:
                token_id = by_bytes.get(token.encode())
                if token_id is None:
                    token_id = next_id
                    next_id += 1
                specials[token] = token_id
        special_ids = set(specials.values())
        ids: dict[bytes, int] = {}
        for byte in range(256):
            single = bytes([byte])
            if single not in by_bytes:
                raise InvalidInput(
                    f"vocab has no token for the byte {single!r}; byte-level BPE needs all 256"
                )
            ids[single] = by_bytes[single]
        merged: list[bytes] = []
        for index, (left, right) in enumerate(merges):
            pair = left + right
            if pair not in by_bytes:
                raise InvalidInput(
                    f"merge {index} ({left!r}, {right!r}) makes {pair!r}, which is not in vocab"
                )
            if pair not in ids:
                ids[pair] = by_bytes[pair]
                merged.append(pair)
        merged_ids = [ids[pair] for pair in merged]
        ranks: dict[bytes, int]
        if all(a < b for a, b in pairwise(merged_ids)):
            # ids already increase with merge order, so they order merges like ranks do
            # (single-byte ranks are never compared: every pair is at least two bytes)
            ranks = ids
        else:
            ranks = {bytes([b]): b for b in range(256)}
            ranks.update((token, 256 + k) for k, token in enumerate(merged))
        extra = {
            token_id: token
            for token_id, token in vocab.items()
            if token not in ids and token_id not in special_ids
        }
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
        )
        return encoding

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    def __getstate__(self) -> object:
        """Pickle the tables, not the cache or its lock (a built-in pickles as its name)."""
        from tokend.core import builtins  # noqa: PLC0415 (builtins imports this module)

        if builtins.is_shared_builtin(self):
            return self.name
        return {
            "name": self.name,
            "pat_str": self._pat_str,
            "ranks": self._ranks,
            "ids": self._ids,
            "special_tokens": self._special_tokens,
            "explicit_n_vocab": self._explicit_n_vocab,
            "cache_entries": self.cache_info().max_entries,
            "extra_decoder": self._extra_decoder,
        }

    def __setstate__(self, state: object) -> None:
        from tokend.core import builtins  # noqa: PLC0415 (builtins imports this module)

        if isinstance(state, str):
            self.__dict__ = builtins.get_encoding(state).__dict__
            return
        if not isinstance(state, dict):
            raise TypeError(f"cannot unpickle an Encoding from {type(state).__name__}")
        name = state.pop("name")
        self._setup(name, **state)

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
        """Hits, misses, evictions and size of the caches (chunks and pretokens together)."""
        chunks, pieces = self._cache.info(), self._piece_cache.info()
        return CacheInfo(
            hits=chunks.hits + pieces.hits,
            misses=chunks.misses + pieces.misses,
            evictions=chunks.evictions + pieces.evictions,
            entries=chunks.entries + pieces.entries,
            max_entries=chunks.max_entries + pieces.max_entries,
        )

    # ------------------------------------------------------------------------------- encoding

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` treating special-token text as ordinary text.

        >>> from tokend.core.builtins import get_encoding
        >>> get_encoding("gpt2").encode_ordinary("hello world")
        [31373, 995]
        """
        return _fixing_surrogates(self._ordinary_ids, text)

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

        >>> from tokend.core.builtins import get_encoding
        >>> get_encoding("gpt2").encode("<|endoftext|>", allowed_special="all")
        [50256]
        """
        usable = self._allowed_in_text(text, allowed_special, disallowed_special)
        if usable is None:  # the common case: no runs list, see _ordinary_ids
            return _fixing_surrogates(self._ordinary_ids, text)
        return _flatten(self._runs_split_at(text, usable))

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
            return _fixing_surrogates(self._ordinary_count, text)
        return sum(map(len, self._runs_split_at(text, usable)))

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

    # ------------------------------------------------------------------------------- decoding

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        """The bytes of ``tokens`` concatenated; an unknown id raises UnknownTokenId."""
        if not isinstance(tokens, list | tuple):
            tokens = list(tokens)
        try:
            if tokens and min(tokens) < 0:  # a negative index would wrap around silently
                raise IndexError
            return b"".join(map(self._decoder_list.__getitem__, tokens))  # type: ignore[arg-type]
        except (IndexError, TypeError):
            raise UnknownTokenId(self._first_unknown(tokens), self.n_vocab) from None

    def _first_unknown(self, tokens: Iterable[int]) -> int:
        """The first element of ``tokens`` that is not a known id (-1 if there is none)."""
        for token in tokens:
            try:
                if self._decoder.get(token) is None:
                    return token
            except TypeError:  # unhashable: not an id either
                return token
        return -1

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        """Decode to text; invalid UTF-8 is replaced by default (tiktoken's lossy default)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (special tokens included)."""
        try:
            return self._decoder[token]
        except (KeyError, TypeError):
            raise UnknownTokenId(token, self.n_vocab) from None

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """The bytes of each token, for visualising a tokenization."""
        return [self.decode_single_token_bytes(token) for token in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """Decode and give each token's character offset, as tiktoken defines it.

        The offset is the index of the first character holding bytes of the token; a token
        that starts with a UTF-8 continuation byte belongs to the character before it.
        Raises UnicodeDecodeError if the tokens do not decode to valid UTF-8 (like tiktoken).

        >>> from tokend.core.builtins import get_encoding
        >>> get_encoding("gpt2").decode_with_offsets([31373, 995])
        ('hello world', [0, 5])
        """
        token_bytes = self.decode_tokens_bytes(tokens)
        text_len = 0
        offsets: list[int] = []
        for token in token_bytes:
            offsets.append(max(0, text_len - (0x80 <= token[0] < 0xC0)))
            text_len += sum(1 for c in token if not 0x80 <= c < 0xC0)
        text = b"".join(token_bytes).decode("utf-8", errors="strict")
        return text, offsets

    def decode_batch(
        self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = 8
    ) -> list[str]:
        """Decode several token lists (in a thread pool of ``num_threads``, like tiktoken)."""
        decoder = functools.partial(self.decode, errors=errors)
        if len(batch) <= 1 or num_threads <= 1:
            return [decoder(tokens) for tokens in batch]
        with ThreadPoolExecutor(num_threads) as pool:
            return list(pool.map(decoder, batch))

    def decode_bytes_batch(
        self, batch: Sequence[Sequence[int]], *, num_threads: int = 8
    ) -> list[bytes]:
        """The bytes of several token lists (in a thread pool of ``num_threads``)."""
        if len(batch) <= 1 or num_threads <= 1:
            return [self.decode_bytes(tokens) for tokens in batch]
        with ThreadPoolExecutor(num_threads) as pool:
            return list(pool.map(self.decode_bytes, batch))

    # ------------------------------------------------------------------------------ internals

    def _runs(
        self, text: str, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> list[Ids]:
        """Id sequences whose concatenation is the encoding of ``text`` (tiktoken's rules)."""
        usable = self._allowed_in_text(text, allowed_special, disallowed_special)
        return self._runs_split_at(text, usable)

    def _runs_split_at(self, text: str, usable: frozenset[str] | None) -> list[Ids]:
        """:meth:`_special_runs`, with tiktoken's fix for lone surrogates."""
        return _fixing_surrogates(functools.partial(self._special_runs, usable=usable), text)

    def _allowed_in_text(
        self, text: str, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> frozenset[str] | None:
        """Raise if ``text`` holds disallowed special-token text (tiktoken's rules); return the
        allowed special tokens that may split it, or None when it is all ordinary text."""
        specials = self._special_set
        allowed: AbstractSet[str] = specials if allowed_special == "all" else allowed_special
        disallowed: Collection[str]
        if disallowed_special != "all":
            disallowed = disallowed_special
        elif not allowed:  # the default: reuse one frozenset (its hash is kept) for the matcher
            disallowed = specials
        elif allowed is specials:
            disallowed = ()
        else:
            disallowed = specials - allowed
        if disallowed:
            prefix, matcher = _special_matcher(frozenset(disallowed))
            if not prefix or prefix in text:
                match = matcher.search(text)
                if match is not None:
                    raise DisallowedSpecialToken(match.group())
        if allowed:
            if allowed is specials:  # "all": no per-call copy of every special
                usable = specials
            else:
                usable = frozenset(s for s in allowed if s in specials)
            if usable:
                prefix, _ = _special_matcher(usable)
                if not prefix or prefix in text:
                    return usable
        return None

    def _special_runs(self, text: str, usable: frozenset[str] | None) -> list[Ids]:
        """Split ``text`` at the ``usable`` special tokens; encode the ordinary text between."""
        if not usable:
            return self._ordinary_runs(text)
        specials = self._special_tokens
        _, matcher = _special_matcher(usable)
        runs: list[Ids] = []
        start = 0
        for match in matcher.finditer(text):
            runs += self._ordinary_runs(text[start : match.start()])
            runs.append((specials[match.group()],))
            start = match.end()
        runs += self._ordinary_runs(text[start:])
        return runs

    def _parts(self, text: str) -> list[str] | None:
        """``text`` cut at safe points (see :meth:`_ordinary_runs`), or None when it is to be
        encoded directly: the chunk cache does not apply (a pattern without the safe-point
        proof, or text holding the character that marks unsafe spaces), or the text is long,
        ASCII and new to the cache (see ``ChunkCache.mostly_new``)."""
        if not self._chunkable or UNSAFE_SPACE in text:
            return None
        if len(text) > NEW_TEXT_SAMPLE_CHARS and self._findall_ascii is not None and text.isascii():
            # Only ASCII text, which the stdlib ``re`` twin splits: the ``regex`` pattern over a
            # whole text is slower than the chunk path (2 MB of mixed text: 6x, measured).
            # parts[0] has a key of its own; the last part of the sample may be cut short
            sample = self._split(text[:NEW_TEXT_SAMPLE_CHARS])[1:-1]
            if self._cache.mostly_new(sample):
                return None
        return self._split(text)

    @staticmethod
    def _split(text: str) -> list[str]:
        """``text`` cut at safe points: ``parts[0]``, then ``" " + parts[k]`` for k > 0."""
        if text.isascii():  # a few str.replace calls and a split beat the regex
            return mark_unsafe_spaces(text).split(" ")
        # non-ASCII text: the replaces would have to cover every Unicode space, over wider
        # strings; measured slower than the regex
        return split_at_safe_points(text)

    def _ordinary_ids(self, text: str) -> list[int]:
        """``encode_ordinary``'s core: when every chunk is cached, one C-level pass extends
        the output (a miss raises TypeError at ``extend(None)``: then the full path)."""
        if not text:
            return []
        parts = self._parts(text)
        if parts is None:
            return _flatten(self._pieces_ids(text))
        first = self._first_chunk(parts[0])
        out = list(first)
        if len(parts) > 1:
            try:
                lookups = map(self._cache.young.get, islice(parts, 1, None))
                deque(map(out.extend, lookups), maxlen=0)  # type: ignore[arg-type]  # None: TypeError
            except TypeError:
                return _flatten(self._runs_of(parts, first))
            self._cache.record(len(parts) - 1)
        return out

    def _ordinary_count(self, text: str) -> int:
        """Like :meth:`_ordinary_ids` but summing cached lengths (``+ None`` raises on a miss)."""
        if not text:
            return 0
        parts = self._parts(text)
        if parts is None:
            return sum(map(len, self._pieces_ids(text)))
        first = self._first_chunk(parts[0])
        if len(parts) == 1:
            return len(first)
        try:
            sizes = map(self._cache.young_sizes.get, islice(parts, 1, None))
            total = sum(sizes)  # type: ignore[arg-type]  # None raises TypeError
        except TypeError:
            return sum(map(len, self._runs_of(parts, first)))
        self._cache.record(len(parts) - 1)
        return len(first) + total

    def _ordinary_runs(self, text: str) -> list[Ids]:
        """Encode text without special tokens, as id sequences to be concatenated.

        The text is cut at safe points (see ``tokend.core.pretokenize``): for ASCII text,
        unsafe spaces are marked, then ``str.split(" ")`` cuts at the rest. Chunk 0 is
        ``parts[0]``, chunk k > 0 is ``" " + parts[k]`` (marked spaces restored). The cache
        maps a part (str) to the ids of ``" " + part``, so one ``map`` at C speed answers
        most of the text; the distinct misses are then encoded in one batch.
        """
        if not text:
            return []
        parts = self._parts(text)
        if parts is None:
            return self._pieces_ids(text)
        return self._runs_of(parts, None)

    def _runs_of(self, parts: list[str], first: Ids | None) -> list[Ids]:
        """The runs of a text cut into ``parts``; ``first``: chunk 0's ids if known."""
        cache = self._cache
        runs: list[Ids | None] = list(map(cache.young.get, parts))
        n = len(parts)
        # Positions of the first few misses (part 0 is handled below); index() scans in C.
        index = runs.index
        few: list[int] = []
        try:
            j = 0
            while len(few) < FEW_MISSES:
                j = index(None, j + 1)
                few.append(j)
        except ValueError:
            pass
        if len(few) < FEW_MISSES:
            if few:
                found = self._fill_misses(list(dict.fromkeys([parts[j] for j in few])))
                for j in few:
                    runs[j] = found[parts[j]]
            cache.record(n - 1 - len(few))
        else:
            # part 0 is left out here too: it is not a " " + part chunk
            missed = map(is_, islice(runs, 1, None), repeat(None))
            missing = list(dict.fromkeys(compress(islice(parts, 1, None), missed)))
            found = self._fill_misses(missing)
            # subtle: found.get(part, default) keeps the earlier hit for every other part
            runs = list(map(found.get, parts, runs))
            cache.record(n - 1 - len(missing))
        # no space before chunk 0: a different cache key
        runs[0] = self._first_chunk(parts[0]) if first is None else first
        return runs  # type: ignore[return-value]  # every None was replaced above

    def _first_chunk(self, part: str) -> Ids:
        """Ids of the chunk that starts a segment (which may hold marked spaces), cached under
        a 1-tuple key."""
        if len(part) > MAX_CACHED_CHUNK_CHARS:
            return self._encode_chunk(part.replace(UNSAFE_SPACE, " "))
        cache = self._cache
        key = (part,)
        ids = cache.young.get(key)
        if ids is None:
            ids = cache.get_cold(key)
            if ids is None:
                ids = self._encode_chunk(part.replace(UNSAFE_SPACE, " "))
                cache.put(key, ids)
        return ids

    def _fill_misses(self, keys: list[str]) -> dict[str, Ids]:
        """{key: ids of " " + key} for distinct keys that missed the young generation.

        Keys come in text order (``_encode_joined`` relies on it). Keys found in the old
        generation are promoted instead of re-encoded. New entries get fresh key strings,
        allocated in order of first appearance (frequent words come first in most texts): hot
        entries then sit next to each other in memory, which helps later warm lookups.
        """
        found: dict[str, Ids] = {}
        old = self._cache.old
        todo = keys
        if old:
            olds = list(map(old.get, keys))
            hit = list(map(is_not, olds, repeat(None)))
            found.update(zip(compress(keys, hit), compress(olds, hit), strict=True))  # type: ignore[arg-type]
            todo = list(compress(keys, map(not_, hit)))
        todo = list(map(str.join, todo, repeat(_FRESH)))  # subtle: new str objects, made now
        self._cache.record(0, len(todo))
        if self._findall_ascii is not None:
            ascii_keys = list(filter(str.isascii, todo))
            if ascii_keys:
                self._encode_joined(ascii_keys, self._findall_ascii, found)
            if len(ascii_keys) < len(todo):
                self._encode_joined(list(filterfalse(str.isascii, todo)), self._findall, found)
        elif todo:
            self._encode_joined(todo, self._findall, found)
        cacheable = found
        if todo and max(map(len, todo)) > MAX_CACHED_CHUNK_CHARS:
            cacheable = {k: v for k, v in found.items() if len(k) <= MAX_CACHED_CHUNK_CHARS}
        self._cache.put_many(cacheable)  # type: ignore[arg-type]  # str keys are CacheKeys
        return found

    def _encode_joined(
        self, keys: list[str], findall: Callable[[str], list[str]], out: dict[str, Ids]
    ) -> None:
        """Encode " " + key for many keys with one regex pass; the loops run in C.

        ``" " + " ".join(keys)`` has a safe point at every joining space, so its pretokens
        are those of the chunks in turn: each key starts with non-whitespace, and ends with it
        too but for a text's last part, which then comes last here (keys are in text order:
        only the last part of a text can end in whitespace, a space after it being unsafe).
        The pretokens are handed back to their chunk by end offset. Python code only runs for
        pretokens that are not a single token (piece cache or BPE), once per distinct one.
        Marked spaces in the keys are spaces again here, one character for one.
        """
        pieces = findall((" " + " ".join(keys)).replace(UNSAFE_SPACE, " "))
        piece_ends = list(accumulate(map(len, pieces)))
        chunk_ends = accumulate(map(add, map(len, keys), repeat(1)))
        ends = list(map(bisect_right, repeat(piece_ends), chunk_ends))
        counts = list(map(sub, ends, chain((0,), ends)))
        shared = iter(self._pieces_to_ids(pieces))
        slices = map(islice, repeat(shared), counts)
        if max(counts) <= _SUM_PIECES:
            # concatenating a chunk's few tuples with sum() is twice as fast as chaining
            out.update(zip(keys, map(sum, slices, repeat(_EMPTY)), strict=True))
        else:  # (sum is quadratic in the pieces per chunk)
            out.update(zip(keys, map(tuple, map(chain.from_iterable, slices)), strict=True))

    def _encode_piece(self, data: bytes) -> Ids:
        """BPE of one pretoken that is not itself a token, through the piece cache."""
        cache = self._piece_cache
        cached = cache.young.get(data)
        if cached is None:
            cached = cache.get_cold(data)
            if cached is None:
                cached = tuple(encode_piece(data, self._ranks, self._ids))
                if len(data) <= MAX_CACHED_CHUNK_CHARS:
                    cache.put(data, cached)
        return cached

    def _encode_chunk(self, chunk: str) -> Ids:
        """The ids of one chunk, as a tuple for the cache."""
        return tuple(chain.from_iterable(self._pieces_ids(chunk)))

    def _pieces_ids(self, text: str) -> list[Ids]:
        """The ids of each pretoken of ``text``: one regex pass over all of it (the stdlib
        ``re`` twin of the pattern for ASCII text), then :meth:`_pieces_to_ids`."""
        findall = self._findall
        if self._findall_ascii is not None and text.isascii():
            findall = self._findall_ascii
        return self._pieces_to_ids(findall(text))

    def _pieces_to_ids(self, pieces: list[str]) -> list[Ids]:
        """The ids of each pretoken: single tokens from the token table in one C-level pass;
        the others (None there) through the piece cache and the BPE, once per distinct piece.

        Raises UnicodeEncodeError for a pretoken holding a lone surrogate (no token's text
        does), which the callers' surrogate fallback handles as tiktoken does.
        """
        values: list[Ids | None] = list(map(self._token_ids.get, pieces))
        missed = list(map(is_, values, repeat(None)))
        if any(missed):
            merged = dict.fromkeys(compress(pieces, missed), _EMPTY)
            for piece in merged:
                merged[piece] = self._encode_piece(piece.encode("utf-8"))
            fixes = map(merged.__getitem__, compress(pieces, missed))
            deque(map(values.__setitem__, compress(count(), missed), fixes), maxlen=0)
        return values  # type: ignore[return-value]  # every None was replaced
