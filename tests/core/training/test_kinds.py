"""Every trained kind: exported tokenizer.json loads in HF ``tokenizers`` with the same ids.

Each kind trains once on the fixture corpora (module-scoped); tokend's served tokenizer and
HF's ``Tokenizer.from_str`` of the exported file must agree on ids and decoded text for
held-out text, the shared family samples and random Unicode (hypothesis).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from family_texts import SAMPLES, random_text
from hypothesis import HealthCheck, given, settings
from tokenizers import Tokenizer

from tokend.core.errors import Cancelled, InvalidInput
from tokend.core.training import TrainedTokenizer, train_tokenizer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "corpora"
KINDS = ["char", "word-bpe", "wordpiece", "unigram"]
SPECIALS = ["<|endoftext|>", "[MASK]"]
EXTRA = "日本語のテキストと中文文本。 emoji 🎉👍🏽 café naïve Ωμέγα 12345 x²\n"


def _lines() -> list[str]:
    return (FIXTURES / "corpus.en").read_text(encoding="utf-8").splitlines()


def train_text() -> str:
    lines = _lines()
    return "\n".join(lines[:600]) + "\n" + EXTRA * 5 + (FIXTURES / "german.txt").read_text(
        encoding="utf-8")


def held_out() -> list[str]:
    return [line for line in _lines()[600:700] if line.strip()]


@functools.cache
def trained(kind: str) -> TrainedTokenizer:
    result = train_tokenizer(iter([train_text()]), 400, SPECIALS, model=kind)
    assert isinstance(result, TrainedTokenizer)
    return result


@functools.cache
def hf(kind: str) -> Tokenizer:
    return Tokenizer.from_str(trained(kind).tokenizer_json_bytes().decode("utf-8"))


def check_same(kind: str, text: str) -> None:
    ours = trained(kind).to_encoding(kind)
    ids = ours.encode(text, allowed_special="all")
    ref = hf(kind).encode(text, add_special_tokens=False)
    assert ids == ref.ids, (kind, text)
    assert ours.decode(ids) == hf(kind).decode(ref.ids, skip_special_tokens=False)


@pytest.mark.parametrize("kind", KINDS)
class TestEveryKind:
    def test_vocab_size_and_specials(self, kind: str) -> None:
        """vocab_size counts every id; the unknown token and the specials come first."""
        result = trained(kind)
        size = len(result.vocab)
        assert size == 400 or (kind == "char" and result.stats.stopped_early and size < 400)
        assert sorted(result.vocab) == list(range(size))
        assert result.special_tokens == {"[UNK]": 0, "<|endoftext|>": 1, "[MASK]": 2}
        assert hf(kind).get_vocab_size() == size

    def test_held_out_and_samples_equal_hf(self, kind: str) -> None:
        for text in [*held_out(), *SAMPLES.values(), "a <|endoftext|> b [MASK]"]:
            check_same(kind, text)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=random_text)
    def test_random_unicode_equals_hf(self, kind: str, text: str) -> None:
        check_same(kind, text)

    def test_save_tokenizer_json(self, kind: str, tmp_path: Path) -> None:
        """The saved file is the exported JSON, and HF loads it from disk."""
        path = tmp_path / "tokenizer.json"
        trained(kind).save_tokenizer_json(path)
        assert json.loads(path.read_text(encoding="utf-8")) == trained(kind).tokenizer_json
        assert Tokenizer.from_file(str(path)).encode("the cat").ids == hf(kind).encode(
            "the cat").ids


class TestKinds:
    def test_char_keeps_most_frequent(self) -> None:
        """Ties in frequency go to the lower code point; rarer characters become [UNK]."""
        result = train_tokenizer(iter(["bbaac d"]), 4, model="char")
        assert list(result.vocab.values()) == ["[UNK]", "a", "b", " "]
        enc = result.to_encoding("c")
        assert enc.encode("abcd") == [1, 2, 0, 0]

    def test_wordpiece_ratio_prefers_rare_pairs(self) -> None:
        """score "ratio": a rare pair of rare symbols beats a frequent pair of frequent ones."""
        result = train_tokenizer(iter(["ab ab ab ab ac xy"]), 9, model="wordpiece",
                                 wordpiece_score="ratio")
        assert result.merges[0] == ("x", "##y")

    def test_wordpiece_gain_weighs_frequency(self) -> None:
        """score "gain" (the default): the frequent pair's likelihood gain is larger."""
        result = train_tokenizer(iter(["ab ab ab ab ac xy"]), 9, model="wordpiece")
        assert result.merges[0] == ("a", "##b")

    def test_wordpiece_count_takes_the_most_frequent_pair(self) -> None:
        """score "count" (HF's trainer): the most frequent pair, ties to the first seen."""
        result = train_tokenizer(iter(["xy ab ab ab ab ac xy xy xy"]), 9, model="wordpiece",
                                 wordpiece_score="count")
        assert result.merges[0] == ("x", "##y")

    def test_wordpiece_score_is_checked(self) -> None:
        """An unknown score names the allowed ones and echoes a bounded prefix."""
        with pytest.raises(InvalidInput, match=r"wordpiece_score 'pmi'.*gain, ratio, count"):
            train_tokenizer(iter(["x"]), 30, model="wordpiece", wordpiece_score="pmi")
        with pytest.raises(InvalidInput) as info:
            train_tokenizer(iter(["x"]), 30, model="wordpiece", wordpiece_score="p" * 10_000)
        assert len(str(info.value)) < 400

    @pytest.mark.parametrize("model", ["byte-bpe", "char", "word-bpe", "unigram"])
    def test_wordpiece_score_only_for_wordpiece(self, model: str) -> None:
        """A score for another kind would be ignored: refused instead."""
        with pytest.raises(InvalidInput, match="applies to model wordpiece only"):
            train_tokenizer(iter(["x"]), 300, model=model, wordpiece_score="count")

    def test_unknown_model_is_refused(self) -> None:
        with pytest.raises(InvalidInput, match="model 'bogus' is not a tokenizer kind"):
            train_tokenizer(iter(["x"]), 300, model="bogus")

    def test_long_model_name_is_bounded(self) -> None:
        with pytest.raises(InvalidInput) as info:
            train_tokenizer(iter(["x"]), 300, model="m" * 10_000)
        assert "(10000 characters)" in str(info.value)
        assert len(str(info.value)) < 400

    @pytest.mark.parametrize("kind", KINDS)
    def test_vocab_size_must_exceed_specials(self, kind: str) -> None:
        with pytest.raises(InvalidInput, match="vocab_size is 2"):
            train_tokenizer(iter(["x"]), 2, ["<a>"], model=kind)

    @pytest.mark.parametrize("kind", KINDS)
    def test_cancel_and_progress(self, kind: str) -> None:
        """Progress reports the count phase; should_stop cancels within the run."""
        phases: list[str] = []
        train_tokenizer(iter([train_text()]), 300, model=kind,
                        progress=lambda phase, done, total: phases.append(phase))
        assert phases[0] == "count"
        with pytest.raises(Cancelled):
            train_tokenizer(iter([train_text()]), 300, model=kind, should_stop=lambda: True)

    def test_file_and_chunks_agree(self, tmp_path: Path) -> None:
        """A file and the same text streamed in odd-sized chunks train the same tokenizer."""
        text = train_text()
        path = tmp_path / "c.txt"
        path.write_text(text, encoding="utf-8")
        chunks = [text[i : i + 777] for i in range(0, len(text), 777)]
        a = train_tokenizer(path, 300, model="word-bpe")
        b = train_tokenizer(iter(chunks), 300, model="word-bpe")
        assert a.tokenizer_json == b.tokenizer_json  # type: ignore[union-attr]


class TestVocabularyIsFull:
    # 335 and 398: word-bpe's last merge needed two ids (ab, ab</w>) with one left (999 of 1,000).
    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("size", [90, 335, 398, 1028])
    def test_exactly_vocab_size_on_real_text(self, kind: str, size: int) -> None:
        """len(vocab) == vocab_size whenever the corpus allows it; stopped_early otherwise."""
        path = FIXTURES / "corpus.en"
        result = train_tokenizer(path, size, model=kind)
        distinct_chars = len(set(path.read_text(encoding="utf-8")))
        if kind == "char" and size > 1 + distinct_chars:  # every character kept: ran out
            assert result.stats.stopped_early
            assert len(result.vocab) == 1 + distinct_chars
        else:
            assert not result.stats.stopped_early
            assert len(result.vocab) == size
        assert sorted(result.vocab) == list(range(len(result.vocab)))
        hf_tok = Tokenizer.from_str(result.tokenizer_json_bytes().decode("utf-8"))
        assert hf_tok.get_vocab_size() == len(result.vocab)

    @pytest.mark.parametrize("kind", KINDS)
    def test_stopped_early_only_when_out_of_material(self, kind: str) -> None:
        """Two distinct characters cannot fill 1,000 ids: a smaller vocabulary, reported."""
        result = train_tokenizer(iter(["ab ab ab"]), 1000, model=kind)
        assert result.stats.stopped_early
        assert len(result.vocab) < 1000
