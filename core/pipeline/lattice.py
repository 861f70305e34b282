"""The Unigram lattice: the best segmentation of a word by summed piece scores (HF's Viterbi,
or SentencePiece's with float32 path scores).

Two implementations with one interface and identical results: the compiled
``tokend.core.engine._compiled.UnigramLattice`` (a trie over code points, the loop in C) and
:class:`PyUnigramLattice` here (the reference and the fallback). :func:`make_lattice` picks the
one of the default engine (``tokend.core.engine``), so the ``each_engine`` tests run both.
"""

from __future__ import annotations

import struct
from typing import Protocol

from tokend.core import engine

_FLOAT = struct.Struct("f")
SP_SCORE_RESET = 100000.0  # SentencePiece (0.2.3's EncodeOptimized) rebases path scores past it


def f32(x: float) -> float:
    """Round to float32 (SentencePiece's score and path-score type).

    >>> f32(0.1)
    0.10000000149011612
    """
    return float(_FLOAT.unpack(_FLOAT.pack(x))[0])


class Lattice(Protocol):
    """``best_path(word)``: a flat ``[start, end, id, ...]`` covering the word (id -1: an
    unknown character, scored ``unk_score``)."""

    def best_path(self, word: str) -> list[int]: ...


class PyUnigramLattice:
    """The pure-Python twin of the compiled ``UnigramLattice``.

    Both references keep the first candidate met on a tie (starts in order, shortest piece
    first) and differ in arithmetic: HF sums in f64; SentencePiece (``float32=True``) sums
    floats in float and rebases path scores past +-1e5 (see the compiled class).

    >>> PyUnigramLattice(["a", "b", "ab"], [-1.0, -1.0, -1.5], -11.0).best_path("abc")
    [0, 2, 2, 2, 3, -1]
    """

    def __init__(self, pieces: list[str], scores: list[float], unk_score: float,
                 float32: bool = False) -> None:
        self.vocab: dict[str, int] = {}
        for i, piece in enumerate(pieces):
            self.vocab[piece] = i
        self.scores = scores
        self.unk_score = unk_score
        self.float32 = float32
        # subtle: a piece of length L can start only where its first character is; pieces
        # indexed by first character skip the impossible lengths (the trie's walk, as dicts).
        self._lengths: dict[str, list[int]] = {}
        for piece in self.vocab:
            if piece:
                self._lengths.setdefault(piece[0], []).append(len(piece))
        for first, lengths in self._lengths.items():
            self._lengths[first] = sorted(set(lengths))  # each length once, shortest first

    def best_path(self, word: str) -> list[int]:
        n = len(word)
        vocab, scores, unk_score = self.vocab, self.scores, self.unk_score
        rounded = f32 if self.float32 else float  # the sum of two scores, in their type
        best = [0.0] * (n + 1)
        start_of: list[int] = [-1] * (n + 1)
        node_id = [0] * (n + 1)
        frontier = 0  # the furthest end met so far
        for i in range(n):
            here = best[i]
            if self.float32 and not -SP_SCORE_RESET <= here <= SP_SCORE_RESET:
                # subtle: SentencePiece moves every path score from here to the frontier by
                # -here (in float), so that sums stay small; the rounding follows it
                for j in range(i, frontier + 1):
                    if j == i or start_of[j] >= 0:
                        best[j] = f32(best[j] - here)
                here = 0.0
            single = False
            for length in self._lengths.get(word[i], ()):
                end = i + length
                if end > n:
                    break
                token_id = vocab.get(word[i:end])
                if token_id is None:
                    continue
                frontier = max(frontier, end)
                score = rounded(scores[token_id] + here)
                if start_of[end] < 0 or score > best[end]:
                    best[end], start_of[end], node_id[end] = score, i, token_id
                if length == 1:
                    single = True
            if not single:
                frontier = max(frontier, i + 1)
                score = rounded(unk_score + here)
                if start_of[i + 1] < 0 or score > best[i + 1]:
                    best[i + 1], start_of[i + 1], node_id[i + 1] = score, i, -1
        out: list[int] = []
        end = n
        while end > 0:
            out += (node_id[end], end, start_of[end])
            end = start_of[end]
        out.reverse()
        return out


def make_lattice(pieces: list[str], scores: list[float], unk_score: float, *,
                 float32: bool = False) -> Lattice:
    """The lattice of the default engine: compiled when it is built and chosen."""
    compiled = engine._compiled  # None when the extension was not built
    if engine.default_engine() == "compiled" and compiled is not None:
        lattice: Lattice = compiled.UnigramLattice(pieces, scores, unk_score, float32)
        return lattice
    return PyUnigramLattice(pieces, scores, unk_score, float32)
