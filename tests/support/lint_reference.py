"""Lint's reference answers, computed with tiktoken (never hard-coded lists)."""

from __future__ import annotations

from tiktoken_reference import reference


def tiktoken_unreachable(name: str) -> list[int]:
    """Ordinary ids whose text tiktoken does not encode back to that one id."""
    enc = reference(name)
    specials = set(enc._special_tokens.values())
    out = []
    for i in range(enc.n_vocab):
        if i in specials:
            continue
        try:
            text = enc.decode_single_token_bytes(i).decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            continue
        if enc.encode_ordinary(text) != [i]:
            out.append(i)
    return out


def not_utf8_count(name: str) -> int:
    """Mergeable tokens whose bytes alone are not valid UTF-8."""
    count = 0
    for token in reference(name)._mergeable_ranks:
        try:
            token.decode("utf-8")
        except UnicodeDecodeError:
            count += 1
    return count
