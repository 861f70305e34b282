"""Type stub of the compiled Unigram lattices (``_unigram_lattice.pyx``)."""

from collections.abc import Mapping, Sequence

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

class CompiledSubstrings:
    name: str
    def __init__(
        self,
        *,
        words: Sequence[str],
        counts: Sequence[int],
        chars: Mapping[str, tuple[bool, bool, int]],
        max_length: int,
        whole_word_seeds: bool,
    ) -> None: ...
    def candidates(self) -> list[tuple[int, str]]: ...
    def lattice_edges(
        self, pieces: Sequence[str]
    ) -> tuple[Sequence[int], Sequence[int], Sequence[int], Sequence[int], Sequence[int],
               Sequence[int]]: ...
