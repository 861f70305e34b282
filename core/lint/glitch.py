"""Glitch candidates: a tokenizer-only guess at under-trained tokens, ranked.

A glitch token (``SolidGoldMagikarp``) is frequent in the tokenizer's training data and rare in
the model's, so its embedding barely trains. Without the model's weights we can only point at
tokens shaped like the known ones: long, merged early (so frequent in the tokenizer's data),
joined words or identifiers (``guiActiveUn``, ``embedreportprint``), and never used when
encoding the bundled multilingual corpora. The score orders them; it proves nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

import regex

from tokend.core.lint.model import Finding, LintReport
from tokend.core.lint.vocab import Vocabulary
from tokend.core.tokenizer import Tokenizer

_JOINED = regex.compile(r"\p{Ll}\p{Lu}|\p{L}\p{Nd}")
MIN_CHARS = 6  # shorter tokens are common words and pieces
LONG_CHARS = 16  # a token this long is a candidate even when shaped like a word
MAX_CHARS = 24  # longer ones score no higher: length alone is not strangeness
EARLY_SHARE = 1.0  # how much of the merge order counts as early enough (1.0: all of it)


def merge_order(tokenizer: Tokenizer, vocab: Vocabulary) -> dict[int, int]:
    """Ordinary id -> position in merge order (0 first): BPE merge ranks where the tokenizer
    has a merge list, a Unigram's pieces by falling score, else id order (tiktoken's ranks)."""
    model = getattr(tokenizer, "model", None)
    merges = getattr(model, "merges", None)
    scores = getattr(model, "scores", None)
    ids = [token_id for token_id, _ in vocab.ordinary]
    if isinstance(merges, dict) and merges:
        made = {ab: rank for rank, ab in merges.values()}
        ids.sort(key=lambda i: (made.get(i, -1), i))  # bytes (never merged) first
    elif isinstance(scores, list) and len(scores) >= len(vocab.tokens):
        ids.sort(key=lambda i: (-scores[i], i))
    return {token_id: pos for pos, token_id in enumerate(ids)}


def shape_score(text: str) -> float:
    """1 for identifier-like joins (lower->Upper inside a word, letters glued to digits), else 0.

    >>> shape_score(" SolidGoldMagikarp"), shape_score(" performance")
    (1.0, 0.0)
    """
    return 1.0 if _JOINED.search(text) else 0.0


def used_ids(tokenizer: Tokenizer, texts: Iterable[str]) -> set[int]:
    """Every id the tokenizer produces on ``texts``."""
    used: set[int] = set()
    for text in texts:
        used.update(tokenizer.encode_ordinary(text))
    return used


def check_glitch(
    tokenizer: Tokenizer,
    vocab: Vocabulary,
    report: LintReport,
    *,
    texts: Iterable[str],
    skip: set[int],
    limit: int,
) -> None:
    """Rank long, early, unused tokens; list the best ``limit`` (all are counted)."""
    order = merge_order(tokenizer, vocab)
    n = max(len(order), 1)
    used = used_ids(tokenizer, texts)
    scored: list[tuple[float, int, str]] = []
    for token_id, text in vocab.texts.items():
        word = text.strip()
        if len(word) < MIN_CHARS or token_id in skip or token_id in used:
            continue
        early = 1.0 - order.get(token_id, n) / n
        if len(set(word)) <= 2 or early < 1.0 - EARLY_SHARE:
            continue  # short, or a run of one or two characters (rules, padding): not odd
        shape = shape_score(text)
        if not shape and len(word) < LONG_CHARS:
            continue  # an ordinary word
        score = min(len(word), MAX_CHARS) * (0.5 + early) * (1.0 + 2.0 * shape)
        scored.append((score, token_id, text))
    scored.sort(key=lambda row: (-row[0], row[1]))
    for rank, (score, token_id, text) in enumerate(scored, 1):
        data = text.encode("utf-8")
        report.add(
            Finding("glitch-candidate", token_id, data,
                    f"rank {rank}: {len(data)} bytes, merge {order.get(token_id)}, "
                    "never used on the bundled corpora",
                    {"score": round(score, 2), "rank": rank}),
            listed=rank <= limit,
        )
    report.checks["glitch-candidate"] = "ran"
