"""The model catalogue: built-in entries, name lookup, and the registry's hot-reloaded file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tokend.core import UnknownTokenizer, encoding_name_for_model
from tokend.core.counting import ModelCatalogue, default_catalogue
from tokend.core.engine.builtins import MODEL_TO_ENCODING


def write_models(path: Path, models: dict[str, object], bump: int = 0) -> None:
    path.write_text(json.dumps({"format": "tokend-models", "version": 1, "models": models}))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + bump * 1_000_000_000))


class TestBuiltinCatalogue:
    def test_every_entry_uses_tiktokens_encoding(self) -> None:
        """Each built-in OpenAI entry's tokenizer is the one tiktoken maps the model to."""
        cat = default_catalogue()
        openai = [info for info in cat.entries() if info.vendor == "openai"]
        assert len(openai) >= 40
        for info in openai:
            assert info.tokenizer == encoding_name_for_model(info.name), info.name

    def test_tiktokens_chat_models_have_a_chat_rule(self) -> None:
        cat = default_catalogue()
        for name in ("gpt-4o", "gpt-4", "gpt-3.5-turbo", "o1", "gpt-4.1", "gpt-5"):
            assert name in MODEL_TO_ENCODING
            assert cat.get(name).chat_rule == "openai"
        assert cat.get("gpt-oss-20b").chat_rule == "harmony"

    @pytest.mark.parametrize(("model", "entry"), [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4-0613", "gpt-4"),
        ("gpt-3.5-turbo-0301", "gpt-3.5-turbo-0301"),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "gpt-4o-mini"),
        ("o1-mini-2024-09-12", "o1-mini"),
    ])
    def test_dated_and_fine_tuned_names(self, model: str, entry: str) -> None:
        assert default_catalogue().get(model).name == entry

    def test_unknown_model_lists_known_ones(self) -> None:
        with pytest.raises(UnknownTokenizer, match=r"unknown model 'llama-9'.*gpt-"):
            default_catalogue().get("llama-9")


class TestRegistryFile:
    def test_added_overridden_and_reloaded(self, tmp_path: Path) -> None:
        """The registry's models.json adds and overrides entries; a change is picked up."""
        path = tmp_path / "models.json"
        write_models(path, {"my-model": {"tokenizer": "mytok@stable", "context_window": 4096,
                                         "max_output_tokens": 512}})
        cat = ModelCatalogue.for_registry(tmp_path)
        assert cat.get("my-model").tokenizer == "mytok@stable"
        assert cat.get("gpt-4o").context_window == 128000
        write_models(path, {"gpt-4o": {"tokenizer": "o200k_base", "context_window": 1000,
                                       "max_output_tokens": 10, "chat_rule": "openai"}}, bump=5)
        assert cat.refresh(force=True)
        assert cat.get("gpt-4o").context_window == 1000
        assert cat.find("my-model") is None

    def test_a_broken_file_keeps_the_last_good_entries(self, tmp_path: Path) -> None:
        path = tmp_path / "models.json"
        write_models(path, {"m": {"tokenizer": "t", "context_window": 1}})
        cat = ModelCatalogue.for_registry(tmp_path)
        path.write_text('{"format": "tokend-models", "version": 1, "models": {"m": {}}}')
        os.utime(path, ns=(0, path.stat().st_mtime_ns + 7_000_000_000))
        assert not cat.refresh(force=True)
        assert cat.get("m").context_window == 1
        assert cat.error is not None and "models.json: model 'm'" in cat.error
