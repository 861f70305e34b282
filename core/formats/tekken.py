"""Mistral's Tekken JSON: tiktoken-style ranks after a block of special tokens.

Ids ``0 .. num_special-1`` are special tokens (listed in the file, or Mistral's fixed list for
files up to v7, filled up with ``<SPECIAL_n>``); rank ``r`` of the vocabulary is id
``r + num_special``; the vocabulary is cut to ``default_vocab_size - num_special`` ranks. The
result is an ordinary :class:`Encoding`, so Tekken runs on the same engine as the built-ins.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from tokend.core.engine.cache import DEFAULT_CACHE_ENTRIES
from tokend.core.engine.encoding import Encoding
from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.patterns import validate_pattern

# mistral-common's Tekkenizer.DEPRECATED_SPECIAL_TOKENS, used when a file lists none.
DEPRECATED_SPECIAL_TOKENS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)


def parse_tekken(data: bytes, *, source: str = "tekken.json") -> dict[str, Any]:
    """The JSON object of a Tekken file, checked for ``config`` and ``vocab``."""
    try:
        raw = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptData(f"{source}: not valid JSON ({exc})") from None
    if not (isinstance(raw, dict) and isinstance(raw.get("config"), dict)
            and isinstance(raw.get("vocab"), list)):
        raise CorruptData(f"{source}: a Tekken file needs 'config' and 'vocab'")
    return raw


def load_tekken(
    data: bytes, *, name: str, source: str = "tekken.json", cache_entries: int | None = None
) -> Encoding:
    """Build the Encoding a Tekken file describes (ids as Mistral's Tekkenizer gives them)."""
    raw = parse_tekken(data, source=source)
    config = raw["config"]
    try:
        pattern = str(config["pattern"])
        vocab_size = int(config["default_vocab_size"])
        num_special = int(config["default_num_special_tokens"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptData(f"{source}: config lacks {exc}") from None
    if not 0 <= num_special <= vocab_size:
        raise CorruptData(f"{source}: {num_special} special tokens in a vocabulary of {vocab_size}")
    try:
        validate_pattern(pattern)
    except InvalidInput as exc:
        raise CorruptData(f"{source}: config.pattern: {exc}") from None
    listed = raw.get("special_tokens")
    if listed is None:
        names = list(DEPRECATED_SPECIAL_TOKENS)
    else:
        try:
            ordered = sorted(listed, key=lambda t: int(t["rank"]))
            names = [str(t["token_str"]) for t in ordered]
        except (KeyError, TypeError, ValueError):
            raise CorruptData(f"{source}: special_tokens entries need rank and token_str") from None
    if len(names) > num_special:
        raise CorruptData(f"{source}: {len(names)} special tokens, config allows {num_special}")
    names += [f"<SPECIAL_{i}>" for i in range(len(names), num_special)]
    inner = vocab_size - num_special
    if inner > len(raw["vocab"]):
        raise CorruptData(f"{source}: default_vocab_size {vocab_size} exceeds the vocabulary")
    ranks: dict[bytes, int] = {}
    for i, entry in enumerate(raw["vocab"][:inner]):
        try:
            token = base64.b64decode(entry["token_bytes"], validate=True)
        except (KeyError, TypeError, binascii.Error):
            raise CorruptData(f"{source}: vocab[{i}] has no valid token_bytes") from None
        if entry.get("rank") != i or token in ranks:
            raise CorruptData(f"{source}: vocab[{i}] is out of order or repeated")
        ranks[token] = i + num_special
    return Encoding(
        name,
        pat_str=pattern,
        mergeable_ranks=ranks,
        special_tokens={text: i for i, text in enumerate(names)},
        explicit_n_vocab=vocab_size,
        cache_entries=DEFAULT_CACHE_ENTRIES if cache_entries is None else cache_entries,
    )
