"""Lint findings, one kind at a time, on tokenizers built here; the built-ins against tiktoken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lint_reference import not_utf8_count, tiktoken_unreachable
from tiktoken_reference import reference

from tokend.core import Encoding, get_encoding
from tokend.core.formats.files import load_file
from tokend.core.lint import KINDS, lint_tokenizer
from tokend.core.lint.checks import check_round_trip
from tokend.core.lint.model import LintReport
from tokend.core.patterns import GPT2_PATTERN
from tokend.core.tokenizer import NormalizedEncoding
from tokend.core.training import train_tokenizer

BYTES = {bytes([b]): b for b in range(256)}


def tiny(extra: list[bytes], specials: dict[str, int] | None = None, **kw: object) -> Encoding:
    """Bytes, then ``extra`` tokens in order (their ranks), under GPT-2's pattern."""
    ranks = dict(BYTES)
    for token in extra:
        ranks[token] = len(ranks)
    return Encoding("tiny", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                    special_tokens=specials or {}, **kw)  # type: ignore[arg-type]


def kinds(report: LintReport, kind: str) -> list[dict[str, object]]:
    return [f for f in report.to_dict()["findings"] if f["kind"] == kind]



class TestBuiltins:
    @pytest.mark.parametrize("name", ["o200k_base", "r50k_base"])
    def test_unreachable_equals_tiktoken(self, name: str) -> None:
        """The unreachable ids are exactly those tiktoken cannot encode back (o200k: 12)."""
        report = lint_tokenizer(get_encoding(name), full=False)
        expected = tiktoken_unreachable(name)
        assert sorted(f["id"] for f in kinds(report, "unreachable")) == expected
        assert report.summary()["unreachable"] == len(expected)
        assert (name == "o200k_base") == bool(expected)

    @pytest.mark.parametrize("name", ["o200k_base", "r50k_base"])
    def test_partial_utf8_count_equals_tokens_not_utf8(self, name: str) -> None:
        """Counted always, listed only on request."""
        report = lint_tokenizer(get_encoding(name), full=False)
        assert report.summary()["partial-utf8"] == not_utf8_count(name)
        assert kinds(report, "partial-utf8") == []
        listed = lint_tokenizer(get_encoding(name), full=False, list_partial=True)
        assert len(kinds(listed, "partial-utf8")) == not_utf8_count(name)

    def test_o200k_harmony_duplicate_special_id_is_an_error(self) -> None:
        report = lint_tokenizer(get_encoding("o200k_harmony"), full=False)
        (dup,) = report.errors
        assert dup.kind == "duplicate-special-id"
        assert dup.id == 200018
        assert "<|endofprompt|>" in dup.message and "<|reserved_200018|>" in dup.message

    def test_o200k_holes_are_ids_without_token(self) -> None:
        enc = reference("o200k_base")
        report = lint_tokenizer(get_encoding("o200k_base"), full=False)
        holes = [f["id"] for f in kinds(report, "hole")]
        known = set(enc._mergeable_ranks.values()) | set(enc._special_tokens.values())
        assert holes == [i for i in range(enc.n_vocab) if i not in known]

    def test_r50k_glitch_candidates_rank_solidgoldmagikarp_high(self) -> None:
        """The known GPT-2 glitch tokens come out near the top of the heuristic's ranking."""
        enc = get_encoding("r50k_base")
        report = lint_tokenizer(enc, glitch_limit=60)
        listed = [f["id"] for f in kinds(report, "glitch-candidate")]
        for token in (" SolidGoldMagikarp", " RandomRedditorWithNo", " guiActiveUn"):
            assert enc.encode_single_token(token) in listed

    def test_json_shape_and_summaries(self) -> None:
        report = lint_tokenizer(get_encoding("o200k_base")).to_dict()
        json.dumps(report)
        assert set(report["summary"]) <= set(KINDS)
        assert report["summaries"]["digits"]["grouping"] == "up-to-three"
        assert report["summaries"]["digits"]["probe_pieces"] == ["123", "456", "7"]
        langs = {row["language"]: row for row in report["summaries"]["languages"]}
        assert langs["en"]["relative"] == 1.0 and len(langs) >= 10
        twins = report["summaries"]["trailing_space_twins"]
        assert 0 < twins["twins"] < twins["words"]
        finding = next(f for f in report["findings"] if f["kind"] == "unreachable")
        assert set(finding) >= {"kind", "id", "severity", "token", "message"}
        assert bytes.fromhex(finding["token"]["hex"]).decode() == finding["token"]["text"]
        assert lint_tokenizer(get_encoding("r50k_base")).summaries["digits"]["grouping"] == (
            "irregular")


class TestKindsOnBuiltTokenizers:
    def test_unreachable_token_across_a_pretoken_boundary(self) -> None:
        """'a b' is a token but GPT-2's pattern always cuts before ' b'."""
        enc = tiny([b"a b"])
        (finding,) = kinds(lint_tokenizer(enc, full=False), "unreachable")
        assert finding["id"] == 256 and finding["token"]["text"] == "a b"
        assert finding["encodes_to"] == [ord("a"), ord(" "), ord("b")]

    def test_partial_utf8_bytes(self) -> None:
        enc = tiny([b"\xc3", b"\xe4\xb8"][1:])
        report = lint_tokenizer(enc, full=False, list_partial=True)
        assert report.summary()["partial-utf8"] == 128 + 1

    def test_duplicate_special_id(self) -> None:
        enc = tiny([], {"<|a|>": 256, "<|b|>": 256})
        (dup,) = lint_tokenizer(enc, full=False).errors
        assert dup.to_dict()["texts"] == ["<|a|>", "<|b|>"]

    def test_holes(self) -> None:
        enc = tiny([], {"<|end|>": 260})
        report = lint_tokenizer(enc, full=False)
        assert [f["id"] for f in kinds(report, "hole")] == [256, 257, 258, 259]

    def test_special_warnings(self) -> None:
        """A special that ordinary text produces; whitespace inside; non-ASCII."""
        enc = tiny([], {"a": 256, "<| x |>": 257, "<|é|>": 258})
        report = lint_tokenizer(enc, full=False)
        assert [f["id"] for f in kinds(report, "special-in-text")] == [256]
        assert [f["id"] for f in kinds(report, "special-whitespace")] == [257]
        assert [f["id"] for f in kinds(report, "special-non-ascii")] == [258]
        assert report.errors == []

    def test_special_changed_by_the_normalizer(self) -> None:
        enc = NormalizedEncoding(tiny([], {"<|e\u0301|>": 256, "<|ok|>": 257}), "nfc")
        report = lint_tokenizer(enc, full=False)
        assert [f["id"] for f in kinds(report, "special-normalized")] == [256]

    def test_round_trip_failure(self) -> None:
        enc = NormalizedEncoding(tiny([]), "nfkc")
        report = LintReport("x", enc.n_vocab)
        check_round_trip(enc, ["fine", "\ufb01ne"], report)
        assert [f["text"] for f in kinds(report, "round-trip")] == ["\ufb01ne"]

    def test_glitch_candidate_trained_token(self) -> None:
        """A joined identifier merged early in training, unused by the bundled corpora."""
        text = " FooBarBazQux" * 400 + " the cat sat on the mat" * 50
        enc = train_tokenizer(iter([text]), 300, pattern="gpt2").to_encoding("t")  # type: ignore[union-attr]
        report = lint_tokenizer(enc)
        texts = [f["token"]["text"] for f in kinds(report, "glitch-candidate")]
        assert texts[0].strip() == "FooBarBazQux"


class TestFamilies:
    def test_wordpiece_tokenizer_json(self, tmp_path: Path) -> None:
        """WordPiece: unreachable does not apply; lowercasing fails round trips; the file's
        two special tokens on one id are an error."""
        result = train_tokenizer(iter(["The quick brown fox jumps over the lazy dog. " * 20]),
                                 80, ["[CLS]", "[SEP]"], model="wordpiece")
        raw = json.loads(result.tokenizer_json_bytes())  # type: ignore[union-attr]
        sep = next(t for t in raw["added_tokens"] if t["content"] == "[SEP]")
        cls = next(t for t in raw["added_tokens"] if t["content"] == "[CLS]")
        sep["id"] = cls["id"]
        tok = load_file("hf-json", json.dumps(raw).encode(), name="wp")
        report = lint_tokenizer(tok)
        assert report.checks["unreachable"].startswith("skipped")
        assert report.summary()["round-trip"] > 0
        (dup,) = report.errors
        assert dup.id == cls["id"] and "[CLS]" in dup.message and "[SEP]" in dup.message

    def test_byte_level_tokenizer_json_matches_the_encoding(self) -> None:
        """A byte-level tokenizer.json lints like the Encoding it exports."""
        text = "hello world, hello there. " * 30
        result = train_tokenizer(iter([text]), 290, model="byte-bpe")
        enc = result.to_encoding("b")  # type: ignore[union-attr]
        tok = load_file("hf-json", result.tokenizer_json_bytes(), name="b")  # type: ignore[union-attr]
        same = ("unreachable", "partial-utf8", "hole", "duplicate-special-id", "round-trip")
        a, b = lint_tokenizer(enc).summary(), lint_tokenizer(tok).summary()
        assert {k: a[k] for k in same} == {k: b[k] for k in same}
        # At import the pure-Python pipeline leaves the per-token encode to the full lint.
        assert lint_tokenizer(tok, full=False).checks["unreachable"].startswith("skipped")
        assert lint_tokenizer(enc, full=False).checks["unreachable"] == "ran"


@pytest.mark.parametrize("module", ["checks", "glitch", "lint", "model", "summaries", "vocab"])
def test_docstring_examples(module: str) -> None:
    """Every ``>>>`` example in core/lint runs as written."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"tokend.core.lint.{module}"))
    assert result.failed == 0
