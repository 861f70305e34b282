"""The Report RPC through a server: the same figures as tokend.core.report and tiktoken."""

from __future__ import annotations

from typing import Any

import pytest
from tiktoken_reference import reference

from tokend.core import get_encoding
from tokend.core.report import corpus_texts, language_costs, load_parallel_corpus, measure
from tokend.v1 import tokenizer_pb2 as pb

TEXTS = ["Hello world, this is a report.", "Zwei Wörter <|endoftext|> und mehr."]


class TestReport:
    def test_metrics_equal_tiktoken_counts(self, inproc: Any) -> None:
        """Tokens per tokenizer equal tiktoken's (special-token text counted as text)."""
        response = inproc.stub.Report(pb.ReportRequest(
            tokenizers=["o200k_base", "gpt2"], texts=TEXTS))
        assert response.texts_source == "the request's texts"
        assert [t.tokenizer for t in response.tokenizers] == ["o200k_base", "gpt2"]
        for row, name in zip(response.tokenizers, ["o200k_base", "gpt2"], strict=True):
            ids = [reference(name).encode(t, disallowed_special=()) for t in TEXTS]
            assert row.tokens == sum(map(len, ids))
            assert row.distinct_tokens == len({i for seq in ids for i in seq})
            assert row.n_vocab == reference(name).n_vocab
            assert row.words == sum(len(t.split()) for t in TEXTS)
            assert row.bytes_per_token == pytest.approx(row.bytes / row.tokens)
        assert list(response.languages) == []

    def test_defaults_to_the_parallel_corpus_with_languages(self, inproc: Any) -> None:
        """No texts: the shipped corpus; the language table equals core's, row for row."""
        response = inproc.stub.Report(pb.ReportRequest(
            tokenizers=["cl100k_base"], include_languages=True))
        corpus = load_parallel_corpus()
        enc = get_encoding("cl100k_base")
        expected = measure(enc, corpus_texts(corpus), name="cl100k_base")
        assert response.tokenizers[0].tokens == expected.tokens
        assert response.tokenizers[0].vocab_used == pytest.approx(expected.vocab_used)
        rows = language_costs([("cl100k_base", enc)], corpus)
        assert [(r.language, r.tokens, r.relative) for r in response.languages] == [
            (r.language, r.tokens, pytest.approx(r.relative)) for r in rows]

    def test_model_names_resolve(self, inproc: Any) -> None:
        response = inproc.stub.Report(pb.ReportRequest(tokenizers=["gpt-4o"], texts=["hi"]))
        assert response.tokenizers[0].tokenizer == "o200k_base"
