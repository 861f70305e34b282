"""``tokend train``: local training written to --out and published into a registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from registry_backends import Backend

from tokend.cli import main
from tokend.core.formats import load_tiktoken_bpe
from tokend.core.registry import Registry
from tokend.core.training import TrainedTokenizer, train_tokenizer
from tokend.core.training.byte_bpe import train_bpe


class TestTrainCommand:
    def test_out_writes_ranks_and_manifest_equal_to_the_api(
        self, fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--out: <name>.tiktoken holds exactly train_bpe's ranks; the manifest describes it."""
        corpus = fixtures_dir / "corpora" / "tinystories_sample.txt"
        status = main(
            [
                "train",
                str(corpus),
                "--vocab-size",
                "400",
                "--special",
                "<|endoftext|>",
                "--name",
                "tiny",
                "--out",
                str(tmp_path),
                "--json",
            ]
        )
        assert status == 0
        expected = train_bpe(corpus, 400, ["<|endoftext|>"])
        ranks = load_tiktoken_bpe(tmp_path / "tiny.tiktoken")
        assert ranks == expected.mergeable_ranks()
        manifest = json.loads((tmp_path / "tiny.json").read_text("utf-8"))
        assert manifest["pat_str"] == expected.pattern
        assert manifest["special_tokens"] == {"<|endoftext|>": 399}
        assert manifest["explicit_n_vocab"] == 400
        assert manifest["corpus"]["bytes"] == corpus.stat().st_size
        out = json.loads(capsys.readouterr().out)
        assert out["merges"] == len(expected.merges)
        assert "published" not in out

    def test_publishes_a_new_version_into_the_registry(
        self, fixtures_dir: Path, backend: Backend, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--registry takes a folder or an s3:// prefix alike (a real SeaweedFS for s3)."""
        corpus = fixtures_dir / "corpora" / "german.txt"
        args = [
            "train",
            str(corpus),
            "--vocab-size",
            "300",
            "--name",
            "de",
            "--registry",
            backend.location,
            "--quiet",
        ]
        assert main(args) == 0
        assert main(args) == 0
        assert capsys.readouterr().out.split() == ["de@1", "de@2"]
        registry = backend.open()
        manifest = registry.manifest("de@2")
        assert manifest["pattern"] == train_bpe(corpus, 300).pattern
        assert manifest["n_vocab"] == 300
        (_, first), (_, second) = registry.load("de@1"), registry.load("de@2")
        assert first.encode_ordinary("Guten Tag") == second.encode_ordinary("Guten Tag")

    def test_refusals_exit_non_zero_with_a_reason(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        missing = str(tmp_path / "missing.txt")
        assert (
            main(["train", missing, "--vocab-size", "300", "--name", "x", "--out", str(tmp_path)])
            == 1
        )
        assert "does not exist" in capsys.readouterr().err
        (tmp_path / "c.txt").write_text("text", "utf-8")
        assert (
            main(
                [
                    "train",
                    str(tmp_path / "c.txt"),
                    "--vocab-size",
                    "300",
                    "--name",
                    "Bad Name",
                    "--out",
                    str(tmp_path),
                ]
            )
            == 1
        )
        assert "Bad Name" in capsys.readouterr().err


class TestTrainModelKinds:
    @pytest.mark.parametrize("kind", ["char", "word-bpe", "wordpiece", "unigram"])
    def test_model_out_and_publish(
        self, kind: str, fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--model: --out writes the kind's tokenizer.json; --registry publishes that file."""
        corpus = fixtures_dir / "corpora" / "tinystories_sample.txt"
        registry = tmp_path / "registry"
        status = main(["train", str(corpus), "--model", kind, "--vocab-size", "200",
                       "--special", "<|endoftext|>", "--name", "tiny", "--out",
                       str(tmp_path / "out"), "--registry", str(registry), "--json",
                       "--quiet"])
        assert status == 0
        out = json.loads(capsys.readouterr().out)
        assert out["model"] == kind and out["published"] == "tiny@1"
        expected = train_tokenizer(corpus, 200, ["<|endoftext|>"], model=kind)
        written = json.loads((tmp_path / "out" / "tiny.tokenizer.json").read_text("utf-8"))
        assert written == expected.tokenizer_json  # type: ignore[union-attr]
        reg = Registry(registry)
        assert reg.manifest("tiny@1")["training"]["model"] == kind
        _, tok = reg.load("tiny@1")
        enc = expected.to_encoding("tiny")
        text = "Once upon a time, a tiny robot <|endoftext|> said hi."
        assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")

    def test_unknown_model_is_refused_by_argparse(
        self, fixtures_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        corpus = fixtures_dir / "corpora" / "german.txt"
        with pytest.raises(SystemExit):
            main(["train", str(corpus), "--model", "bogus", "--vocab-size", "300",
                  "--name", "x"])
        assert "wordpiece" in capsys.readouterr().err

    def test_wordpiece_score_count(
        self, fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--wordpiece-score count writes train_tokenizer's count vocabulary (not gain's) and
        records the score in the manifest."""
        corpus = fixtures_dir / "corpora" / "tinystories_sample.txt"
        registry = tmp_path / "registry"
        status = main(["train", str(corpus), "--model", "wordpiece", "--wordpiece-score",
                       "count", "--vocab-size", "300", "--name", "wp", "--out",
                       str(tmp_path / "out"), "--registry", str(registry), "--quiet"])
        assert status == 0, capsys.readouterr().err
        written = json.loads((tmp_path / "out" / "wp.tokenizer.json").read_text("utf-8"))
        by_score = {}
        for score in ("count", "gain"):
            result = train_tokenizer(corpus, 300, model="wordpiece", wordpiece_score=score)
            assert isinstance(result, TrainedTokenizer)
            by_score[score] = result.tokenizer_json
        assert written == by_score["count"] != by_score["gain"]
        assert Registry(registry).manifest("wp@1")["training"]["wordpiece_score"] == "count"

    def test_wordpiece_score_refusals(
        self, fixtures_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An unknown score is refused by argparse (naming the choices); any score for
        another model is refused with the reason, before training."""
        corpus = str(fixtures_dir / "corpora" / "german.txt")
        with pytest.raises(SystemExit):
            main(["train", corpus, "--model", "wordpiece", "--wordpiece-score", "pmi",
                  "--vocab-size", "300", "--name", "x"])
        assert "gain,ratio,count" in capsys.readouterr().err
        assert main(["train", corpus, "--model", "word-bpe", "--wordpiece-score", "count",
                     "--vocab-size", "300", "--name", "x", "--target", "127.0.0.1:1"]) == 1
        err = capsys.readouterr().err
        assert "INVALID_ARGUMENT" in err and "--wordpiece-score applies to --model wordpiece" in err
