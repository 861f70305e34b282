"""SentencePiece's own stages (the ``sentencepiece`` library's semantics, not HF's ports).

- :class:`SentencePieceNormalizer`: the precompiled charsmap by longest match, then
  ``remove_extra_whitespaces``, ``add_dummy_prefix`` and spaces -> ▁;
- :class:`SentencePieceBPE`: merges by piece *score* (highest first, leftmost on ties),
  user-defined symbols never merged, unknown runs fused or byte-fallen-back;
- :class:`SentencePieceUnigram`: Viterbi with float32 path scores over the whole text, as the
  C++ ``EncodeOptimized`` sums and compares them (ties: the first candidate met);
- :class:`SentencePieceDecoder`: control pieces vanish, ``<0xNN>`` runs become UTF-8, one
  leading ▁ is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import regex

from tokend.core.pipeline.alignment import Align
from tokend.core.pipeline.charsmap import CharsMap
from tokend.core.pipeline.decoders import Decoder, byte_of
from tokend.core.pipeline.lattice import f32, make_lattice
from tokend.core.pipeline.models import UNK_PENALTY, Model, Token, byte_token, spans_of
from tokend.core.pipeline.normalizers import Normalizer
from tokend.core.pipeline.pre_tokenizers import Piece, PreTokenizer

SPACE = "▁"
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
FLT_MAX = f32(3.4028234663852886e38)  # <cfloat>'s


class _UserDefined:
    """Longest-match of user-defined symbols (SentencePiece's PrefixMatcher)."""

    def __init__(self, symbols: Sequence[str]) -> None:
        ordered = sorted(set(symbols), key=lambda s: (-len(s), s))
        self.pattern = regex.compile("|".join(map(regex.escape, ordered))) if ordered else None

    def match(self, text: str, pos: int) -> int:
        """Length of the longest symbol at ``pos`` (0 if none)."""
        if self.pattern is None:
            return 0
        found = self.pattern.match(text, pos)
        return found.end() - pos if found else 0


class SentencePieceNormalizer(Normalizer):
    """Charsmap by longest match, whitespace cleanup, dummy prefix, spaces -> ▁."""

    def __init__(
        self, charsmap: CharsMap | None, *, add_dummy_prefix: bool,
        remove_extra_whitespaces: bool, escape_whitespaces: bool,
        user_defined: Sequence[str] = (),
    ) -> None:
        self.charsmap = charsmap
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.escape_whitespaces = escape_whitespaces
        self.user_defined = _UserDefined(user_defined)

    def _pieces(self, text: str) -> list[str]:
        if self.charsmap is None:
            return [text]
        if self.user_defined.pattern is None:
            return [norm for _orig, norm in self.charsmap.normalize_longest(text)]
        out: list[str] = []
        start = 0
        for match in self.user_defined.pattern.finditer(text):
            out += [n for _o, n in self.charsmap.normalize_longest(text[start:match.start()])]
            out.append(match.group())  # user-defined symbols pass through unnormalized
            start = match.end()
        out += [n for _o, n in self.charsmap.normalize_longest(text[start:])]
        return out

    def normalize(self, text: str) -> str:
        if not text:
            return ""
        normalized = "".join(self._pieces(text))
        if self.remove_extra_whitespaces:
            normalized = regex.sub(" +", " ", normalized).strip(" ")
            if not normalized:
                return ""
        if self.add_dummy_prefix:
            normalized = " " + normalized
        if not self.escape_whitespaces:
            return normalized
        normalized = normalized.replace(" ", SPACE)
        # SentencePiece strips trailing *escaped* spaces, so a literal ▁ the charsmap leaves
        # alone (nfkc_cf keeps it, nmt_nfkc maps it to " ") goes too at the end of the text,
        # though not at its start or between words: "a▁" -> "▁a", "▁" -> "".
        return normalized.rstrip(SPACE) if self.remove_extra_whitespaces else normalized


    def normalize_aligned(self, text: str, align: Align, base: int) -> tuple[str, Align]:
        """SentencePiece's ``Normalizer::Normalize`` with its ``norm_to_orig`` map: each
        normalized character is aligned to ``(n2o[k], n2o[k + 1])``, so a piece's span is
        ``(n2o[begin], n2o[end])`` as the library reports it. ``text`` is original text."""
        chunks = self._chunks(text)
        consumed = 0
        i = 0
        if self.remove_extra_whitespaces:
            while i < len(chunks) and chunks[i][1] == " ":
                consumed += chunks[i][0]
                i += 1
        if i == len(chunks):
            return "", []
        space = SPACE if self.escape_whitespaces else " "
        chars: list[str] = []
        n2o: list[int] = []
        if self.add_dummy_prefix:
            chars.append(space)
            n2o.append(consumed)
        is_prev_space = self.remove_extra_whitespaces
        for size, chunk in chunks[i:]:
            norm = chunk.lstrip(" ") if is_prev_space else chunk
            if norm:
                chars += norm.replace(" ", space) if self.escape_whitespaces else norm
                n2o += [consumed] * len(norm)
                is_prev_space = norm.endswith(" ")
            consumed += size
            if not self.remove_extra_whitespaces:
                is_prev_space = False
        if self.remove_extra_whitespaces:
            while chars and chars[-1] == space:
                chars.pop()
                consumed = n2o.pop()
        n2o.append(consumed)
        return "".join(chars), [(base + n2o[k], base + n2o[k + 1]) for k in range(len(chars))]

    def _chunks(self, text: str) -> list[tuple[int, str]]:
        """(original length, normalized text) per step of SentencePiece's NormalizePrefix: a
        user-defined symbol, a charsmap key, or one unchanged character."""
        out: list[tuple[int, str]] = []

        def mapped(part: str) -> None:
            if self.charsmap is None:
                out.extend((1, c) for c in part)
                return
            for original, norm, key in self.charsmap.chunks_longest(part):
                if key:
                    out.append((len(original), norm))
                else:
                    out.extend((1, c) for c in original)

        start = 0
        if self.user_defined.pattern is not None:
            for match in self.user_defined.pattern.finditer(text):
                mapped(text[start:match.start()])
                out.append((match.end() - match.start(), match.group()))
                start = match.end()
        mapped(text[start:])
        return out


_WORD_START = regex.compile(f"(?<=[^{SPACE}])(?={SPACE})")


def splits_words(pieces: Sequence[str]) -> bool:
    """Whether no piece holds a ▁ right after another character than ▁ (``a▁``), so that no
    piece, merge or Viterbi path can cross a cut made there (``▁▁`` runs are fine)."""
    return not any(regex.search(f"[^{SPACE}]{SPACE}", p) for p in pieces)


class WordsBeforeSpace(PreTokenizer):
    """Cut where a run of ▁ starts after another character (exact when :func:`splits_words`
    holds for the vocabulary, which the loader checks); the run stays with its word."""

    def split(self, piece: Piece) -> list[Piece]:
        text, at_start = piece
        words = _WORD_START.split(text)
        return [(w, at_start and i == 0) for i, w in enumerate(words) if w]

    def bounds(self, text: str) -> list[tuple[int, int]]:
        cuts = [0, *(m.start() for m in _WORD_START.finditer(text)), len(text)]
        return list(pairwise(cuts))


class _SentencePieceModel(Model):
    """Pieces, types and the unknown / byte-fallback rules shared by BPE and Unigram."""

    def __init__(self, pieces: Sequence[tuple[str, float, int]], *, byte_fallback: bool) -> None:
        self.vocab = {}
        self.types: dict[str, int] = {}
        self.scores: dict[str, float] = {}
        self.unk_id = 0
        for i, (piece, score, kind) in enumerate(pieces):
            self.vocab.setdefault(piece, i)
            self.types.setdefault(piece, kind)
            if kind in (NORMAL, USER_DEFINED, UNUSED):
                self.scores.setdefault(piece, score)
            if kind == UNKNOWN:
                self.unk_id = i
        self.byte_fallback = byte_fallback
        self.user_defined = _UserDefined([p for p, _s, k in pieces if k == USER_DEFINED])

    def _ids(self, pieces: list[str]) -> list[int]:
        """Piece strings -> ids: unknowns become bytes (byte_fallback) or one fused unk."""
        ids: list[int] = []
        prev_unk = False
        for piece in pieces:
            token_id = self.vocab.get(piece) if piece in self.scores else None
            if token_id is None:
                if self.byte_fallback:
                    ids += [self.vocab[byte_token(b)] for b in piece.encode("utf-8")]
                elif not prev_unk:
                    ids.append(self.unk_id)
                prev_unk = not self.byte_fallback
                continue
            ids.append(token_id)
            prev_unk = False
        return ids

    def _tokens(self, pieces: list[str]) -> list[Token]:
        """``_ids`` with spans as SentencePiece reports them: a fused unknown run spans the
        run; of an unknown's byte pieces only the last spans it, the others are empty."""
        out: list[Token] = []
        prev_unk = False
        for piece, (start, end) in zip(pieces, spans_of(pieces), strict=True):
            token_id = self.vocab.get(piece) if piece in self.scores else None
            if token_id is None:
                if self.byte_fallback:
                    raw = piece.encode("utf-8")
                    out += [(self.vocab[byte_token(b)], start, start) for b in raw[:-1]]
                    out.append((self.vocab[byte_token(raw[-1])], start, end))
                elif prev_unk:
                    out[-1] = (out[-1][0], out[-1][1], end)
                else:
                    out.append((self.unk_id, start, end))
                prev_unk = not self.byte_fallback
                continue
            out.append((token_id, start, end))
            prev_unk = False
        return out


class SentencePieceBPE(_SentencePieceModel):
    """SentencePiece BPE: repeatedly merge the adjacent pair whose union scores highest."""

    def _symbols(self, word: str) -> list[str]:
        symbols: list[str] = []
        frozen: list[bool] = []
        i = 0
        while i < len(word):
            length = self.user_defined.match(word, i)
            symbols.append(word[i : i + (length or 1)])
            frozen.append(bool(length))
            i += length or 1
        scores = self.scores
        while len(symbols) > 1:
            best_at, best = -1, 0.0
            for j in range(len(symbols) - 1):
                if frozen[j] or frozen[j + 1]:
                    continue
                score = scores.get(symbols[j] + symbols[j + 1])
                if score is not None and (best_at < 0 or score > best):
                    best_at, best = j, score
            if best_at < 0:
                break
            symbols[best_at : best_at + 2] = [symbols[best_at] + symbols[best_at + 1]]
            frozen[best_at : best_at + 2] = [False]
        return symbols

    def tokenize(self, word: str) -> list[int]:
        return self._ids(self._symbols(word))

    def tokenize_spans(self, word: str) -> list[Token]:
        return self._tokens(self._symbols(word))


class SentencePieceUnigram(_SentencePieceModel):
    """SentencePiece unigram: the best-scoring segmentation of the whole text, as
    ``EncodeOptimized`` (0.2.3) finds it (float32 path scores, see :mod:`lattice`).

    subtle: not cut into words: the path score where a word starts shapes the float rounding
    of every sum after it, and so which of two tied segmentations wins (``▁ ▁▁ ▁`` vs
    ``▁▁▁▁`` when ▁▁▁▁ scores 4 x ▁); only the lattice over the whole text gives the
    library's choice.
    """

    def __init__(self, pieces: Sequence[tuple[str, float, int]], *, byte_fallback: bool) -> None:
        super().__init__(pieces, byte_fallback=byte_fallback)
        normal = [f32(s) for _p, s, k in pieces if k == NORMAL]
        self.min_score = min([FLT_MAX, *normal])  # the C++ starts from FLT_MAX
        names: list[str] = []
        scores: list[float] = []
        for i, (piece, score, kind) in enumerate(pieces):
            first = self.vocab.get(piece) == i
            if first and kind == NORMAL:
                names.append(piece)
                scores.append(f32(score))
            elif first and kind == USER_DEFINED:
                # subtle: GetUserDefinedScore(length in UTF-8 bytes): 0.1 * (length - 1), as float
                names.append(piece)
                scores.append(f32(0.1 * (len(piece.encode("utf-8")) - 1)))
            else:  # control, unknown, byte, unused pieces are not in the lattice
                names.append("")
                scores.append(0.0)
        self._lattice = make_lattice(names, scores, f32(self.min_score - UNK_PENALTY),
                                     float32=True)

    def tokenize(self, word: str) -> list[int]:
        return self._ids(self._pieces(word))

    def tokenize_spans(self, word: str) -> list[Token]:
        return self._tokens(self._pieces(word))

    def _pieces(self, word: str) -> list[str]:
        path = self._lattice.best_path(word)
        return [word[path[k] : path[k + 1]] for k in range(0, len(path), 3)]


class SentencePieceDecoder(Decoder):
    """SentencePiece's detokenizer (see the module docstring)."""

    def __init__(self, types: dict[str, int], *, strip_leading_space: bool,
                 remove_extra_whitespaces: bool, unk_surface: str, unk_piece: str) -> None:
        self.types = types
        self.strip_leading_space = strip_leading_space
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.unk_surface, self.unk_piece = unk_surface, unk_piece

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        pending = bytearray()
        text_len = 0
        is_bos_ws = True  # sticky: once text exists (or a ▁ was consumed) it stays False
        bos_ws_seen = False
        for token in tokens:
            kind = self.types.get(token)
            byte = byte_of(token) if kind == BYTE else None
            if byte is not None:
                pending.append(byte)
                continue
            if pending:
                out.append(decode_bytes_per_char(bytes(pending)))
                text_len += len(out[-1])
                pending.clear()
            if bos_ws_seen or text_len:
                is_bos_ws = False
            bos_ws_seen = False
            if kind == CONTROL:
                piece = ""
            elif kind == UNKNOWN:
                piece = self.unk_surface if token == self.unk_piece else token
            else:
                piece = token
                if is_bos_ws and self.strip_leading_space and piece.startswith(SPACE):
                    piece = piece[1:]
                    bos_ws_seen = not self.remove_extra_whitespaces
                piece = piece.replace(SPACE, " ")
            out.append(piece)
            text_len += len(piece)
        if pending:
            out.append(decode_bytes_per_char(bytes(pending)))
        return out


def decode_bytes_per_char(data: bytes) -> str:
    """UTF-8 decoding where each invalid byte becomes one U+FFFD (SentencePiece's rule)."""
    out: list[str] = []
    i = 0
    while i < len(data):
        lead = data[i]
        size = 1 if lead < 0x80 else 2 if 0xC2 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 \
            else 4 if 0xF0 <= lead < 0xF5 else 0
        if size:
            try:
                out.append(data[i : i + size].decode("utf-8"))
                i += size
                continue
            except UnicodeDecodeError:
                pass
        out.append("\ufffd")
        i += 1
    return "".join(out)
