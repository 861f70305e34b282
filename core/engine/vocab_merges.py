"""GPT-2 / HF style vocab + ordered merges -> the rank and id tables an ``Encoding`` runs on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise

from tokend.core.errors import InvalidInput


def tables_from_vocab_merges(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] | Mapping[str, int] | None,
) -> tuple[dict[bytes, int], dict[bytes, int], dict[str, int], dict[int, bytes]]:
    """``(ranks, ids, specials, extra_decoder)`` for ``Encoding.from_vocab_merges``.

    Merge priority is the order of ``merges``; ids are ``vocab``'s. Special tokens given as a
    list take their ids from ``vocab`` (or the next free ids); vocabulary entries that are
    neither a byte, a merge result nor special go to ``extra_decoder`` (decodable, never
    produced).

    >>> vocab = {b: bytes([b]) for b in range(256)} | {256: b"ab"}
    >>> ranks, ids, specials, extra = tables_from_vocab_merges(vocab, [(b"a", b"b")], ["<s>"])
    >>> ids[b"ab"], specials
    (256, {'<s>': 257})
    """
    by_bytes = {token: token_id for token_id, token in vocab.items()}
    specials: dict[str, int] = {}
    if isinstance(special_tokens, Mapping):
        specials = dict(special_tokens)
    elif special_tokens is not None:
        next_id = max(vocab, default=-1) + 1
        for token in special_tokens:
            token_id = by_bytes.get(token.encode())
            if token_id is None:
                token_id = next_id
                next_id += 1
            specials[token] = token_id
    special_ids = set(specials.values())
    ids: dict[bytes, int] = {}
    for byte in range(256):
        single = bytes([byte])
        if single not in by_bytes:
            raise InvalidInput(
                f"vocab has no token for the byte {single!r}; byte-level BPE needs all 256"
            )
        ids[single] = by_bytes[single]
    merged: list[bytes] = []
    for index, (left, right) in enumerate(merges):
        pair = left + right
        if pair not in by_bytes:
            raise InvalidInput(
                f"merge {index} ({left!r}, {right!r}) makes {pair!r}, which is not in vocab"
            )
        if pair not in ids:
            ids[pair] = by_bytes[pair]
            merged.append(pair)
    merged_ids = [ids[pair] for pair in merged]
    ranks: dict[bytes, int]
    if all(a < b for a, b in pairwise(merged_ids)):
        # ids already increase with merge order, so they order merges like ranks do
        # (single-byte ranks are never compared: every pair is at least two bytes)
        ranks = ids
    else:
        ranks = {bytes([b]): b for b in range(256)}
        ranks.update((token, 256 + k) for k, token in enumerate(merged))
    extra = {
        token_id: token
        for token_id, token in vocab.items()
        if token not in ids and token_id not in special_ids
    }
    return ranks, ids, specials, extra
