"""The asyncio client (grpc.aio): the same methods as ``Client``, awaitable.

A thin shell like ``Client``: each method takes its call from ``requests.py`` and awaits it
with ``_unary`` or iterates it with ``_stream``.

>>> async with AsyncClient("127.0.0.1:50051") as tok:    # doctest: +SKIP
...     (await tok.count_tokens("gpt-4o", "hello world")).total
2
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import grpc
from grpc import aio

from tokend.client import requests
from tokend.client.base import ClientBase
from tokend.client.channel import ChannelSettings
from tokend.client.chat import MessageLike
from tokend.client.errors import error_from_rpc, job_outcome
from tokend.client.requests import (
    AllowedSpecial,
    CountInput,
    DisallowedSpecial,
    LintDepth,
    Stream,
    Unary,
)
from tokend.client.results import (
    CountResult,
    DecodeResult,
    DiffResult,
    EncodeResult,
    LintResult,
    QuoteResult,
    ReportResult,
    TextChunk,
    TokenizerManifest,
    TokenizerSummary,
    TrainJob,
    TruncateResult,
)
from tokend.client.streams import STREAM_CHUNK_CHARS, Corpus
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

R = TypeVar("R")
T = TypeVar("T")


class AsyncClient(ClientBase):
    """An asyncio tokend client over one ``grpc.aio`` channel; see ``Client`` for the options.

    Create it inside the running event loop (grpc.aio channels belong to one loop).
    """

    def _connect(self, target: str, settings: ChannelSettings) -> None:
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

    # -- the two ways to run a call ----------------------------------------------------------

    async def _unary(self, call: Unary[R], timeout: float | None) -> R:
        """One response, read by the call's converter; RPC errors become typed."""
        method = getattr(self._stub, call.rpc)
        try:
            response = await method(call.request, timeout=self._deadline(timeout),
                                    metadata=self._metadata)
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err
        return call.convert(response)

    async def _stream(self, call: Stream[T], timeout: float | None) -> AsyncIterator[T]:
        """The items of each response as it arrives; RPC errors become typed."""
        deadline = self._deadline(timeout) if call.default_deadline else timeout
        try:
            responses = getattr(self._stub, call.rpc)(
                call.request, timeout=deadline, metadata=self._metadata
            )
            async for response in responses:
                for item in call.items(response):
                    yield item
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
        """Encode several texts in one call; results are in the order of ``texts``."""
        return await self._unary(requests.encode_batch(
            tokenizer, texts, allowed_special=allowed_special,
            disallowed_special=disallowed_special, details=details,
            add_special_tokens=add_special_tokens,
        ), timeout)

    async def encode_stream(
        self,
        tokenizer: str,
        text: str | Iterable[str] | AsyncIterable[str],
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        chunk_chars: int = STREAM_CHUNK_CHARS,
        timeout: float | None = None,
    ) -> AsyncIterator[int]:
        """Encode a long text sent in chunks; yields ids as they become final."""
        call = requests.encode_stream(
            tokenizer, text, allowed_special=allowed_special,
            disallowed_special=disallowed_special, chunk_chars=chunk_chars,
        )
        async for token_id in self._stream(call, timeout):
            yield token_id

    async def decode(
        self, tokenizer: str, ids: Sequence[int], *, timeout: float | None = None
    ) -> DecodeResult:
        """Decode ids: text (invalid UTF-8 replaced) and the exact bytes."""
        return await self._unary(requests.decode(tokenizer, ids), timeout)

    async def decode_batch(
        self, tokenizer: str, batch: Sequence[Sequence[int]], *, timeout: float | None = None
    ) -> list[DecodeResult]:
        """Decode several id sequences in one call."""
        return await self._unary(requests.decode_batch(tokenizer, batch), timeout)

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
        """Count tokens of a text, a list of texts, or chat messages (see ``Client``)."""
        return await self._unary(requests.count_tokens(
            tokenizer, text, messages=messages, plain_text=plain_text, max_tokens=max_tokens,
            allowed_special=allowed_special, disallowed_special=disallowed_special, model=model,
            tools=tools, tool_choice=tool_choice, add_special_tokens=add_special_tokens,
        ), timeout)

    async def quote(
        self,
        model: str,
        messages: Sequence[MessageLike] | None = None,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        vendor: str | None = None,
        vendor_body: Mapping[str, Any] | None = None,
        max_output_tokens: int | None = None,
        cache: str | Mapping[str, int] = "cold",
        provider: str | None = None,
        timeout: float | None = None,
    ) -> QuoteResult:
        """What a call will cost: the request counted as ``count_tokens`` counts it, its input
        split by the vendor's prompt-caching rule (``cache``: "cold", "warm" or
        ``{"prefix_tokens": N}``), output up to ``max_output_tokens`` (default: the model's
        maximum), every part priced by genai-prices. ``vendor_body`` is a vendor's request body
        instead ("anthropic", "openai-responses", "openai-chat" or "gemini" as ``vendor``).
        """
        return await self._unary(requests.quote(
            model, messages, tools=tools, tool_choice=tool_choice, vendor=vendor,
            vendor_body=vendor_body, max_output_tokens=max_output_tokens, cache=cache,
            provider=provider,
        ), timeout)

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
        return await self._unary(
            requests.truncate(tokenizer, text, max_tokens, keep=keep, marker=marker), timeout
        )

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
        call = requests.chunk(tokenizer, text, max_tokens, overlap=overlap)
        return [piece async for piece in self._stream(call, timeout)]

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
        return await self._unary(requests.report(tokenizers, texts, languages=languages), timeout)

    async def lint(
        self,
        tokenizer: str,
        *,
        depth: LintDepth = "full",
        list_partial: bool = False,
        max_findings: int = 0,
        timeout: float | None = None,
    ) -> LintResult:
        """Lint a served tokenizer (the server's ``tokend registry lint``): ``depth`` "full"
        (everything) or "import" (what every publish runs); ``list_partial`` lists every
        partial-UTF-8 token; ``max_findings`` findings listed (0: the server's 1000; the
        counts in ``summary`` cover all). Raises ResourceExhausted past the server's limits."""
        call = requests.lint(tokenizer, depth=depth, list_partial=list_partial,
                             max_findings=max_findings)
        return await self._unary(call, timeout)

    async def diff(
        self, a: str, b: str, *, top: int = 0, timeout: float | None = None
    ) -> DiffResult:
        """What changed from tokenizer ``a`` to ``b`` (e.g. ``"mytok@1"``, ``"mytok@2"``):
        tokens added and removed, ids whose bytes changed, token counts per language b / a,
        and the ``top`` texts whose counts changed most (0: 10)."""
        return await self._unary(requests.diff(a, b, top=top), timeout)

    # -- registry ----------------------------------------------------------------------------

    async def list_tokenizers(self, *, timeout: float | None = None) -> list[TokenizerSummary]:
        return await self._unary(requests.list_tokenizers(), timeout)

    async def get_tokenizer(
        self, tokenizer: str, *, timeout: float | None = None
    ) -> TokenizerManifest:
        return await self._unary(requests.get_tokenizer(tokenizer), timeout)

    # -- training ----------------------------------------------------------------------------

    async def train(
        self,
        name: str,
        corpus: Corpus | None = None,
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
        job = await self._unary(requests.train(
            name, corpus, vocab_size=vocab_size, special_tokens=special_tokens, pattern=pattern,
            corpus_path=corpus_path, model=model, wordpiece_score=wordpiece_score,
        ), timeout)
        return AsyncTrainHandle(self, job)

    async def train_job(self, job_id: str) -> AsyncTrainHandle:
        """A handle on an existing job (e.g. started by another process)."""
        return AsyncTrainHandle(self, await self.get_train_job(job_id))

    async def get_train_job(self, job_id: str, *, timeout: float | None = None) -> TrainJob:
        return await self._unary(requests.get_train_job(job_id), timeout)

    async def watch_train_job(
        self, job_id: str, *, timeout: float | None = None
    ) -> AsyncIterator[TrainJob]:
        """Progress snapshots until the job ends; no deadline unless ``timeout`` is given."""
        async for job in self._stream(requests.watch_train_job(job_id), timeout):
            yield job

    async def cancel(self, job_id: str, *, timeout: float | None = None) -> TrainJob:
        """Ask the server to cancel a job; returns its state after the request."""
        return await self._unary(requests.cancel(job_id), timeout)

    async def list_train_jobs(self, *, timeout: float | None = None) -> list[TrainJob]:
        return await self._unary(requests.list_train_jobs(), timeout)


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
        """Progress snapshots until the job ends; each one also updates ``self.job``."""
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
