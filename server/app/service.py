"""``App``: every operation of tokend as one plain method, whatever transport carried it.

Each method takes a typed request (and the call's ``CallContext``), resolves the tokenizer,
checks the limits before any work, calls tokend.core, and returns a typed result. Token
metrics are recorded here, once per call and only for work delivered: a refused call counts
nothing. Errors are tokend.core.errors classes tagged with their request field; each adapter
turns them into its status (``server/errors.py`` holds both tables).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from tokend.core.counting import ModelCatalogue
from tokend.core.counting.prices import read_snapshot
from tokend.core.counting.quote import Quote
from tokend.core.errors import InvalidInput
from tokend.core.pipeline.decoders import byte_of
from tokend.core.registry import Registry
from tokend.server import cells, metrics
from tokend.server.app import catalog, counting, encoding, linting, quoting
from tokend.server.app.catalog import TokenizerManifest, TokenizerSummary
from tokend.server.app.context import UNBOUNDED, CallContext
from tokend.server.app.counting import (
    ChunkRequest,
    Chunks,
    Counted,
    CountRequest,
    Truncated,
    TruncateRequest,
    served_as,
)
from tokend.server.app.encoding import (
    Decoded,
    DecodeRequest,
    Encoded,
    EncodeRequest,
    StreamIds,
    StreamStart,
)
from tokend.server.app.fields import with_field
from tokend.server.app.linting import Diffed, DiffRequest, Linted, LintRequest
from tokend.server.app.quoting import QuoteRequest
from tokend.server.app.reporting import Reported, ReportRequest, report
from tokend.server.app.training import Training
from tokend.server.config import ServerConfig
from tokend.server.jobs import JobStore
from tokend.server.logs import log_event
from tokend.server.streaming import StreamSlots
from tokend.server.tokenizers import Served, Tokenizers


class App:
    """One worker's application: its config, served tokenizers, model table and job store."""

    def __init__(self, config: ServerConfig, tokenizers: Tokenizers, jobs: JobStore) -> None:
        self.config = config
        self.tokenizers = tokenizers
        # The shipped model table plus the registry's models.json (re-read when it changes);
        # a registry in object storage has no such file (docs/registry.md).
        folder = tokenizers.registry.store.local_root
        self.models = ModelCatalogue.for_registry(Path(folder)) if folder else ModelCatalogue()
        self.training = Training(config, jobs)  # the training-job calls
        # EncodeStream calls open at once, within --max-streams (Train uploads are bounded by
        # --max-train-jobs and the admin token instead).
        self.streams = StreamSlots(config.stream_cap)
        # Lint and Diff calls run at once within --max-lint-calls (seconds of CPU each).
        self.lint_slots = StreamSlots(config.max_lint_calls, "--max-lint-calls",
                                      "Lint and Diff calls running in this worker", gauge=False)

    @classmethod
    def from_config(cls, config: ServerConfig, *, in_process: bool = False) -> App:
        """The app over ``config.registry``, as every worker of ``tokend serve`` builds it.

        ``in_process`` (the CLI answering without a server) builds the same app without
        creating the jobs folder: nothing is written, and nothing starts (no worker, no
        reload thread: the registry is read when a call needs it).
        """
        registry = Registry(config.registry)
        registry.on_kept_aliases = lambda name, exc: log_event(
            "aliases_corrupt_kept", level=logging.WARNING, name=name, error=str(exc))
        tokenizers = Tokenizers(registry, cache_entries=config.cache_entries)
        return cls(config, tokenizers, JobStore(config.jobs_path, create=not in_process))

    def ready(self, tokenizer: str, model: str = "") -> bool:
        """Whether a call naming ``tokenizer`` (or, without one, ``model``) finds its tokenizer
        loaded already: such a call does no registry I/O and no loading, only the work."""
        ref = tokenizer
        if not ref and model:
            info = self.models.find(model)
            ref = info.tokenizer if info is not None else ""
        return bool(ref) and self.tokenizers.is_loaded(ref)

    # -- tokens ------------------------------------------------------------------------------

    def encode(self, request: EncodeRequest, context: CallContext = UNBOUNDED) -> Encoded:
        served = served_as(self.tokenizers, request.tokenizer)
        result = encoding.encode(served, request, self.config, context)
        record_tokens("Encode", served, result.total)
        return result

    def encode_stream(self, first: StreamStart | None, rest: Iterator[str],
                      context: CallContext = UNBOUNDED) -> Iterator[StreamIds]:
        """Ids as they become final for a text sent in pieces (``first`` names the tokenizer;
        None: the caller sent nothing)."""
        if first is None:
            raise with_field(
                InvalidInput("EncodeStream received no message: the first one names the "
                             "tokenizer and may carry the first chunk of text"),
                "tokenizer",
            )
        served = served_as(self.tokenizers, first.tokenizer)
        sent = 0
        try:
            for piece in encoding.encode_stream(served, first, rest, self.config, context):
                sent = piece.count  # handed to the transport (which may not resume us)
                yield piece
        finally:
            record_tokens("EncodeStream", served, sent)

    def decode(self, request: DecodeRequest, context: CallContext = UNBOUNDED) -> Decoded:
        served = served_as(self.tokenizers, request.tokenizer)
        return encoding.decode(served, request, self.config, context)

    def byte_fallback_ids(self, result: Encoded) -> frozenset[int]:
        """Ids of ``result`` whose vocabulary entry is a ``<0xNN>`` byte-fallback token
        (SentencePiece and HF models with byte_fallback; byte-level BPE has none)."""
        enc = self.tokenizers.get(result.tokenizer).encoding
        decode_tokens = getattr(enc, "decode_tokens", None)
        if decode_tokens is None:
            return frozenset()
        ids = sorted({i for r in result.results for i in r.ids})
        texts: list[str] = decode_tokens(ids)
        return frozenset(i for i, text in zip(ids, texts, strict=True) if byte_of(text) is not None)

    # -- counting ----------------------------------------------------------------------------

    def count(self, request: CountRequest, context: CallContext = UNBOUNDED) -> Counted:
        served, result = counting.count(request, self.tokenizers, self.models, self.config,
                                        context)
        record_tokens("CountTokens", served, result.total)
        return result

    def quote(self, request: QuoteRequest, context: CallContext = UNBOUNDED) -> Quote:
        """What a call will cost: counted as ``count`` counts (each count under the same
        limits), split by the vendor's caching rule, priced by genai-prices (``quoting.py``)."""
        served: list[Served] = []

        def count(req: CountRequest) -> Counted:
            # subtle: App.count would record CountTokens metrics once per prefix counted; the
            # quote records its input tokens once, as Quote, when it is answered.
            seen, result = counting.count(req, self.tokenizers, self.models, self.config,
                                          context)
            served.append(seen)
            return result

        folder = self.tokenizers.registry.store.local_root
        snapshot = read_snapshot(Path(folder)) if folder else None
        quoted = quoting.quote(request, count, self.models, snapshot)
        record_tokens("Quote", served[0], quoted.input_tokens)
        return quoted

    def truncate(self, request: TruncateRequest,
                 context: CallContext = UNBOUNDED) -> Truncated:
        served = served_as(self.tokenizers, request.tokenizer)
        result = counting.truncate_text(served, request, self.config)
        record_tokens("Truncate", served, result.result.count)
        return result

    def chunk(self, request: ChunkRequest, context: CallContext = UNBOUNDED) -> Iterator[Chunks]:
        """The text's pieces in batches; the limits are checked before the first one."""
        served = served_as(self.tokenizers, request.tokenizer)
        counting.check_chunking(request, self.config)
        sent = 0
        try:
            for batch in counting.chunk_text(served, request, context):
                sent += sum(piece.count for piece in batch.chunks)
                yield batch
        finally:
            record_tokens("Chunk", served, sent)

    # -- the registry and reports -------------------------------------------------------------

    def list_tokenizers(self) -> list[TokenizerSummary]:
        return catalog.list_tokenizers(self.tokenizers)

    def get_tokenizer(self, ref: str) -> TokenizerManifest:
        return catalog.get_tokenizer(self.tokenizers, ref)

    def report(self, request: ReportRequest, context: CallContext = UNBOUNDED) -> Reported:
        return report(request, context, self.config, self.tokenizers.get)

    def lint(self, request: LintRequest, context: CallContext = UNBOUNDED) -> Linted:
        """``tokend registry lint`` of a served tokenizer, bounded (``linting.py``)."""
        return linting.lint(request, self.tokenizers.get, self.config, self.lint_slots,
                            context)

    def diff(self, request: DiffRequest, context: CallContext = UNBOUNDED) -> Diffed:
        """``tokend registry diff`` of two served tokenizers, bounded (``linting.py``)."""
        return linting.diff(request, self.tokenizers.get, self.config, self.lint_slots,
                            context)


# (tokenizer name, method) -> the cells of tokend_tokens_encoded_total and tokend_tokens_total
_TOKEN_CELLS: dict[tuple[str, str], tuple[cells.Cell, cells.Cell]] = {}


def record_tokens(method: str, served: Served, tokens: int) -> None:
    """Add to tokend_tokens_encoded_total{method} and tokend_tokens_total{tokenizer, method}.

    The tokenizer label is the served (resolved, loaded) name, never the client's string, so
    its values are bounded by what the registry holds (and so is this table of cells).
    """
    key = (served.resolved.name, method)
    pair = _TOKEN_CELLS.get(key)
    if pair is None:  # a race binds two equal pairs to the same values: harmless
        pair = _TOKEN_CELLS[key] = (cells.counter_cell(metrics.TOKENS_ENCODED, method),
                                    cells.counter_cell(metrics.TOKENS, key[0], method))
    cells.write(pair[0], tokens, pair[1], tokens)
