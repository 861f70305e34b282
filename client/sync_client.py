"""The blocking client: one reused channel, typed results, typed exceptions.

A thin shell: each method takes its call from ``requests.py`` (the request, its RPC and the
reader of its answer, shared with ``AsyncClient``) and runs it with ``_unary`` or ``_stream``.

>>> with Client("127.0.0.1:50051") as tok:               # doctest: +SKIP
...     tok.encode("o200k_base", "hello world").ids
[24912, 2375]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import grpc

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


class Client(ClientBase):
    """A blocking tokend client over one channel (thread-safe; reuse it, close it when done).

    ``timeout`` is the default deadline of each call in seconds (None: no deadline; watching a
    training job never has one unless asked). ``token`` is sent as ``authorization: Bearer``.
    ``tls``: True for the system roots, or a ``TlsConfig`` (CA, client cert for mutual TLS).
    UNAVAILABLE is retried by gRPC itself, up to ``max_attempts`` attempts in all.
    ``load_balancing="round_robin"`` spreads calls over every address the target resolves to
    (``dns:///tokend-headless.NAMESPACE.svc:50051``); the default is gRPC's pick_first.
    """

    def _connect(self, target: str, settings: ChannelSettings) -> None:
        if settings.credentials is None:
            self._channel = grpc.insecure_channel(target, options=settings.options)
        else:
            self._channel = grpc.secure_channel(
                target, settings.credentials, options=settings.options
            )
        self._stub = pb_grpc.TokenizerServiceStub(self._channel)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Block until the channel is connected (raises ``Unavailable``-like TimeoutError)."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError as err:
            raise TimeoutError(f"tokend at {self.target} not reachable within {timeout}s") from err

    # -- the two ways to run a call ----------------------------------------------------------

    def _unary(self, call: Unary[R], timeout: float | None) -> R:
        """One response, read by the call's converter; RPC errors become typed."""
        method = getattr(self._stub, call.rpc)
        try:
            response = method(call.request, timeout=self._deadline(timeout),
                              metadata=self._metadata)
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err
        return call.convert(response)

    def _stream(self, call: Stream[T], timeout: float | None) -> Iterator[T]:
        """The items of each response as it arrives; RPC errors become typed."""
        deadline = self._deadline(timeout) if call.default_deadline else timeout
        try:
            responses = getattr(self._stub, call.rpc)(
                call.request, timeout=deadline, metadata=self._metadata
            )
            for response in responses:
                yield from call.items(response)
        except grpc.RpcError as err:
            raise error_from_rpc(err) from err

    # -- encode / decode / count -------------------------------------------------------------

    def encode(
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
        return self.encode_batch(
            tokenizer,
            [text],
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            details=details,
            add_special_tokens=add_special_tokens,
            timeout=timeout,
        )[0]

    def encode_batch(
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
        return self._unary(requests.encode_batch(
            tokenizer, texts, allowed_special=allowed_special,
            disallowed_special=disallowed_special, details=details,
            add_special_tokens=add_special_tokens,
        ), timeout)

    def encode_stream(
        self,
        tokenizer: str,
        text: str | Iterable[str],
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        chunk_chars: int = STREAM_CHUNK_CHARS,
        timeout: float | None = None,
    ) -> Iterator[int]:
        """Encode a text larger than one message: a str (cut into chunks) or an iterable of
        chunks (any boundaries). Ids arrive as soon as the server knows they are final and equal
        one ``encode`` of the whole text.
        """
        yield from self._stream(requests.encode_stream(
            tokenizer, text, allowed_special=allowed_special,
            disallowed_special=disallowed_special, chunk_chars=chunk_chars,
        ), timeout)

    def decode(
        self, tokenizer: str, ids: Sequence[int], *, timeout: float | None = None
    ) -> DecodeResult:
        """Decode ids: text (invalid UTF-8 replaced) and the exact bytes."""
        return self._unary(requests.decode(tokenizer, ids), timeout)

    def decode_batch(
        self, tokenizer: str, batch: Sequence[Sequence[int]], *, timeout: float | None = None
    ) -> list[DecodeResult]:
        """Decode several id sequences in one call."""
        return self._unary(requests.decode_batch(tokenizer, batch), timeout)

    def count_tokens(
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
        """Count tokens of a text, a list of texts, or chat messages (OpenAI's chat rule unless
        ``plain_text``). With ``max_tokens``, ``fits`` and ``remaining`` answer "does it fit".
        Special-token text counts as plain text by default, so counting never fails on it.
        """
        return self._unary(requests.count_tokens(
            tokenizer, text, messages=messages, plain_text=plain_text, max_tokens=max_tokens,
            allowed_special=allowed_special, disallowed_special=disallowed_special, model=model,
            tools=tools, tool_choice=tool_choice, add_special_tokens=add_special_tokens,
        ), timeout)

    def quote(
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
        return self._unary(requests.quote(
            model, messages, tools=tools, tool_choice=tool_choice, vendor=vendor,
            vendor_body=vendor_body, max_output_tokens=max_output_tokens, cache=cache,
            provider=provider,
        ), timeout)

    def truncate(
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
        return self._unary(
            requests.truncate(tokenizer, text, max_tokens, keep=keep, marker=marker), timeout
        )

    def chunk(
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
        return list(self.iter_chunks(tokenizer, text, max_tokens, overlap=overlap,
                                     timeout=timeout))

    def iter_chunks(
        self,
        tokenizer: str,
        text: str,
        max_tokens: int,
        *,
        overlap: int = 0,
        timeout: float | None = None,
    ) -> Iterator[TextChunk]:
        """The pieces as the server streams them."""
        yield from self._stream(
            requests.chunk(tokenizer, text, max_tokens, overlap=overlap), timeout
        )

    def report(
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
        return self._unary(requests.report(tokenizers, texts, languages=languages), timeout)

    def lint(
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
        return self._unary(call, timeout)

    def diff(
        self, a: str, b: str, *, top: int = 0, timeout: float | None = None
    ) -> DiffResult:
        """What changed from tokenizer ``a`` to ``b`` (e.g. ``"mytok@1"``, ``"mytok@2"``):
        tokens added and removed, ids whose bytes changed, token counts per language b / a,
        and the ``top`` texts whose counts changed most (0: 10)."""
        return self._unary(requests.diff(a, b, top=top), timeout)

    # -- registry ----------------------------------------------------------------------------

    def list_tokenizers(self, *, timeout: float | None = None) -> list[TokenizerSummary]:
        return self._unary(requests.list_tokenizers(), timeout)

    def get_tokenizer(self, tokenizer: str, *, timeout: float | None = None) -> TokenizerManifest:
        return self._unary(requests.get_tokenizer(tokenizer), timeout)

    # -- training ----------------------------------------------------------------------------

    def train(
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
    ) -> TrainHandle:
        """Start a training job; returns once the server has the corpus.

        ``corpus`` is streamed (text, bytes, a local ``Path`` or byte chunks); or name a file
        under the server's --train-dir with ``corpus_path``. Needs the admin ``token`` when the
        server sets one. ``pattern`` "" means the server's default (o200k); ``model`` the
        tokenizer kind ("byte-bpe" when "", "char", "word-bpe", "wordpiece", "unigram");
        ``wordpiece_score`` WordPiece's merge criterion ("gain" when "", "ratio", "count").
        Progress: iterate the handle; the published reference: ``result()``.
        """
        job = self._unary(requests.train(
            name, corpus, vocab_size=vocab_size, special_tokens=special_tokens, pattern=pattern,
            corpus_path=corpus_path, model=model, wordpiece_score=wordpiece_score,
        ), timeout)
        return TrainHandle(self, job)

    def train_job(self, job_id: str) -> TrainHandle:
        """A handle on an existing job (e.g. started by another process)."""
        return TrainHandle(self, self.get_train_job(job_id))

    def get_train_job(self, job_id: str, *, timeout: float | None = None) -> TrainJob:
        return self._unary(requests.get_train_job(job_id), timeout)

    def watch_train_job(self, job_id: str, *, timeout: float | None = None) -> Iterator[TrainJob]:
        """Progress snapshots until the job ends (the last one is final). No deadline unless
        ``timeout`` is given: training can take a while.
        """
        yield from self._stream(requests.watch_train_job(job_id), timeout)

    def cancel(self, job_id: str, *, timeout: float | None = None) -> TrainJob:
        """Ask the server to cancel a job; returns its state after the request."""
        return self._unary(requests.cancel(job_id), timeout)

    def list_train_jobs(self, *, timeout: float | None = None) -> list[TrainJob]:
        return self._unary(requests.list_train_jobs(), timeout)


class TrainHandle:
    """A running (or finished) training job: iterate it for progress, ``result()`` to wait."""

    def __init__(self, client: Client, job: TrainJob) -> None:
        self._client = client
        self.job = job  # the latest snapshot seen

    @property
    def job_id(self) -> str:
        return self.job.job_id

    def __iter__(self) -> Iterator[TrainJob]:
        return self.progress()

    def progress(self, *, timeout: float | None = None) -> Iterator[TrainJob]:
        """Progress snapshots until the job ends; each one also updates ``self.job``."""
        if self.job.finished:
            yield self.job
            return
        for job in self._client.watch_train_job(self.job_id, timeout=timeout):
            self.job = job
            yield job

    def refresh(self) -> TrainJob:
        self.job = self._client.get_train_job(self.job_id)
        return self.job

    def cancel(self) -> TrainJob:
        self.job = self._client.cancel(self.job_id)
        return self.job

    def result(self, timeout: float | None = None) -> str:
        """Wait for the job; return the published reference (``"mytok@3"``).

        Raises ``TrainingFailed`` / ``TrainingCancelled`` when it ended otherwise, and
        ``DeadlineExceeded`` when ``timeout`` seconds pass first.
        """
        for _ in self.progress(timeout=timeout):
            pass
        if not self.job.finished:  # the stream ended early: ask once more
            self.refresh()
        return job_outcome(self.job)
