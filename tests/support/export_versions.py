"""A registry holding one version of every kind ``tokend registry export`` meets, and what
export must do with each (stored format x requested format); used by the library and the CLI
tests of export (tests/core/test_registry_export.py, tests/test_cli_export.py)."""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import json
import tempfile
from pathlib import Path
from typing import Any

from family_texts import SAMPLES, real_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SMALL_TIKTOKEN = b"".join(
    base64.b64encode(bytes([i])) + b" %d\n" % i for i in range(256)
) + b"".join(base64.b64encode(b"t%d" % i) + b" %d\n" % (256 + i) for i in range(50))
TEXTS = [*SAMPLES.values(), "t1 t22 t3 <|endoftext|> e\u0301 \u00e9 ﬁ  x\n\n  y"]
FORMATS = ("hf-json", "tiktoken", "original")

# variant -> (hf-json, tiktoken, original): "stored" (the version's own file, byte for byte),
# "converted" (written, same ids), or the words a refusal must contain.
EXPECTED: dict[str, tuple[str, str, str]] = {
    "trained-char": ("stored", "not a byte-level BPE rank table", "stored"),
    "trained-word-bpe": ("stored", "not a byte-level BPE rank table", "stored"),
    "trained-wordpiece": ("stored", "not a byte-level BPE rank table", "stored"),
    "trained-unigram": ("stored", "not a byte-level BPE rank table", "stored"),
    "imported-json": ("stored", "not a byte-level BPE rank table", "stored"),
    "bytelevel-json": ("stored", "converted", "stored"),
    "bytelevel-json-special": ("converted", "converted", "stored"),
    "tiktoken": ("converted", "stored", "stored"),
    "tiktoken-nfc": ("applies NFC", "stored", "stored"),
    "builtin": ("converted", "converted", "is a built-in"),
    "spm-unigram": ("SentencePiece Unigram model", "byte-level BPE ranks only", "stored"),
    "spm-bpe": ("SentencePiece BPE model", "byte-level BPE ranks only", "stored"),
    "tekken": ("converted", "converted", "stored"),
}


def registry_cli(*args: object, registry: Path) -> Any:
    """``tokend registry ARGS --json`` in-process; the parsed answer."""
    from tokend.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = ["registry", *map(str, args), "--registry", str(registry), "--json"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    assert status == 0, err.getvalue()
    return json.loads(out.getvalue())


def _spm_unigram() -> bytes:
    import sentencepiece

    lines = (FIXTURES / "corpora" / "corpus.en").read_text(encoding="utf-8").splitlines()[:300]
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=300, minloglevel=2,
        model_type="unigram")
    return model.getvalue()


@functools.cache
def build_registry() -> tuple[Path, dict[str, str]]:
    """The registry (built once per session, in a temporary folder) and variant -> ref."""
    from tokend.core.formats.hf_bpe import format_hf_tokenizer_json
    from tokend.core.registry import Registry
    from tokend.core.training import train_tokenizer

    root = Path(tempfile.mkdtemp(prefix="tokend-export-"))
    reg_dir, files = root / "reg", root / "files"
    files.mkdir()
    registry = Registry(reg_dir)
    refs: dict[str, str] = {}
    corpus = FIXTURES / "corpora" / "corpus.en"
    for kind in ("char", "word-bpe", "wordpiece", "unigram"):
        trained = train_tokenizer(str(corpus), 300, ["<|endoftext|>"], model=kind)
        data = trained.tokenizer_json_bytes()  # type: ignore[union-attr]
        refs[f"trained-{kind}"] = registry.publish_file(f"t-{kind}", fmt="hf-json",
                                                        data=data).ref

    def imported(variant: str, *args: object) -> None:
        name = variant.replace("_", "-")
        refs[variant] = registry_cli("import", name, "--from", *args, registry=reg_dir)["ref"]

    imported("imported-json", real_file("minilm-bert.json"))
    small = files / "small.tiktoken"
    small.write_bytes(SMALL_TIKTOKEN)
    imported("tiktoken", small, "--pattern", "cl100k", "--special", "<|endoftext|>=306")
    imported("tiktoken-nfc", small, "--pattern", "cl100k", "--normalizer", "nfc")
    from tokend.core.formats import parse_tiktoken_bpe
    from tokend.core.patterns import resolve_pattern

    bytelevel = files / "tokenizer.json"
    bytelevel.write_bytes(format_hf_tokenizer_json(
        ranks=parse_tiktoken_bpe(SMALL_TIKTOKEN), pat_str=resolve_pattern("cl100k"),
        special_tokens={"<|endoftext|>": 306}))
    imported("bytelevel-json", bytelevel)
    imported("bytelevel-json-special", bytelevel, "--special", "<|endoftext|>=306",
             "--special", "<|fim|>=307")
    refs["builtin"] = "r50k_base"
    spm = files / "unigram.model"
    spm.write_bytes(_spm_unigram())
    imported("spm-unigram", spm)
    imported("spm-bpe", real_file("mistral-v1.model"))
    imported("tekken", real_file("tekken-240911.json"))
    assert set(refs) == set(EXPECTED)
    return reg_dir, refs


def stored_bytes(registry: Path, ref: str, fmt: str) -> bytes:
    """What the version holds in ``fmt``: its file, or beside its ranks the kept tokenizer.json
    (``original`` and ``hf-json``) or the rank file itself (``original`` and ``tiktoken``)."""
    from tokend.core.registry import Registry

    data = Registry(registry).load_data(ref)
    if data.file is not None:
        return data.file
    assert data.manifest is not None and data.original is not None
    kept = data.manifest.get("original_format") == "hf-json"
    assert fmt == "original" or kept == (fmt == "hf-json")
    return data.original


def check_same_ids(registry: Path, ref: str, fmt: str, exported: bytes) -> None:
    """The exported file, loaded by its own reference library, gives the served ids."""
    import unicodedata

    import tiktoken
    from tokenizers import Tokenizer

    from tokend.core.formats import parse_tiktoken_bpe
    from tokend.core.registry import Registry

    registry_ = Registry(registry)
    _, served = registry_.load(ref)
    data = registry_.load_data(ref)
    if fmt == "hf-json":
        hf = Tokenizer.from_str(exported.decode("utf-8"))
        hf.no_truncation()  # as the ids tokend serves (a file's limits are the caller's)
        hf.no_padding()
        for text in TEXTS:
            expected = served.encode(text, allowed_special="all")
            assert hf.encode(text, add_special_tokens=False).ids == expected, (ref, text)
        return
    assert fmt == "tiktoken"
    # a rank table's pattern and specials, or those of the Encoding a Tekken file becomes
    source: Any = data if data.file is None else served
    enc = tiktoken.Encoding(ref, pat_str=source.pat_str,
                            mergeable_ranks=parse_tiktoken_bpe(exported),
                            special_tokens=dict(source.special_tokens))
    for text in TEXTS:
        plain = unicodedata.normalize("NFC", text) if data.normalizer else text
        assert enc.encode(plain, allowed_special="all") == served.encode(
            text, allowed_special="all"), (ref, text)
