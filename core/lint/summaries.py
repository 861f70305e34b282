"""Descriptive summaries of a vocabulary: trailing-space twins, digit grouping, language cost.

Not findings (nothing is wrong with any one token): figures a person compares tokenizers by.
"""

from __future__ import annotations

from typing import Any

from tokend.core.lint.vocab import Vocabulary
from tokend.core.report.languages import language_costs
from tokend.core.tokenizer import Tokenizer

DIGIT_PROBE = "1234567"


def space_twins(vocab: Vocabulary) -> dict[str, Any]:
    """How many word tokens also exist with a leading space (``'the'`` and ``' the'``).

    Twins cost vocabulary and give a model two ids for one word; ``share`` is twins over the
    tokens that are words (letters only) without a leading space.
    """
    texts = set(vocab.texts.values())
    words = [t for t in texts if t.isalpha()]
    twins = sorted(w for w in words if " " + w in texts)
    return {
        "twins": len(twins),
        "words": len(words),
        "share": round(len(twins) / len(words), 4) if words else 0.0,
        "examples": twins[:5],
    }


def digit_grouping(tokenizer: Tokenizer, vocab: Vocabulary) -> dict[str, Any]:
    """How numbers are cut: ``per-digit``, ``up-to-three`` (every 1-3 digit string is a token,
    no longer ones) or ``irregular``; with the digit tokens counted by length and a probe."""
    by_length: dict[int, int] = {}
    for _token_id, data in vocab.ordinary:
        if data.isdigit():  # ASCII digits only, no space
            by_length[len(data)] = by_length.get(len(data), 0) + 1
    lengths = sorted(by_length)
    if lengths == [1]:
        grouping = "per-digit"
    elif lengths == [1, 2, 3] and [by_length[n] for n in lengths] == [10, 100, 1000]:
        grouping = "up-to-three"
    else:
        grouping = "irregular"
    probe = tokenizer.encode_ordinary(DIGIT_PROBE)
    pieces = [b.decode("utf-8", "replace") for b in tokenizer.decode_tokens_bytes(probe)]
    return {
        "grouping": grouping,
        "tokens_by_length": {str(n): by_length[n] for n in lengths},
        "probe": DIGIT_PROBE,
        "probe_pieces": pieces,
    }


def language_summary(name: str, tokenizer: Tokenizer) -> list[dict[str, Any]]:
    """Tokens per language of the bundled parallel corpus, relative to English."""
    return [
        {"language": c.language, "name": c.name, "tokens": c.tokens,
         "relative": round(c.relative, 4)}
        for c in language_costs([(name, tokenizer)])
    ]
