"""WordPiece quality against HF's ``WordPieceTrainer``: tokens per byte on held-out text.

Same corpus (the first 90% of corpus.en's lines), same vocabulary size, same pipeline (BERT
uncased); the held-out last 10% must take at most 3% more tokens with tokend's vocabulary
than with HF's, and within 1% of HF's under ``wordpiece_score="count"`` (HF's own criterion).
Speed is measured by bench/bench_train_kinds.py, not here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from tokend.core.training import TrainedTokenizer, train_tokenizer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "corpora"
VOCAB = 2000


def held_out_ratio(vocab: int, **options: str) -> float:
    """Held-out tokens with tokend's vocabulary over tokens with HF's (same vocab size)."""
    lines = (FIXTURES / "corpus.en").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = int(len(lines) * 0.9)
    train, held = "".join(lines[:cut]), "".join(lines[cut:])
    hf = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.train_from_iterator([train], trainers.WordPieceTrainer(
        vocab_size=vocab, special_tokens=["[UNK]"], show_progress=False))
    ours = train_tokenizer(iter([train]), vocab, model="wordpiece", **options)
    assert isinstance(ours, TrainedTokenizer)
    assert len(ours.vocab) == hf.get_vocab_size() == vocab
    return len(ours.to_encoding("q").encode(held)) / len(hf.encode(held).ids)


def test_wordpiece_tokens_per_byte_within_3_percent_of_hf() -> None:
    ratio = held_out_ratio(VOCAB)
    assert ratio <= 1.03, f"tokend needs {ratio:.3f}x HF's tokens on held-out text"


@pytest.mark.parametrize("vocab", [1000, 2000])
def test_wordpiece_count_score_within_1_percent_of_hf(vocab: int) -> None:
    """HF's criterion (the most frequent pair): HF's tokens per byte, within 1% either way."""
    ratio = held_out_ratio(vocab, wordpiece_score="count")
    assert abs(ratio - 1) <= 0.01, f"tokend count needs {ratio:.4f}x HF's tokens"
