"""The typed client's methods answered in this process, by the server's own application layer.

``InProcess`` takes the arguments of ``tokend.client.Client`` and returns its results: each
method builds the request the client would send (``tokend.client.requests``: the same checks),
converts it as the servicer does (``tokend.server.protos``), runs the ``App`` a worker of
``tokend serve`` would run (``App.from_config`` over the same registry), and reads the answer
with the client's own readers (``tokend.client.responses``). A refusal is raised as the
``RemoteError`` the server's status would have become, with the same code and message.
So the CLI prints one way whichever answered, and in-process answers equal the server's.

Nothing here imports grpc until a call fails (the status table lives with it); protobuf
messages are the one common currency, as on the wire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from tokend.client import requests
from tokend.client.chat import MessageLike
from tokend.client.requests import AllowedSpecial, CountInput, DisallowedSpecial, Stream, Unary
from tokend.client.results import (
    CountResult,
    DecodeResult,
    EncodeResult,
    QuoteResult,
    TextChunk,
    TokenizerManifest,
    TokenizerSummary,
    TruncateResult,
)
from tokend.core.errors import TokendError
from tokend.server import protos
from tokend.server.app.service import App
from tokend.server.config import ServerConfig

R = TypeVar("R")
T = TypeVar("T")


class InProcess:
    """``Client``'s encode / decode / count / truncate / chunk / tokenizer calls, in process."""

    def __init__(self, app: App) -> None:
        self.app = app
        # What each unary RPC does to a request message, as the servicer does it.
        self._unaries: dict[str, Callable[[Any], Any]] = {
            "Encode": lambda r: protos.encode_response(app.encode(protos.encode_request(r))),
            "Decode": lambda r: protos.decode_response(app.decode(protos.decode_request(r))),
            "CountTokens": lambda r: protos.count_response(app.count(protos.count_request(r))),
            "Truncate": lambda r: protos.truncate_response(
                app.truncate(protos.truncate_request(r))),
            "Quote": lambda r: protos.quote_response(app.quote(protos.quote_request(r))),
            "ListTokenizers": lambda r: protos.list_response(app.list_tokenizers()),
            "GetTokenizer": lambda r: protos.manifest_response(app.get_tokenizer(r.tokenizer)),
        }

    @classmethod
    def open(cls, config: ServerConfig) -> InProcess:
        """Over ``config``'s registry; cheap: nothing is loaded or written until a call."""
        return cls(App.from_config(config, in_process=True))

    def close(self) -> None:
        """Nothing to release (no channel, no threads); here to match ``Client``."""

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the calls (signatures as Client's, without timeout: nothing here waits) --------------

    def encode_batch(self, tokenizer: str, texts: Sequence[str], *,
                     allowed_special: AllowedSpecial = frozenset(),
                     disallowed_special: DisallowedSpecial = "all", details: bool = False,
                     add_special_tokens: bool = False) -> list[EncodeResult]:
        return self._unary(requests.encode_batch(
            tokenizer, texts, allowed_special=allowed_special,
            disallowed_special=disallowed_special, details=details,
            add_special_tokens=add_special_tokens))

    def decode(self, tokenizer: str, ids: Sequence[int]) -> DecodeResult:
        return self._unary(requests.decode(tokenizer, ids))

    def count_tokens(self, tokenizer: str, text: CountInput | None = None, *,
                     messages: Sequence[MessageLike] | None = None, plain_text: bool = False,
                     max_tokens: int | None = None,
                     allowed_special: AllowedSpecial = frozenset(),
                     disallowed_special: DisallowedSpecial = None, model: str | None = None,
                     tools: Sequence[Mapping[str, Any]] | None = None,
                     tool_choice: str | Mapping[str, Any] | None = None,
                     add_special_tokens: bool = False) -> CountResult:
        return self._unary(requests.count_tokens(
            tokenizer, text, messages=messages, plain_text=plain_text, max_tokens=max_tokens,
            allowed_special=allowed_special, disallowed_special=disallowed_special, model=model,
            tools=tools, tool_choice=tool_choice, add_special_tokens=add_special_tokens))

    def quote(self, model: str, messages: Sequence[MessageLike] | None = None, *,
              tools: Sequence[Mapping[str, Any]] | None = None,
              tool_choice: str | Mapping[str, Any] | None = None, vendor: str | None = None,
              vendor_body: Mapping[str, Any] | None = None,
              max_output_tokens: int | None = None, cache: str | Mapping[str, int] = "cold",
              provider: str | None = None) -> QuoteResult:
        return self._unary(requests.quote(
            model, messages, tools=tools, tool_choice=tool_choice, vendor=vendor,
            vendor_body=vendor_body, max_output_tokens=max_output_tokens, cache=cache,
            provider=provider))

    def truncate(self, tokenizer: str, text: str, max_tokens: int, *, keep: str = "head",
                 marker: str | None = None) -> TruncateResult:
        return self._unary(requests.truncate(tokenizer, text, max_tokens, keep=keep,
                                             marker=marker))

    def iter_chunks(self, tokenizer: str, text: str, max_tokens: int, *,
                    overlap: int = 0) -> Iterator[TextChunk]:
        call = requests.chunk(tokenizer, text, max_tokens, overlap=overlap)
        yield from self._stream(call, lambda r: map(
            protos.chunk_response, self.app.chunk(protos.chunk_request(r))))

    def list_tokenizers(self) -> list[TokenizerSummary]:
        return self._unary(requests.list_tokenizers())

    def get_tokenizer(self, tokenizer: str) -> TokenizerManifest:
        return self._unary(requests.get_tokenizer(tokenizer))

    # -- plumbing ----------------------------------------------------------------------------

    def _unary(self, call: Unary[R]) -> R:
        try:
            response = self._unaries[call.rpc](call.request)
        except TokendError as exc:
            raise self._refusal(exc) from None
        return call.convert(response)

    def _stream(self, call: Stream[T], run: Callable[[Any], Iterator[Any]]) -> Iterator[T]:
        try:
            for response in run(call.request):
                yield from call.items(response)
        except TokendError as exc:
            raise self._refusal(exc) from None

    def _refusal(self, exc: TokendError) -> TokendError:
        """The ``RemoteError`` a client of ``tokend serve`` would get for ``exc``: the same
        status code and message (server paths named as the server names them)."""
        # Imported here: grpc is loaded only when a call fails.
        from tokend.client.errors import error_from_status  # noqa: PLC0415
        from tokend.server.errors import hide_paths, status_for  # noqa: PLC0415

        hide_paths(self.app.config.hidden_paths)
        status = status_for(exc)
        return error_from_status(status.code, status.details, status.trailing_metadata)
