"""``tokend report``: table, --json shape, plots, curve and refusals, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiktoken_reference import reference

from tokend.cli import main
from tokend.core.registry import Registry
from tokend.core.training.byte_bpe import train_bpe


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["report", *args, "--json"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


class TestReportCommand:
    def test_json_shape_and_counts(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Tokenizers in order with counts equal to tiktoken's; the language table per pair."""
        text = tmp_path / "t.txt"
        text.write_text("Hello there, general Kenobi!\nYou are a bold one.", "utf-8")
        out = run_json(["o200k_base", "gpt2", "--text", str(text)], capsys)
        assert out["format"] == "tokend-report-1"
        assert out["texts_source"] == "t.txt"
        rows = out["tokenizers"]
        assert isinstance(rows, list)
        assert [r["tokenizer"] for r in rows] == ["o200k_base", "gpt2"]
        for row, name in zip(rows, ["o200k_base", "gpt2"], strict=True):
            assert row["tokens"] == len(reference(name).encode(text.read_text("utf-8")))
            assert set(row) >= {"bytes_per_token", "chars_per_token", "tokens_per_word",
                                "vocab_used", "n_vocab", "distinct_tokens", "words"}
        langs = out["languages"]
        assert isinstance(langs, list)
        assert len(langs) == 2 * 20
        assert out["curve"] == []

    def test_table_is_the_default_output(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["report", "o200k_base"]) == 0
        out = capsys.readouterr().out
        assert "bytes/token" in out
        assert "Token cost relative to English" in out
        assert "Swahili (sw)" in out

    def test_registry_version_and_curve_and_plots(
        self, fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A trained registry version is compared; the curve and both plots are written."""
        corpus = fixtures_dir / "corpora" / "tinystories_sample.txt"
        trained = train_bpe(corpus, 300, workers=1)
        reg = tmp_path / "reg"
        Registry(reg).publish("tiny", ranks=trained.mergeable_ranks(), pat_str=trained.pattern,
                              special_tokens={})
        heldout = tmp_path / "h.txt"
        heldout.write_text("A little dog ran to the park.", "utf-8")
        png, svg = tmp_path / "r.png", tmp_path / "r.svg"
        out = run_json(["tiny", "--registry", str(reg), "--no-languages",
                        "--curve-corpus", str(corpus), "--heldout", str(heldout),
                        "--vocab-sizes", "260,300", "--kinds", "byte-bpe", "--workers", "1",
                        "--plot", str(png), "--plot", str(svg)], capsys)
        rows = out["tokenizers"]
        assert isinstance(rows, list)
        assert rows[0]["tokenizer"] == "tiny@1"
        assert out["languages"] == []
        curve = out["curve"]
        assert isinstance(curve, list)
        assert [(p["kind"], p["vocab_size"]) for p in curve] == [("byte-bpe", 260),
                                                                 ("byte-bpe", 300)]
        # The 300 point is the published tokenizer itself: same count on the held-out text.
        enc = trained.to_encoding("t")
        assert curve[1]["tokens"] == len(enc.encode(heldout.read_text("utf-8")))
        assert png.read_bytes()[:4] == b"\x89PNG"
        assert svg.read_bytes().lstrip().startswith(b"<?xml")

    @pytest.mark.parametrize("args, match", [
        (["no_such_tokenizer"], "no_such_tokenizer"),
        (["--plot", "x.pdf"], "must end in .png or .svg"),
        (["--heldout", "h.txt"], "add --curve-corpus"),
        (["--text", "absent.txt"], "absent.txt"),
        (["--curve-corpus", "c.txt", "--kinds", "nope"], "kind 'nope' is not known"),
    ])
    def test_refusals_exit_1_with_one_json_error(
        self, args: list[str], match: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "c.txt").write_text("some text", "utf-8")
        status = main(["report", *args, "--registry", str(tmp_path / "reg"), "--json"])
        assert status == 1
        captured = capsys.readouterr()
        error = json.loads(captured.out)["error"]
        assert match in error["message"]
        assert f"tokend: {error['code']}: " in captured.err
        assert not (tmp_path / "x.pdf").exists()

    def test_a_tiktoken_file_asks_to_be_imported(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "t.tiktoken"
        path.write_bytes(b"YQ== 0\nYg== 1\n")
        assert main(["report", str(path)]) == 1
        assert "tokend registry import NAME" in capsys.readouterr().err


class TestSavedReport:
    def test_json_round_trips_and_prints_the_same_tables(
        self, fixtures_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--from-json on a --json output: the same Report, the same table as measuring."""
        from tokend.core.report import report_from_dict

        corpus = fixtures_dir / "corpora" / "tinystories_sample.txt"
        args = ["report", "o200k_base", "--curve-corpus", str(corpus), "--vocab-sizes", "270",
                "--kinds", "byte-bpe", "--workers", "1"]
        assert main([*args, "--json"]) == 0
        saved = capsys.readouterr().out
        data = json.loads(saved)
        assert report_from_dict(data).to_dict() == data
        assert main(args) == 0
        table = capsys.readouterr().out
        path = tmp_path / "r.json"
        path.write_text(saved, "utf-8")
        assert main(["report", "--from-json", str(path)]) == 0
        # The curve's seconds are measured anew by each run; everything else must agree.
        strip = [line for line in table.splitlines() if not line.startswith("byte-bpe")]
        again = capsys.readouterr().out.splitlines()
        assert [line for line in again if not line.startswith("byte-bpe")] == strip
        assert sum(line.startswith("byte-bpe") for line in again) == 1

    def test_a_file_that_is_no_report_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "r.json"
        path.write_text('{"format": "other"}', "utf-8")
        assert main(["report", "--from-json", str(path)]) == 1
        assert "not a saved report" in capsys.readouterr().err
