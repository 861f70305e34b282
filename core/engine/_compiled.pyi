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
