"""The texts lint encodes: the bundled corpora (the parallel corpus's sentences, every language).

Glitch candidates are tokens these texts never use; round trips are checked on them.
"""

from __future__ import annotations

import functools

from tokend.core.report.languages import load_parallel_corpus


@functools.lru_cache(maxsize=1)
def bundled_texts() -> tuple[str, ...]:
    """Every sentence of every bundled corpus (today: ``core/data/parallel.json``)."""
    corpus = load_parallel_corpus()
    return tuple(s for lang in corpus.languages for s in lang.sentences)
