"""HF tokenizer.json read/write and the import/export formats, checked against HF and tiktoken."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pytest
import regex
import tiktoken
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.formats import (
    load_tiktoken_bpe,
    read_gpt2_merges,
    read_gpt2_vocab,
    token_to_printable,
)
from tokend.core.formats.hf_bpe import (
    merges_from_ranks,
    ranks_from_vocab_merges,
    read_hf_tokenizer_json,
    write_hf_tokenizer_json,
)
from tokend.core.formats.interop import parse_special, read_tokenizer_files
from tokend.core.formats.oniguruma import from_oniguruma, to_oniguruma
from tokend.core.patterns import CL100K_PATTERN, GPT2_PATTERN, NAMED_PATTERNS

# Every test here runs once per engine (compiled, python): see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("each_engine")

DATA = Path(__file__).parents[2] / "core" / "data"
MULTILINGUAL = [
    "Hello 世界! Привет мир. مرحبا بالعالم 🤖🎉 नमस्ते  \n\n  x   y\r\n1234567 it's I'M don't",
    "Ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ, ǅemal, ﬁne, Ω≈ç√∫, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, 1٢٣, ½, x²",
    "def f(x):\n\treturn x**2  # comment\n\n\n    if a != b:\r\n        pass\n",
    "   leading and trailing   \n \n\t ",
    "한국어 텍스트와 日本語のテキスト、そして中文文本。",
]


def builtin(name: str) -> tuple[dict[bytes, int], str, dict[str, int]]:
    spec = json.loads((DATA / f"{name}.json").read_text())
    ranks = load_tiktoken_bpe(DATA / f"{spec['ranks_file']}.gz")
    return ranks, spec["pat_str"], spec["special_tokens"]


@pytest.fixture(scope="module")
def texts(fixtures_dir: Path) -> list[str]:
    shakespeare = gzip.decompress((fixtures_dir / "corpora" / "shakespeare.txt.gz").read_bytes())
    return [
        shakespeare.decode()[:30_000],
        (fixtures_dir / "corpora" / "german.txt").read_text()[:20_000],
        (fixtures_dir / "corpora" / "address.txt").read_text(),
        *MULTILINGUAL,
    ]


class TestRegexDialect:
    @pytest.mark.parametrize("name", sorted(NAMED_PATTERNS))
    def test_rewrite_keeps_meaning_in_regex_module(self, name: str, texts: list[str]) -> None:
        """The Oniguruma-safe rewrite splits text exactly like the original pattern."""
        original = NAMED_PATTERNS[name]
        rewritten = to_oniguruma(original)
        rng = random.Random(7)
        samples = [*texts[1:], *("".join(rng.choices("1234 5\n6a'", k=40)) for _ in range(200))]
        for text in samples:
            assert regex.findall(rewritten, text) == regex.findall(original, text)
        assert from_oniguruma(rewritten) == original

    @pytest.mark.parametrize(
        "pat_str",
        [
            r"\s+$|\S+|\s+",
            r"^\s+|\S+|\s+",
            r"[a-z]+\Z|\s+|[^\s]",
            r"\d{1,2}+|\D",
            r"(?:ab|\d){1,2}+|.|\n",
            r"(?:[a-z]+)|(?i:[A-Z\d])|[^a-z]",
        ],
    )
    def test_custom_patterns_match_tokend_in_hf(self, pat_str: str, tmp_path: Path) -> None:
        """Anchors and bounded possessives are rewritten so HF splits like tokend does."""
        from tokend.core.engine.encoding import Encoding

        ranks = {t: r for t, r in builtin("r50k_base")[0].items() if r < 3000}
        path = tmp_path / "tokenizer.json"
        write_hf_tokenizer_json(path, ranks=ranks, pat_str=pat_str, special_tokens={})
        hf = Tokenizer.from_file(str(path))
        enc = Encoding("custom", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
        rng = random.Random(3)
        for _ in range(800):
            text = "".join(rng.choices("ab cd\n\n 12345xyz\t.AB", k=rng.randint(0, 20)))
            assert hf.encode(text, add_special_tokens=False).ids == enc.encode_ordinary(text)
        assert read_hf_tokenizer_json(path).pat_str == from_oniguruma(to_oniguruma(pat_str))

    def test_flags_without_oniguruma_equivalent_are_refused(self) -> None:
        with pytest.raises(InvalidInput, match="Oniguruma"):
            to_oniguruma(r"(?s:.)+|\n")
        assert from_oniguruma(r"(?m:.)") == r"(?s:.)"  # Ruby's m is dotall

    def test_bounded_possessive_becomes_atomic(self) -> None:
        assert to_oniguruma(r"\p{N}{1,3}+") == r"(?>\p{N}{1,3})"
        assert to_oniguruma(r"(a\d{2}+)$") == r"(a(?>\d{2}))\Z"
        assert to_oniguruma(r"(?P<w>a^)") == r"(?<w>a\A)"
        assert from_oniguruma(r"\d{1,3}+^") == r"(?:\d{1,3})+(?m:^)"
        assert to_oniguruma(r"[a\]]{2}+(x|y){1,}+") == r"(?>[a\]]{2})(?>(x|y){1,})"
        assert to_oniguruma(CL100K_PATTERN) != CL100K_PATTERN
        assert to_oniguruma(GPT2_PATTERN) == GPT2_PATTERN


class TestMerges:
    def test_merges_derived_from_gpt2_ranks_equal_merges_txt(self, fixtures_dir: Path) -> None:
        """Replaying BPE on r50k's ranks gives back GPT-2's published merges.txt, in order."""
        enc_dir = fixtures_dir / "encodings"
        vocab = read_gpt2_vocab(enc_dir / "gpt2_vocab.json.gz")
        merges = read_gpt2_merges(enc_dir / "gpt2_merges.txt.gz")
        ranks, leftovers = ranks_from_vocab_merges(vocab, merges)
        assert merges_from_ranks(ranks) == merges
        assert leftovers == {50256: b"<|endoftext|>"}
        assert ranks == builtin("r50k_base")[0]

    def test_ids_out_of_merge_order_are_refused(self) -> None:
        vocab = {0: b"a", 1: b"b", 2: b"c", 4: b"ab", 3: b"abc"}
        with pytest.raises(InvalidInput, match="merge order"):
            ranks_from_vocab_merges(vocab, [(b"a", b"b"), (b"ab", b"c")])

    def test_merge_of_unknown_token_is_corrupt(self) -> None:
        with pytest.raises(CorruptData, match="not in the vocabulary"):
            ranks_from_vocab_merges({0: b"a", 1: b"b"}, [(b"a", b"b")])


RANDOM_ALPHABET = list(" \n\r\t\u00a0aAzZ09'’sStTdDll1١éÉß日本語한😀👍🏽\u200d.,!?-_/\\:;\"()<>|$")


class TestExportToHF:
    @pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "r50k_base"])
    def test_hf_gives_tiktoken_ids(self, name: str, tmp_path: Path, texts: list[str]) -> None:
        """An exported tokenizer.json loads in HF tokenizers with tiktoken's exact ids.

        Real text, special tokens, and 1,500 random strings over a tricky alphabet.
        """
        ranks, pat_str, specials = builtin(name)
        path = tmp_path / "tokenizer.json"
        write_hf_tokenizer_json(path, ranks=ranks, pat_str=pat_str, special_tokens=specials)
        hf = Tokenizer.from_file(str(path))
        enc = tiktoken.Encoding(
            name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=specials
        )
        eot = next(iter(specials))
        for text in [*texts, f"a{eot}b {eot}\n{eot}"]:
            ids = enc.encode(text, allowed_special="all")
            assert hf.encode(text, add_special_tokens=False).ids == ids
            assert hf.decode(ids, skip_special_tokens=False) == enc.decode(ids)
        rng = random.Random(0)
        for _ in range(1500):
            text = "".join(rng.choices(RANDOM_ALPHABET, k=rng.randint(0, 25)))
            assert hf.encode(text, add_special_tokens=False).ids == enc.encode_ordinary(text)
        # Reading it back gives the same pattern and specials (and, checked on the smallest
        # table since it re-derives every merge, the same ranks).
        back = read_hf_tokenizer_json(path)
        assert back.pat_str == pat_str
        assert back.special_tokens == specials
        if name == "r50k_base":
            assert ranks_from_vocab_merges(back.vocab, back.merges)[0] == ranks


def hf_config(**changes: Any) -> dict[str, Any]:
    """A minimal valid byte-level BPE tokenizer.json, with top-level keys replaced."""
    base: dict[str, Any] = {
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "model": {
            "type": "BPE",
            "vocab": {token_to_printable(bytes([i])): i for i in range(256)},
            "merges": [],
        },
    }
    base.update(changes)
    return base


class TestReadHF:
    def test_hf_trained_tokenizer_imports_exactly(self, tmp_path: Path, texts: list[str]) -> None:
        """A tokenizer trained and saved by HF itself imports with HF-identical ids."""
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=600,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(texts[:2], trainer=trainer)
        path = tmp_path / "tokenizer.json"
        tok.save(str(path))
        parts = read_tokenizer_files([path])
        assert parts.pat_str == GPT2_PATTERN
        assert parts.special_tokens == {"<|endoftext|>": 0}
        enc = tiktoken.Encoding(
            "t", pat_str=parts.pat_str, mergeable_ranks=parts.ranks, special_tokens={}
        )
        for text in texts:
            assert enc.encode_ordinary(text) == tok.encode(text).ids

    @pytest.mark.parametrize(
        ("changes", "match"),
        [
            ({"normalizer": {"type": "NFC"}}, "normalizer"),
            ({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True}}, "prefix"),
            ({"pre_tokenizer": {"type": "Whitespace"}}, "byte-level"),
            ({"pre_tokenizer": None}, "pre_tokenizer"),
            ({"model": {"type": "WordPiece", "vocab": {}}}, "only BPE"),
            (
                {
                    "pre_tokenizer": {
                        "type": "Sequence",
                        "pretokenizers": [
                            {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated"},
                            {"type": "ByteLevel", "use_regex": False},
                        ],
                    }
                },
                "Regex",
            ),
            (
                {
                    "pre_tokenizer": {
                        "type": "Sequence",
                        "pretokenizers": [
                            {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Removed"},
                            {"type": "ByteLevel", "use_regex": False},
                        ],
                    }
                },
                "Isolated",
            ),
        ],
    )
    def test_unsupported_configs_are_refused(
        self, tmp_path: Path, changes: dict[str, Any], match: str
    ) -> None:
        path = tmp_path / "tokenizer.json"
        path.write_text(json.dumps(hf_config(**changes)))
        with pytest.raises(InvalidInput, match=match):
            read_hf_tokenizer_json(path)

    @pytest.mark.parametrize("content", ["{", "[]", '{"model": 3}'])
    def test_malformed_json_is_corrupt(self, tmp_path: Path, content: str) -> None:
        path = tmp_path / "tokenizer.json"
        path.write_text(content)
        with pytest.raises(CorruptData, match=str(path)):
            read_hf_tokenizer_json(path)

    def test_minimal_config_reads(self, tmp_path: Path) -> None:
        path = tmp_path / "tokenizer.json"
        path.write_text(json.dumps(hf_config()))
        hf = read_hf_tokenizer_json(path)
        assert hf.vocab == {i: bytes([i]) for i in range(256)}
        assert hf.pat_str == GPT2_PATTERN


class TestImportFormats:
    def test_gpt2_pair_and_directory(self, fixtures_dir: Path, tmp_path: Path) -> None:
        """vocab.json + merges.txt import as r50k's ranks with <|endoftext|> as a special."""
        enc_dir = fixtures_dir / "encodings"
        pair = [enc_dir / "gpt2_merges.txt.gz", enc_dir / "gpt2_vocab.json.gz"]
        parts = read_tokenizer_files(pair)
        ranks, _, specials = builtin("r50k_base")
        assert parts.ranks == ranks
        assert parts.special_tokens == specials
        assert parts.pat_str == GPT2_PATTERN
        folder = tmp_path / "gpt2"
        folder.mkdir()
        (folder / "vocab.json").write_bytes(gzip.decompress(pair[1].read_bytes()))
        (folder / "merges.txt").write_bytes(gzip.decompress(pair[0].read_bytes()))
        assert read_tokenizer_files([folder], fmt="gpt2").ranks == ranks

    def test_tiktoken_with_known_ranks_infers_pattern(self, tmp_path: Path) -> None:
        ranks, pat_str, specials = builtin("cl100k_base")
        path = tmp_path / "x.tiktoken"
        path.write_bytes(gzip.decompress((DATA / "cl100k_base.tiktoken.gz").read_bytes()))
        parts = read_tokenizer_files([path])
        assert (parts.ranks, parts.pat_str, parts.special_tokens) == (ranks, pat_str, specials)
        assert parts.notes
        overridden = read_tokenizer_files([path], pattern="gpt2", special_tokens={"<x>": 200000})
        assert overridden.pat_str == GPT2_PATTERN
        assert overridden.special_tokens == {"<x>": 200000}

    def test_tiktoken_with_unknown_ranks_needs_a_pattern(self, tmp_path: Path) -> None:
        path = tmp_path / "x.tiktoken"
        path.write_bytes(b"YQ== 0\nYg== 1\n")
        with pytest.raises(InvalidInput, match="--pattern"):
            read_tokenizer_files([path])
        assert read_tokenizer_files([path], pattern="o200k").ranks == {b"a": 0, b"b": 1}

    def test_bad_inputs(self, tmp_path: Path) -> None:
        with pytest.raises(InvalidInput, match="no such file"):
            read_tokenizer_files([tmp_path / "missing.tiktoken"])
        odd = tmp_path / "x.bin"
        odd.write_bytes(b"")
        with pytest.raises(InvalidInput, match="--format"):
            read_tokenizer_files([odd])
        with pytest.raises(InvalidInput, match="format"):
            read_tokenizer_files([odd], fmt="word2vec")

    @pytest.mark.parametrize("item", ["x", "=1", "<s>=", "<s>=a"])
    def test_parse_special_refuses(self, item: str) -> None:
        with pytest.raises(InvalidInput, match="TEXT=ID"):
            parse_special([item])

    def test_parse_special_uses_last_equals(self) -> None:
        assert parse_special(["a=b=3", "<s>=1"]) == {"a=b": 3, "<s>": 1}


class TestTrainedRoundTrip:
    def test_trained_tokenizer_through_registry_hf_and_back(
        self, tmp_path: Path, texts: list[str]
    ) -> None:
        """train_bpe -> publish -> export tokenizer.json -> HF ids == tokend ids -> re-import."""
        from tokend.core.formats.interop import export_tokenizer
        from tokend.core.registry import Registry
        from tokend.core.training.byte_bpe import train_bpe

        chunks = iter(texts[:2])  # an iterable of text (a list would mean file paths)
        result = train_bpe(chunks, 700, ["<|endoftext|>"], pattern="o200k", workers=1)
        reg = Registry(tmp_path / "reg", include_builtins=False)
        info = reg.publish(
            "trained",
            ranks=result.mergeable_ranks(),
            pat_str=result.pattern,
            special_tokens=result.special_tokens,
        )
        _, enc = reg.load(info.ref)
        path = tmp_path / "tokenizer.json"
        data = reg.load_data(info.ref)
        export_tokenizer(
            path,
            fmt="hf-json",
            ranks=data.ranks,
            pat_str=data.pat_str,
            special_tokens=data.special_tokens,
        )
        hf = Tokenizer.from_file(str(path))
        for text in [*texts, "x<|endoftext|>y"]:
            ids = enc.encode(text, allowed_special="all")
            assert hf.encode(text, add_special_tokens=False).ids == ids
        parts = read_tokenizer_files([path])
        assert parts.ranks == data.ranks
        assert parts.pat_str == data.pat_str
        assert parts.special_tokens == data.special_tokens
