"""The small corpus the Unigram tests train on (a fixture; never ../shared)."""

from __future__ import annotations

import collections
import functools
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "corpora"
WS = "\u2581"


@functools.cache
def lines() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(training lines, held-out lines) of corpus.en + german.txt: every 10th line held out."""
    text = (FIXTURES / "corpus.en").read_text(encoding="utf-8")
    text += (FIXTURES / "german.txt").read_text(encoding="utf-8")
    all_lines = [line for line in text.splitlines() if line.strip()]
    held = tuple(line for i, line in enumerate(all_lines) if i % 10 == 9)
    train = tuple(line for i, line in enumerate(all_lines) if i % 10 != 9)
    return train, held


def metaspace_counts(texts: tuple[str, ...] | list[str]) -> dict[str, int]:
    """Pretoken counts as HF's Metaspace (prepend_scheme always, split) makes them."""
    counts: collections.Counter[str] = collections.Counter()
    for line in texts:
        text = line.replace(" ", WS)
        if not text.startswith(WS):
            text = WS + text
        counts.update(WS + part for part in text.split(WS)[1:])
    return dict(counts)
