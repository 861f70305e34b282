"""The Unigram trainer: its quality against sentencepiece's trainer, its id layout, its
inputs, progress and cancel."""

from __future__ import annotations

import functools
import io

import pytest
from unigram_corpus import lines, metaspace_counts

from tokend.core.errors import Cancelled, InvalidInput
from tokend.core.training.unigram import UnigramResult, digamma, train_unigram


@functools.cache
def sentencepiece_tokens(vocab_size: int) -> int:
    """Held-out tokens of sentencepiece's unigram trainer on the same lines."""
    import sentencepiece

    train, held = lines()
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(train), model_writer=model, vocab_size=vocab_size,
        model_type="unigram", normalization_rule_name="identity",
        remove_extra_whitespaces=False, num_threads=1, minloglevel=2,
    )
    processor = sentencepiece.SentencePieceProcessor(model_proto=model.getvalue())
    return sum(len(ids) for ids in processor.encode(list(held)))


def held_out_tokens(result: UnigramResult) -> int:
    """Held-out tokens of our vocabulary (through tokend's own pipeline)."""
    import json

    from tokend.core.formats.tokenizer_json import load_tokenizer_json

    tok = load_tokenizer_json(json.dumps(result.tokenizer_json()).encode(), name="t")
    return sum(len(tok.encode_ordinary(line)) for line in lines()[1])


@functools.cache
def trained(vocab_size: int, whole_word_seeds: bool = True) -> UnigramResult:
    return train_unigram(metaspace_counts(lines()[0]), vocab_size,
                         whole_word_seeds=whole_word_seeds)


class TestQualityAgainstSentencePiece:
    @pytest.mark.parametrize("vocab_size", [300, 1000])
    def test_no_more_held_out_tokens_than_sentencepiece_plus_3_percent(
        self, vocab_size: int
    ) -> None:
        """Default seeding: held-out tokens at most 3% above sentencepiece's."""
        ours = held_out_tokens(trained(vocab_size))
        assert ours <= 1.03 * sentencepiece_tokens(vocab_size)

    @pytest.mark.parametrize("vocab_size", [300, 1000])
    def test_sentencepiece_seeding_is_within_3_percent_either_way(self, vocab_size: int) -> None:
        """whole_word_seeds=False mirrors sentencepiece's seeding: within 3% both ways."""
        ours = held_out_tokens(trained(vocab_size, whole_word_seeds=False))
        assert abs(ours / sentencepiece_tokens(vocab_size) - 1) <= 0.03


class TestVocabulary:
    def test_ids_specials_then_unk_then_pieces_by_score(self) -> None:
        """Special tokens first in the order given, then <unk>, then pieces by score."""
        counts = metaspace_counts(lines()[0])
        result = train_unigram(counts, 500, ["<s>", "</s>"])
        pieces = [piece for piece, _ in result.pieces]
        assert pieces[:3] == ["<s>", "</s>", "<unk>"]
        assert result.unk_id == 2
        assert result.special_tokens == ["<s>", "</s>", "<unk>"]
        scores = [score for _, score in result.pieces[3:]]
        assert scores == sorted(scores, reverse=True)
        assert len(pieces) == 500 == len(set(pieces))

    def test_every_required_character_is_a_piece(self) -> None:
        """Characters covering 99.95% of occurrences are pieces; rarer ones may be left out."""
        counts = {"▁aaaa": 100, "▁b": 3, "▁ab": 2}
        result = train_unigram(counts, 20)
        assert {"▁", "a", "b"} <= set(result.vocab)
        rare = train_unigram({"▁aaaa": 100_000, "▁z": 1}, 20)
        assert "z" not in rare.vocab

    def test_unknown_token_given_as_special_is_not_repeated(self) -> None:
        """An unk_token among the special tokens keeps its place."""
        result = train_unigram({"▁ab": 3}, 10, ["<pad>", "<unk>"])
        assert [p for p, _ in result.pieces[:2]] == ["<pad>", "<unk>"]
        assert result.unk_id == 1

    def test_byte_fallback_adds_the_256_byte_pieces_after_the_specials(self) -> None:
        """<0x00>..<0xFF> follow the special and unknown tokens."""
        result = train_unigram({"▁ab": 3, "▁ba": 2}, 300, byte_fallback=True)
        pieces = [p for p, _ in result.pieces]
        assert pieces[1:257] == [f"<0x{b:02X}>" for b in range(256)]
        assert result.tokenizer_json()["model"]["byte_fallback"] is True

    def test_a_small_corpus_gives_fewer_pieces(self) -> None:
        """Asking for more pieces than the corpus has gives what there is."""
        result = train_unigram({"▁ab": 3}, 1000)
        assert {p for p, _ in result.pieces} <= {"<unk>", "▁", "a", "b", "▁a", "▁ab", "ab"}

    def test_whole_words_become_pieces(self) -> None:
        """A frequent word always followed by a space is still a seed (and kept)."""
        counts = {"▁the": 50, "▁then": 5, "▁other": 5, "▁dictionary": 20}
        assert "▁dictionary" in train_unigram(counts, 40).vocab

    def test_pieces_never_mix_scripts_or_hold_inner_whitespace(self) -> None:
        """SentencePiece's piece rules: ▁ only first, one script (digits are Common)."""
        counts = {"▁abcабв": 50, "▁x1": 40, "▁12,": 30}
        result = train_unigram(counts, 60)
        for piece, _ in result.pieces[1:]:
            assert "▁" not in piece[1:]
            assert not ({"a", "b"} & set(piece) and {"а", "б"} & set(piece))
            assert not ("x" in piece and "1" in piece)

    def test_training_is_deterministic(self) -> None:
        """The same counts give the same pieces and scores, in any dict order."""
        counts = metaspace_counts(lines()[0][:200])
        first = train_unigram(counts, 400)
        second = train_unigram(dict(reversed(list(counts.items()))), 400)
        assert [p for p, _ in first.pieces] == [p for p, _ in second.pieces]


class TestInputs:
    @pytest.mark.parametrize("vocab_size", [0, -1, True, 2.5])
    def test_bad_vocab_size(self, vocab_size: object) -> None:
        with pytest.raises(InvalidInput, match="vocab_size"):
            train_unigram({"▁a": 1}, vocab_size)  # type: ignore[arg-type]

    def test_vocab_too_small_for_required_characters(self) -> None:
        """The message gives both numbers and the fix."""
        with pytest.raises(InvalidInput, match=r"too small.*need 6.*character_coverage"):
            train_unigram({"▁abcd": 1}, 4)

    @pytest.mark.parametrize("counts", [{"": 1}, {"▁a": -1}, {"▁a": 1.5}])
    def test_bad_counts(self, counts: dict[str, int]) -> None:
        with pytest.raises(InvalidInput, match="pretoken"):
            train_unigram(counts, 10)

    @pytest.mark.parametrize(
        ("option", "value", "message"),
        [
            ("character_coverage", 0.0, "character_coverage"),
            ("shrinking_factor", 1.0, "shrinking_factor"),
            ("unk_token", "", "unk_token"),
            ("max_piece_length", 0, "max_piece_length"),
            ("max_piece_length", 257, "max_piece_length"),
            ("num_sub_iterations", 0, "num_sub_iterations"),
        ],
    )
    def test_bad_options(self, option: str, value: object, message: str) -> None:
        """Each option out of range is refused, naming it."""
        with pytest.raises(InvalidInput, match=message):
            train_unigram({"▁a": 1}, 10, **{option: value})  # type: ignore[arg-type]

    def test_duplicate_special_token(self) -> None:
        with pytest.raises(InvalidInput, match="twice"):
            train_unigram({"▁a": 1}, 10, ["<s>", "<s>"])

    def test_empty_counts_give_the_special_tokens_only(self) -> None:
        result = train_unigram({}, 10, ["<s>"])
        assert result.pieces == [("<s>", 0.0), ("<unk>", 0.0)]


class TestProgressAndCancel:
    def test_progress_reports_each_phase_and_ends_complete(self) -> None:
        """seed, lattice and em are reported; em ends with done == total."""
        reports: list[tuple[str, int, int]] = []
        train_unigram(metaspace_counts(lines()[0]), 300,
                      progress=lambda *r: reports.append(r))
        phases = [phase for phase, _, _ in reports]
        assert {"seed", "lattice", "em"} <= set(phases)
        assert reports[-1][0] == "em" and reports[-1][1] == reports[-1][2]

    def test_should_stop_cancels(self) -> None:
        with pytest.raises(Cancelled, match="cancelled"):
            train_unigram(metaspace_counts(lines()[0]), 300, should_stop=lambda: True)


def test_digamma_matches_known_values() -> None:
    """ψ(1) = -γ, ψ(1/2) = -γ - 2 ln 2, ψ(x + 1) = ψ(x) + 1/x."""
    import math

    gamma = 0.5772156649015329
    assert digamma(1.0) == pytest.approx(-gamma, abs=1e-9)
    assert digamma(0.5) == pytest.approx(-gamma - 2 * math.log(2), abs=1e-9)
    assert digamma(8.5) == pytest.approx(digamma(7.5) + 1 / 7.5, abs=1e-9)
