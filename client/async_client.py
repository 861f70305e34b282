"""The asyncio client (grpc.aio): the same methods as ``Client``, awaitable.

>>> async with AsyncClient("127.0.0.1:50051") as tok:    # doctest: +SKIP
...     (await tok.count_tokens("gpt-4o", "hello world")).total
2
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from typing import Any, TypeVar

import grpc
from grpc import aio

from tokend.client import _convert
from tokend.client._convert import AllowedSpecial, CountInput, DisallowedSpecial, MessageLike
from tokend.client.channel import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_MESSAGE_BYTES,
    TlsConfig,
    channel_settings,
)
from tokend.client.errors import error_from_rpc, job_outcome
from tokend.client.results import (
    CountResult,
    DecodeResult,
    EncodeResult,
    ReportResult,
    TextChunk,
    TokenizerManifest,
    TokenizerSummary,
    TrainJob,
    TrainSpec,
    TruncateResult,
)
from tokend.client.sync_client import DEFAULT_TIMEOUT
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")


class AsyncClient:
    """An asyncio tokend client over one ``grpc.aio`` channel; see ``Client`` for the options.

    Create it inside the running event loop (grpc.aio channels belong to one loop).
    """

    def __init__(
        self,
        target: str,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        tls: bool | TlsConfig | None = None,
        token: str | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        options: Sequence[tuple[str, Any]] = (),
        load_balancing: str | None = None,
    ) -> None:
        self.target = target
        self.timeout = timeout
        settings = channel_settings(
            tls=tls,
            token=token,
            max_attempts=max_attempts,
            max_message_bytes=max_message_bytes,
            extra_options=options,
            load_balancing=load_balancing,
        )
        self._metadata = settings.metadata
        if settings.credentials is None:
            self._channel = aio.insecure_channel(target, options=settings.options)
        else:
            self._channel = aio.secure_channel(
                target, settings.credentials, options=settings.options
            )
        self._stub = pb_grpc.TokenizerServiceStub(self._channel)

    # -- lifecycle ---------------------------------------------------------------------------

    async def close(self) -> None:
        await self._channel.close(grace=None)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def wait_ready(self, timeout: float = 10.0) -> None:
        """Wait until the channel is connected (TimeoutError after ``timeout`` seconds)."""
        try:
            await asyncio.wait_for(self._channel.channel_ready(), timeout)
        except TimeoutError as err:
            raise TimeoutError(f"tokend at {self.target} not reachable within {timeout}s") from err

    def _deadline(self, timeout: float | None) -> float | None:
        return self.timeout if timeout is None else timeout

    async def _call(
        self,
        method: Callable[..., Awaitable[_Resp]],
        request: _Req,
        timeout: float | None,
    ) -> _Resp:
        """One unary call with the default deadline and metadata; RPC errors become typed."""
        try:
            return await method(request, timeout=self._deadline(timeout), metadata=self._metadata)
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err

    # -- encode / decode / count -------------------------------------------------------------

    async def encode(
        self,
        tokenizer: str,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        details: bool = False,
        add_special_tokens: bool = False,
        timeout: float | None = None,
    ) -> EncodeResult:
        """Encode one text; special-token arguments have tiktoken's meaning and defaults."""
        results = await self.encode_batch(
            tokenizer,
            [text],
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            details=details,
            add_special_tokens=add_special_tokens,
            timeout=timeout,
        )
        return results[0]

    async def encode_batch(
        self,
        tokenizer: str,
        texts: Sequence[str],
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        details: bool = False,
        add_special_tokens: bool = False,
        timeout: float | None = None,
    ) -> list[EncodeResult]:
        request = _convert.encode_request(
            tokenizer,
            texts,
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            details=details,
            add_special_tokens=add_special_tokens,
        )
        response = await self._call(self._stub.Encode, request, timeout)
        return _convert.encode_results(response, details=details)

    async def encode_stream(
        self,
        tokenizer: str,
        text: str | Iterable[str] | AsyncIterable[str],
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        chunk_chars: int = _convert.STREAM_CHUNK_CHARS,
        timeout: float | None = None,
    ) -> AsyncIterator[int]:
        """Encode a long text sent in chunks; yields ids as they become final."""
        policy = _convert.special_policy(allowed_special, disallowed_special)
        chunks: Iterable[str] | AsyncIterable[str] = (
            text if isinstance(text, AsyncIterable) else _convert.text_chunks(text, chunk_chars)
        )
        requests = _convert.encode_stream_requests_async(tokenizer, chunks, policy)
        try:
            call = self._stub.EncodeStream(
                requests, timeout=self._deadline(timeout), metadata=self._metadata
            )
            async for response in call:
                for token_id in response.ids:
                    yield token_id
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err

    async def decode(
        self, tokenizer: str, ids: Sequence[int], *, timeout: float | None = None
    ) -> DecodeResult:
        request = _convert.decode_request(tokenizer, ids)
        response = await self._call(self._stub.Decode, request, timeout)
        return _convert.decode_result(response)

    async def decode_batch(
        self, tokenizer: str, batch: Sequence[Sequence[int]], *, timeout: float | None = None
    ) -> list[DecodeResult]:
        request = _convert.decode_batch_request(tokenizer, batch)
        response = await self._call(self._stub.Decode, request, timeout)
        return _convert.decode_results(response)

    async def count_tokens(
        self,
        tokenizer: str,
        text: CountInput | None = None,
        *,
        messages: Sequence[MessageLike] | None = None,
        plain_text: bool = False,
        max_tokens: int | None = None,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = None,
        model: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        add_special_tokens: bool = False,
        timeout: float | None = None,
    ) -> CountResult:
        request = _convert.count_request(
            tokenizer,
            text,
            messages=messages,
            plain_text=plain_text,
            max_tokens=max_tokens,
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            model=model,
            tools=tools,
            tool_choice=tool_choice,
            add_special_tokens=add_special_tokens,
        )
        response = await self._call(self._stub.CountTokens, request, timeout)
        return _convert.count_result(response)

    async def truncate(
        self,
        tokenizer: str,
        text: str,
        max_tokens: int,
        *,
        keep: str = "head",
        marker: str | None = None,
        timeout: float | None = None,
    ) -> TruncateResult:
        """``text`` cut to at most ``max_tokens`` tokens: keep the head, the tail, or both ends
        around ``marker`` (default "…", counted within the budget). Maximal: one more
        character would not fit."""
        request = _convert.truncate_request(tokenizer, text, max_tokens, keep, marker)
        return _convert.truncate_result(await self._call(self._stub.Truncate, request, timeout))

    async def chunk(
        self,
        tokenizer: str,
        text: str,
        max_tokens: int,
        *,
        overlap: int = 0,
        timeout: float | None = None,
    ) -> list[TextChunk]:
        """``text`` in pieces of at most ``max_tokens`` tokens, overlapping by up to
        ``overlap`` tokens, cut at paragraph, sentence or word boundaries when possible."""
        request = _convert.chunk_request(tokenizer, text, max_tokens, overlap)
        pieces: list[TextChunk] = []
        try:
            call = self._stub.Chunk(request, timeout=self._deadline(timeout),
                                    metadata=self._metadata)
            async for response in call:
                pieces.extend(_convert.text_chunks_of(response))
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err
        return pieces

    async def report(
        self,
        tokenizers: str | Sequence[str],
        texts: Sequence[str] | None = None,
        *,
        languages: bool = False,
        timeout: float | None = None,
    ) -> ReportResult:
        """Compare ``tokenizers`` on ``texts`` (default: the server's parallel corpus, 20
        languages): bytes, characters and words per token, vocabulary used; with
        ``languages`` also each language's token cost relative to English."""
        request = _convert.report_request(tokenizers, texts, languages)
        return _convert.report_result(await self._call(self._stub.Report, request, timeout))

    # -- registry ----------------------------------------------------------------------------

    async def list_tokenizers(self, *, timeout: float | None = None) -> list[TokenizerSummary]:
        response = await self._call(self._stub.ListTokenizers, pb.ListTokenizersRequest(), timeout)
        return _convert.tokenizer_summaries(response)

    async def get_tokenizer(
        self, tokenizer: str, *, timeout: float | None = None
    ) -> TokenizerManifest:
        response = await self._call(
            self._stub.GetTokenizer, pb.GetTokenizerRequest(tokenizer=tokenizer), timeout
        )
        return _convert.tokenizer_manifest(response)

    # -- training ----------------------------------------------------------------------------

    async def train(
        self,
        name: str,
        corpus: _convert.Corpus | None = None,
        *,
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        pattern: str = "",
        corpus_path: str = "",
        model: str = "",
        wordpiece_score: str = "",
        timeout: float | None = None,
    ) -> AsyncTrainHandle:
        """Start a training job (see ``Client.train``); returns once the corpus is sent."""
        spec = TrainSpec(name, vocab_size, tuple(special_tokens), pattern, corpus_path, model,
                         wordpiece_score)
        requests = _convert.train_requests(spec, corpus)
        response = await self._call(self._stub.Train, requests, timeout)
        return AsyncTrainHandle(self, _convert.train_job(response.job))

    async def train_job(self, job_id: str) -> AsyncTrainHandle:
        return AsyncTrainHandle(self, await self.get_train_job(job_id))

    async def get_train_job(self, job_id: str, *, timeout: float | None = None) -> TrainJob:
        response = await self._call(
            self._stub.GetTrainJob, pb.GetTrainJobRequest(job_id=job_id), timeout
        )
        return _convert.train_job(response.job)

    async def watch_train_job(
        self, job_id: str, *, timeout: float | None = None
    ) -> AsyncIterator[TrainJob]:
        """Progress snapshots until the job ends; no deadline unless ``timeout`` is given."""
        try:
            call = self._stub.WatchTrainJob(
                pb.WatchTrainJobRequest(job_id=job_id), timeout=timeout, metadata=self._metadata
            )
            async for response in call:
                yield _convert.train_job(response.job)
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err

    async def cancel(self, job_id: str, *, timeout: float | None = None) -> TrainJob:
        response = await self._call(
            self._stub.CancelTrainJob, pb.CancelTrainJobRequest(job_id=job_id), timeout
        )
        return _convert.train_job(response.job)

    async def list_train_jobs(self, *, timeout: float | None = None) -> list[TrainJob]:
        response = await self._call(self._stub.ListTrainJobs, pb.ListTrainJobsRequest(), timeout)
        return [_convert.train_job(job) for job in response.jobs]


class AsyncTrainHandle:
    """``TrainHandle`` for asyncio: ``async for job in handle``, ``await handle.result()``."""

    def __init__(self, client: AsyncClient, job: TrainJob) -> None:
        self._client = client
        self.job = job

    @property
    def job_id(self) -> str:
        return self.job.job_id

    def __aiter__(self) -> AsyncIterator[TrainJob]:
        return self.progress()

    async def progress(self, *, timeout: float | None = None) -> AsyncIterator[TrainJob]:
        if self.job.finished:
            yield self.job
            return
        async for job in self._client.watch_train_job(self.job_id, timeout=timeout):
            self.job = job
            yield job

    async def refresh(self) -> TrainJob:
        self.job = await self._client.get_train_job(self.job_id)
        return self.job

    async def cancel(self) -> TrainJob:
        self.job = await self._client.cancel(self.job_id)
        return self.job

    async def result(self, timeout: float | None = None) -> str:
        """Wait for the job; the published reference, or TrainingFailed / TrainingCancelled."""
        async for _ in self.progress(timeout=timeout):
            pass
        if not self.job.finished:
            await self.refresh()
        return job_outcome(self.job)
