"""HF's punctuation set (an old Unicode's P*), frozen in core/pipeline/_hf_punct.py."""

from __future__ import annotations

import sys
import unicodedata

from tokenizers import pre_tokenizers

from tokend.core.pipeline.pre_tokenizers import BertPreTokenizer, is_punctuation


def candidates() -> list[str]:
    """Every character that is or was punctuation: today's P*, S* and M* (U+166D is So now)."""
    out = []
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp < 0xE000:
            continue
        if unicodedata.category(chr(cp))[0] in "PSM":
            out.append(chr(cp))
    return out


def test_is_punctuation_equals_hf() -> None:
    """Each candidate between two letters: HF isolates it exactly when tokend calls it punct."""
    hf = pre_tokenizers.BertPreTokenizer()
    ours = BertPreTokenizer()
    for c in candidates():
        text = f"a{c}a"
        hf_words = [w for w, _ in hf.pre_tokenize_str(text)]
        assert (len(hf_words) == 3) == is_punctuation(c), hex(ord(c))
        assert [w for w, _ in ours.pre_tokenize([(text, True)])] == hf_words, hex(ord(c))
