"""Checks shared by every registry store: a version's contents and the aliases file format."""

from __future__ import annotations

import json
from collections.abc import Mapping

from tokend.core.errors import CorruptData, InvalidInput, shown
from tokend.core.patterns import validate_pattern

ALIASES_FILE = "aliases.json"  # one per tokenizer name: alias -> version
# A copy of the last aliases file the registry itself wrote, served (by every worker alike)
# while aliases.json does not parse: only the registry writes aliases, so garbling is outside.
KEPT_ALIASES_FILE = "aliases.kept.json"


def parse_aliases(raw: bytes, where: str) -> dict[str, int]:
    """The aliases file ``{"stable": 3, ...}``; CorruptData naming ``where`` if malformed."""
    try:
        table = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptData(f"{where}: aliases file is not valid JSON ({exc})") from None
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in table.items()
    ):
        raise CorruptData(f"{where}: aliases file must map alias names to versions")
    return dict(table)


def encode_aliases(aliases: Mapping[str, int]) -> bytes:
    """The aliases file's bytes (sorted, so equal tables give equal files)."""
    return (json.dumps(dict(sorted(aliases.items())), indent=2) + "\n").encode()


def check_contents(
    ranks: Mapping[bytes, int],
    pat_str: str,
    special_tokens: Mapping[str, int],
    explicit_n_vocab: int | None,
) -> int:
    """Validate a rank table + specials the way tiktoken would; return n_vocab."""
    validate_pattern(pat_str)
    if not ranks:
        raise InvalidInput("ranks are empty; a tokenizer needs at least one mergeable token")
    seen: set[int] = set()
    for token, rank in ranks.items():
        if not isinstance(token, bytes) or not token:
            raise InvalidInput(f"token {shown(token)} must be non-empty bytes")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise InvalidInput(f"rank of {shown(token)} is {rank!r}, not a non-negative int")
        if rank in seen:
            raise InvalidInput(f"rank {rank} is used by more than one token")
        seen.add(rank)
    for text, token_id in special_tokens.items():
        if not isinstance(text, str) or not text:
            raise InvalidInput(f"special token {shown(text)} must be a non-empty string")
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            raise InvalidInput(f"id of special token {shown(text)} is {token_id!r}")
        if token_id in seen:
            raise InvalidInput(
                f"special token {shown(text)} has id {token_id}, already used by another token"
            )
        seen.add(token_id)
    n_vocab = max(seen) + 1
    if explicit_n_vocab is not None and not (explicit_n_vocab == len(seen) == n_vocab):
        raise InvalidInput(
            f"explicit_n_vocab is {explicit_n_vocab}, but there are {len(seen)} tokens "
            f"with ids up to {n_vocab - 1}"
        )
    return n_vocab
