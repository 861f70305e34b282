"""The Unigram trainer's hot loops, pure Python: forward-backward, Viterbi, second-best paths.

Every distinct pretoken ("word") keeps its lattice over the *seed* pieces for the whole run:
edges ``(start, end, piece)`` in character positions, sorted by start then end. Pieces only
ever leave the vocabulary, so a later vocabulary's lattice is a subset: a removed piece has
score ``-inf`` and its edges are dropped by :meth:`PyLattices.drop_dead`. Where no live
one-character piece starts, the lattice has an unknown edge of score ``min_score - 10``
(SentencePiece's ``kUnkPenalty``) that counts for no piece.

``_unigram_lattice.pyx`` is the compiled twin with the same interface and the same results
(up to floating-point summation order); ``tokend.core.training.unigram_kernel`` picks one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

UNK_PENALTY = 10.0  # SentencePiece's kUnkPenalty
NO_PIECE = -1  # an unknown edge
NEG_INF = float("-inf")

# second_best() kinds, as SentencePiece's PruneSentencePieces decides them.
KEEP = 0  # no other segmentation exists (or only through unknown characters): always kept
REMOVABLE = 1  # the piece's own best segmentation is not itself: removed outright
ALTERNATIVE = 2  # the piece is its own best segmentation; the list is the next best


def _logaddexp(x: float, y: float) -> float:
    if x == NEG_INF:
        return y
    if x > y:
        return x + math.log1p(math.exp(y - x))
    return y + math.log1p(math.exp(x - y))


class PyLattices:
    """All words' lattices; see the module docstring. Built once from the seed pieces."""

    name = "python"

    def __init__(
        self,
        *,
        lengths: Sequence[int],
        counts: Sequence[float],
        offsets: Sequence[int],
        starts: Sequence[int],
        ends: Sequence[int],
        pieces: Sequence[int],
    ) -> None:
        """Word ``w`` has ``lengths[w]`` characters, weight ``counts[w]`` and the edges
        ``offsets[w]:offsets[w + 1]`` of ``starts``/``ends``/``pieces``."""
        self.lengths = list(lengths)
        self.counts = list(counts)
        self.edges: list[list[tuple[int, int, int]]] = [
            list(zip(starts[lo:hi], ends[lo:hi], pieces[lo:hi], strict=True))
            for lo, hi in pairwise(offsets)
        ]

    def num_edges(self) -> int:
        """Edges kept (for progress and tests)."""
        return sum(len(edges) for edges in self.edges)

    def drop_dead(self, scores: Sequence[float]) -> None:
        """Forget the edges of pieces whose score is -inf (removed from the vocabulary)."""
        self.edges = [[e for e in edges if scores[e[2]] != NEG_INF] for edges in self.edges]

    def _with_unknowns(
        self, edges: list[tuple[int, int, int]], lo: int, hi: int, skip: int = -1
    ) -> list[tuple[int, int, int]]:
        """The edges inside ``[lo, hi)`` (but edge number ``skip``) plus unknown edges, by start."""
        single = [False] * (hi - lo)
        inside: list[tuple[int, int, int]] = []
        for k, (start, end, piece) in enumerate(edges):
            if start >= lo and end <= hi and k != skip:
                inside.append((start, end, piece))
                if end - start == 1:
                    single[start - lo] = True
        for pos, has in enumerate(single):
            if not has:
                inside.append((lo + pos, lo + pos + 1, NO_PIECE))
        inside.sort(key=lambda e: (e[0], e[1]))
        return inside

    def expectations(self, scores: Sequence[float], min_score: float) -> tuple[list[float], float]:
        """E-step: expected count of each piece over all words, and the objective
        (negative log-likelihood per word occurrence)."""
        expected = [0.0] * len(scores)
        unk_score = min_score - UNK_PENALTY
        total = sum(self.counts)
        objective = 0.0
        for w, word_edges in enumerate(self.edges):
            n, count = self.lengths[w], self.counts[w]
            edges = self._with_unknowns(word_edges, 0, n)
            alpha = [NEG_INF] * (n + 1)
            beta = [NEG_INF] * (n + 1)
            alpha[0] = beta[n] = 0.0
            for start, end, piece in edges:
                score = scores[piece] if piece >= 0 else unk_score
                alpha[end] = _logaddexp(alpha[end], alpha[start] + score)
            for start, end, piece in reversed(edges):
                score = scores[piece] if piece >= 0 else unk_score
                beta[start] = _logaddexp(beta[start], beta[end] + score)
            z = alpha[n]
            for start, end, piece in edges:
                if piece >= 0:
                    expected[piece] += count * math.exp(
                        alpha[start] + scores[piece] + beta[end] - z
                    )
            objective -= count * z / total
        return expected, objective

    def _best_path(
        self, edges: list[tuple[int, int, int]], lo: int, hi: int, scores: Sequence[float],
        unk_score: float,
    ) -> list[int] | None:
        """The pieces of the best path from ``lo`` to ``hi`` (NO_PIECE for unknowns), or None."""
        best = [NEG_INF] * (hi - lo + 1)
        back: list[tuple[int, int] | None] = [None] * (hi - lo + 1)
        best[0] = 0.0
        for start, end, piece in edges:
            if best[start - lo] == NEG_INF:
                continue
            score = best[start - lo] + (scores[piece] if piece >= 0 else unk_score)
            if back[end - lo] is None or score > best[end - lo]:
                best[end - lo] = score
                back[end - lo] = (start, piece)
        if back[hi - lo] is None:
            return None
        path: list[int] = []
        pos = hi
        while pos > lo:
            step = back[pos - lo]
            assert step is not None  # subtle: every position on a found path has a back link
            pos, piece = step
            path.append(piece)
        path.reverse()
        return path

    def viterbi_counts(self, scores: Sequence[float], min_score: float) -> list[float]:
        """How often each piece is on the best segmentation of the words (weighted)."""
        freq = [0.0] * len(scores)
        unk_score = min_score - UNK_PENALTY
        for w, word_edges in enumerate(self.edges):
            n = self.lengths[w]
            path = self._best_path(self._with_unknowns(word_edges, 0, n), 0, n, scores, unk_score)
            assert path is not None  # subtle: unknown edges make every word segmentable
            for piece in path:
                if piece >= 0:
                    freq[piece] += self.counts[w]
        return freq

    def second_best(
        self,
        scores: Sequence[float],
        min_score: float,
        pieces: Sequence[int],
        words: Sequence[int],
        starts: Sequence[int],
    ) -> list[tuple[int, list[int]]]:
        """For each piece (found in ``words[i]`` at ``starts[i]``): KEEP, REMOVABLE, or
        ALTERNATIVE with the pieces of its best segmentation that does not use itself."""
        unk_score = min_score - UNK_PENALTY
        out: list[tuple[int, list[int]]] = []
        for piece, w, lo in zip(pieces, words, starts, strict=True):
            word_edges = self.edges[w]
            whole = -1
            for k, (start, end, edge_piece) in enumerate(word_edges):
                if start == lo and edge_piece == piece:
                    whole, hi = k, end
                    break
            if whole < 0:
                raise ValueError(f"piece {piece} is not in word {w} at {lo}")
            if hi - lo == 1:
                out.append((KEEP, []))  # a character: nothing else can spell it
                continue
            best = self._best_path(
                self._with_unknowns(word_edges, lo, hi), lo, hi, scores, unk_score
            )
            if best is not None and len(best) >= 2:
                out.append((REMOVABLE, []))
                continue
            alt = self._best_path(
                self._with_unknowns(word_edges, lo, hi, skip=whole), lo, hi, scores, unk_score
            )
            if alt is None or NO_PIECE in alt:
                out.append((KEEP, []))
            else:
                out.append((ALTERNATIVE, alt))
        return out

