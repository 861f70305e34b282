"""Models: one pre-tokenized word -> ids, one class per HF ``models`` type.

BPE, WordPiece, Unigram and WordLevel as HF ``tokenizers/src/models/*`` define them. The BPE
merge loop over one word is the free function :func:`bpe_merge`, so a compiled kernel can
replace exactly that step later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokend.core.errors import CorruptData
from tokend.core.pipeline._config import component_type, field, unsupported
from tokend.core.pipeline.lattice import make_lattice

MergeTable = dict[tuple[int, int], tuple[int, int]]  # (left id, right id) -> (rank, merged id)
Span = tuple[int, int]  # start, end: characters of the word
Token = tuple[int, int, int]  # id, start, end
UNK_PENALTY = 10.0  # Unigram: an unknown character scores min_score - 10 (SentencePiece's)


def bpe_merge(ids: list[int], merges: MergeTable) -> list[int]:
    """Apply merges to a word's symbols, lowest rank first, leftmost among equal ranks.

    >>> bpe_merge([0, 1, 2], {(0, 1): (0, 3), (3, 2): (1, 4)})
    [4]
    """
    get = merges.get
    while len(ids) > 1:
        best = None
        best_at = -1
        for i in range(len(ids) - 1):
            found = get((ids[i], ids[i + 1]))
            if found is not None and (best is None or found[0] < best[0]):
                best, best_at = found, i
        if best is None:
            break
        ids[best_at : best_at + 2] = [best[1]]
    return ids


def bpe_merge_spans(ids: list[int], spans: list[Span], merges: MergeTable) -> list[Token]:
    """:func:`bpe_merge` with each symbol's character span in the word (merged spans join)."""
    get = merges.get
    while len(ids) > 1:
        best = None
        best_at = -1
        for i in range(len(ids) - 1):
            found = get((ids[i], ids[i + 1]))
            if found is not None and (best is None or found[0] < best[0]):
                best, best_at = found, i
        if best is None:
            break
        ids[best_at : best_at + 2] = [best[1]]
        spans[best_at : best_at + 2] = [(spans[best_at][0], spans[best_at + 1][1])]
    return [(i, s, e) for i, (s, e) in zip(ids, spans, strict=True)]


def spans_of(pieces: list[str]) -> list[Span]:
    """The character spans of pieces that concatenate to a word."""
    out: list[Span] = []
    start = 0
    for piece in pieces:
        out.append((start, start + len(piece)))
        start += len(piece)
    return out


def byte_token(byte: int) -> str:
    """The byte-fallback token of a byte: ``<0x0A>``."""
    return f"<0x{byte:02X}>"


class Model:
    """Base: a vocabulary and ``tokenize(word) -> ids``."""

    vocab: dict[str, int]

    def tokenize(self, word: str) -> list[int]:
        raise NotImplementedError

    def tokenize_spans(self, word: str) -> list[Token]:
        """``tokenize`` with each token's character span in ``word`` (HF's token offsets)."""
        raise NotImplementedError

    def id_to_token(self, token_id: int) -> str | None:
        return self._vocab_r.get(token_id)

    @property
    def _vocab_r(self) -> dict[int, str]:
        reverse = self.__dict__.get("_reverse")
        if reverse is None:
            reverse = {i: t for t, i in self.vocab.items()}
            self.__dict__["_reverse"] = reverse
        return reverse


class BPE(Model):
    """Merge-list BPE with HF's options (byte fallback, unknown-token fusing, affixes)."""

    def __init__(
        self,
        vocab: dict[str, int],
        merges: list[tuple[str, str]],
        *,
        unk_token: str | None = None,
        continuing_subword_prefix: str | None = None,
        end_of_word_suffix: str | None = None,
        fuse_unk: bool = False,
        byte_fallback: bool = False,
        ignore_merges: bool = False,
        source: str = "model",
    ) -> None:
        self.vocab = vocab
        self.unk_token = unk_token
        self.prefix = continuing_subword_prefix or ""
        self.suffix = end_of_word_suffix or ""
        self.fuse_unk, self.byte_fallback, self.ignore_merges = fuse_unk, byte_fallback, \
            ignore_merges
        self.merges: MergeTable = {}
        cut = len(self.prefix)
        for rank, (left, right) in enumerate(merges):
            merged = left + right[cut:]
            a, b, ab = vocab.get(left), vocab.get(right), vocab.get(merged)
            if a is None or b is None or ab is None:
                missing = left if a is None else right if b is None else merged
                raise CorruptData(
                    f"{source}.merges[{rank}] ({left!r}, {right!r}) uses {missing!r}, "
                    "which is not in the vocabulary"
                )
            if (a, b) not in self.merges:
                self.merges[(a, b)] = (rank, ab)
        if unk_token is not None and unk_token not in vocab:
            self._unk_id: int | None = None
        else:
            self._unk_id = vocab.get(unk_token) if unk_token is not None else None

    def _unk(self) -> int:
        if self._unk_id is None:
            raise CorruptData(f"unk_token {self.unk_token!r} is not in the vocabulary")
        return self._unk_id

    def tokenize(self, word: str) -> list[int]:
        vocab = self.vocab
        if self.ignore_merges:
            whole = vocab.get(word)
            if whole is not None:
                return [whole]
        ids: list[int] = []
        unk: int | None = None  # a pending unknown (fused with the next one if fuse_unk)
        last = len(word) - 1
        for i, c in enumerate(word):
            s = c
            if i and self.prefix:
                s = self.prefix + s
            if i == last and self.suffix:
                s = s + self.suffix
            found = vocab.get(s)
            if found is not None:
                if unk is not None:
                    ids.append(unk)
                    unk = None
                ids.append(found)
                continue
            if self.byte_fallback:
                bytes_ids = [vocab.get(byte_token(b)) for b in s.encode("utf-8", "surrogatepass")]
                if None not in bytes_ids:
                    ids += bytes_ids  # type: ignore[arg-type]
                    continue
            if self.unk_token is not None:
                if unk is not None and not self.fuse_unk:
                    ids.append(unk)
                unk = self._unk()
        if unk is not None:
            ids.append(unk)
        return bpe_merge(ids, self.merges)

    def tokenize_spans(self, word: str) -> list[Token]:
        vocab = self.vocab
        if self.ignore_merges:
            whole = vocab.get(word)
            if whole is not None:
                return [(whole, 0, len(word))]
        ids: list[int] = []
        spans: list[Span] = []
        unk: tuple[int, int, int] | None = None  # pending unknown: id, start, end
        last = len(word) - 1
        for i, c in enumerate(word):
            s = c
            if i and self.prefix:
                s = self.prefix + s
            if i == last and self.suffix:
                s = s + self.suffix
            found = vocab.get(s)
            if found is not None:
                if unk is not None:
                    ids.append(unk[0])
                    spans.append(unk[1:])
                    unk = None
                ids.append(found)
                spans.append((i, i + 1))
                continue
            if self.byte_fallback:
                bytes_ids = [vocab.get(byte_token(b)) for b in s.encode("utf-8", "surrogatepass")]
                if None not in bytes_ids:
                    ids += bytes_ids  # type: ignore[arg-type]
                    spans += [(i, i + 1)] * len(bytes_ids)  # each byte: its character's span
                    continue
            if self.unk_token is not None:
                if unk is not None and not self.fuse_unk:
                    ids.append(unk[0])
                    spans.append(unk[1:])
                    unk = None
                unk = (self._unk(), i, i + 1) if unk is None else (unk[0], unk[1], i + 1)
        if unk is not None:
            ids.append(unk[0])
            spans.append(unk[1:])
        return bpe_merge_spans(ids, spans, self.merges)


class WordPiece(Model):
    """Greedy longest-match-first subwords; a word with an unknown part becomes the unk."""

    def __init__(
        self, vocab: dict[str, int], *, unk_token: str, continuing_subword_prefix: str,
        max_input_chars_per_word: int,
    ) -> None:
        self.vocab = vocab
        self.unk_token = unk_token
        self.prefix = continuing_subword_prefix
        self.max_chars = max_input_chars_per_word

    def _unk(self) -> list[int]:
        unk = self.vocab.get(self.unk_token)
        if unk is None:
            raise CorruptData(f"unk_token {self.unk_token!r} is not in the vocabulary")
        return [unk]

    def tokenize(self, word: str) -> list[int]:
        return [token for token, _s, _e in self.tokenize_spans(word)]

    def tokenize_spans(self, word: str) -> list[Token]:
        if len(word) > self.max_chars:
            return [(self._unk()[0], 0, len(word))]
        vocab, prefix = self.vocab, self.prefix
        out: list[Token] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                sub = word[start:end]
                found = vocab.get(prefix + sub if start else sub)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return [(self._unk()[0], 0, len(word))]
            out.append((found, start, end))
            start = end
        return out


class Unigram(Model):
    """Viterbi over piece scores (SentencePiece's unigram); unknown runs fuse into one unk."""

    def __init__(
        self, pieces: list[tuple[str, float]], *, unk_id: int | None, byte_fallback: bool
    ) -> None:
        self.pieces = pieces
        self.vocab = {}
        for i, (piece, _score) in enumerate(pieces):
            self.vocab[piece] = i
        self.scores = [score for _piece, score in pieces]
        self.unk_id = unk_id
        self.byte_fallback = byte_fallback
        self.min_score = min(self.scores) if self.scores else 0.0
        # The Viterbi itself (compiled or its Python twin, see core/pipeline/lattice.py).
        self._lattice = make_lattice([p for p, _s in pieces], self.scores,
                                     self.min_score - UNK_PENALTY)

    def _unk(self) -> int:
        if self.unk_id is None:
            raise CorruptData("the Unigram model met an unknown character but has no unk_id")
        return self.unk_id

    def _viterbi(self, text: str) -> list[tuple[int, int, int | None]]:
        """The best path as (start, end, id) spans; a run of unknown characters (or of the
        unk piece itself) is fused into one span with id None, as HF fuses them."""
        path = self._lattice.best_path(text)
        unk = self.unk_id
        out: list[tuple[int, int, int | None]] = []
        run_start = -1
        run_end = 0
        for k in range(0, len(path), 3):
            start, end, token_id = path[k], path[k + 1], path[k + 2]
            if token_id in (-1, unk):
                if run_start < 0:
                    run_start = start
                run_end = end
                continue
            if run_start >= 0:
                out.append((run_start, run_end, None))
                run_start = -1
            out.append((start, end, token_id))
        if run_start >= 0:
            out.append((run_start, run_end, None))
        return out

    def _unknown(self, piece: str) -> list[int]:
        """Ids of a fused unknown run: itself if it is a piece, else its bytes, else unk."""
        vocab = self.vocab
        found = vocab.get(piece)
        if found is not None:
            return [found]
        if self.byte_fallback:
            byte_ids = [vocab.get(byte_token(b)) for b in piece.encode("utf-8", "surrogatepass")]
            if None not in byte_ids:
                return byte_ids  # type: ignore[return-value]
        return [self._unk()]

    def tokenize(self, word: str) -> list[int]:
        ids: list[int] = []
        for start, end, token_id in self._viterbi(word):
            if token_id is None:
                ids += self._unknown(word[start:end])
            else:
                ids.append(token_id)
        return ids

    def tokenize_spans(self, word: str) -> list[Token]:
        out: list[Token] = []
        for start, end, token_id in self._viterbi(word):
            if token_id is None:  # HF: every byte token spans the whole piece
                out += [(t, start, end) for t in self._unknown(word[start:end])]
            else:
                out.append((token_id, start, end))
        return out


class WordLevel(Model):
    """Whole words only; anything else is the unk token."""

    def __init__(self, vocab: dict[str, int], *, unk_token: str) -> None:
        self.vocab, self.unk_token = vocab, unk_token

    def tokenize(self, word: str) -> list[int]:
        found = self.vocab.get(word)
        if found is None:
            found = self.vocab.get(self.unk_token)
            if found is None:
                raise CorruptData(f"unk_token {self.unk_token!r} is not in the vocabulary")
        return [found]

    def tokenize_spans(self, word: str) -> list[Token]:
        return [(self.tokenize(word)[0], 0, len(word))]


def _vocab(obj: dict[str, Any], path: str) -> dict[str, int]:
    vocab = field(obj, "vocab", dict, path)
    for token, token_id in vocab.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            raise CorruptData(f"{path}.vocab[{token!r:.40}] is {token_id!r}, not an id")
    return dict(vocab)


def _merges(obj: dict[str, Any], path: str) -> list[tuple[str, str]]:
    merges: list[tuple[str, str]] = []
    for i, item in enumerate(field(obj, "merges", list, path, default=[])):
        parts = item.split(" ") if isinstance(item, str) else item
        if not isinstance(parts, list) or len(parts) != 2 or not all(
            isinstance(p, str) for p in parts
        ):
            raise CorruptData(f"{path}.merges[{i}] is {item!r:.60}, not a pair")
        merges.append((parts[0], parts[1]))
    return merges


def from_json(obj: object, path: str = "model") -> Model:
    """Build a model from its ``tokenizer.json`` object; refuse what would change the ids."""
    if isinstance(obj, dict) and "type" not in obj:  # very old files omit the model type
        obj = {**obj, "type": "WordPiece" if "max_input_chars_per_word" in obj else "BPE"}
    kind = component_type(obj, path)
    assert isinstance(obj, dict)
    if kind == "BPE":
        dropout = obj.get("dropout")
        if dropout not in (None, 0, 0.0):
            unsupported(f"BPE dropout {dropout!r}", f"{path}.dropout",
                        "random merges give no fixed ids")
        return BPE(
            _vocab(obj, path),
            _merges(obj, path),
            unk_token=field(obj, "unk_token", str, path, default=None),
            continuing_subword_prefix=field(obj, "continuing_subword_prefix", str, path, None),
            end_of_word_suffix=field(obj, "end_of_word_suffix", str, path, default=None),
            fuse_unk=field(obj, "fuse_unk", bool, path, default=False),
            byte_fallback=field(obj, "byte_fallback", bool, path, default=False),
            ignore_merges=field(obj, "ignore_merges", bool, path, default=False),
            source=path,
        )
    if kind == "WordPiece":
        return WordPiece(
            _vocab(obj, path),
            unk_token=field(obj, "unk_token", str, path, default="[UNK]"),
            continuing_subword_prefix=field(obj, "continuing_subword_prefix", str, path, "##"),
            max_input_chars_per_word=field(obj, "max_input_chars_per_word", int, path, 100),
        )
    if kind == "Unigram":
        raw = field(obj, "vocab", list, path)
        pieces: list[tuple[str, float]] = []
        for i, item in enumerate(raw):
            if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
                    or not isinstance(item[1], int | float)):
                raise CorruptData(f"{path}.vocab[{i}] is {item!r:.60}, not [piece, score]")
            pieces.append((item[0], float(item[1])))
        return Unigram(
            pieces,
            unk_id=field(obj, "unk_id", int, path, default=None),
            byte_fallback=field(obj, "byte_fallback", bool, path, default=False),
        )
    if kind == "WordLevel":
        return WordLevel(_vocab(obj, path), unk_token=field(obj, "unk_token", str, path, "<unk>"))
    unsupported(f"model {kind!r}", path, "known: BPE, Unigram, WordLevel, WordPiece")


def vocab_size(model: Model, added: Mapping[str, int]) -> int:
    """``max id + 1`` over the model's vocabulary and the added tokens."""
    ids = list(model.vocab.values()) + list(added.values())
    return max(ids) + 1 if ids else 0
