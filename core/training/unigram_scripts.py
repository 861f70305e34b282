"""Unicode script classes for SentencePiece's rule "a piece never mixes scripts".

SentencePiece (``split_by_unicode_script``, on by default) refuses a piece whose characters
come from two scripts; Hiragana, Katakana and U+30FC count as Han, combining marks (script
Inherited) take the script of the character before them, digits and punctuation are Common
(``split_by_number`` on: digits do not join letters). ``▁`` is handled by the caller.
"""

from __future__ import annotations

import regex

# Class ids: ANY for "no script yet" (the start of a piece), INHERITED resolves to the previous.
ANY = -1
INHERITED = -2
OTHER = -3  # every script not named below (rare in practice; one shared class)

# The scripts named here get their own class; Han takes Hiragana and Katakana as SentencePiece
# does. The list covers the scripts of the world's widely written languages.
_SCRIPTS = (
    "Common", "Latin", "Greek", "Cyrillic", "Armenian", "Hebrew", "Arabic", "Syriac", "Thaana",
    "Devanagari", "Bengali", "Gurmukhi", "Gujarati", "Oriya", "Tamil", "Telugu", "Kannada",
    "Malayalam", "Sinhala", "Thai", "Lao", "Tibetan", "Myanmar", "Georgian", "Hangul",
    "Ethiopic", "Cherokee", "Khmer", "Mongolian", "Han", "Bopomofo", "Canadian_Aboriginal",
    "Tifinagh", "Javanese", "Balinese", "Sundanese", "Yi", "Vai", "Nko", "Adlam",
)  # fmt: skip
_HAN = _SCRIPTS.index("Han")
_CLASSIFY = regex.compile(
    "|".join(f"(?P<s{i}>\\p{{Script={name}}})" for i, name in enumerate(_SCRIPTS))
    + "|(?P<han>[\\p{Script=Hiragana}\\p{Script=Katakana}\u30fc])"
    + "|(?P<inherited>\\p{Script=Inherited})"
)


class ScriptClasses:
    """Character -> script class id, cached (a corpus has a few thousand distinct characters)."""

    def __init__(self) -> None:
        self._cache: dict[str, int] = {}

    def __call__(self, char: str) -> int:
        """The class of one character: an index into the named scripts, INHERITED or OTHER.

        >>> classes = ScriptClasses()
        >>> classes("a") == classes("Z"), classes("a") == classes("я")
        (True, False)
        >>> classes("カ") == classes("漢")
        True
        """
        found = self._cache.get(char)
        if found is None:
            found = _classify(char)
            self._cache[char] = found
        return found


def _classify(char: str) -> int:
    if char == "\u30fc":
        return _HAN
    match = _CLASSIFY.match(char)
    if match is None:
        return OTHER
    group = match.lastgroup
    if group == "han":
        return _HAN
    if group == "inherited":
        return INHERITED
    assert group is not None  # subtle: one of the alternatives matched, so a group is set
    return int(group[1:])
