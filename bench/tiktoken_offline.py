"""tiktoken built offline from the rank files tokend ships, for the bench scripts.

It parses ``core/data`` itself (no ``tokend.core``), so the baseline server stays a plain
tiktoken peer. Scripts import it as a sibling: ``from tiktoken_offline import load_tiktoken``.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import tiktoken

DATA_DIR = Path(__file__).resolve().parent.parent / "core" / "data"


def load_tiktoken(name: str) -> tiktoken.Encoding:
    """A tiktoken Encoding from the shipped ``<name>.json`` + ``.tiktoken.gz`` (no network)."""
    meta = json.loads((DATA_DIR / f"{name}.json").read_text(encoding="utf-8"))
    raw = gzip.decompress((DATA_DIR / f"{meta['ranks_file']}.gz").read_bytes())
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in raw.splitlines() if line)
    }
    return tiktoken.Encoding(
        name,
        pat_str=meta["pat_str"],
        mergeable_ranks=ranks,
        special_tokens=meta["special_tokens"],
        explicit_n_vocab=meta.get("explicit_n_vocab"),
    )
