"""Who answers ``tokend encode|decode|count|truncate|chunk|tokenizers``: a server or this process.

With ``--target`` (or env ``TOKEND_TARGET``) the typed client asks that server; without, the
calls run in process on the application layer a server would run (``in_process.py``), over the
registry ``tokend serve`` would use (``--registry``, env ``TOKEND_REGISTRY``, the user data
dir). Both take the same arguments, return the results of ``tokend.client.results`` and raise
the errors of ``tokend.client.errors``: ``Backend`` is that common surface, so the commands
print one way whichever answered. Nothing here imports grpc unless a server is asked.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from tokend.core.errors import InvalidInput

if TYPE_CHECKING:
    from tokend.client import Client
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

TLS_OPTIONS = ("tls", "tls_ca", "tls_cert", "tls_key", "tls_server_name")


class Backend(Protocol):
    """The calls the commands make (``Client``'s signatures; both backends have them)."""

    def encode_batch(self, tokenizer: str, texts: Sequence[str], *, allowed_special: Any,
                     disallowed_special: Any, details: bool) -> list[EncodeResult]: ...

    def decode(self, tokenizer: str, ids: Sequence[int]) -> DecodeResult: ...

    def count_tokens(self, tokenizer: str, text: Any = None, *, messages: Any = None,
                     plain_text: bool = False, max_tokens: int | None = None,
                     model: str | None = None, tools: Sequence[Mapping[str, Any]] | None = None,
                     tool_choice: str | Mapping[str, Any] | None = None) -> CountResult: ...

    def quote(self, model: str, messages: Any = None, *,
              tools: Sequence[Mapping[str, Any]] | None = None,
              tool_choice: str | Mapping[str, Any] | None = None, vendor: str | None = None,
              vendor_body: Mapping[str, Any] | None = None,
              max_output_tokens: int | None = None, cache: str | Mapping[str, int] = "cold",
              provider: str | None = None) -> QuoteResult: ...

    def truncate(self, tokenizer: str, text: str, max_tokens: int, *, keep: str,
                 marker: str | None) -> TruncateResult: ...

    def iter_chunks(self, tokenizer: str, text: str, max_tokens: int, *,
                    overlap: int) -> Iterator[TextChunk]: ...

    def list_tokenizers(self) -> list[TokenizerSummary]: ...

    def get_tokenizer(self, tokenizer: str) -> TokenizerManifest: ...

    def close(self) -> None: ...


def connect(args: argparse.Namespace) -> Client:
    """A Client from the connection options (any --tls-* option implies --tls)."""
    from tokend.client import Client, TlsConfig  # noqa: PLC0415 - grpc only for a server

    tls: TlsConfig | None = None
    if any(getattr(args, name) for name in TLS_OPTIONS):
        tls = TlsConfig.from_files(
            args.tls_ca, args.tls_cert, args.tls_key, server_name=args.tls_server_name
        )
    return Client(args.target, timeout=args.timeout, tls=tls, token=args.token)


def open_backend(args: argparse.Namespace) -> Backend:
    """The server at ``--target``, else the application layer in this process."""
    if args.target:
        if args.registry is not None:
            raise InvalidInput("--registry is for answers in process: the server at --target "
                               "serves its own registry (leave out one or the other)")
        return connect(args)
    given = [f"--{name.replace('_', '-')}" for name in TLS_OPTIONS if getattr(args, name)]
    if given:
        raise InvalidInput(f"{', '.join(given)} configure the connection to a server: give "
                           "--target HOST:PORT (or env TOKEND_TARGET) too")
    from tokend.commands.in_process import InProcess  # noqa: PLC0415 - the server's layer
    from tokend.commands.registry import registry_root  # noqa: PLC0415
    from tokend.server.config import ServerConfig  # noqa: PLC0415

    # The registry as `tokend serve` finds it; every other setting is the server's default
    # (its limits: the same refusals as a default server).
    return InProcess.open(ServerConfig(registry=registry_root(args.registry)))


def failure(err: Exception, args: argparse.Namespace) -> tuple[str, str]:
    """What a failed command prints after ``tokend:``: the status code's name (CLIENT_ERROR
    for a refusal made before any call) and the message."""
    from tokend.client.errors import RemoteError  # noqa: PLC0415 - loaded once something failed

    if not isinstance(err, RemoteError):
        return "CLIENT_ERROR", str(err)
    code = err.code.name
    if code == "UNAVAILABLE" and "failed to connect to all addresses" in err.details:
        return code, no_server(args.target, err.details)
    return code, err.details


def no_server(target: str, details: str) -> str:
    """Why nothing answered at ``target``, and the two ways out.

    >>> no_server("127.0.0.1:50051", "failed to connect ...: Connection refused")[:56]
    'no tokend server at 127.0.0.1:50051 (connection refused)'
    """
    why = "connection refused" if "connection refused" in details.lower() else details
    return (f"no tokend server at {target} ({why}): start one with `tokend serve`, or leave "
            "out --target (and TOKEND_TARGET) to answer in process")
