"""Shared inputs for the tokenizer-family differential tests, and where the real files live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent.parent
REAL_FILES = ROOT / ".cache" / "tokenizer-files"
FETCH_HINT = "run `bash scripts/setup-test-tools.sh` (it calls scripts/fetch-tokenizer-files.sh)"

SAMPLES = {
    "english": "The quick brown fox jumps over the lazy dog. It's 3:45pm, isn't it?",
    "german": "Grüße aus München! Die Straße heißt Äußere Königstraße, Nr. 12.",
    "cjk": "日本語のテキストと中文文本，还有한국어 텍스트。東京都",
    "code": 'def f(x: int) -> int:\n    return x ** 2  # square\n\nif __name__ == "__main__":\n'
    "\tprint(f(3))",
    "emoji": "I ❤️ tokenizers 🎉👍🏽👨‍👩‍👧 ok 🇩🇪!",
    "whitespace": "  leading\t\ttabs   runs\n\n\nnewlines \u00a0nbsp \u3000ideographic   ",
    "mixed": "Ünïcödé Ωμέγα Σίσυφος ΣΊΣΥΦΟΣ café naïve e\u0301 ﬁ ① ² x\u200bz",
    # separator runs: Unigram ties between equal-looking paths (serde_json's float parsing)
    "runs": " ".join(c * n for c, n in [("-", 39), ("=", 57), ("_", 23), ("*", 64), ("#", 31)]),
    "empty": "",
    "spaces": "   ",
}

# Random Unicode text: any assigned code point but lone surrogates, biased toward ASCII.
random_text = st.text(
    alphabet=st.one_of(
        st.characters(blacklist_categories=("Cs", "Cn")),  # Cn: Unicode versions differ
        st.sampled_from(" \n\t abcXYZ0123.,'!"),
    ),
    max_size=40,
)

# Text where offsets are hard: NFKC expansions (ﬁ, ①, ㍿), combining marks to compose or
# reorder, decomposable letters, Σ, dotted İ (lowercases to two characters), CJK that BERT pads,
# controls it drops, odd spaces and emoji that byte fallback splits into bytes.
TRICKY = ["ﬁ", "ﬃ", "①", "㍿", "½", "ｆ", "ℌ", "e\u0301", "\u0301", "\u0323\u0307", "ṩ", "é",
          "Å", "Σ", "İ", "中", "日本", "\x00", "\x0c", "\u200b", "\u00a0", "\u3000", "  ",
          "\t", "\n", "🎉", "👍🏽", "ö", "\u1100\u1161\u11a8", "각", "\u0f73", "ﾊﾟ",
          "\u2581"]  # SentencePiece's own space mark typed by a user (stripped only at the end)
tricky_text = st.lists(
    st.one_of(st.sampled_from(TRICKY), st.text(alphabet=st.characters(
        blacklist_categories=("Cs", "Cn")), max_size=3), st.sampled_from(["a", "b ", "x1"])),
    max_size=14,
).map("".join)


def real_file(name: str) -> Path:
    """The path of a fetched real tokenizer file; fails (never skips) when it is missing."""
    path = REAL_FILES / name
    assert path.exists(), f"{path} is missing: {FETCH_HINT}"
    return path


def sentencepiece_offsets(ref: Any, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    """sentencepiece's piece ids and begin/end (UTF-8 byte offsets) as character offsets."""
    pieces = ref.encode(text, return_type="proto").pieces
    char_at = {}
    position = 0
    for i, char in enumerate(text):
        char_at[position] = i
        position += len(char.encode("utf-8"))
    char_at[position] = len(text)
    return [p.id for p in pieces], [(char_at[p.begin], char_at[p.end]) for p in pieces]
