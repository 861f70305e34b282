"""Built-in encodings: lazy, shared, checked loading and tiktoken's model table."""

from __future__ import annotations

import threading

import pytest
import tiktoken.model

from tokend.core import (
    BUILTIN_NAMES,
    UnknownTokenizer,
    encoding_for_model,
    encoding_name_for_model,
    get_encoding,
    list_encoding_names,
)
from tokend.core.engine import builtins as builtins_module

# Every test here runs once per engine (compiled, python): see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("each_engine")


class TestGetEncoding:
    """get_encoding loads each built-in once and refuses unknown names."""

    def test_names(self) -> None:
        """All seven tiktoken encodings are listed."""
        assert set(list_encoding_names()) == {
            "gpt2",
            "r50k_base",
            "p50k_base",
            "p50k_edit",
            "cl100k_base",
            "o200k_base",
            "o200k_harmony",
        }
        assert tuple(list_encoding_names()) == BUILTIN_NAMES

    def test_shared_instance(self) -> None:
        """Concurrent first calls return one shared instance."""
        results: list[object] = []
        threads = [
            threading.Thread(target=lambda: results.append(get_encoding("p50k_edit")))
            for _ in range(6)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len({id(r) for r in results}) == 1
        assert results[0] is get_encoding("p50k_edit")

    def test_unknown_name_lists_known(self) -> None:
        """An unknown name raises UnknownTokenizer listing the built-ins."""
        with pytest.raises(UnknownTokenizer, match="o200k_base"):
            get_encoding("o300k_base")

    def test_gpt2_is_r50k(self) -> None:
        """gpt2 has r50k_base's ranks under its own name."""
        gpt2, r50k = get_encoding("gpt2"), get_encoding("r50k_base")
        assert gpt2.name == "gpt2"
        assert gpt2.mergeable_ranks == r50k.mergeable_ranks
        assert gpt2.encode("hello world") == [31373, 995] == r50k.encode("hello world")

    def test_sha256_checked(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A rank file whose sha256 does not match the description is refused."""
        from tokend.core.errors import CorruptData

        spec = builtins_module.load_builtin_spec("r50k_base")
        monkeypatch.setattr(builtins_module, "_ranks", {})
        with pytest.raises(CorruptData, match="sha256"):
            builtins_module._load_ranks(spec["ranks_file"], "0" * 64)


class TestModels:
    """encoding_name_for_model follows tiktoken's table, prefixes included."""

    def test_every_model_in_tiktoken_table(self) -> None:
        """Each exact model name maps like tiktoken's MODEL_TO_ENCODING."""
        for model, expected in tiktoken.model.MODEL_TO_ENCODING.items():
            assert encoding_name_for_model(model) == expected, model

    @pytest.mark.parametrize(
        "model",
        [
            "gpt-4o-2024-05-13",
            "gpt-4o-mini",
            "gpt-4.1-nano",
            "gpt-4.5-preview",
            "gpt-5-mini",
            "o1-preview",
            "o3-mini",
            "o4-mini-high",
            "gpt-oss-120b",
            "gpt-4-0613",
            "gpt-4-32k",
            "gpt-3.5-turbo-16k",
            "gpt-35-turbo-instruct",
            "ft:gpt-4o:org:custom:id",
            "ft:davinci-002:org",
            "chatgpt-4o-latest",
        ],
    )
    def test_prefixes(self, model: str) -> None:
        """Prefixed model names map like tiktoken."""
        assert encoding_name_for_model(model) == tiktoken.model.encoding_name_for_model(model)

    def test_encoding_for_model(self) -> None:
        """encoding_for_model returns the shared built-in."""
        assert encoding_for_model("gpt-4o") is get_encoding("o200k_base")
        assert encoding_for_model("text-davinci-003") is get_encoding("p50k_base")

    def test_unknown_model(self) -> None:
        """An unknown model raises UnknownTokenizer naming it."""
        with pytest.raises(UnknownTokenizer, match="llama-9"):
            encoding_name_for_model("llama-9")
