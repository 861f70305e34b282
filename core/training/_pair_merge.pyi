"""Type stub of the compiled pair merger (``_pair_merge.pyx``)."""

from collections.abc import Callable

class CompiledPairMerger:
    name: str
    def __init__(
        self,
        words: list[list[int]],
        freqs: list[int],
        lengths: list[int],
        *,
        score: str = "count",
        check: Callable[[], None] = ...,
    ) -> None: ...
    def pop_best(self) -> tuple[int, int] | None: ...
    def merge(self, a: int, b: int, new: int) -> None: ...
