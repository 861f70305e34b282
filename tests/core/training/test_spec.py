"""One training spec, one result type, one publish function (issue: one training spec)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tokend.core.errors import AlreadyExists, FailedPrecondition, InvalidInput, LimitExceeded
from tokend.core.registry import Registry
from tokend.core.registry.publish import publish_trained, training_record
from tokend.core.training import TrainedTokenizer, TrainSpec, train, train_tokenizer
from tokend.core.training.spec import MAX_VOCAB_SIZE, MODEL_KINDS

TEXT = "low lower lowest newer wider " * 20

BAD_SPECS = [
    (TrainSpec(300, name="Bad Name"), InvalidInput, "name"),
    (TrainSpec(300, name="o200k_base"), AlreadyExists, "name"),
    (TrainSpec(300, special_tokens=("<s>", "<s>")), InvalidInput, "special_tokens[1]"),
    (TrainSpec(300, special_tokens=("",)), InvalidInput, "special_tokens[0]"),
    (TrainSpec(300, model="bpe"), InvalidInput, "model"),
    (TrainSpec(300, model="wordpiece", wordpiece_score="best"), InvalidInput, "wordpiece_score"),
    (TrainSpec(300, model="word-bpe", wordpiece_score="count"), InvalidInput,
     "wordpiece_score"),
    (TrainSpec(300, model="char", unk_token=""), InvalidInput, "unk_token"),
    (TrainSpec(256, special_tokens=("<s>",)), InvalidInput, "vocab_size"),
    (TrainSpec(2, model="wordpiece", special_tokens=("<s>",)), InvalidInput, "vocab_size"),
    (TrainSpec(MAX_VOCAB_SIZE + 1), LimitExceeded, "vocab_size"),
    (TrainSpec(300, pattern="(unclosed"), InvalidInput, "pattern"),
]


class TestTrainSpec:
    @pytest.mark.parametrize(("spec", "error", "field"), BAD_SPECS)
    def test_each_rule_names_its_field(
        self, spec: TrainSpec, error: type[Exception], field: str
    ) -> None:
        """A broken rule raises its error class with the spec field it is about."""
        with pytest.raises(error) as info:
            spec.checked()
        assert getattr(info.value, "field", None) == field

    @pytest.mark.parametrize(("spec", "error", "field"),
                             [row for row in BAD_SPECS if row[0].name is None])
    def test_library_refuses_with_the_spec_message(
        self, spec: TrainSpec, error: type[Exception], field: str
    ) -> None:
        """train_tokenizer (keyword arguments) refuses exactly as the spec does."""
        with pytest.raises(error) as expected:
            spec.checked()
        with pytest.raises(error) as got:
            train_tokenizer(iter([TEXT]), spec.vocab_size, spec.special_tokens,
                            model=spec.model, pattern=spec.pattern, unk_token=spec.unk_token,
                            wordpiece_score=spec.wordpiece_score or None)
        assert str(got.value) == str(expected.value)

    def test_cli_refuses_with_the_spec_message(self, tmp_path) -> None:  # type: ignore[no-untyped-def]
        """``tokend train`` prints the spec's own message for a broken rule."""
        corpus = tmp_path / "c.txt"
        corpus.write_text(TEXT)
        spec = TrainSpec(256, special_tokens=("<s>",), name="t")
        with pytest.raises(InvalidInput) as expected:
            spec.checked()
        done = subprocess.run(
            [sys.executable, "-m", "tokend.cli", "train", str(corpus), "--vocab-size", "256",
             "--special", "<s>", "--name", "t", "--registry", str(tmp_path / "reg")],
            capture_output=True, text=True, timeout=120, check=False,
        )
        assert done.returncode == 1
        assert f"INVALID_ARGUMENT: {expected.value}" in done.stderr

    def test_defaults_resolve(self) -> None:
        """checked() fills the WordPiece default score and turns any iterable into a tuple."""
        spec = TrainSpec(50, special_tokens=["<s>"], model="wordpiece").checked()  # type: ignore[arg-type]
        assert spec.special_tokens == ("<s>",)
        assert spec.wordpiece_score == "gain"
        assert spec.trainer_specials == ["[UNK]", "<s>"]
        assert TrainSpec(300, model="char").checked().wordpiece_score == ""

    def test_round_trips_through_a_dict(self) -> None:
        """Job state stores the spec as JSON and the trainer process reads it back."""
        spec = TrainSpec(300, ("<s>",), model="wordpiece", wordpiece_score="count",
                         name="t").checked()
        stored = json.loads(json.dumps({**spec.to_dict(), "corpus_path": "x"}))
        assert TrainSpec.from_dict(stored) == spec


class TestOneResultType:
    @pytest.mark.parametrize("model", MODEL_KINDS)
    def test_every_kind_returns_a_trained_tokenizer(self, model: str) -> None:
        """One type for every kind; its served tokenizer gives the ids its export gives."""
        size = 300 if model == "byte-bpe" else 40
        result = train(iter([TEXT]), TrainSpec(size, ("<s>",), model=model))
        assert isinstance(result, TrainedTokenizer)
        assert result.model == model
        assert result.stats.steps >= 1 and result.stats.distinct_words >= 1
        assert result.served_format == ("tiktoken" if model == "byte-bpe" else "hf-json")
        from tokenizers import Tokenizer

        hf = Tokenizer.from_str(result.tokenizer_json_bytes().decode())
        served = result.to_encoding("t")
        assert served.encode("lower newer") == hf.encode("lower newer").ids

    def test_rank_table_only_for_byte_bpe(self) -> None:
        """Asking a pipeline kind for ranks is a clear error, not a wrong table."""
        result = train(iter([TEXT]), TrainSpec(40, model="char"))
        with pytest.raises(FailedPrecondition, match="no rank table"):
            result.mergeable_ranks()


class TestPublishTrained:
    @pytest.mark.parametrize("model", ["byte-bpe", "wordpiece"])
    def test_publish_serves_the_trained_ids(self, tmp_path, model: str) -> None:  # type: ignore[no-untyped-def]
        """A published version loads back to the ids the result encodes, with its record."""
        spec = TrainSpec(300 if model == "byte-bpe" else 40, ("<s>",), model=model,
                         name="t").checked()
        result = train(iter([TEXT]), spec)
        registry = Registry(tmp_path)
        record = training_record(spec, result, job_id="j1")
        info = publish_trained(registry, "t", result, training=record,
                               corpus={"sha256": "0" * 64, "bytes": len(TEXT)})
        manifest = registry.manifest(info.ref)
        assert manifest["training"]["model"] == model
        assert manifest["training"]["job_id"] == "j1"
        assert manifest["training"]["special_tokens"] == ["<s>"]
        corpus = (manifest["corpus"] if model == "byte-bpe"
                  else manifest["training"]["corpus"])
        assert corpus["bytes"] == len(TEXT)
        assert ("wordpiece_score" in manifest["training"]) == (model == "wordpiece")
        _, served = registry.load(info.ref)
        assert served.encode("lower newer") == result.to_encoding().encode("lower newer")
