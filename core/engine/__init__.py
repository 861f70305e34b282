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
    crosses or looks past one (proof in ``tokend.core.pretokenize``).
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

import os
from types import ModuleType
from typing import Literal

EngineName = Literal["compiled", "python"]

_compiled: ModuleType | None
try:
    from tokend.core.engine import _compiled
except ImportError:  # built without a compiler: the pure-Python twin serves
    _compiled = None


def _choose() -> EngineName:
    if os.environ.get("TOKEND_ENGINE", "").strip().lower() == "python" or _compiled is None:
        return "python"
    return "compiled"


ENGINE: EngineName = _choose()
COMPILED_AVAILABLE: bool = _compiled is not None
