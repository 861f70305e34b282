"""``diff_tokenizers``: what changed from tokenizer A to tokenizer B (two versions, usually).

Tokens added and removed (by bytes), ids whose bytes changed (an error: every embedding table
indexed by those ids now means something else), tokens that kept their bytes but moved id,
merges reordered, special tokens changed, the per-language token-count ratio B/A over the
bundled parallel corpus and the texts whose counts changed most.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

from tokend.core.lint.corpora import bundled_texts
from tokend.core.lint.glitch import merge_order
from tokend.core.lint.model import token_dict
from tokend.core.lint.vocab import Vocabulary, vocabulary
from tokend.core.report.languages import load_parallel_corpus
from tokend.core.report.metrics import encode_text
from tokend.core.tokenizer import Tokenizer

DIFF_FORMAT = "tokend-diff-1"
LISTED = 50  # tokens listed per change (all are counted)


def longest_increasing(values: Sequence[int]) -> int:
    """Length of the longest strictly increasing subsequence (patience sorting).

    >>> longest_increasing([0, 2, 1, 3])
    3
    """
    tails: list[int] = []
    for v in values:
        at = bisect.bisect_left(tails, v)
        if at == len(tails):
            tails.append(v)
        else:
            tails[at] = v
    return len(tails)


def _by_bytes(vocab: Vocabulary) -> dict[bytes, int]:
    return {data: token_id for token_id, data in vocab.ordinary}


def _reordered(a: Tokenizer, va: Vocabulary, b: Tokenizer, vb: Vocabulary) -> int:
    """Merges present in both whose relative order changed: the common merged tokens minus the
    longest run of them that B keeps in A's order."""
    order_a, order_b = merge_order(a, va), merge_order(b, vb)
    pos_b = {vb.tokens[i]: p for i, p in order_b.items() if vb.tokens[i] is not None}
    seq = [
        pos_b[data]
        for i, _p in sorted(order_a.items(), key=lambda item: item[1])
        if (data := va.tokens[i]) is not None and len(data) > 1 and data in pos_b
    ]
    return len(seq) - longest_increasing(seq)


def _token_rows(items: list[tuple[int, bytes]]) -> list[dict[str, Any]]:
    return [{"id": i, "token": token_dict(data)} for i, data in items[:LISTED]]


def _languages(a: Tokenizer, b: Tokenizer) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for lang in load_parallel_corpus().languages:
        count_a = sum(len(encode_text(a, s)) for s in lang.sentences)
        count_b = sum(len(encode_text(b, s)) for s in lang.sentences)
        rows.append({"language": lang.code, "name": lang.name, "a": count_a, "b": count_b,
                     "ratio": round(count_b / count_a, 4) if count_a else 0.0})
    return rows


def _texts(a: Tokenizer, b: Tokenizer, top: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for text in bundled_texts():
        count_a, count_b = len(encode_text(a, text)), len(encode_text(b, text))
        if count_a != count_b:
            rows.append({"text": text[:120], "a": count_a, "b": count_b,
                         "ratio": round(count_b / count_a, 4) if count_a else 0.0})
    rows.sort(key=lambda r: (-abs(r["b"] - r["a"]) / max(r["a"], 1), r["text"]))
    return rows[:top]


def diff_tokenizers(
    a: Tokenizer, b: Tokenizer, *, name_a: str | None = None, name_b: str | None = None,
    top: int = 10, check: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """The differences from ``a`` to ``b`` as a JSON-ready dict (shape: ``docs/lint.md``).

    ``check`` is called between the steps; it raises to stop (a server's deadline)."""
    alive = check or _no_check
    alive()
    va = vocabulary(a)
    alive()
    vb = vocabulary(b)
    alive()
    bytes_a, bytes_b = _by_bytes(va), _by_bytes(vb)
    added = sorted((i, t) for t, i in bytes_b.items() if t not in bytes_a)
    removed = sorted((i, t) for t, i in bytes_a.items() if t not in bytes_b)
    moved = sorted((bytes_a[t], i, t) for t, i in bytes_b.items()
                   if t in bytes_a and bytes_a[t] != i)
    changed = [
        (i, ta, tb) for i, (ta, tb) in enumerate(zip(va.tokens, vb.tokens, strict=False))
        if ta is not None and tb is not None and ta != tb
        and i not in va.special_ids and i not in vb.special_ids
    ]
    specials = {
        "added": sorted(set(vb.specials) - set(va.specials)),
        "removed": sorted(set(va.specials) - set(vb.specials)),
        "changed_id": sorted(s for s in set(va.specials) & set(vb.specials)
                             if va.specials[s] != vb.specials[s]),
    }
    reordered = _reordered(a, va, b, vb)
    alive()
    languages = _languages(a, b)
    alive()
    texts = _texts(a, b, top)
    errors = [f"id {i}: bytes changed from {ta!r} to {tb!r}" for i, ta, tb in changed[:LISTED]]
    errors += [f"special token {s!r} moved from id {va.specials[s]} to {vb.specials[s]}"
               for s in specials["changed_id"]]
    return {
        "format": DIFF_FORMAT,
        "a": name_a or a.name,
        "b": name_b or b.name,
        "n_vocab": {"a": a.n_vocab, "b": b.n_vocab},
        "summary": {
            "added": len(added), "removed": len(removed), "changed": len(changed),
            "moved": len(moved), "reordered_merges": reordered,
            "special_changes": sum(len(v) for v in specials.values()),
        },
        "errors": errors,
        "added": _token_rows(added),
        "removed": _token_rows(removed),
        "changed": [{"id": i, "a": token_dict(ta), "b": token_dict(tb)}
                    for i, ta, tb in changed[:LISTED]],
        "moved": [{"a": ia, "b": ib, "token": token_dict(t)} for ia, ib, t in moved[:LISTED]],
        "specials": specials,
        "languages": languages,
        "texts": texts,
    }


def _no_check() -> None:
    """The default ``check``: never stops a diff."""
