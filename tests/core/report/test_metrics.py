"""Report metrics against independent counts: tiktoken's ids, HF's ids, regex word counts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tiktoken_reference import reference

from tokend.core import get_encoding
from tokend.core.errors import InvalidInput
from tokend.core.report import load_parallel_corpus, measure
from tokend.core.report.report import build_report, corpus_texts

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Grüße aus Köln: 3 Äpfel, 2 Birnen.",
    "東京は日本の首都です。  Tabs\tand\nnewlines.",
    "A special-looking <|endoftext|> is text here.",
    "",
]


class TestMeasure:
    @pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "r50k_base"])
    def test_counts_equal_tiktoken_and_independent_counts(self, name: str) -> None:
        """Tokens, distinct ids and vocab size from tiktoken; bytes, chars, words counted here."""
        ref = reference(name)
        ids = [ref.encode(t, disallowed_special=()) for t in TEXTS]
        m = measure(get_encoding(name), TEXTS)
        assert m.texts == len(TEXTS)
        assert m.tokens == sum(map(len, ids))
        assert m.distinct_tokens == len({i for seq in ids for i in seq})
        assert m.n_vocab == ref.n_vocab
        assert m.bytes == sum(len(t.encode("utf-8")) for t in TEXTS)
        assert m.chars == sum(len(t) for t in TEXTS)
        assert m.words == sum(len(re.findall(r"[^\s]+", t)) for t in TEXTS)
        assert m.bytes_per_token == pytest.approx(m.bytes / m.tokens)
        assert m.chars_per_token == pytest.approx(m.chars / m.tokens)
        assert m.tokens_per_word == pytest.approx(m.tokens / m.words)
        assert m.vocab_used == pytest.approx(m.distinct_tokens / ref.n_vocab)

    def test_special_token_text_is_counted_as_text(self) -> None:
        """'<|endoftext|>' in a text is neither refused nor the special id."""
        ref = reference("cl100k_base")
        m = measure(get_encoding("cl100k_base"), ["<|endoftext|>"])
        assert m.tokens == len(ref.encode_ordinary("<|endoftext|>")) > 1

    def test_no_texts_gives_zero_ratios(self) -> None:
        m = measure(get_encoding("o200k_base"), [])
        assert (m.tokens, m.bytes_per_token, m.tokens_per_word, m.vocab_used) == (0, 0, 0, 0)

    def test_a_non_str_text_is_refused(self) -> None:
        with pytest.raises(InvalidInput, match="texts must be str"):
            measure(get_encoding("o200k_base"), [b"bytes"])  # type: ignore[list-item]

    def test_a_tokenizer_json_counts_as_hf_does(self, tmp_path: Path) -> None:
        """A WordPiece tokenizer.json (trained by HF here) through the pipeline: HF's ids."""
        from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

        from tokend.core.formats.files import load_file

        corpus = corpus_texts(load_parallel_corpus())
        hf = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        hf.normalizer = normalizers.BertNormalizer()
        hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        hf.train_from_iterator(corpus, trainers.WordPieceTrainer(
            vocab_size=400, special_tokens=["[UNK]"]))
        path = tmp_path / "tokenizer.json"
        hf.save(str(path))
        tok = load_file("hf-json", path.read_bytes(), name="wp")
        ids = [hf.encode(t, add_special_tokens=False).ids for t in TEXTS]
        m = measure(tok, TEXTS)
        assert m.tokens == sum(map(len, ids))
        assert m.distinct_tokens == len({i for seq in ids for i in seq})
        assert m.n_vocab == hf.get_vocab_size()


class TestBuildReport:
    def test_defaults_to_the_parallel_corpus(self) -> None:
        """No texts: every sentence of every language; the metrics equal measure() on them."""
        enc = get_encoding("o200k_base")
        report = build_report([("o200k_base", enc)])
        texts = corpus_texts(load_parallel_corpus())
        assert report.metrics[0] == measure(enc, texts, name="o200k_base")
        assert "parallel corpus" in report.texts_source

    def test_refuses_no_tokenizers_and_duplicates(self) -> None:
        enc = get_encoding("o200k_base")
        with pytest.raises(InvalidInput, match="at least one"):
            build_report([])
        with pytest.raises(InvalidInput, match="named twice"):
            build_report([("a", enc), ("a", enc)])
