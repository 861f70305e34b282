"""SentencePiece models trained by the tests with ``sentencepiece``: tokend's reading of the
``.model`` file against the library, for BPE and Unigram under several normalizer settings;
and the same models converted to tokenizer.json (HF's Precompiled normalizer) against HF."""

from __future__ import annotations

import functools
import io
from pathlib import Path

import pytest
from family_texts import SAMPLES, random_text, sentencepiece_offsets, tricky_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokend.core.formats.sentencepiece import load_sentencepiece
from tokend.core.formats.tokenizer_json import load_tokenizer_json

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "corpora"
EXTRA = [
    "日本語のテキストと中文文本，还有한국어 텍스트。",
    "ｆｕｌｌｗｉｄｔｈ ① ﬁ café  double  spaces",
]

# name -> trainer options
CONFIGS = {
    "bpe-nmt_nfkc": {"model_type": "bpe", "normalization_rule_name": "nmt_nfkc"},
    "bpe-identity-bytes": {"model_type": "bpe", "normalization_rule_name": "identity",
                           "byte_fallback": True, "remove_extra_whitespaces": False,
                           "allow_whitespace_only_pieces": True},
    "bpe-user-defined": {"model_type": "bpe", "user_defined_symbols": ["<tool>", "ab"],
                         "control_symbols": ["<ctl>"]},
    "unigram-nmt_nfkc": {"model_type": "unigram", "normalization_rule_name": "nmt_nfkc"},
    "unigram-nfkc_cf-bytes": {"model_type": "unigram", "normalization_rule_name": "nfkc_cf",
                              "byte_fallback": True},
    "unigram-no-dummy-prefix": {"model_type": "unigram", "add_dummy_prefix": False,
                                "remove_extra_whitespaces": False},
}


@functools.cache
def trained(config: str) -> bytes:
    import sentencepiece

    lines = (FIXTURES / "corpus.en").read_text(encoding="utf-8").splitlines()[:600]
    lines += (FIXTURES / "german.txt").read_text(encoding="utf-8").splitlines() + EXTRA * 10
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=400,
        character_coverage=0.995, minloglevel=2, **CONFIGS[config],
    )
    return model.getvalue()


def check(config: str, text: str) -> None:
    import sentencepiece

    data = trained(config)
    ref = sentencepiece.SentencePieceProcessor(model_proto=data)
    ours = load_sentencepiece(data, name=config)
    ids = ours.encode_ordinary(text)
    assert ids == ref.encode(text), (config, text)
    assert ours.decode(ids) == ref.decode(ids), (config, text)
    # offsets: sentencepiece's piece begin/end in the original text, as characters
    assert ours.encode_with_offsets(text, disallowed_special=()) == sentencepiece_offsets(
        ref, text), (config, text)


@pytest.mark.parametrize("config", sorted(CONFIGS))
class TestTrainedSentencePiece:
    def test_samples_match_sentencepiece(self, config: str) -> None:
        """Every sample text and their concatenation: same ids, same decode."""
        for text in [*SAMPLES.values(), "\n".join(SAMPLES.values()), "<tool>ab<ctl> x"]:
            check(config, text)

    def test_a_typed_space_mark_matches_sentencepiece(self, config: str) -> None:
        """U+2581 in the input: kept at the start and between words, stripped at the end
        (under nfkc_cf, whose charsmap leaves it alone; hypothesis found "▁" -> [▁, ▁])."""
        for text in ["\u2581", "a\u2581", "\u2581\u2581a", "x\u2581\u2581y", " \u2581 ", "a \u2581",
                     "\u2581a\u2581 b\u2581\u2581"]:
            check(config, text)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=st.one_of(random_text, tricky_text))
    def test_random_unicode_matches_sentencepiece(self, config: str, text: str) -> None:
        """Random Unicode text: same ids, same decode."""
        check(config, text)


class TestPrecompiledInTokenizerJson:
    """HF's converter turns the model's charsmap into a Precompiled normalizer."""

    @staticmethod
    def pair(config: str) -> tuple[object, object]:
        """The model as HF's converter builds it: Unigram + Precompiled + Metaspace."""
        from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

        from tokend.v1 import sentencepiece_model_pb2 as spm

        proto = spm.ModelProto()
        proto.ParseFromString(trained(config))
        vocab = [(p.piece, p.score) for p in proto.pieces]
        unk = next(i for i, p in enumerate(proto.pieces) if p.type == p.TYPE_UNKNOWN)
        hf = Tokenizer(models.Unigram(vocab, unk, proto.trainer_spec.byte_fallback))
        hf.normalizer = normalizers.Sequence([
            normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
            normalizers.Replace(Regex(" {2,}"), " "),
        ])
        hf.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always")
        hf.decoder = decoders.Metaspace(prepend_scheme="always")
        return load_tokenizer_json(hf.to_str().encode(), name=config), hf

    @pytest.mark.parametrize("config", ["unigram-nmt_nfkc", "unigram-nfkc_cf-bytes"])
    def test_converted_unigram_matches_hf(self, config: str) -> None:
        """Samples and fixed tricky texts give HF's ids and decode through Precompiled."""
        ours, hf = self.pair(config)
        texts = [*SAMPLES.values(), "ｆｕｌｌｗｉｄｔｈ ① ﬁ ½ ℃ ㍿ Å",
                 "e\u0301 \u00e9 \u1e9b\u0323"]
        for text in texts:
            ids = ours.encode_ordinary(text)  # type: ignore[attr-defined]
            assert ids == hf.encode(text).ids, text  # type: ignore[attr-defined]
            assert ours.decode(ids) == hf.decode(ids)  # type: ignore[attr-defined]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=random_text)
    def test_random_unicode_through_precompiled_matches_hf(self, text: str) -> None:
        """Random Unicode text through the nmt_nfkc charsmap: HF's ids."""
        ours, hf = self.pair("unigram-nmt_nfkc")
        assert ours.encode_ordinary(text) == hf.encode(text).ids  # type: ignore[attr-defined]
