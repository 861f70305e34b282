"""``export_version``: every (stored format x requested format) pair, the version's own file
byte for byte, exact conversions checked with the target format's own library, refusals
naming what stands in the way (tests/support/export_versions.py holds the table)."""

from __future__ import annotations

import pytest
from export_versions import EXPECTED, FORMATS, build_registry, check_same_ids, stored_bytes

from tokend.core.errors import InvalidInput
from tokend.core.registry import Registry
from tokend.core.registry.export import export_version

PAIRS = [(variant, fmt, EXPECTED[variant][i]) for variant in sorted(EXPECTED)
         for i, fmt in enumerate(FORMATS)]


@pytest.mark.parametrize(("variant", "fmt", "expected"), PAIRS,
                         ids=[f"{v}-{f}" for v, f, _ in PAIRS])
class TestExportMatrix:
    def test_export(self, variant: str, fmt: str, expected: str) -> None:
        """Stored: the version's file unchanged; converted: the reference library reading
        the file gives the served ids; otherwise refused with the reason."""
        registry, refs = build_registry()
        ref = refs[variant]
        if expected not in ("stored", "converted"):
            with pytest.raises(InvalidInput, match=expected):
                export_version(Registry(registry), ref, fmt)
            return
        result = export_version(Registry(registry), ref, fmt)
        assert (result.fmt, result.how) == (fmt, expected)
        if expected == "stored":
            assert result.data == stored_bytes(registry, ref, fmt)
        if fmt != "original":
            check_same_ids(registry, ref, fmt, result.data)


class TestExportRules:
    def test_tiktoken_notes_name_what_the_file_cannot_hold(self) -> None:
        """The pattern, special tokens and normalizer of a rank table come back as a note."""
        registry, refs = build_registry()
        result = export_version(Registry(registry), refs["tiktoken-nfc"], "tiktoken")
        assert result.notes == (".tiktoken holds ranks only; pattern cl100k, special tokens "
                                "{}, normalizer nfc",)

    def test_an_unknown_format_is_refused(self) -> None:
        registry, refs = build_registry()
        with pytest.raises(InvalidInput, match="unknown export format 'vocab'"):
            export_version(Registry(registry), refs["tiktoken"], "vocab")

    def test_refusals_name_the_obstacle(self) -> None:
        """Each refusal says what stands in the way and which export does work."""
        registry, refs = build_registry()
        reg = Registry(registry)
        with pytest.raises(InvalidInput, match=r"model type 'Unigram'.*--format hf-json or "
                           "original"):
            export_version(reg, refs["trained-unigram"], "tiktoken")
        with pytest.raises(InvalidInput, match=r"float32 over the whole text.*--format "
                           "original"):
            export_version(reg, refs["spm-unigram"], "hf-json")
        with pytest.raises(InvalidInput, match="merge list"):
            export_version(reg, refs["spm-bpe"], "hf-json")
        with pytest.raises(InvalidInput, match=r"NFC \(Python's Unicode .*--format tiktoken"):
            export_version(reg, refs["tiktoken-nfc"], "hf-json")
