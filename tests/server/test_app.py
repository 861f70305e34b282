"""The application layer on its own: typed calls without a transport, metrics by outcome,
deadlines and cancellation through ``CallContext``, and no grpc or protobuf underneath."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from tiktoken_reference import reference

from tokend.core.errors import Cancelled, DeadlineExceeded, InvalidInput
from tokend.core.registry import Registry
from tokend.server.app.counting import MAX_TOKENS_LIMIT, CountRequest
from tokend.server.app.encoding import EncodeRequest
from tokend.server.app.service import App
from tokend.server.config import ServerConfig
from tokend.server.jobs import JobStore
from tokend.server.tokenizers import Tokenizers
from tokend.v1 import tokenizer_pb2 as pb


def tokens_counted(method: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("tokend_tokens_encoded_total", {"method": method}) or 0.0


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    config = ServerConfig(port=0, registry=tmp_path / "registry", metrics_port=0)
    yield App(config, Tokenizers(Registry(config.registry)), JobStore(config.jobs_path))


class Deadline:
    """A CallContext whose deadline has passed, or whose caller left."""

    def __init__(self, *, remaining: float | None = None, gone: bool = False) -> None:
        self.remaining, self.gone = remaining, gone

    def time_remaining(self) -> float | None:
        return self.remaining

    def cancelled(self) -> bool:
        return self.gone

    def add_done_callback(self, callback: Callable[[], None]) -> bool:
        return False


class TestApp:
    def test_count_without_a_transport_equals_tiktoken(self, app: App) -> None:
        """A typed call in-process: the counts are tiktoken's, the ref is the served one."""
        texts = ["hello world", "Größe 世界 🙂"]
        result = app.count(CountRequest(tokenizer="cl100k_base", texts=texts, max_tokens=100))
        expected = [len(reference("cl100k_base").encode_ordinary(t)) for t in texts]
        assert result.tokenizer == "cl100k_base"
        assert result.counts == expected and result.total == sum(expected)
        assert result.fits and result.remaining == 100 - sum(expected)

    def test_refused_count_counts_no_tokens(self, app: App) -> None:
        """max_tokens over 2^63 - 1 is refused, and the refused call adds nothing to the token
        metrics (it used to count the texts before checking the budget)."""
        before = tokens_counted("CountTokens")
        with pytest.raises(InvalidInput, match="max_tokens"):
            app.count(CountRequest(tokenizer="cl100k_base", texts=["a b c"] * 3,
                                   max_tokens=MAX_TOKENS_LIMIT + 1))
        assert tokens_counted("CountTokens") == before
        app.count(CountRequest(tokenizer="cl100k_base", texts=["a b c"]))
        assert tokens_counted("CountTokens") == before + 3

    def test_refused_count_over_grpc_counts_no_tokens(self, inproc) -> None:
        """The same over gRPC: INVALID_ARGUMENT naming max_tokens, no tokens counted."""
        before = tokens_counted("CountTokens")
        with pytest.raises(grpc.RpcError) as err:
            inproc.stub.CountTokens(pb.CountTokensRequest(
                tokenizer="gpt2", texts=["a b c"], max_tokens=2**63))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "max_tokens" in (err.value.details() or "")
        assert tokens_counted("CountTokens") == before

    def test_refused_encode_counts_no_tokens(self, app: App) -> None:
        """A batch refused at its second text counts none of the first text's ids."""
        before = tokens_counted("Encode")
        with pytest.raises(InvalidInput):
            app.encode(EncodeRequest(tokenizer="gpt2", texts=["a b c", "<|endoftext|>"],
                                     special_tokens=_none_allowed()))
        assert tokens_counted("Encode") == before

    def test_passed_deadline_stops_the_call(self, app: App) -> None:
        with pytest.raises(DeadlineExceeded):
            app.encode(EncodeRequest(tokenizer="gpt2", texts=["a"]), Deadline(remaining=0.0))

    def test_cancelled_caller_stops_the_call(self, app: App) -> None:
        with pytest.raises(Cancelled):
            app.count(CountRequest(tokenizer="gpt2", texts=["a"]), Deadline(gone=True))

    def test_imports_no_grpc_and_no_protobuf(self) -> None:
        """The application layer runs without grpc or protobuf loaded."""
        code = ("import sys, tokend.server.app, tokend.server.app.service; "
                "print(sorted(m for m in sys.modules "
                "if m.split('.')[0] == 'grpc' or m.startswith('google.protobuf')))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.strip()
        assert out == "[]"


def _none_allowed():  # the default policy of Encode allows every special: refuse them all
    from tokend.server.app.specials import DISALLOWED_ALL, SpecialPolicy

    return SpecialPolicy(disallowed_mode=DISALLOWED_ALL)
