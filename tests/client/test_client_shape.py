"""Client and AsyncClient are two shells over one set of calls: the same methods, signatures,
requests on the wire, results and errors.

The surface is compared by walking both classes; the wire by an in-process grpcio server of the
same proto that records every request (serialized), whether it had a deadline and its metadata,
and answers with a fixed, non-empty response (or, when asked, a refusal).
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from tokend.client import (
    AsyncClient,
    AsyncTrainHandle,
    ChatMessage,
    Client,
    InvalidArgument,
    TrainHandle,
)
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

# Deliberate differences of the async surface; any other difference fails.
SYNC_ONLY = {"iter_chunks"}  # AsyncClient.chunk is the list; no async twin was ever published
LIFECYCLE = {"__enter__": "__aenter__", "__exit__": "__aexit__", "__iter__": "__aiter__"}
ASYNC_ANNOTATIONS = {  # (method, parameter) -> the async annotation, where it takes more
    ("encode_stream", "text"): "str | Iterable[str] | AsyncIterable[str]",
}


def _asyncified(annotation: Any) -> Any:
    """A sync annotation as its async twin should read it (annotations are strings here)."""
    if not isinstance(annotation, str):
        return annotation
    annotation = re.sub(r"\bIterator\[", "AsyncIterator[", annotation)
    return re.sub(r"\b(Client|TrainHandle)\b", r"Async\1", annotation)


def _public(cls: type) -> dict[str, Any]:
    return {name: getattr(cls, name) for name in dir(cls) if not name.startswith("_")}


def _same_surface(sync_cls: type, async_cls: type, sync_only: set[str]) -> None:
    sync, asyn = _public(sync_cls), _public(async_cls)
    assert set(sync) - sync_only == set(asyn)
    for name, async_member in asyn.items():
        sync_member = sync[name]
        if isinstance(sync_member, property):
            assert isinstance(async_member, property), name
            continue
        assert not (inspect.iscoroutinefunction(sync_member)
                    or inspect.isasyncgenfunction(sync_member)), name
        assert (inspect.iscoroutinefunction(async_member)
                or inspect.isasyncgenfunction(async_member)), name
        assert inspect.isgeneratorfunction(sync_member) == inspect.isasyncgenfunction(
            async_member), name
        expected = inspect.signature(sync_member)
        expected = expected.replace(
            parameters=[
                p.replace(annotation=ASYNC_ANNOTATIONS.get((name, p.name),
                                                           _asyncified(p.annotation)))
                for p in expected.parameters.values()
            ],
            return_annotation=_asyncified(expected.return_annotation),
        )
        assert inspect.signature(async_member) == expected, name


class TestSameSurface:
    def test_clients_have_the_same_methods_and_signatures(self) -> None:
        """Every public method of Client is on AsyncClient with the same parameters, kinds,
        defaults and (async-translated) annotations; sync ones plain, async ones awaitable."""
        _same_surface(Client, AsyncClient, SYNC_ONLY)
        assert inspect.signature(Client) == inspect.signature(AsyncClient)
        for sync_name, async_name in LIFECYCLE.items():
            if hasattr(Client, sync_name):
                assert hasattr(AsyncClient, async_name), async_name

    def test_handles_have_the_same_methods_and_signatures(self) -> None:
        _same_surface(TrainHandle, AsyncTrainHandle, set())
        assert hasattr(TrainHandle, "__iter__") and hasattr(AsyncTrainHandle, "__aiter__")

    def test_documented_on_one_is_documented_on_the_other(self) -> None:
        for sync_cls, async_cls in ((Client, AsyncClient), (TrainHandle, AsyncTrainHandle)):
            for name, member in _public(async_cls).items():
                assert bool(getattr(sync_cls, name).__doc__) == bool(member.__doc__), name


# -- the same wire ------------------------------------------------------------------------------

_JOB = pb.TrainJob(
    job_id="job-1", state=pb.TRAIN_JOB_STATE_RUNNING, phase="merging", done=3, total=9,
    config=pb.TrainConfig(name="mytok", vocab_size=300, model="wordpiece",
                          wordpiece_score="count"),
)
# Each RPC: (request-stream?, response-stream?, the responses it answers with).
RPCS: dict[str, tuple[bool, bool, list[Message]]] = {
    "Encode": (False, False, [pb.EncodeResponse(tokenizer="t", results=[pb.EncodeResult(
        ids=[5, 6], details=[pb.TokenDetail(id=5, piece=b"ab", start=0, end=2, special=True)])])]),
    "EncodeStream": (True, True, [pb.EncodeStreamResponse(ids=[1, 2]),
                                  pb.EncodeStreamResponse(ids=[3])]),
    "Decode": (False, False, [pb.DecodeResponse(tokenizer="t", text="hi", data=b"hi",
                                                results=[pb.DecodeResult(text="a", data=b"a")])]),
    "CountTokens": (False, False, [pb.CountTokensResponse(
        tokenizer="t", counts=[4], total=4, fits=True, remaining=6, exact=True,
        chat_rule="openai", model="gpt-4o", context_window=128000)]),
    "Quote": (False, False, [pb.QuoteResponse(
        model="gpt-4o", exact=True, input_tokens=9, cache_read_tokens=0, output_tokens_max=5,
        usd_min="0.0000225", usd_max="0.0000725", cache="cold",
        breakpoints=[pb.QuoteBreakpoint(field="system[0]", ttl="1h", prefix_tokens=3)],
        prices=pb.QuotePrices(source="genai-prices", version="0.2.3"),
        parts=[pb.QuotePart(part="input", tokens=9, usd_per_mtok="2.5", usd="0.0000225")])]),
    "Truncate": (False, False, [pb.TruncateResponse(tokenizer="t", text="he", ids=[7],
                                                    count=1, truncated=True, head_chars=2)]),
    "Chunk": (False, True, [
        pb.ChunkResponse(chunks=[pb.TextChunk(index=0, text="a", end=1, byte_end=1, count=1)]),
        pb.ChunkResponse(chunks=[pb.TextChunk(index=1, text="b", start=1, end=2, count=1)]),
    ]),
    "Report": (False, False, [pb.ReportResponse(
        texts_source="given",
        tokenizers=[pb.ReportTokenizer(tokenizer="t", n_vocab=9, tokens=3, vocab_used=0.5)],
        languages=[pb.ReportLanguage(tokenizer="t", language="de", relative=1.5)])]),
    "Lint": (False, False, [pb.LintResponse(
        tokenizer="t@2", n_vocab=9, depth=pb.LINT_DEPTH_IMPORT, summary={"unreachable": 1},
        checks={"unreachable": "ran"}, summaries_json="{}", truncated=True, findings=[
            pb.LintFinding(kind="unreachable", severity="warning", id=3, token=b"\xe4b",
                           token_text="\ufffdb", message="m", extra_json='{"encodes_to": [1]}'),
            pb.LintFinding(kind="round-trip", severity="warning", message="r",
                           extra_json='{"text": "x"}')])]),
    "Diff": (False, False, [pb.DiffResponse(
        a="t@1", b="t@2", a_n_vocab=5, b_n_vocab=6, summary={"added": 1}, errors=["e"],
        added=[pb.DiffToken(id=5, token=b"ab", text="ab")],
        changed=[pb.DiffChangedId(id=4, a=pb.DiffToken(id=4, token=b"x"),
                                  b=pb.DiffToken(id=4, token=b"y"))],
        moved=[pb.DiffMovedToken(a_id=1, b_id=2, token=b"z")], specials_moved=["<s>"],
        languages=[pb.DiffLanguage(language="de", name="German", a_tokens=4, b_tokens=3,
                                   ratio=0.75)],
        texts=[pb.DiffText(text="t", a_tokens=2, b_tokens=1, ratio=0.5)])]),
    "ListTokenizers": (False, False, [pb.ListTokenizersResponse(tokenizers=[
        pb.TokenizerSummary(name="t", versions=[1, 2], aliases={"stable": 1})])]),
    "GetTokenizer": (False, False, [pb.GetTokenizerResponse(manifest=pb.TokenizerManifest(
        name="t", version=2, ref="t@2", vocab_size=300, special_tokens={"<s>": 299},
        training_json='{"seconds": 1.5}', versions=[1, 2]))]),
    "Train": (True, False, [pb.TrainResponse(job=_JOB)]),
    "GetTrainJob": (False, False, [pb.GetTrainJobResponse(job=_JOB)]),
    "WatchTrainJob": (False, True, [pb.WatchTrainJobResponse(job=_JOB),
                                    pb.WatchTrainJobResponse(job=_JOB)]),
    "CancelTrainJob": (False, False, [pb.CancelTrainJobResponse(job=_JOB)]),
    "ListTrainJobs": (False, False, [pb.ListTrainJobsResponse(jobs=[_JOB, _JOB])]),
}

# Each public method with one set of arguments (the same for both clients). Results that are
# handles are compared by their job.
CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "encode": (("t", "hello"), {"details": True, "allowed_special": {"<s>"}}),
    "encode_batch": (("t", ["a", "b"]), {"disallowed_special": ("<x>",),
                                          "add_special_tokens": True, "timeout": 5}),
    "encode_stream": (("t", "abcdefg"), {"chunk_chars": 3, "allowed_special": "all"}),
    "decode": (("t", [1, 2]), {}),
    "decode_batch": (("t", [[1], [2, 3]]), {}),
    "count_tokens": (("t", [ChatMessage("user", "hi"), {"role": "tool", "content": [
        {"type": "text", "text": "x"},
        {"type": "image_url", "image_url": {"url": "u", "width": 8, "height": 8}}]}]),
        {"max_tokens": 10, "model": "gpt-4o", "tools": [{"type": "function"}],
         "tool_choice": {"function": {"name": "f"}}}),
    "quote": (("gpt-4o", [ChatMessage("user", "hi")]),
              {"tools": [{"type": "function"}], "max_output_tokens": 5, "cache": "warm",
               "vendor": "anthropic", "vendor_body": {"model": "m"}, "provider": "p"}),
    "truncate": (("t", "hello", 3), {"keep": "both", "marker": "~"}),
    "chunk": (("t", "ab", 1), {"overlap": 0}),
    "iter_chunks": (("t", "ab", 1), {"overlap": 0}),
    "report": (("t",), {"texts": ["x"], "languages": True}),
    "lint": (("t",), {"depth": "import", "list_partial": True, "max_findings": 7}),
    "diff": (("t@1", "t@2"), {"top": 3}),
    "list_tokenizers": ((), {}),
    "get_tokenizer": (("t",), {}),
    "train": (("mytok", b"corpus " * 10), {"vocab_size": 300, "special_tokens": ["<s>"],
                                          "model": "wordpiece", "wordpiece_score": "count"}),
    "train_job": (("job-1",), {}),
    "get_train_job": (("job-1",), {}),
    "watch_train_job": (("job-1",), {}),
    "cancel": (("job-1",), {}),
    "list_train_jobs": ((), {}),
}
NOT_CALLS = {"close", "wait_ready"}


def _has_deadline(context: grpc.ServicerContext) -> bool:
    """The clients' deadlines here are 10 s; a call without one has years left."""
    remaining = context.time_remaining()
    return remaining is not None and remaining < 3600


class Recorder:
    """Records (rpc, serialized requests, had a deadline, metadata) per call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[bytes], bool, tuple[tuple[str, str], ...]]] = []
        self.refuse = False

    def handler(self, rpc: str, request_stream: bool, response_stream: bool,
                responses: list[Message]) -> Callable[[Any, grpc.ServicerContext], Any]:
        def record(request: Any, context: grpc.ServicerContext) -> None:
            requests = list(request) if request_stream else [request]
            metadata = tuple(sorted((k, v) for k, v in context.invocation_metadata()
                                    if k == "authorization" and isinstance(v, str)))
            self.calls.append((rpc, [r.SerializeToString(deterministic=True) for r in requests],
                               _has_deadline(context), metadata))
            if self.refuse:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{rpc} refused as asked")

        def unary(request: Any, context: grpc.ServicerContext) -> Message:
            record(request, context)
            return responses[0]

        def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Message]:
            record(request, context)
            yield from responses

        return stream if response_stream else unary


@pytest.fixture(scope="module")
def recorder() -> Iterator[tuple[Recorder, str]]:
    rec = Recorder()
    servicer = pb_grpc.TokenizerServiceServicer()
    for rpc, (request_stream, response_stream, responses) in RPCS.items():
        setattr(servicer, rpc, rec.handler(rpc, request_stream, response_stream, responses))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_TokenizerServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield rec, f"127.0.0.1:{port}"
    server.stop(None)


def _plain(result: Any) -> Any:
    return result.job if isinstance(result, TrainHandle | AsyncTrainHandle) else result


def _run_sync(target: str, name: str) -> Any:
    args, kwargs = CALLS[name]
    with Client(target, timeout=10, token="secret") as client:
        try:
            result = getattr(client, name)(*args, **kwargs)
            return _plain(list(result) if inspect.isgenerator(result) else result)
        except InvalidArgument as err:
            return err


def _run_async(target: str, name: str) -> Any:
    args, kwargs = CALLS[name]

    async def main() -> Any:
        async with AsyncClient(target, timeout=10, token="secret") as client:
            try:
                result = getattr(client, name)(*args, **kwargs)
                if inspect.isasyncgen(result):
                    return [item async for item in result]
                return _plain(await result)
            except InvalidArgument as err:
                return err

    return asyncio.run(main())


class TestSameWire:
    def test_every_calling_method_is_covered(self) -> None:
        assert set(_public(Client)) - NOT_CALLS == set(CALLS)

    @pytest.mark.parametrize("name", sorted(set(CALLS) - SYNC_ONLY))
    def test_same_requests_and_results(self, recorder: tuple[Recorder, str], name: str) -> None:
        """Both clients send byte-identical requests to the same RPC, with the same deadline
        rule and metadata, and return equal results for the same answer."""
        rec, target = recorder
        rec.calls.clear()
        sync_result = _run_sync(target, name)
        sync_calls = list(rec.calls)
        rec.calls.clear()
        async_result = _run_async(target, name)
        assert rec.calls == sync_calls
        assert sync_result == async_result
        assert sync_result not in (None, [], "")
        assert all(meta == (("authorization", "Bearer secret"),) for *_, meta in sync_calls)
        # Watching a job has no deadline unless asked; every other call has the default one.
        assert [deadline for _, _, deadline, _ in sync_calls] == [name != "watch_train_job"]

    def test_iter_chunks_equals_chunk(self, recorder: tuple[Recorder, str]) -> None:
        rec, target = recorder
        rec.calls.clear()
        pieces = _run_sync(target, "iter_chunks")
        assert len(pieces) == 2 and pieces == _run_sync(target, "chunk")
        assert rec.calls[0] == rec.calls[1]

    @pytest.mark.parametrize("name", sorted(CALLS))
    def test_same_errors(self, recorder: tuple[Recorder, str], name: str) -> None:
        """A refused call raises the same typed error from both clients, streams included."""
        rec, target = recorder
        rec.refuse = True
        try:
            errors = [_run_sync(target, name)]
            if name not in SYNC_ONLY:
                errors.append(_run_async(target, name))
        finally:
            rec.refuse = False
        for error in errors:
            assert isinstance(error, InvalidArgument), error
            assert error.code is grpc.StatusCode.INVALID_ARGUMENT
            assert error.details.endswith("refused as asked")
        assert len({str(error) for error in errors}) == 1
