"""The Node.js client (client/node, @grpc/grpc-js + @grpc/proto-loader) against the real server.

It loads proto/tokend/v1/tokenizer.proto itself, so this proves the contract works from a
second language. No skipping: without node or the npm packages the test fails and says how to
install them (scripts/setup-test-tools.sh, which scripts/test.sh runs).
"""

from __future__ import annotations

from typing import Any

import tiktoken
from node_client import run_node

from tokend.client import ChatMessage, Client


class TestNodeClient:
    def test_encode_count_decode_equal_tiktoken(
        self, tokend_service: Any, o200k: tiktoken.Encoding, sample_texts: list[str]
    ) -> None:
        """Encode ids equal tiktoken's; CountTokens and Decode agree with them."""
        messages = [ChatMessage("user", "hello from node", name="js")]
        payload = {
            "tokenizer": "o200k_base",
            "texts": sample_texts,
            "messages": [{"role": m.role, "content": m.content, "name": m.name} for m in messages],
        }
        status, out, err = run_node(tokend_service.target, payload)
        assert status == 0, err
        assert out["tokenizer"] == "o200k_base"
        assert out["ids"] == o200k.encode_batch(sample_texts)
        assert out["counts"] == [len(ids) for ids in out["ids"]]
        chat = 3 + sum(len(o200k.encode(v)) for v in ("user", "hello from node", "js")) + 1 + 3
        assert out["messages_count"] == chat
        assert out["total"] == sum(out["counts"]) + chat
        assert out["decoded"] == sample_texts

    def test_error_status_reaches_node(self, tokend_service: Any) -> None:
        """An unknown tokenizer is NOT_FOUND (code 5) in grpc-js too, with the server's message."""
        status, out, _ = run_node(tokend_service.target, {"tokenizer": "nope", "texts": ["x"]})
        assert status == 1
        assert out["error"]["code"] == 5
        assert "nope" in out["error"]["details"]


class TestNodeTraining:
    def test_train_word_bpe_then_encode(self, tokend_service: Any, fixtures_dir: Any) -> None:
        """train() streams a corpus with model "word-bpe"; the job is awaited and its
        published version encodes as the Python client sees it."""
        corpus = (fixtures_dir / "corpora" / "corpus.en").read_text(encoding="utf-8")[:20_000]
        payload = {
            "tokenizer": "",
            "texts": ["the lowest newest widest"],
            "train": {"name": "nodewbpe", "vocab_size": 300, "model": "word-bpe",
                      "corpus": corpus},
        }
        status, out, err = run_node(tokend_service.target, payload,
                                    token=tokend_service.admin_token)
        assert status == 0, err
        job = out["train"]
        assert job["state"] == "TRAIN_JOB_STATE_SUCCEEDED", job["error"]
        assert job["config"]["model"] == "word-bpe"
        assert out["tokenizer"] == job["published"]
        with Client(tokend_service.target) as client:
            assert out["ids"] == [client.encode(job["published"], payload["texts"][0]).ids]
        assert out["decoded"] == payload["texts"]

    def test_train_wordpiece_score(self, tokend_service: Any, fixtures_dir: Any) -> None:
        """train() passes wordpiece_score: the job echoes it (the server fills in "gain" when
        none arrives), and its version encodes as the Python client's job with that config."""
        corpus = (fixtures_dir / "corpora" / "corpus.en").read_text(encoding="utf-8")[:20_000]
        payload = {
            "tokenizer": "",
            "texts": ["the tokenization of words"],
            "train": {"name": "nodewpc", "vocab_size": 300, "model": "wordpiece",
                      "wordpiece_score": "count", "corpus": corpus},
        }
        status, out, err = run_node(tokend_service.target, payload,
                                    token=tokend_service.admin_token)
        assert status == 0, err
        job = out["train"]
        assert job["state"] == "TRAIN_JOB_STATE_SUCCEEDED", job["error"]
        assert job["config"]["wordpiece_score"] == "count"
        with Client(tokend_service.target, token=tokend_service.admin_token) as client:
            ours = client.train("pywpc", corpus, vocab_size=300, model="wordpiece",
                                wordpiece_score="count").result(timeout=60)
            text = payload["texts"][0]
            assert out["ids"] == [client.encode(ours, text).ids]
