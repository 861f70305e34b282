"""Client-streamed requests: a long text for EncodeStream, a corpus for Train.

Both are generators, so nothing is cut or read until gRPC sends; chunks stay well under gRPC's
default 4 MiB message limit.

>>> list(text_chunks("abcde", 2))
['ab', 'cd', 'e']
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import TypeAlias

from tokend.client.results import TrainSpec
from tokend.core.errors import InvalidInput
from tokend.v1 import tokenizer_pb2 as pb

# A corpus to stream: text, bytes, a local file (Path), or an iterable of byte chunks.
Corpus: TypeAlias = str | bytes | Path | Iterable[bytes]

STREAM_CHUNK_CHARS = 256 * 1024
TRAIN_CHUNK_BYTES = 1024 * 1024


# -- EncodeStream -------------------------------------------------------------------------------


def text_chunks(text: str | Iterable[str], chunk_chars: int = STREAM_CHUNK_CHARS) -> Iterator[str]:
    """A long text cut into pieces (any boundary is fine: the server re-joins them)."""
    if isinstance(text, str):
        for start in range(0, len(text), chunk_chars):
            yield text[start : start + chunk_chars]
    else:
        yield from text


def _stream_request(
    tokenizer: str, policy: pb.SpecialTokenPolicy, chunk: str, first: bool
) -> pb.EncodeStreamRequest:
    """Tokenizer and policy ride on the first message only."""
    if first:
        return pb.EncodeStreamRequest(tokenizer=tokenizer, special_tokens=policy, text=chunk)
    return pb.EncodeStreamRequest(text=chunk)


def encode_stream_requests(
    tokenizer: str, chunks: Iterable[str], policy: pb.SpecialTokenPolicy
) -> Iterator[pb.EncodeStreamRequest]:
    """The request stream of EncodeStream, one message per chunk."""
    first = True
    for chunk in chunks:
        yield _stream_request(tokenizer, policy, chunk, first)
        first = False
    if first:  # an empty text still needs the message naming the tokenizer
        yield _stream_request(tokenizer, policy, "", first)


async def encode_stream_requests_async(
    tokenizer: str, chunks: AsyncIterable[str], policy: pb.SpecialTokenPolicy
) -> AsyncIterator[pb.EncodeStreamRequest]:
    """``encode_stream_requests`` over an async iterable of chunks (the async client takes one)."""
    first = True
    async for chunk in chunks:
        yield _stream_request(tokenizer, policy, chunk, first)
        first = False
    if first:
        yield _stream_request(tokenizer, policy, "", first)


# -- Train --------------------------------------------------------------------------------------


def check_corpus(spec: TrainSpec, corpus: Corpus | None) -> None:
    """Refuse a Train call with no corpus, two corpora or a corpus file that cannot be read,
    before any message is sent (an error raised while gRPC iterates the requests would reach
    the caller as UNKNOWN "Exception iterating requests!")."""
    if corpus is None and not spec.corpus_path:
        raise InvalidInput("train needs a corpus to stream or a server-side corpus_path")
    if corpus is not None and spec.corpus_path:
        raise InvalidInput(
            f"train takes a streamed corpus or corpus_path={spec.corpus_path!r}, not both"
        )
    if isinstance(corpus, Path) and not corpus.is_file():
        raise InvalidInput(f"corpus {str(corpus)[:200]!r} is not a readable file")


def train_requests(spec: TrainSpec, corpus: Corpus | None) -> Iterator[pb.TrainRequest]:
    """The Train request stream: the config, then the corpus in ~1 MiB chunks."""
    check_corpus(spec, corpus)
    yield pb.TrainRequest(
        config=pb.TrainConfig(
            name=spec.name,
            vocab_size=spec.vocab_size,
            special_tokens=list(spec.special_tokens),
            pattern=spec.pattern,
            corpus_path=spec.corpus_path,
            model=spec.model,
            wordpiece_score=spec.wordpiece_score,
        )
    )
    for chunk in _corpus_chunks(corpus):
        if chunk:
            yield pb.TrainRequest(corpus_chunk=chunk)


def _corpus_chunks(corpus: Corpus | None) -> Iterator[bytes]:
    if corpus is None:
        return
    if isinstance(corpus, str):
        corpus = corpus.encode("utf-8")
    if isinstance(corpus, bytes):
        for start in range(0, len(corpus), TRAIN_CHUNK_BYTES):
            yield corpus[start : start + TRAIN_CHUNK_BYTES]
    elif isinstance(corpus, Path):
        with corpus.open("rb") as f:
            while chunk := f.read(TRAIN_CHUNK_BYTES):
                yield chunk
    else:
        yield from corpus
