"""The longest prefix or suffix of a text within a token budget, by bracketing and bisection.

BPE counts are not monotonic in the text's length (``"a b"`` may cost fewer tokens than
``"a "``), so "the longest piece that fits" is defined locally: a cut is *maximal* when it fits
and the cut one character longer does not. Bisection keeps exactly that pair as its invariant,
``fits(lo)`` and not ``fits(hi)``, and stops when they are neighbours — no monotonicity needed.
Cuts are between characters (code points), so a UTF-8 character is never split. The search
starts from a guess (where the whole text's tokens say the cut is) and only counts windows
around it, so the cost follows the piece, not the whole text.
"""

from __future__ import annotations

from collections.abc import Callable

Counter = Callable[[str], int]
# The first gallop step (characters) away from a guess; it doubles at every step.
FIRST_STEP = 8


def search_max(fits: Callable[[int], bool], low: int, high: int, guess: int) -> int:
    """The ``x`` in ``[low, high]`` with ``fits(x)`` and (``x == high`` or not ``fits(x + 1)``).

    ``fits(low)`` must hold. Positions grow away from ``low`` toward ``high``.
    """
    guess = min(max(guess, low + 1), high) if high > low else low
    if high == low:
        return low
    step = max(1, min(FIRST_STEP, (guess - low) // 16))  # guesses are usually close
    if fits(guess):
        lo = guess
        while True:  # gallop outward until something does not fit
            if lo == high:
                return high
            probe = min(high, lo + step)
            if not fits(probe):
                hi = probe
                break
            lo, step = probe, step * 2
    else:
        hi = guess
        lo = low
        probe = guess - step
        while probe > low:  # gallop back until something fits
            if fits(probe):
                lo = probe
                break
            hi, step = probe, step * 2
            probe = hi - step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def fit_prefix(count: Counter, text: str, start: int, budget: int, guess: int) -> int:
    """``end`` with ``count(text[start:end]) <= budget`` and, unless ``end == len(text)``,
    ``count(text[start:end + 1]) > budget``."""
    return search_max(lambda end: count(text[start:end]) <= budget, start, len(text), guess)


def fit_suffix(count: Counter, text: str, end: int, budget: int, guess: int) -> int:
    """``start`` with ``count(text[start:end]) <= budget`` and, unless ``start == 0``,
    ``count(text[start - 1:end]) > budget``."""
    # Mirror the positions so that "growing" moves the start toward 0.
    found = search_max(lambda back: count(text[end - back:end]) <= budget, 0, end, end - guess)
    return end - found
