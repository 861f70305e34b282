"""Type stub of the compiled engine (``_compiled.pyx``)."""

from collections.abc import Mapping, Sequence
from typing import Literal

from tokend.core.engine.cache import CacheInfo
from tokend.core.engine.pattern_compiler import CompiledPatterns

class CompiledEngine:
    name: Literal["compiled"]
    path: str
    def __init__(
        self,
        *,
        pat_str: str,
        ranks: Mapping[bytes, int],
        ids: Mapping[bytes, int],
        decoder: Mapping[int, bytes],
        cache_entries: int,
        stages: CompiledPatterns | None = None,
    ) -> None: ...
    def encode(self, text: str) -> list[int]: ...
    def count(self, text: str) -> int: ...
    def decode_bytes(self, tokens: Sequence[int]) -> bytes: ...
    def cache_info(self) -> CacheInfo: ...

# The pretokenizer (_pretok.pxi); ``kind`` is tokend.core.engine.pretokenize.SCANNER_KINDS[pattern].
CLASS_BITS: dict[str, int]

def pretokenize(kind: int, text: str) -> list[str]: ...
def count_pretokens(kind: int, text: str) -> int: ...
def class_bits(cp: int) -> int: ...
def contraction_letter(cp: int) -> str: ...

class PretokenCounter:
    pretokens: int
    def __init__(self, kind: int) -> None: ...
    def __len__(self) -> int: ...
    def add(self, text: str) -> int: ...
    def to_dict(self) -> dict[bytes, int]: ...

# The general scanner (_general.pxi); built from pattern_compiler.CompiledPatterns.as_tuple().
class GeneralScanner:
    chunkable: bool
    def __init__(
        self,
        programs: list[tuple[list[tuple[int, int, int, int, int, int]], int]],
        split_mode: bool,
        stage1: bytes,
        stage2: bytes,
        chunkable: bool,
    ) -> None: ...
    def pieces(self, text: str) -> list[str]: ...
    def match_end(self, text: str, pos: int = 0, stage: int = 0) -> int: ...

# The Unigram lattice (_unigram.pxi); twin: tokend.core.pipeline.lattice.PyUnigramLattice.
class UnigramLattice:
    def __init__(
        self, pieces: list[str], scores: list[float], unk_score: float, float32: bool = False
    ) -> None: ...
    def best_path(self, word: str) -> list[int]: ...
