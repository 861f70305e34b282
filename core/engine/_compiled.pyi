"""Type stub of the compiled engine (``_compiled.pyx``)."""

from collections.abc import Mapping, Sequence
from typing import Literal

from tokend.core.cache import CacheInfo

class CompiledEngine:
    name: Literal["compiled"]
    def __init__(
        self,
        *,
        pat_str: str,
        ranks: Mapping[bytes, int],
        ids: Mapping[bytes, int],
        decoder: Mapping[int, bytes],
        cache_entries: int,
    ) -> None: ...
    def encode(self, text: str) -> list[int]: ...
    def count(self, text: str) -> int: ...
    def decode_bytes(self, tokens: Sequence[int]) -> bytes: ...
    def cache_info(self) -> CacheInfo: ...

# The pretokenizer (_pretok.pxi); ``kind`` is tokend.core.pretokenize.SCANNER_KINDS[pattern].
CLASS_BITS: dict[str, int]

def pretokenize(kind: int, text: str) -> list[str]: ...
def count_pretokens(kind: int, text: str) -> int: ...
def class_bits(cp: int) -> int: ...
def contraction_letter(cp: int) -> str: ...
