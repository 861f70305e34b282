"""Test helpers: a built-in's tables with a cache of its own, and the shakespeare fixture."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

from tokend.core import Encoding, get_encoding
from tokend.core.engine import EngineName

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fresh(
    name: str, cache_entries: int = 1 << 16, engine: EngineName | None = None
) -> Encoding:
    """A new Encoding (own, empty cache) with the built-in's tables (``engine`` None: the
    default, which the ``each_engine`` fixture sets)."""
    base = get_encoding(name)
    return Encoding(
        f"{name}-copy",
        pat_str=base.pat_str,
        mergeable_ranks=base.mergeable_ranks,
        special_tokens=base.special_tokens,
        cache_entries=cache_entries,
        engine=engine,
    )


@functools.cache
def shakespeare_text() -> str:
    """The gzipped shakespeare corpus shipped in tests/fixtures, decoded."""
    return gzip.decompress((FIXTURES / "corpora" / "shakespeare.txt.gz").read_bytes()).decode()
