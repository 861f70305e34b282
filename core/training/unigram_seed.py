"""The Unigram trainer's starting point: required characters and the seed vocabulary.

Mirrors SentencePiece's ``LoadSentences`` (character coverage) and ``MakeSeedSentencePieces``
(frequent substrings), on pretoken counts instead of a suffix array over raw sentences:

- *required characters*: by frequency (ties: the smaller code point first), until the
  characters taken cover ``character_coverage`` of all character occurrences; the rest are
  unknown (SentencePiece rewrites them to U+2585 and never puts them in a piece).
- *seed pieces*: every required character, plus the substrings of 2 to ``max_piece_length``
  characters that occur at least twice and are internal nodes of the suffix tree (not always
  followed by the same next character; the end of a pretoken counts as a new follower every
  time), that are valid pieces (``▁`` only first, no unknown character, one Unicode script),
  best ``seed_size`` by frequency x length; the score of a seed is log(freq x length / total).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tokend.core.training.unigram_scripts import ANY, INHERITED, ScriptClasses

WHITESPACE = "\u2581"  # ▁, Metaspace's replacement for a space
NEVER_REQUIRED = frozenset(" \0")  # SentencePiece refuses these in a piece

Tick = Callable[[int, int], None]  # (pretokens done, pretokens in all) for progress and cancel


@dataclass(frozen=True)
class Seeds:
    """The seed vocabulary in id order (required characters first) and their log-probs."""

    pieces: list[str]
    scores: list[float]
    required: list[tuple[str, int]]  # required characters, most frequent first, with counts


def required_characters(
    counts: Mapping[str, int], character_coverage: float
) -> list[tuple[str, int]]:
    """The characters the vocabulary must hold, most frequent first, with their counts.

    >>> required_characters({"▁aab": 2, "▁c": 1}, 1.0)
    [('a', 4), ('▁', 3), ('b', 2), ('c', 1)]
    >>> required_characters({"▁aab": 2, "▁c": 1}, 0.8)
    [('a', 4), ('▁', 3), ('b', 2)]
    """
    char_counts: dict[str, int] = {}
    for word, count in counts.items():
        for char in word:
            char_counts[char] = char_counts.get(char, 0) + count
    total = sum(char_counts.values())
    required: list[tuple[str, int]] = []
    covered = 0
    for char, count in sorted(char_counts.items(), key=lambda item: (-item[1], item[0])):
        # subtle: the test comes before the character is added, as in SentencePiece, so the
        # character that crosses the threshold is still taken.
        if covered >= character_coverage * total:
            break
        covered += count
        if char not in NEVER_REQUIRED:
            required.append((char, count))
    return required


def valid_end(word: str, start: int, max_end: int, known: set[str], script: ScriptClasses) -> int:
    """The largest ``end <= max_end`` such that ``word[start:end]`` is a valid piece (or start).

    Validity only shrinks as a piece grows (a ``▁`` after the first character, an unknown
    character or a second script never goes away), so every shorter piece is valid too.

    >>> valid_end("▁ab,c", 0, 5, set("▁abc,"), ScriptClasses())
    3
    """
    previous = ANY
    for end in range(start, max_end):
        char = word[end]
        if char not in known:
            return end
        if char == WHITESPACE:
            if end > start:
                return end
            continue
        cls = script(char)
        if cls == INHERITED:
            cls = previous
        if cls != ANY and previous not in (ANY, cls):
            return end
        previous = cls
    return max_end


class Substrings(Protocol):
    """What seeding and the lattices ask of the substring table (see PySubstrings)."""

    @property
    def name(self) -> str: ...

    def candidates(self) -> list[tuple[int, str]]: ...

    def lattice_edges(
        self, pieces: Sequence[str]
    ) -> tuple[Sequence[int], Sequence[int], Sequence[int], Sequence[int], Sequence[int],
               Sequence[int]]: ...


class PySubstrings:
    """Every valid substring of every word (up to ``max_length`` characters): its weighted
    count and whether it always had the same next character. The pure-Python twin of
    ``_unigram_lattice.CompiledSubstrings`` (same candidates, same edges in the same order).
    """

    name = "python"

    def __init__(
        self,
        *,
        words: Sequence[str],
        counts: Sequence[int],
        chars: Mapping[str, tuple[bool, bool, int]],
        max_length: int,
        whole_word_seeds: bool,
        tick: Tick | None = None,
    ) -> None:
        """``chars``: character -> (known, is ▁, script class), for every character."""
        self.words, self.counts, self.max_length = words, counts, max_length
        self.known = {char for char, (known, _ws, _cls) in chars.items() if known}
        self.script = ScriptClasses()
        # What follows a substring that ends its word: "" (a new follower every time, so a
        # whole word can be a seed) or, with whole_word_seeds off, the ▁ that starts the next
        # word in SentencePiece's sentence array (a word always followed by a space is no node).
        end_follower = "" if whole_word_seeds else WHITESPACE
        self.freq: dict[str, int] = {}
        # substring -> the one character that followed each occurrence so far, "" once two
        # different ones did (or the word ended: a node of the suffix tree either way).
        self.follower: dict[str, str] = {}
        freq, follower = self.freq, self.follower
        for done, (word, count) in enumerate(zip(words, counts, strict=True)):
            if tick is not None and done % 4096 == 0:
                tick(done, len(words))
            n = len(word)
            for start in range(n - 1):
                limit = valid_end(word, start, min(n, start + max_length), self.known, self.script)
                for end in range(start + 2, limit + 1):
                    sub = word[start:end]
                    freq[sub] = freq.get(sub, 0) + count
                    nxt = word[end] if end < n else end_follower
                    seen = follower.get(sub)
                    if seen is None:
                        follower[sub] = nxt
                    elif seen != nxt:
                        follower[sub] = ""

    def candidates(self) -> list[tuple[int, str]]:
        """(count x length, substring) of each seed candidate, in no particular order."""
        return [
            (sub_freq * len(sub), sub)
            for sub, sub_freq in self.freq.items()
            if sub_freq >= 2 and self.follower[sub] == ""
        ]

    def lattice_edges(
        self, pieces: Sequence[str]
    ) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
        """(offsets, starts, ends, piece ids, first word, first start) of the pieces' edges:
        word ``w``'s edges are ``offsets[w]:offsets[w + 1]``, by start then end; a piece
        first occurs in word ``first_word[p]`` at ``first_start[p]``."""
        ids = {piece: i for i, piece in enumerate(pieces)}
        first_word = [-1] * len(pieces)
        first_start = [0] * len(pieces)
        offsets = [0]
        starts: list[int] = []
        ends: list[int] = []
        piece_ids: list[int] = []
        for w, word in enumerate(self.words):
            n = len(word)
            for start in range(n):
                for end in range(start + 1, min(n, start + self.max_length) + 1):
                    piece = ids.get(word[start:end])
                    if piece is not None:
                        starts.append(start)
                        ends.append(end)
                        piece_ids.append(piece)
                        if first_word[piece] < 0:
                            first_word[piece], first_start[piece] = w, start
            offsets.append(len(starts))
        return offsets, starts, ends, piece_ids, first_word, first_start


def char_table(
    counts: Mapping[str, int], required: list[tuple[str, int]]
) -> dict[str, tuple[bool, bool, int]]:
    """character -> (required, is ▁, script class) for every character of the words."""
    known = {char for char, _count in required}
    script = ScriptClasses()
    table: dict[str, tuple[bool, bool, int]] = {}
    for word in counts:
        for char in word:
            if char not in table:
                table[char] = (char in known, char == WHITESPACE, script(char))
    return table


def seed_pieces(substrings: Substrings, required: list[tuple[str, int]], seed_size: int) -> Seeds:
    """The seed vocabulary: required characters, then the best frequent substrings.

    >>> counts = {"▁ab": 3, "▁abc": 1}
    >>> required = [("▁", 4), ("a", 4), ("b", 4), ("c", 1)]
    >>> subs = PySubstrings(words=list(counts), counts=list(counts.values()),
    ...                     chars=char_table(counts, required), max_length=16,
    ...                     whole_word_seeds=True)
    >>> seed_pieces(subs, required, 10).pieces
    ['▁', 'a', 'b', 'c', '▁ab', 'ab']
    """
    candidates = substrings.candidates()
    candidates.sort(key=lambda item: (-item[0], item[1]))
    del candidates[seed_size:]
    pieces = [char for char, _count in required] + [sub for _score, sub in candidates]
    raw = [float(count) for _char, count in required] + [float(s) for s, _sub in candidates]
    log_total = math.log(sum(raw)) if raw else 0.0
    return Seeds(pieces, [math.log(value) - log_total for value in raw], required)
