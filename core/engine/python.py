"""The pure-Python engine: the reference twin of the compiled one, and its fallback.

Per segment: cut at safe points (see ``tokend.core.engine.pretokenize``), look every chunk up in the
chunk cache at C speed, and only for the misses run the regex and the rank-table BPE
(``tokend.core.engine.bpe``). A long segment whose sampled chunks are new to the cache is encoded
directly instead (one regex pass, a token table, BPE for the rest), and cached when it comes
again (see ``ChunkCache.mostly_new``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import accumulate, chain, compress, count, filterfalse, islice, repeat
from operator import add, is_, is_not, not_, sub
from typing import Literal, TypeAlias

from tokend.core.engine.bpe import encode_piece
from tokend.core.engine.cache import CacheInfo, ChunkCache
from tokend.core.engine.pretokenize import (
    UNSAFE_SPACE,
    compile_ascii_pattern,
    compile_pattern,
    is_chunkable,
    mark_unsafe_spaces,
    split_at_safe_points,
)
from tokend.core.engine.wire import uint32_buffer, varints
from tokend.core.errors import UnknownTokenId

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
# An ASCII segment longer than this is first judged on the chunks of its first this-many
# characters: mostly new to the cache (and to its doorkeeper) means it is encoded directly.
NEW_TEXT_SAMPLE_CHARS = 4096


def flatten(runs: Iterable[Sequence[int]]) -> list[int]:
    """The runs concatenated: list.extend driven by a C loop, faster than chain here."""
    out: list[int] = []
    deque(map(out.extend, runs), maxlen=0)
    return out


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


class PythonEngine:
    """Encodes segments of ordinary text to ids with one encoding's tables (pure Python)."""

    name: Literal["python"] = "python"

    def __init__(
        self,
        *,
        pat_str: str,
        ranks: Mapping[bytes, int],
        ids: Mapping[bytes, int],
        decoder: Mapping[int, bytes],
        cache_entries: int,
    ) -> None:
        self._ranks = ranks  # token bytes -> merge priority
        self._ids = ids  # token bytes -> output id
        self._findall = compile_pattern(pat_str)
        self._chunkable = is_chunkable(pat_str)
        # which pretokenizer runs (`tokend registry show`): here always the regex module
        self.path = "pure-Python engine (regex module" + (
            ", safe-point chunks)" if self._chunkable else ", whole segments)")
        self._findall_ascii = compile_ascii_pattern(pat_str)
        self._token_ids = _token_table(ids)  # token text -> (id,)
        # id -> bytes as a list indexed by id (None in gaps): indexing beats hashing in decode
        self._decoder_list: list[bytes | None] = [None] * (max(decoder) + 1)
        for token_id, token_bytes in decoder.items():
            self._decoder_list[token_id] = token_bytes
        self._decoder = decoder
        # Chunks and BPE'd pretokens are kept apart: the chunk dict, probed for every part of
        # every text, stays smaller and denser in memory. Pretokens get an eighth of the budget.
        pieces = cache_entries // 8
        self._cache: ChunkCache[CacheKey, Ids] = ChunkCache(cache_entries - pieces)
        self._piece_cache: ChunkCache[bytes, Ids] = ChunkCache(pieces)

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` (ordinary text; lone surrogates raise UnicodeEncodeError)."""
        return self._ordinary_ids(text)

    def count(self, text: str) -> int:
        """``len(encode(text))`` without building the list."""
        return self._ordinary_count(text)

    def encode_buffer(self, text: str) -> bytes:
        """The ids of ``text`` as native uint32s (the compiled engine's form)."""
        return uint32_buffer(self._ordinary_ids(text))

    def encode_varints(self, text: str) -> tuple[bytes, int]:
        """The ids of ``text`` as protobuf varints back to back, and their count."""
        ids = self._ordinary_ids(text)
        return varints(ids), len(ids)

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of ``tokens`` concatenated; an unknown id raises UnknownTokenId."""
        try:
            if tokens and min(tokens) < 0:  # a negative index would wrap around silently
                raise IndexError
            return b"".join(map(self._decoder_list.__getitem__, tokens))  # type: ignore[arg-type]
        except (IndexError, TypeError):
            raise UnknownTokenId(self._first_unknown(tokens), len(self._decoder_list)) from None

    def _first_unknown(self, tokens: Iterable[int]) -> int:
        """The first element of ``tokens`` that is not a known id (-1 if there is none)."""
        for token in tokens:
            try:
                if self._decoder.get(token) is None:
                    return token
            except TypeError:  # unhashable: not an id either
                return token
        return -1

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
            return flatten(self._pieces_ids(text))
        first = self._first_chunk(parts[0])
        out = list(first)
        if len(parts) > 1:
            try:
                lookups = map(self._cache.young.get, islice(parts, 1, None))
                deque(map(out.extend, lookups), maxlen=0)  # type: ignore[arg-type]  # None: TypeError
            except TypeError:
                return flatten(self._runs_of(parts, first))
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

        The text is cut at safe points (see ``tokend.core.engine.pretokenize``): for ASCII text,
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
