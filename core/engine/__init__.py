"""The encoding engine: ordinary text (no special tokens) in, token ids out.

``Encoding`` (tiktoken's API) sits on top of one engine per encoding; nothing else touches an
engine's caches. Two implementations give identical ids behind one interface:

- ``compiled`` (``_compiled.pyx``, Cython): the whole loop in C -- cut at safe points, block
  cache, pretokenizer scanners for the named patterns, BPE over an integer pair table;
- ``python`` (``python.py``): the pure-Python reference and fallback.

``ENGINE`` names the one in use: ``compiled`` when the extension was built, unless the
environment says ``TOKEND_ENGINE=python``.

Glossary
--------
segment
    Text between two special tokens (or the whole text); engines only ever see segments.
safe point
    A single space with non-whitespace on both sides; no pretoken of the built-in patterns
    crosses or looks past one (proof in ``tokend.core.engine.pretokenize``).
chunk
    The text from one safe point to the next (the Python engine's cache key).
block
    A run of chunks, cut at safe points by content (the compiled engine's cache key), so a
    long shared prompt is looked up in a few hundred steps instead of cut word by word.
pretoken
    One match of the pattern; BPE never merges across two.
piece
    A pretoken that is not itself a token: BPE runs on its bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Protocol

from tokend.core.engine.cache import CacheInfo
from tokend.core.engine.python import PythonEngine
from tokend.core.kernels import KERNEL_NAMES, KernelName, pick

EngineName = KernelName
ENGINE_NAMES: tuple[EngineName, ...] = KERNEL_NAMES


class Engine(Protocol):
    """What ``Encoding`` asks of an engine; both implementations give identical results.

    An engine is built from one encoding's tables (``ranks``: token bytes -> merge priority,
    ``ids``: token bytes -> output id, ``decoder``: id -> bytes, special tokens included) and
    its pattern; it only ever sees ordinary text (special tokens are split off by
    ``Encoding``). Text with lone surrogates raises UnicodeEncodeError (``Encoding`` then
    applies tiktoken's fix); engines are safe to call from several threads.
    """

    @property
    def name(self) -> EngineName:
        """``"compiled"`` or ``"python"``."""
        ...

    @property
    def path(self) -> str:
        """Which pretokenizer runs, for people: ``compiled scanner``, ``compiled general
        pattern``, ``regex fallback: <reason>``, ``pure-Python engine (...)``."""
        ...

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``."""
        ...

    def count(self, text: str) -> int:
        """``len(encode(text))``, without building the list."""
        ...

    def encode_buffer(self, text: str) -> bytes:
        """The ids of ``text`` as native uint32s, without a list."""
        ...

    def encode_varints(self, text: str) -> tuple[bytes, int]:
        """The ids of ``text`` as protobuf varints back to back, and their count."""
        ...

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of ``tokens``; an unknown id raises ``UnknownTokenId``."""
        ...

    def cache_info(self) -> CacheInfo:
        """The engine's cache counters (for metrics and tests)."""
        ...


_compiled: ModuleType | None
try:
    from tokend.core.engine import _compiled
except ImportError:  # built without a compiler: the pure-Python twin serves
    _compiled = None


ENGINE: EngineName = pick(None, _compiled, "engine")
COMPILED_AVAILABLE: bool = _compiled is not None


def default_engine() -> EngineName:
    """The engine an ``Encoding`` gets when it names none."""
    return _default


def set_default_engine(name: EngineName) -> None:
    """Choose the default engine for encodings built from now on (tests and benchmarks)."""
    global _default  # noqa: PLW0603 (one process-wide default, like ENGINE)
    _default = pick(name, _compiled, "engine")


def make_engine(
    name: EngineName | None,
    *,
    pat_str: str,
    ranks: Mapping[bytes, int],
    ids: Mapping[bytes, int],
    decoder: Mapping[int, bytes],
    cache_entries: int,
) -> Engine:
    """A new engine (``name`` None: the default) over one encoding's tables."""
    if (_default if name is None else pick(name, _compiled, "engine")) == "compiled":
        assert _compiled is not None  # subtle: pick refuses "compiled" when it is not built
        compiled: Engine = _compiled.CompiledEngine(
            pat_str=pat_str, ranks=ranks, ids=ids, decoder=decoder, cache_entries=cache_entries
        )
        return compiled
    return PythonEngine(
        pat_str=pat_str, ranks=ranks, ids=ids, decoder=decoder, cache_entries=cache_entries
    )


_default: EngineName = ENGINE
