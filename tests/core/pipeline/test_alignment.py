"""Alignment tracking (core/pipeline/alignment.py): the Unicode forms it rebuilds with change
tags give exactly Python's normalized text, and transform follows HF's rules."""

from __future__ import annotations

import unicodedata

import pytest
from family_texts import random_text, tricky_text
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.pipeline import alignment as al


class TestUnicodeChanges:
    @pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
    @settings(max_examples=150, deadline=None)
    @given(text=st.one_of(random_text, tricky_text))
    def test_text_is_unicodedata_normalize(self, form: str, text: str) -> None:
        """The (char, change) pairs spell the normalized text, and consume every character."""
        changes = al.unicode_changes(text, form)
        assert "".join(c for c, _ in changes) == unicodedata.normalize(form, text)
        consumed = sum(1 - change for _c, change in changes if change <= 0)
        assert consumed == len(text)

    def test_expansions_and_compositions_align_to_their_source(self) -> None:
        """ﬁ -> f i both from ﬁ; e + U+0301 -> é takes e's span (HF gives (0,1) (0,1) (1,2))."""
        text, align = al.transform(al.identity("ﬁe\u0301"), al.unicode_changes("ﬁe\u0301",
                                                                                  "NFKC"))
        assert (text, align) == ("fié", [(0, 1), (0, 1), (1, 2)])
        assert al.expand(align, 0, 2, 0) == (0, 1)


class TestByteOffsets:
    @settings(deadline=None)  # no time limit per example: a loaded machine is not a failure
    @given(text=random_text)
    def test_char_offsets_become_utf8_byte_offsets(self, text: str) -> None:
        """Each character span becomes the span of its UTF-8 bytes."""
        spans = [(i, i + 1) for i in range(len(text))]
        raw = text.encode("utf-8")
        for (s, e), char in zip(al.byte_offsets(text, spans), text, strict=True):
            assert raw[s:e].decode("utf-8") == char
