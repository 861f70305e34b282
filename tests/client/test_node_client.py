"""The Node.js client (client/node, @grpc/grpc-js + @grpc/proto-loader) against the real server.

It loads proto/tokend/v1/tokenizer.proto itself, so this proves the contract works from a
second language. No skipping: without node or the npm packages the test fails and says how to
install them (scripts/setup-test-tools.sh, which scripts/test.sh runs).
"""

from __future__ import annotations

from typing import Any

import tiktoken
from node_client import run_node

from tokend.client import ChatMessage


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
