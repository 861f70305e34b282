"""Type stub of the compiled Unigram lattices (``_unigram_lattice.pyx``)."""

from collections.abc import Sequence

class CompiledLattices:
    name: str
    def __init__(
        self,
        *,
        lengths: Sequence[int],
        counts: Sequence[float],
        offsets: Sequence[int],
        starts: Sequence[int],
        ends: Sequence[int],
        pieces: Sequence[int],
    ) -> None: ...
    def num_edges(self) -> int: ...
    def drop_dead(self, scores: Sequence[float]) -> None: ...
    def expectations(
        self, scores: Sequence[float], min_score: float
    ) -> tuple[list[float], float]: ...
    def viterbi_counts(self, scores: Sequence[float], min_score: float) -> list[float]: ...
    def second_best(
        self,
        scores: Sequence[float],
        min_score: float,
        pieces: Sequence[int],
        words: Sequence[int],
        starts: Sequence[int],
    ) -> list[tuple[int, list[int]]]: ...
