"""HF's Unicode data (older than Python's), frozen in core/pipeline/_hf_unicode.py: current with
the installed HF, and every normalizer that uses it gives HF's text, with and without
alignment tracking, on every character where Unicode versions could disagree."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from tokenizers import normalizers as hf

from tokend.core.pipeline import alignment as al
from tokend.core.pipeline import normalizers as ours

ROOT = Path(__file__).resolve().parents[3]


def candidates() -> list[str]:
    """Non-ASCII characters that are marks, controls or formats, or decompose, or that HF does
    not know (where the two Unicode versions can disagree)."""
    out = []
    for cp in range(0x80, sys.maxunicode + 1):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        if (unicodedata.category(c) in ("Mn", "Mc", "Me", "Cc", "Cf")
                or unicodedata.decomposition(c) or c in ours.OPAQUE):
            out.append(c)
    return out


PAIRS: dict[str, tuple[Any, ours.Normalizer]] = {
    **{form: (getattr(hf, form)(), ours.Unicode(form)) for form in ("NFC", "NFD", "NFKC",
                                                                     "NFKD")},
    "StripAccents": (hf.StripAccents(), ours.StripAccents()),
    "BertNormalizer": (hf.BertNormalizer(), ours.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)),
    "BertNormalizer-cased": (hf.BertNormalizer(lowercase=False, strip_accents=True),
                             ours.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                 strip_accents=True, lowercase=False)),
}


def test_frozen_tables_are_current() -> None:
    """Regenerating _hf_unicode.py from the installed HF gives the committed module."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_hf_unicode.py"), "--check"],
        capture_output=True, check=False,
    )
    assert result.returncode == 0, (
        "core/pipeline/_hf_unicode.py is stale: run .venv/bin/python tools/gen_hf_unicode.py")


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_every_candidate_normalizes_as_hf(name: str) -> None:
    """Each candidate alone, after a letter and an acute, and before a cedilla: HF's text;
    the aligned path gives the same text with one span per character."""
    reference, normalizer = PAIRS[name]
    for c in candidates():
        for text in (c, f"e\u0301{c}", f"{c}\u0327x"):
            expected = reference.normalize_str(text)
            assert normalizer.normalize(text) == expected, (name, hex(ord(c)))
            got, align = normalizer.normalize_aligned(text, al.identity(text), 0)
            assert got == expected, (name, hex(ord(c)), "aligned")
            assert len(align) == len(got)
