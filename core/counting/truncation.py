"""Cut a text to at most N tokens: keep the head, the tail, or both ends around a marker.

The text is counted as plain text (special-token look-alikes are ordinary text), as it would be
sent. The result is *maximal*: it fits, and keeping one more character would not (``fit.py``
says why that is the right definition for BPE). With ``keep="both"`` the marker (default "…")
sits between the two ends and counts within the budget; the head gets the larger half of what
the marker leaves, then each end grows while the whole still fits.

>>> r = truncate("o200k_base", "The quick brown fox jumps over the lazy dog", 4)
>>> r.text, r.count
('The quick brown fox', 4)
>>> truncate("o200k_base", "The quick brown fox jumps over the lazy dog", 6, keep="both").text
'The quick brown … lazy dog'
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from tokend.core.counting.fit import fit_prefix, fit_suffix, search_max
from tokend.core.counting.prompt import count_plain, resolve_encoding
from tokend.core.errors import InvalidInput
from tokend.core.tokenizer import Tokenizer

Keep = Literal["head", "tail", "both"]
# A long text is first looked at through windows of this many characters per budget token at
# each end; when each holds over max_tokens + WINDOW_MARGIN tokens, the whole text cannot fit.
WINDOW_CHARS_PER_TOKEN = 8
WINDOW_MARGIN = 8
KEEPS = ("head", "tail", "both")


@dataclass(frozen=True)
class TruncateResult:
    """The cut text, its ids and count (exact: the encoding of ``text`` alone)."""

    text: str
    ids: list[int]
    count: int
    # False when the whole text already fitted (``text`` is then the input).
    truncated: bool
    # Characters kept from the start and from the end of the input.
    head_chars: int
    tail_chars: int
    exact: bool = True
    estimate_reason: str = ""


def truncate(
    encoding: Tokenizer | str,
    text: str,
    max_tokens: int,
    *,
    keep: Keep = "head",
    marker: str = "…",
) -> TruncateResult:
    """``text`` cut to at most ``max_tokens`` tokens (see the module docstring)."""
    enc = resolve_encoding(encoding)
    if keep not in KEEPS:
        raise InvalidInput(f"keep must be one of {', '.join(KEEPS)}, not {str(keep)[:20]!r}")
    if max_tokens < 0:
        raise InvalidInput(f"max_tokens must be >= 0, not {max_tokens}")
    head_ids, tail_ids = _end_ids(enc, text, max_tokens)
    if head_ids is None or tail_ids is None:
        ids = enc.encode_ordinary(text)
        if len(ids) <= max_tokens:
            return TruncateResult(text, ids, len(ids), False, len(text), 0)
        head_ids = tail_ids = ids

    def count(piece: str) -> int:
        return count_plain(enc, piece)

    n = len(text)
    if keep == "head":
        end = fit_prefix(count, text, 0, max_tokens, _chars_of(enc, head_ids[:max_tokens]))
        return _result(enc, text[:end], end, 0)
    if keep == "tail":
        start = fit_suffix(count, text, n, max_tokens,
                           n - _chars_of(enc, tail_ids[-max_tokens:]))
        return _result(enc, text[start:], 0, n - start)
    marker_tokens = count(marker)
    if marker_tokens > max_tokens:
        raise InvalidInput(
            f"the marker {marker[:20]!r} alone is {marker_tokens} tokens, over max_tokens "
            f"{max_tokens}; pass a shorter marker or a larger budget"
        )
    room = max_tokens - marker_tokens
    tail_budget = room // 2
    start = n
    if tail_budget:
        start = fit_suffix(count, text, n, tail_budget,
                           n - _chars_of(enc, tail_ids[-tail_budget:]))
    head_guess = _chars_of(enc, head_ids[: room - tail_budget])

    def joined_fits(a: int, b: int) -> bool:
        return count(text[:a] + marker + text[b:]) <= max_tokens

    def head_fits(a: int, *, b: int) -> bool:
        return joined_fits(a, b)

    def tail_fits(k: int, *, a: int, b: int) -> bool:
        return joined_fits(a, b - k)

    end = 0
    while start < n and not joined_fits(end, start):  # rare: the marker merged with the tail
        start += 1
    # Grow each end in turn while the joined text fits; each round moves a cut, so it stops.
    while True:
        moved = False
        if end < start and joined_fits(end + 1, start):
            end = search_max(functools.partial(head_fits, b=start), end, start,
                             max(head_guess, end + 1))
            moved = True
        if start > end and joined_fits(end, start - 1):
            start -= search_max(functools.partial(tail_fits, a=end, b=start), 0, start - end, 1)
            moved = True
        if not moved:
            break
    return _result(enc, text[:end] + marker + text[start:], end, n - start)


def _end_ids(
    enc: Tokenizer, text: str, max_tokens: int
) -> tuple[list[int], list[int]] | tuple[None, None]:
    """Ids of a window at each end of a long text, each well over ``max_tokens`` tokens, so the
    cut's guess costs the budget, not the text; (None, None) for a short or sparse text
    (then the whole text is encoded)."""
    window = WINDOW_CHARS_PER_TOKEN * max_tokens + 256
    if len(text) <= 2 * window:
        return None, None
    head = enc.encode_ordinary(text[:window])
    tail = enc.encode_ordinary(text[-window:])
    if min(len(head), len(tail)) <= max_tokens + WINDOW_MARGIN:
        return None, None
    return head, tail


def _chars_of(enc: Tokenizer, ids: list[int]) -> int:
    """Characters that ``ids`` decode to completely (a guess for where a cut falls)."""
    return len(enc.decode_bytes(ids).decode("utf-8", errors="ignore"))


def _result(enc: Tokenizer, text: str, head: int, tail: int) -> TruncateResult:
    ids = enc.encode_ordinary(text)
    return TruncateResult(text, ids, len(ids), True, head, tail)
