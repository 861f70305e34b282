"""Tokenizers trained with HF ``tokenizers``, differential over every pipeline component.

Each model type is trained once on the fixture corpora; its tokenizer.json is then re-wired
with every normalizer x pre-tokenizer (HF loads any combination), and tokend and HF must agree
on ids and decoded text for the shared samples. Hypothesis draws random combinations with
random Unicode text on top.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from family_texts import SAMPLES, random_text, tricky_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from tokenizers import normalizers as hf_norm

from tokend.core.errors import InvalidInput
from tokend.core.formats.tokenizer_json import load_tokenizer_json, tokenizer_from_json
from tokend.core.pipeline.tokenizer import PipelineTokenizer

FIXTURES = __import__("pathlib").Path(__file__).resolve().parents[2] / "fixtures" / "corpora"
EXTRA = [
    "日本語のテキストと中文文本，还有한국어 텍스트。東京都 大阪",
    "emoji 🎉👍🏽 ❤️ café naïve Ωμέγα 12345 67 x²",
] * 20


def corpus() -> list[str]:
    lines = (FIXTURES / "corpus.en").read_text(encoding="utf-8").splitlines()[:400]
    lines += (FIXTURES / "german.txt").read_text(encoding="utf-8").splitlines()
    lines += (FIXTURES / "tinystories_sample.txt").read_text(encoding="utf-8").splitlines()
    return lines + EXTRA


SPECIALS = ["<unk>", "<s>", "</s>", "[MASK]"]


def _train(kind: str) -> dict[str, Any]:
    """Train one small tokenizer of ``kind`` and return its tokenizer.json object."""
    if kind == "BPE":
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        trainer: Any = trainers.BpeTrainer(vocab_size=600, special_tokens=SPECIALS)
    elif kind == "BPE-affixes":
        tok = Tokenizer(models.BPE(unk_token="<unk>", continuing_subword_prefix="##",
                                   end_of_word_suffix="</w>", fuse_unk=True))
        trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=SPECIALS,
                                      continuing_subword_prefix="##", end_of_word_suffix="</w>")
    elif kind == "BPE-byte-fallback":
        tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
        alphabet = [f"<0x{b:02X}>" for b in range(256)]
        trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=SPECIALS + alphabet)
    elif kind == "ByteLevel-BPE":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=SPECIALS,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    elif kind == "WordPiece":
        tok = Tokenizer(models.WordPiece(unk_token="<unk>", max_input_chars_per_word=12))
        trainer = trainers.WordPieceTrainer(vocab_size=600, special_tokens=SPECIALS)
    elif kind == "Unigram":
        tok = Tokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(vocab_size=600, special_tokens=SPECIALS,
                                          unk_token="<unk>")
    else:
        tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
        trainer = trainers.WordLevelTrainer(vocab_size=600, special_tokens=SPECIALS)
    if tok.pre_tokenizer is None:
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(corpus(), trainer)
    raw: dict[str, Any] = json.loads(tok.to_str())
    if kind == "Unigram":
        raw["model"]["byte_fallback"] = False
    return raw


@functools.cache
def trained(kind: str) -> str:
    return json.dumps(_train(kind))


MODELS = ["BPE", "BPE-affixes", "BPE-byte-fallback", "ByteLevel-BPE", "WordPiece", "Unigram",
          "WordLevel"]


def state(component: Any) -> Any:
    return json.loads(component.__getstate__())


NORMALIZERS: dict[str, Any] = {
    "none": None,
    "NFC": hf_norm.NFC(), "NFD": hf_norm.NFD(), "NFKC": hf_norm.NFKC(), "NFKD": hf_norm.NFKD(),
    "Lowercase": hf_norm.Lowercase(),
    "Strip": hf_norm.Strip(left=True, right=False),
    "StripAccents": hf_norm.Sequence([hf_norm.NFD(), hf_norm.StripAccents()]),
    "Replace-string": hf_norm.Replace("e", "E"),
    "Replace-regex": hf_norm.Replace(__import__("tokenizers").Regex(r"\s+"), " "),
    "Prepend": hf_norm.Prepend("▁"),
    "BertNormalizer": hf_norm.BertNormalizer(),
    "BertNormalizer-cased": hf_norm.BertNormalizer(lowercase=False, strip_accents=True),
    "Nmt": hf_norm.Nmt(),
    "Sequence-empty": hf_norm.Sequence([]),
    "Sequence": hf_norm.Sequence([hf_norm.NFKC(), hf_norm.Lowercase(), hf_norm.Strip()]),
}

_REGEX = __import__("tokenizers").Regex
PRE_TOKENIZERS: dict[str, Any] = {
    "none": None,
    "Whitespace": pre_tokenizers.Whitespace(),
    "WhitespaceSplit": pre_tokenizers.WhitespaceSplit(),
    "BertPreTokenizer": pre_tokenizers.BertPreTokenizer(),
    "Punctuation": pre_tokenizers.Punctuation(),
    "Punctuation-merged-next": pre_tokenizers.Punctuation("merged_with_next"),
    "Digits": pre_tokenizers.Digits(individual_digits=False),
    "Digits-individual": pre_tokenizers.Digits(individual_digits=True),
    "CharDelimiterSplit": pre_tokenizers.CharDelimiterSplit("e"),
    "Metaspace-always": pre_tokenizers.Metaspace(prepend_scheme="always"),
    "Metaspace-first-nosplit": pre_tokenizers.Metaspace(prepend_scheme="first", split=False),
    "Metaspace-never": pre_tokenizers.Metaspace(prepend_scheme="never"),
    "ByteLevel": pre_tokenizers.ByteLevel(add_prefix_space=True),
    "ByteLevel-noregex": pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    "Split-string-removed": pre_tokenizers.Split(" ", "removed"),
    "Split-regex-contiguous": pre_tokenizers.Split(_REGEX(r"\d|\s"), "contiguous"),
    "Split-regex-previous": pre_tokenizers.Split(_REGEX(r"[.,!?]"), "merged_with_previous"),
    "Split-regex-invert": pre_tokenizers.Split(_REGEX(r"\p{L}+"), "isolated", invert=True),
    "Sequence": pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                         pre_tokenizers.Digits(True)]),
}


def decoder_for(model: str, pre: str) -> Any:
    if model == "ByteLevel-BPE" or pre.startswith("ByteLevel"):
        return decoders.ByteLevel()
    if model == "WordPiece":
        return decoders.WordPiece()
    if model == "BPE-affixes":
        return decoders.BPEDecoder(suffix="</w>")
    if pre.startswith("Metaspace"):
        scheme = {"Metaspace-always": "always", "Metaspace-never": "never"}.get(pre, "first")
        return decoders.Metaspace(prepend_scheme=scheme)
    if model == "BPE-byte-fallback":
        return decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                  decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    return None


def wired(model: str, normalizer: str, pre: str) -> tuple[PipelineTokenizer, Tokenizer]:
    raw = json.loads(trained(model))
    norm = NORMALIZERS[normalizer]
    raw["normalizer"] = state(norm) if norm is not None else None
    if model == "ByteLevel-BPE" and not pre.startswith("ByteLevel"):
        steps = [state(PRE_TOKENIZERS[pre])] if PRE_TOKENIZERS[pre] is not None else []
        steps.append(state(pre_tokenizers.ByteLevel(add_prefix_space=False)))
        raw["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": steps}
    else:
        pt = PRE_TOKENIZERS[pre]
        raw["pre_tokenizer"] = state(pt) if pt is not None else None
    dec = decoder_for(model, pre)
    raw["decoder"] = state(dec) if dec is not None else None
    text = json.dumps(raw)
    return tokenizer_from_json(json.loads(text), name=model), Tokenizer.from_str(text)


def agree(ours: PipelineTokenizer, ref: Tokenizer, text: str, label: str = "") -> None:
    ids = ours.encode(text, allowed_special="all")  # HF matches every added token
    hf = ref.encode(text, add_special_tokens=False)
    assert ids == hf.ids, f"{label} {text!r}"
    assert ours.decode(ids) == ref.decode(ids, skip_special_tokens=False), f"{label} {text!r}"
    # offsets: into the original text, in characters, as HF's Encoding.offsets
    assert ours.encode_with_offsets(text, allowed_special="all") == (ids, hf.offsets), \
        f"{label} {text!r}"


@pytest.mark.parametrize("normalizer", sorted(NORMALIZERS))
@pytest.mark.parametrize("model", MODELS)
def test_every_pre_tokenizer_matches_hf(model: str, normalizer: str) -> None:
    """Every pre-tokenizer under this model and normalizer gives HF's ids and decode."""
    for pre in PRE_TOKENIZERS:
        ours, ref = wired(model, normalizer, pre)
        for text in SAMPLES.values():
            agree(ours, ref, text, pre)


@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    normalizer=st.sampled_from(sorted(NORMALIZERS)),
    pre=st.sampled_from(sorted(PRE_TOKENIZERS)),
    text=random_text,
)
def test_random_pipelines_and_text_match_hf(model: str, normalizer: str, pre: str,
                                            text: str) -> None:
    """A random normalizer x pre-tokenizer on random Unicode text gives HF's ids."""
    ours, ref = wired(model, normalizer, pre)
    agree(ours, ref, text, f"{normalizer} x {pre}")


@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    normalizer=st.sampled_from(sorted(NORMALIZERS)),
    pre=st.sampled_from(sorted(PRE_TOKENIZERS)),
    text=tricky_text,
)
def test_offsets_on_tricky_unicode_match_hf(model: str, normalizer: str, pre: str,
                                            text: str) -> None:
    """NFKC expansions, combining marks, Strip/Replace/Prepend, byte fallback: HF's offsets.

    Where HF's Rust Unicode tables (an older version than Python's) give other ids, only the
    agreement of our two paths is checked; the ids themselves are the other tests' business.
    """
    ours, ref = wired(model, normalizer, pre)
    ids = ours.encode(text, allowed_special="all")
    got = ours.encode_with_offsets(text, allowed_special="all")
    assert got[0] == ids
    hf = ref.encode(text, add_special_tokens=False)
    if hf.ids == ids:
        assert got[1] == hf.offsets, f"{normalizer} x {pre} {text!r}"


class TestAddedTokens:
    """Added tokens: special or not, lstrip / rstrip / single_word / normalized."""

    @staticmethod
    def pair(**options: bool) -> tuple[PipelineTokenizer, Tokenizer]:
        from tokenizers import AddedToken

        ref = Tokenizer.from_str(trained("BPE"))
        ref.normalizer = hf_norm.Lowercase()
        ref.add_special_tokens([AddedToken("<SEP>", **options)])
        ref.add_tokens([AddedToken("Hello", **options), AddedToken("ab", **options)])
        return load_tokenizer_json(ref.to_str().encode(), name="added"), ref

    @pytest.mark.parametrize(
        "options",
        [{}, {"lstrip": True}, {"rstrip": True}, {"single_word": True},
         {"normalized": False}, {"normalized": True}, {"lstrip": True, "rstrip": True,
                                                       "single_word": True}],
        ids=repr,
    )
    def test_options_match_hf(self, options: dict[str, bool]) -> None:
        """Each option splits and strips as HF does, special and non-special alike."""
        ours, ref = self.pair(**options)
        for text in ["Hello world <SEP> hello  <SEP>x HELLO", "abab cab ab, (ab) Hello<SEP>",
                     "  <SEP>  ", "xHellox Hello", *SAMPLES.values()]:
            ids = ours.encode(text, allowed_special="all")
            hf = ref.encode(text, add_special_tokens=False)
            assert ids == hf.ids, text
            assert ours.decode(ids) == ref.decode(ids, skip_special_tokens=False)
            assert ours.encode_with_offsets(text, allowed_special="all") == (ids, hf.offsets)

    def test_disallowed_special_text_is_refused_and_unallowed_reads_as_text(self) -> None:
        """tiktoken's policy on special added tokens; non-special ones always match."""
        from tokend.core.errors import DisallowedSpecialToken

        ours, ref = self.pair()
        with pytest.raises(DisallowedSpecialToken):
            ours.encode("a <SEP> b")
        ref.encode_special_tokens = True
        assert ours.encode("a <SEP> Hello", disallowed_special=()) == ref.encode(
            "a <SEP> Hello", add_special_tokens=False).ids


class TestPostProcessors:
    """add_special_tokens wraps the ids as HF's post-processor does."""

    @pytest.mark.parametrize("kind", ["template", "bert", "roberta", "bytelevel"])
    def test_post_process_matches_hf(self, kind: str) -> None:
        from tokenizers import processors

        ref = Tokenizer.from_str(trained("WordPiece"))
        ids = {t: ref.token_to_id(t) for t in ("<s>", "</s>")}
        ref.post_processor = {
            "template": processors.TemplateProcessing(
                single="<s> $A </s>", special_tokens=list(ids.items())),
            "bert": processors.BertProcessing(("</s>", ids["</s>"]), ("<s>", ids["<s>"])),
            "roberta": processors.RobertaProcessing(("</s>", ids["</s>"]), ("<s>", ids["<s>"])),
            "bytelevel": processors.ByteLevel(),
        }[kind]
        ours = load_tokenizer_json(ref.to_str().encode(), name="post")
        for text in SAMPLES.values():
            plain = ours.encode_ordinary(text)
            assert ours.post_process(plain) == ref.encode(text).ids

    @pytest.mark.parametrize(
        "kind", ["template", "roberta", "bytelevel", "bytelevel-prefix", "bytelevel-untrimmed",
                 "sequence"])
    def test_offsets_are_trimmed_and_framed_as_hf(self, kind: str) -> None:
        """ByteLevel / Roberta trim spaces off spans (with or without add_special_tokens);
        framing special tokens span (0, 0)."""
        from tokenizers import processors

        ref = Tokenizer.from_str(trained("ByteLevel-BPE"))
        ids = {t: ref.token_to_id(t) for t in ("<s>", "</s>")}
        template = processors.TemplateProcessing(single="<s> $A </s>",
                                                 special_tokens=list(ids.items()))
        ref.post_processor = {
            "template": template,
            "roberta": processors.RobertaProcessing(("</s>", ids["</s>"]), ("<s>", ids["<s>"])),
            "bytelevel": processors.ByteLevel(add_prefix_space=False),
            "bytelevel-prefix": processors.ByteLevel(),
            "bytelevel-untrimmed": processors.ByteLevel(trim_offsets=False),
            "sequence": processors.Sequence([processors.ByteLevel(), template]),
        }[kind]
        ours = load_tokenizer_json(ref.to_str().encode(), name="post")
        for text in [*SAMPLES.values(), " a  b ", "x \n\n  y"]:
            for add in (False, True):
                hf = ref.encode(text, add_special_tokens=add)
                assert ours.encode_with_offsets(text, disallowed_special=(),
                                                add_special_tokens=add) == (hf.ids, hf.offsets)


class TestRefusals:
    """A component tokend cannot reproduce is refused, naming it and its JSON path."""

    @pytest.mark.parametrize(
        ("path", "value", "message"),
        [
            ("pre_tokenizer", {"type": "UnicodeScripts"}, "pre_tokenizer: pre-tokenizer"),
            ("normalizer", {"type": "Sequence", "normalizers": [{"type": "NFC"},
                                                               {"type": "Fancy"}]},
             "normalizer.normalizers[1]: normalizer 'Fancy'"),
            ("decoder", {"type": "CTC"}, "decoder: decoder 'CTC'"),
            ("post_processor", {"type": "Weird"}, "post_processor: post-processor"),
        ],
    )
    def test_unknown_component_is_refused_with_its_path(
        self, path: str, value: Any, message: str
    ) -> None:
        """One line: the file, the JSON path, the component."""
        raw = json.loads(trained("WordLevel"))
        raw[path] = value
        with pytest.raises(InvalidInput, match=message.replace("[", r"\[").replace("]", r"\]")):
            load_tokenizer_json(json.dumps(raw).encode(), name="x", source="tok.json")

    def test_bpe_dropout_is_refused(self) -> None:
        """Dropout makes ids random: refused, never served."""
        raw = json.loads(trained("BPE"))
        raw["model"]["dropout"] = 0.1
        with pytest.raises(InvalidInput, match=r"model.dropout: BPE dropout 0.1"):
            load_tokenizer_json(json.dumps(raw).encode(), name="x")
