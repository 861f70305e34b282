"""Real tokenizer files through ``tokend registry``: format read from the contents, versioned,
sha256-checked, exported back byte for byte, and loaded with the reference's ids."""

from __future__ import annotations

import contextlib
import io
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from family_texts import SAMPLES, real_file

from tokend.cli import main
from tokend.core.errors import CorruptData
from tokend.core.formats.files import sniff_format
from tokend.core.patterns import resolve_pattern
from tokend.core.registry import Registry

# file -> the format the contents must be read as
REAL = {
    "mistral-v1.model": "sentencepiece",
    "mistral-v3.model": "sentencepiece",
    "tekken-240911.json": "tekken",
    "deepseek.json": "hf-json",
    "minilm-bert.json": "hf-json",
    "mon-unigram.json": "hf-json",
}


def cli(*args: object, registry: Path) -> Any:
    """``tokend registry ARGS --json`` in-process; the parsed JSON answer."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["registry", *map(str, args), "--registry", str(registry), "--json"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    assert status == 0, err.getvalue()
    return json.loads(out.getvalue())


class TestRealFilesInTheRegistry:
    @pytest.mark.parametrize("file", sorted(REAL))
    def test_import_export_and_serve(self, file: str, tmp_path: Path) -> None:
        """Sniffed format, exact bytes back out, the same ids as the file loaded directly."""
        from tokend.core.formats.files import load_file

        path = real_file(file)
        data = path.read_bytes()
        assert sniff_format(data) == REAL[file]
        reg = tmp_path / "reg"
        name = file.split(".", maxsplit=1)[0].replace("_", "-")
        info = cli("import", name, "--from", path, registry=reg)
        assert info["ref"] == f"{name}@1"
        assert info["manifest"]["format"] == REAL[file]
        cli("alias", name, "stable", "1", registry=reg)
        out = tmp_path / "out"
        cli("export", f"{name}@stable", "--format", "original", "--out", out, registry=reg)
        assert out.read_bytes() == data
        _, served = Registry(reg).load(f"{name}@stable")
        direct = load_file(REAL[file], data, name="direct")
        for text in SAMPLES.values():
            assert served.encode(text, disallowed_special=frozenset()) == direct.encode_ordinary(
                text
            )
        assert served.n_vocab == direct.n_vocab == info["manifest"]["n_vocab"]

    def test_a_changed_file_is_never_served(self, tmp_path: Path) -> None:
        """The stored file is sha256-checked on every load."""
        reg = Registry(tmp_path)
        version = reg.publish_file("bert", fmt="hf-json", data=real_file("minilm-bert.json")
                                   .read_bytes())
        stored = Path(version.path) / "tokenizer.json"
        stored.write_bytes(stored.read_bytes().replace(b'"[UNK]"', b'"[UNX]"', 1))
        with pytest.raises(CorruptData, match="sha256"):
            reg.load("bert")

    def test_unsupported_component_is_refused_at_import(self, tmp_path: Path) -> None:
        """A file tokend cannot serve exactly is never published; the reason names the path."""
        raw = json.loads(real_file("minilm-bert.json").read_bytes())
        raw["pre_tokenizer"] = {"type": "UnicodeScripts"}
        bad = tmp_path / "tokenizer.json"
        bad.write_text(json.dumps(raw))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["registry", "import", "x", "--from", str(bad), "--registry",
                           str(tmp_path / "reg")])
        assert status == 2  # an invalid input, as for any refused argument
        assert "pre_tokenizer: pre-tokenizer 'UnicodeScripts' is not supported" in err.getvalue()
        assert Registry(tmp_path / "reg").list()[0].builtin  # nothing was published


class TestTiktokenNormalizer:
    def test_normalizer_is_recorded_and_applied(self, tmp_path: Path) -> None:
        """--normalizer nfc on a .tiktoken file: in the manifest, and NFD text counts as NFC."""
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        path = real_file("qwen.tiktoken")
        pattern = resolve_pattern("cl100k")
        reg = tmp_path / "reg"
        info = cli("import", "qwen", "--from", path, "--pattern", "cl100k", "--normalizer", "nfc",
                   registry=reg)
        assert info["manifest"]["normalizer"] == "nfc"
        _, served = Registry(reg).load("qwen")
        ref = tiktoken.Encoding("qwen", pat_str=pattern,
                                mergeable_ranks=load_tiktoken_bpe(str(path)),
                                special_tokens={})
        for text in SAMPLES.values():
            nfd = unicodedata.normalize("NFD", text)
            assert served.encode_ordinary(nfd) == ref.encode_ordinary(
                unicodedata.normalize("NFC", text))
        out = tmp_path / "out.tiktoken"
        cli("export", "qwen", "--format", "original", "--out", out, registry=reg)
        assert out.read_bytes() == path.read_bytes()
