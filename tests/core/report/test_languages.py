"""The shipped parallel corpus and the per-language cost table (checked against tiktoken)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiktoken_reference import reference

from tokend.core import get_encoding
from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.report import language_costs, load_parallel_corpus

REQUIRED = {"en", "de", "fr", "es", "ru", "zh", "ja", "ko", "ar", "hi", "tr", "vi", "sw"}


class TestParallelCorpus:
    def test_shipped_corpus_has_the_languages_and_a_licence(self) -> None:
        """20 languages with the same number of sentences, English first, licence stated."""
        corpus = load_parallel_corpus()
        codes = [lang.code for lang in corpus.languages]
        assert codes[0] == "en"
        assert set(codes) >= REQUIRED
        assert len(codes) == len(set(codes)) >= 10
        assert {len(lang.sentences) for lang in corpus.languages} == {5}
        assert "tokend" in corpus.licence

    def test_unequal_sentence_counts_are_refused_naming_file_and_entry(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "p.json"
        path.write_text(json.dumps({"format": "tokend-parallel-corpus-1", "languages": [
            {"code": "en", "name": "English", "sentences": ["a", "b"]},
            {"code": "de", "name": "German", "sentences": ["a"]}]}), "utf-8")
        with pytest.raises(CorruptData, match=r"p\.json: languages\[1\] \(de\) has 1 sentences"):
            load_parallel_corpus(path)

    @pytest.mark.parametrize("content, match", [
        ("not json", "not a JSON parallel corpus"),
        ('{"format": "x"}', "'format' must be"),
        ('{"format": "tokend-parallel-corpus-1", "languages": []}', "non-empty list"),
    ])
    def test_bad_files_are_refused(self, tmp_path: Path, content: str, match: str) -> None:
        path = tmp_path / "p.json"
        path.write_text(content, "utf-8")
        with pytest.raises(CorruptData, match=match):
            load_parallel_corpus(path)

    def test_a_missing_file_is_invalid_input(self, tmp_path: Path) -> None:
        with pytest.raises(InvalidInput, match="cannot read"):
            load_parallel_corpus(tmp_path / "absent.json")


class TestLanguageCosts:
    def test_relative_cost_equals_tiktoken_counts_over_english(self) -> None:
        corpus = load_parallel_corpus()
        names = ["o200k_base", "r50k_base"]
        rows = language_costs([(n, get_encoding(n)) for n in names], corpus)
        assert len(rows) == len(names) * len(corpus.languages)
        for name in names:
            ref = reference(name)
            count = {lang.code: sum(len(ref.encode(s, disallowed_special=()))
                                    for s in lang.sentences) for lang in corpus.languages}
            mine = {r.language: r for r in rows if r.tokenizer == name}
            for code, tokens in count.items():
                assert mine[code].tokens == tokens
                assert mine[code].relative == pytest.approx(tokens / count["en"])
            assert mine["en"].relative == 1.0

    def test_unknown_reference_language_lists_the_codes(self) -> None:
        with pytest.raises(InvalidInput, match="'xx' is not in the parallel corpus; it has en, de"):
            language_costs([("o", get_encoding("o200k_base"))], reference="xx")
