"""Pretokenization patterns: the named built-in regexes and validation of custom ones.

A pattern splits text into pretokens; BPE merges never cross a pretoken boundary.
"""

from __future__ import annotations

import regex

from tokend.core.errors import InvalidInput, shown

# The original GPT-2 pattern (r50k_base / gpt2 / p50k use a possessive variant of it).
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# Mistral's Tekken files (tekken_240718 .. v13): o200k's pattern without the contractions, and
# digits one at a time. Not a name users train with; the engine knows it to give Tekken files
# the compiled scanner (the string must be the file's exactly).
TEKKEN_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*""",
        r"""\p{N}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

NAMED_PATTERNS: dict[str, str] = {
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
}

# The pretokenization pattern a new tokenizer is trained with unless another is asked for
# (library, CLI and the Train RPC alike). o200k's, as in OpenAI's current encodings: it keeps
# contractions and casing apart and splits digits in threes. The documented results that were
# measured with GPT-2's pattern (the CS336 reference merges, the comparison with HF's ByteLevel
# trainer) name `pattern="gpt2"` explicitly and stay reproducible. See docs/training.md.
DEFAULT_TRAIN_PATTERN = "o200k"

MAX_PATTERN_LENGTH = 4096


def resolve_pattern(name_or_regex: str) -> str:
    """Return the regex for a pattern name (``gpt2``, ``cl100k``, ``o200k``) or a custom regex.

    A custom regex must compile with the ``regex`` module and must not match the empty string
    (an empty pretoken would loop forever or drop text).

    >>> resolve_pattern("gpt2") == GPT2_PATTERN
    True
    """
    if name_or_regex in NAMED_PATTERNS:
        return NAMED_PATTERNS[name_or_regex]
    validate_pattern(name_or_regex)
    return name_or_regex


def validate_pattern(pat_str: str) -> None:
    """Raise InvalidInput unless ``pat_str`` is a usable pretokenization regex."""
    if not pat_str:
        raise InvalidInput(
            f"pattern is empty; use one of {sorted(NAMED_PATTERNS)} or a regular expression"
        )
    if len(pat_str) > MAX_PATTERN_LENGTH:
        raise InvalidInput(
            f"pattern is {len(pat_str)} characters, over the limit of {MAX_PATTERN_LENGTH}"
        )
    try:
        compiled = regex.compile(pat_str)
    except regex.error as exc:
        raise InvalidInput(f"pattern {shown(pat_str)} does not compile: {exc}") from None
    if compiled.match("") is not None:  # on "" any match is a full match
        raise InvalidInput(
            f"pattern {shown(pat_str)} matches the empty string; every match must consume text"
        )
