"""WordPiece quality against HF's ``WordPieceTrainer``: tokens per byte on held-out text.

Same corpus (the first 90% of corpus.en's lines), same vocabulary size, same pipeline (BERT
uncased); the held-out last 10% must take at most 3% more tokens with tokend's vocabulary
than with HF's. Speed is measured by bench/bench_train_kinds.py, not here.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from tokend.core.training import TrainedTokenizer, train_tokenizer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "corpora"
VOCAB = 2000


def test_wordpiece_tokens_per_byte_within_3_percent_of_hf() -> None:
    lines = (FIXTURES / "corpus.en").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = int(len(lines) * 0.9)
    train, held = "".join(lines[:cut]), "".join(lines[cut:])
    hf = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.train_from_iterator([train], trainers.WordPieceTrainer(
        vocab_size=VOCAB, special_tokens=["[UNK]"], show_progress=False))
    ours = train_tokenizer(iter([train]), VOCAB, model="wordpiece")
    assert isinstance(ours, TrainedTokenizer)
    assert len(ours.vocab) == hf.get_vocab_size() == VOCAB
    ratio = len(ours.to_encoding("q").encode(held)) / len(hf.encode(held).ids)
    assert ratio <= 1.03, f"tokend needs {ratio:.3f}x HF's tokens on held-out text"
