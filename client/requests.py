"""What each client method sends: typed arguments -> a checked request, its RPC, its reader.

Design (one client, two shells). A public method of ``Client`` or ``AsyncClient`` is three
steps: build the request, call the stub, convert the answer. Steps one and three are the same
for both clients, so they are written once, here: one function per client method, named after
it, that checks the arguments (``InvalidInput`` before anything is sent), builds the message
and returns a ``Unary`` or a ``Stream`` naming the RPC and the ``responses.py`` function that
reads its answer. Step two is the only thing that differs (``stub.X(...)`` or
``await stub.X(...)``) and is written once per client, in its ``_unary`` and ``_stream``,
which also map gRPC errors through ``errors.error_from_rpc``. Each public method is then one
line over this module; its signature and docstring are the public contract, checked equal for
both clients by ``tests/client/test_client_shape.py``.

Chosen over one base class holding the method bodies (a sync and an async body cannot be one
function without generating code) and over methods generated from a table (the signatures,
types and docstrings would vanish from the source).

>>> call = decode("o200k_base", [24912, 2375])
>>> call.rpc, list(call.request.ids)
('Decode', [24912, 2375])
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from tokend.client import responses
from tokend.client.chat import MessageLike, as_message, chat_message
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
    TrainSpec,
    TruncateResult,
)
from tokend.client.streams import (
    Corpus,
    check_corpus,
    encode_stream_requests,
    encode_stream_requests_async,
    text_chunks,
    train_requests,
)
from tokend.core.errors import InvalidInput
from tokend.v1 import tokenizer_pb2 as pb

# tiktoken's policy arguments: allowed_special="all" or a set; disallowed_special="all", a
# collection (empty = no check), or None for the RPC's default (see DisallowedSpecial in the proto).
AllowedSpecial: TypeAlias = Literal["all"] | AbstractSet[str]
DisallowedSpecial: TypeAlias = Literal["all"] | Iterable[str] | None
# count_tokens input: one text, several texts, or chat messages.
CountInput: TypeAlias = str | Sequence[str] | Sequence[MessageLike]

R = TypeVar("R")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Unary(Generic[R]):
    """A call answered once: the result is ``convert(stub.<rpc>(request))``."""

    rpc: str  # the stub's method, named as in the proto ("CountTokens")
    request: Any  # a request message, or an iterator of them (Train streams its corpus)
    convert: Callable[[Any], R]


@dataclass(frozen=True, slots=True)
class Stream(Generic[T]):
    """A call answered by a stream of responses; each one yields ``items(response)``."""

    rpc: str
    request: Any  # a request message, or a (sync or async) iterator of them
    items: Callable[[Any], Iterable[T]]
    # False: no deadline unless the caller passes one (watching a training job can take hours).
    default_deadline: bool = True


def special_policy(
    allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
) -> pb.SpecialTokenPolicy:
    """tiktoken's two policy arguments as the proto's SpecialTokenPolicy.

    >>> special_policy("all", None).allow_all
    True
    >>> special_policy(frozenset(), ()).disallowed_mode == pb.DISALLOWED_SPECIAL_NONE
    True
    """
    policy = pb.SpecialTokenPolicy()
    if allowed_special == "all":
        policy.allow_all = True
    else:
        policy.allowed.extend(sorted(allowed_special))
    if disallowed_special is None:
        policy.disallowed_mode = pb.DISALLOWED_SPECIAL_UNSPECIFIED
    elif disallowed_special == "all":
        policy.disallowed_mode = pb.DISALLOWED_SPECIAL_ALL
    elif isinstance(disallowed_special, str):
        raise InvalidInput(
            "disallowed_special must be 'all', a collection of special tokens (empty: no check) "
            f"or None, not {disallowed_special!r}"
        )
    else:
        listed = sorted(set(disallowed_special))
        if listed:
            policy.disallowed_mode = pb.DISALLOWED_SPECIAL_LISTED
            policy.disallowed.extend(listed)
        else:
            policy.disallowed_mode = pb.DISALLOWED_SPECIAL_NONE
    return policy


# -- Encode / EncodeStream ---------------------------------------------------------------------


def encode_batch(
    tokenizer: str,
    texts: Sequence[str],
    *,
    allowed_special: AllowedSpecial,
    disallowed_special: DisallowedSpecial,
    details: bool,
    add_special_tokens: bool,
) -> Unary[list[EncodeResult]]:
    if isinstance(texts, str):
        raise InvalidInput("encode_batch takes a list of texts, not one str (use encode)")
    request = pb.EncodeRequest(
        tokenizer=tokenizer,
        texts=list(texts),
        special_tokens=special_policy(allowed_special, disallowed_special),
        include_details=details,
        add_special_tokens=add_special_tokens,
    )
    return Unary("Encode", request, functools.partial(responses.encode_results, details=details))


def encode_stream(
    tokenizer: str,
    text: str | Iterable[str] | AsyncIterable[str],
    *,
    allowed_special: AllowedSpecial,
    disallowed_special: DisallowedSpecial,
    chunk_chars: int,
) -> Stream[int]:
    """A str is cut into ``chunk_chars`` pieces; an iterable (or async iterable) is sent as is."""
    policy = special_policy(allowed_special, disallowed_special)
    if isinstance(text, AsyncIterable):
        messages: Any = encode_stream_requests_async(tokenizer, text, policy)
    else:
        messages = encode_stream_requests(tokenizer, text_chunks(text, chunk_chars), policy)
    return Stream("EncodeStream", messages, responses.stream_ids)


# -- Decode -------------------------------------------------------------------------------------


def decode(tokenizer: str, ids: Sequence[int]) -> Unary[DecodeResult]:
    request = pb.DecodeRequest(tokenizer=tokenizer, ids=_check_ids(ids))
    return Unary("Decode", request, responses.decode_result)


def decode_batch(tokenizer: str, batch: Sequence[Sequence[int]]) -> Unary[list[DecodeResult]]:
    request = pb.DecodeRequest(
        tokenizer=tokenizer, batch=[pb.TokenIds(ids=_check_ids(ids)) for ids in batch]
    )
    return Unary("Decode", request, responses.decode_results)


def _check_ids(ids: Sequence[int]) -> list[int]:
    """Ids as a list, refusing negatives here (uint32 on the wire would wrap them)."""
    out = list(ids)
    for token_id in out:
        if not 0 <= token_id < 2**32:
            raise InvalidInput(f"Invalid token id {token_id}: ids are in [0, 2**32)")
    return out


# -- CountTokens --------------------------------------------------------------------------------


def count_tokens(
    tokenizer: str,
    text: CountInput | None,
    *,
    messages: Sequence[MessageLike] | None,
    plain_text: bool,
    max_tokens: int | None,
    allowed_special: AllowedSpecial,
    disallowed_special: DisallowedSpecial,
    model: str | None,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: str | Mapping[str, Any] | None,
    add_special_tokens: bool,
) -> Unary[CountResult]:
    """``text`` may be a str, a list of str, or a list of messages (added to ``messages``)."""
    texts: list[str] = []
    chat: list[MessageLike] = list(messages or ())
    if isinstance(text, str):
        texts.append(text)
    elif text is not None:
        items = list(text)
        if all(isinstance(item, str) for item in items):
            texts.extend(item for item in items if isinstance(item, str))
        else:
            chat.extend(as_message(item) for item in items)
    if max_tokens is not None and max_tokens < 0:
        raise InvalidInput(f"max_tokens must be >= 0, got {max_tokens}")
    request = pb.CountTokensRequest(
        tokenizer=tokenizer,
        texts=texts,
        messages=[chat_message(m) for m in chat],
        plain_text=plain_text,
        special_tokens=special_policy(allowed_special, disallowed_special),
        add_special_tokens=add_special_tokens,
    )
    if max_tokens is not None:
        request.max_tokens = max_tokens
    if model:
        request.model = model
    if tools:
        request.tools_json = json.dumps(list(tools))
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        tool_choice = str((function or tool_choice).get("name", ""))
    if tool_choice:
        request.tool_choice = tool_choice
    return Unary("CountTokens", request, responses.count_result)


def quote(
    model: str,
    messages: Sequence[MessageLike] | None,
    *,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: str | Mapping[str, Any] | None,
    vendor: str | None,
    vendor_body: Mapping[str, Any] | None,
    max_output_tokens: int | None,
    cache: str | Mapping[str, int],
    provider: str | None,
) -> Unary[QuoteResult]:
    """A quote of a chat request (``messages``, ``tools``) or of a vendor's body."""
    if max_output_tokens is not None and max_output_tokens < 0:
        raise InvalidInput(f"max_output_tokens must be >= 0, got {max_output_tokens}")
    if isinstance(cache, Mapping):
        cache = f"prefix_tokens:{cache.get('prefix_tokens', '')}"
    if messages is None and vendor_body is None:
        raise InvalidInput("quote needs messages or a vendor_body")
    count = count_tokens("", None, messages=messages, plain_text=False, max_tokens=None,
                         allowed_special=frozenset(), disallowed_special=None, model=model,
                         tools=tools, tool_choice=tool_choice, add_special_tokens=False)
    request = pb.QuoteRequest(count=count.request, vendor=vendor or "", cache=cache,
                              provider=provider or "")
    if vendor_body is not None:
        request.vendor_body_json = json.dumps(dict(vendor_body), ensure_ascii=False)
    if max_output_tokens is not None:
        request.max_output_tokens = max_output_tokens
    return Unary("Quote", request, responses.quote_result)


# -- Truncate, Chunk and Report -----------------------------------------------------------------

_KEEP = {"head": pb.TRUNCATE_KEEP_HEAD, "tail": pb.TRUNCATE_KEEP_TAIL,
         "both": pb.TRUNCATE_KEEP_BOTH}


def truncate(tokenizer: str, text: str, max_tokens: int, *, keep: str,
             marker: str | None) -> Unary[TruncateResult]:
    if keep not in _KEEP:
        raise InvalidInput(f"keep must be head, tail or both, not {keep!r}")
    if max_tokens < 0:
        raise InvalidInput(f"max_tokens must be >= 0, got {max_tokens}")
    request = pb.TruncateRequest(tokenizer=tokenizer, text=text, max_tokens=max_tokens,
                                 keep=_KEEP[keep])
    if marker is not None:
        request.marker = marker
    return Unary("Truncate", request, responses.truncate_result)


def chunk(tokenizer: str, text: str, max_tokens: int, *, overlap: int) -> Stream[TextChunk]:
    if max_tokens < 1 or overlap < 0:
        raise InvalidInput(f"max_tokens must be >= 1 and overlap >= 0 (got {max_tokens}, "
                           f"{overlap})")
    request = pb.ChunkRequest(tokenizer=tokenizer, text=text, max_tokens=max_tokens,
                              overlap=overlap)
    return Stream("Chunk", request, responses.text_chunks_of)


def report(tokenizers: str | Sequence[str], texts: Sequence[str] | None, *,
           languages: bool) -> Unary[ReportResult]:
    names = [tokenizers] if isinstance(tokenizers, str) else list(tokenizers)
    if isinstance(texts, str):
        raise InvalidInput("texts must be a list of strings, not one string")
    request = pb.ReportRequest(tokenizers=names, texts=list(texts or ()),
                               include_languages=languages)
    return Unary("Report", request, responses.report_result)


LintDepth: TypeAlias = Literal["full", "import"]


def lint(tokenizer: str, *, depth: LintDepth, list_partial: bool,
         max_findings: int) -> Unary[LintResult]:
    if depth not in ("full", "import"):
        raise InvalidInput(f"depth must be 'full' or 'import', not {depth!r}")
    if max_findings < 0:
        raise InvalidInput(f"max_findings must be >= 0 (0: the server's default), got "
                           f"{max_findings}")
    request = pb.LintRequest(
        tokenizer=tokenizer,
        depth=pb.LINT_DEPTH_IMPORT if depth == "import" else pb.LINT_DEPTH_FULL,
        list_partial_utf8=list_partial, max_findings=max_findings,
    )
    return Unary("Lint", request, responses.lint_result)


def diff(a: str, b: str, *, top: int) -> Unary[DiffResult]:
    if top < 0:
        raise InvalidInput(f"top must be >= 0 (0: the server's default of 10), got {top}")
    return Unary("Diff", pb.DiffRequest(a=a, b=b, top=top), responses.diff_result)


# -- Registry -----------------------------------------------------------------------------------


def list_tokenizers() -> Unary[list[TokenizerSummary]]:
    return Unary("ListTokenizers", pb.ListTokenizersRequest(), responses.tokenizer_summaries)


def get_tokenizer(tokenizer: str) -> Unary[TokenizerManifest]:
    request = pb.GetTokenizerRequest(tokenizer=tokenizer)
    return Unary("GetTokenizer", request, responses.tokenizer_manifest)


# -- Training -----------------------------------------------------------------------------------


def train(name: str, corpus: Corpus | None, *, vocab_size: int, special_tokens: Sequence[str],
          pattern: str, corpus_path: str, model: str, wordpiece_score: str) -> Unary[TrainJob]:
    """The config, then the corpus streamed (the corpus is checked here, before sending)."""
    spec = TrainSpec(name, vocab_size, tuple(special_tokens), pattern, corpus_path, model,
                     wordpiece_score)
    check_corpus(spec, corpus)
    return Unary("Train", train_requests(spec, corpus), responses.job_of)


def get_train_job(job_id: str) -> Unary[TrainJob]:
    return Unary("GetTrainJob", pb.GetTrainJobRequest(job_id=job_id), responses.job_of)


def watch_train_job(job_id: str) -> Stream[TrainJob]:
    request = pb.WatchTrainJobRequest(job_id=job_id)
    return Stream("WatchTrainJob", request, responses.jobs_of, default_deadline=False)


def cancel(job_id: str) -> Unary[TrainJob]:
    return Unary("CancelTrainJob", pb.CancelTrainJobRequest(job_id=job_id), responses.job_of)


def list_train_jobs() -> Unary[list[TrainJob]]:
    return Unary("ListTrainJobs", pb.ListTrainJobsRequest(), responses.train_jobs)
