"""PipelineTokenizer: normalizer -> pre-tokenizer -> model -> (post-processor), decoder.

It offers the surface the server uses on ``Encoding`` (encode, count, decode_bytes, special
tokens, n_vocab...), with tiktoken's special-token policy mapped onto added tokens: special
added tokens that are allowed are matched, disallowed ones raise, the rest read as text;
non-special added tokens are always matched, as in HF.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import Literal

import regex

from tokend.core.engine import Engine
from tokend.core.engine.cache import CacheInfo
from tokend.core.errors import DisallowedSpecialToken, UnknownTokenId
from tokend.core.formats import unicode_to_bytes
from tokend.core.pipeline import alignment as al
from tokend.core.pipeline import decoders as dec
from tokend.core.pipeline import pre_tokenizers as pre
from tokend.core.pipeline.added_tokens import AddedToken, AddedVocabulary
from tokend.core.pipeline.decoders import Decoder
from tokend.core.pipeline.models import BPE, Model, Unigram
from tokend.core.pipeline.normalizers import Normalizer
from tokend.core.pipeline.post_processors import PostProcessor
from tokend.core.pipeline.pre_tokenizers import PreTokenizer

AllowedSpecial = Literal["all"] | AbstractSet[str]
DisallowedSpecial = Literal["all"] | Collection[str]
WORD_CACHE_ENTRIES = 65536
# Longer words are tokenized but not kept: a model that takes the whole text as one word
# (SentencePiece Unigram) must not fill the cache with texts (HF caps its cache the same way).
MAX_CACHED_WORD = 256


class PipelineTokenizer:
    """An HF-style tokenizer with the served tokenizer surface (see ``core.tokenizer``)."""

    streams_in_bounded_memory = False  # the whole text is needed (normalizers see all of it)

    def __init__(
        self,
        name: str,
        *,
        model: Model,
        normalizer: Normalizer | None = None,
        pre_tokenizer: PreTokenizer | None = None,
        post_processor: PostProcessor | None = None,
        decoder: Decoder | None = None,
        added_tokens: Sequence[AddedToken] = (),
        cache_entries: int = WORD_CACHE_ENTRIES,
    ) -> None:
        self.name = name
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.post_processor = post_processor
        self.decoder = decoder
        self.added = AddedVocabulary(
            list(added_tokens), normalizer.normalize if normalizer is not None else None
        )
        self._cache: dict[str, list[int]] = {}
        self._cache_entries = cache_entries
        self._hits = self._misses = self._evictions = 0
        self._lock = threading.Lock()
        ids = [*model.vocab.values(), *(t.id for t in added_tokens)]
        self._n_vocab = max(ids) + 1 if ids else 0
        self._byte_level = isinstance(decoder, dec.ByteLevel) or _has_byte_level(pre_tokenizer)
        # The compiled engine for plain segments (pre-tokenizer + model), when the file reduces
        # to one (core/formats/hf_compiled.py); None: this pipeline does it all.
        self._segment_engine: Engine | None = None
        self._specials_pattern: regex.Pattern[str] | None = None
        self.engine_path = "pure-Python pipeline"

    def use_segment_engine(self, engine: Engine, path: str) -> None:
        """Encode plain segments (after the normalizer and added tokens) with ``engine``, whose
        ids equal this pipeline's pre-tokenizer + model; offsets still use the pipeline."""
        self._segment_engine = engine
        self.engine_path = path

    # -- the served surface -------------------------------------------------------------

    @property
    def n_vocab(self) -> int:
        return self._n_vocab

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self.added.special)

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self.added.special)

    def is_special_token(self, token: int) -> bool:
        return token in self.added.special_ids

    @property
    def byte_level(self) -> bool:
        """Whether tokens are byte-level (GPT-2's alphabet), so each one's text stands alone."""
        return self._byte_level

    def cache_info(self) -> CacheInfo:
        if self._segment_engine is not None:
            return self._segment_engine.cache_info()
        return CacheInfo(self._hits, self._misses, self._evictions, len(self._cache),
                         self._cache_entries)

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode with special-token text read as text (non-special added tokens still match)."""
        return self.encode(text, disallowed_special=frozenset())

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[int]:
        """The reference's ids for ``text`` (tiktoken's special-token policy, see module)."""
        skip = self._skipped(text, allowed_special, disallowed_special)
        ids: list[int] = []
        for start, end, token in self.added.raw.segments(text, skip):
            if token is not None:
                ids.append(token)
            elif end > start:
                self._encode_segment(text[start:end], start == 0, skip, ids)
        return ids

    def count(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> int:
        return len(self.encode(text, allowed_special=allowed_special,
                               disallowed_special=disallowed_special))

    def encode_iterable(
        self,
        chunks: Iterable[str],
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> Iterator[int]:
        """The ids of the joined chunks (buffered whole: normalizers may look at all of it)."""
        yield from self.encode("".join(chunks), allowed_special=allowed_special,
                               disallowed_special=disallowed_special)

    def encode_with_offsets(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """The ids and each token's ``(start, end)`` *character* offsets into ``text``, as HF
        ``Encoding.offsets`` gives them (through normalizers, pre-tokenizers, added tokens,
        and the post-processor's trimming; framing special tokens span ``(0, 0)``).

        Slower than :meth:`encode` (alignments are tracked, no word cache): only for requests
        that ask for offsets.
        """
        skip = self._skipped(text, allowed_special, disallowed_special)
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        for start, end, token in self.added.raw.segments(text, skip):
            if token is not None:
                ids.append(token)
                offsets.append((start, end))
            elif end > start:
                self._segment_offsets(text[start:end], start, skip, ids, offsets)
        if self.post_processor is not None:
            ids, offsets, _strings = self.post_processor.process_offsets(
                ids, offsets, self.decode_tokens(ids), add_special_tokens)
        return ids, offsets

    def post_process(self, ids: list[int]) -> list[int]:
        """The ids with the model's framing special tokens (``add_special_tokens``)."""
        return ids if self.post_processor is None else self.post_processor.process(ids)

    def decode_tokens(self, tokens: Iterable[int]) -> list[str]:
        """Each id's token string (added tokens first, as HF looks them up)."""
        out = []
        texts, model = self.added.texts, self.model
        for token in tokens:
            text = texts.get(token) if isinstance(token, int) else None
            if text is None and isinstance(token, int) and token >= 0:
                text = model.id_to_token(token)
            if text is None:
                raise UnknownTokenId(token, self.n_vocab)
            out.append(text)
        return out

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        strings = self.decode_tokens(tokens)
        if self.decoder is None:
            return " ".join(strings)
        return "".join(self.decoder.decode_chain(strings))

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        return self.decode(tokens).encode("utf-8", "surrogatepass")

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """Each token's own bytes: byte-level alphabet and ``<0xNN>`` mapped back, ▁ -> space."""
        table = unicode_to_bytes()
        out: list[bytes] = []
        ids = list(tokens)
        for token, text in zip(ids, self.decode_tokens(ids), strict=True):
            if token in self.added.by_id:
                out.append(text.encode("utf-8", "surrogatepass"))
            elif self._byte_level and all(c in table for c in text):
                out.append(bytes(table[c] for c in text))
            elif (byte := dec.byte_of(text)) is not None:
                out.append(bytes([byte]))
            else:
                out.append(text.replace("▁", " ").encode("utf-8", "surrogatepass"))
        return out

    # -- internals ---------------------------------------------------------------------

    def _skipped(
        self, text: str, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> frozenset[int]:
        """Ids of special tokens to read as text; raise on disallowed special-token text."""
        specials = self.added.special
        if not specials:
            return frozenset()
        if allowed_special != "all" and not allowed_special:
            # subtle: the common policies (encode_ordinary, encode and count by default) skip
            # every special token; with DeepSeek's 1,231 of them, building that set and testing
            # each one "in text" took 0.55 of 0.71 s over 500 1 KB texts.
            if disallowed_special == "all":
                found = self._specials_re().search(text)
                if found is not None:
                    raise DisallowedSpecialToken(found.group())
            else:
                for special in disallowed_special:
                    if special in text:
                        raise DisallowedSpecialToken(special)
            return self._all_special_ids
        allowed = set(specials) if allowed_special == "all" else set(allowed_special) & set(
            specials)
        disallowed = set(specials) - allowed if disallowed_special == "all" else set(
            disallowed_special)
        for special in disallowed:
            if special in text:
                raise DisallowedSpecialToken(special)
        return frozenset(i for s, i in specials.items() if s not in allowed)

    @functools.cached_property
    def _all_special_ids(self) -> frozenset[int]:
        return frozenset(self.added.special.values())

    def _specials_re(self) -> regex.Pattern[str]:
        """One pattern matching any special token's text (longest first)."""
        if self._specials_pattern is None:
            texts = sorted(self.added.special, key=len, reverse=True)
            self._specials_pattern = regex.compile("|".join(map(regex.escape, texts)))
        return self._specials_pattern

    def _encode_segment(self, text: str, at_start: bool, skip: frozenset[int],
                        ids: list[int]) -> None:
        if self.normalizer is not None:
            # subtle: HF asks whether a piece starts at *original* offset 0; a normalizer that
            # deletes the first character (Strip, a control char) moves the start past it.
            if at_start and text:
                at_start = self.normalizer.normalize(text[0]) != ""
            text = self.normalizer.normalize(text)
        for start, end, token in self.added.normalized.segments(text, skip):
            if token is not None:
                ids.append(token)
                continue
            if end <= start:
                continue
            if self._segment_engine is not None:
                ids += self._segment_engine.encode(text[start:end])
                continue
            pieces = [(text[start:end], at_start and start == 0)]
            if self.pre_tokenizer is not None:
                pieces = self.pre_tokenizer.pre_tokenize(pieces)
            get = self._cache.get
            misses = self._misses
            for word, _ in pieces:
                found = get(word)
                ids += self._miss(word) if found is None else found
            self._hits += len(pieces) - (self._misses - misses)

    def _segment_offsets(self, text: str, base: int, skip: frozenset[int], ids: list[int],
                         offsets: list[tuple[int, int]]) -> None:
        """``_encode_segment`` with alignments: ``text`` starts at ``base`` in the original."""
        at_start = base == 0
        align = al.identity(text, base)
        if self.normalizer is not None:
            if at_start and text:  # the same rule as _encode_segment, so the ids agree
                at_start = self.normalizer.normalize(text[0]) != ""
            text, align = self.normalizer.normalize_aligned(text, align, base)
        expand, tokenize = al.expand, self.model.tokenize_spans
        for start, end, token in self.added.normalized.segments(text, skip):
            if token is not None:
                ids.append(token)
                offsets.append(expand(align, start, end, base))
                continue
            if end <= start:
                continue
            pieces: list[pre.AlignedPiece] = [
                (text[start:end], at_start and start == 0, align[start:end])]
            if self.pre_tokenizer is not None:
                pieces = self.pre_tokenizer.pre_tokenize_aligned(pieces)
            for word, _at_start, spans in pieces:
                for token_id, a, b in tokenize(word):
                    ids.append(token_id)
                    offsets.append(expand(spans, a, b, base))

    def _miss(self, word: str) -> list[int]:
        """Tokenize a word the cache lacks and keep it (the cache is cleared when full)."""
        self._misses += 1
        ids = self.model.tokenize(word)
        if len(word) > MAX_CACHED_WORD:
            return ids
        if len(self._cache) >= self._cache_entries:
            with self._lock:
                self._evictions += len(self._cache)
                self._cache.clear()
        self._cache[word] = ids
        return ids


def _has_byte_level(pre_tokenizer: PreTokenizer | None) -> bool:
    if isinstance(pre_tokenizer, pre.ByteLevel):
        return True
    if isinstance(pre_tokenizer, pre.Sequence):
        return any(_has_byte_level(p) for p in pre_tokenizer.pre_tokenizers)
    return False


__all__ = ["BPE", "PipelineTokenizer", "Unigram"]
