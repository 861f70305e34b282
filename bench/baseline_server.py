"""The benchmark's baselines: a minimal grpcio server of tokend's proto over one library.

``--library`` picks the engine behind it:

- ``tiktoken``: tiktoken 0.14, built offline from ``core/data`` (``tiktoken_offline.py``);
- ``gigatoken``: gigatoken 0.10.0 (the ``bench`` extra) through its tiktoken-exact adapter
  (``as_tiktoken()``: ids built in Rust, special tokens refused as tiktoken refuses them);
- ``tokend``: tokend's own ``Encoding`` with the very engine calls tokend's App makes (and the
  same Encode response writer, ``tokend.server.packed``), so tokend serve against this server
  measures tokend's call path alone: interceptor, request ids, metrics, limits, app, logging.

It serves Encode, CountTokens (texts only) and Decode for the shipped built-in encodings. To be
a fair peer of ``tokend serve`` it has the same shape: ``--workers`` processes sharing the port
with SO_REUSEPORT, each a synchronous ``grpc.server`` with a ``--threads`` thread pool
(tokend's defaults: CPU count and 16). No registry, metrics, auth, limits or interceptors.

    .venv/bin/python bench/baseline_server.py --port 50061 --workers 2 --library gigatoken
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from tokend.server.packed import encode_response_bytes, response_serializer
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

LIBRARIES = ("tiktoken", "gigatoken", "tokend")
DATA_DIR = Path(__file__).resolve().parent.parent / "core" / "data"
# (encode(text) -> ids refusing special-token text, count(text) with special-token text as
# plain text, decode_bytes(ids)): tokend's defaults for Encode and CountTokens.
Calls = tuple[Callable[[str], Any], Callable[[str], int], Callable[[list[int]], bytes]]


def load(library: str, name: str) -> Calls:
    """The three calls of ``library`` on the encoding ``name``."""
    if library == "tiktoken":
        from tiktoken_offline import load_tiktoken  # noqa: PLC0415  (bench/ is the script's dir)

        enc = load_tiktoken(name)
        return enc.encode, lambda t: len(enc.encode(t, disallowed_special=())), enc.decode_bytes
    if library == "gigatoken":
        import gigatoken  # noqa: PLC0415

        with tempfile.TemporaryDirectory() as tmp:  # gigatoken reads a file named for it
            path = Path(tmp) / f"{name}.tiktoken"
            path.write_bytes(gzip.decompress((DATA_DIR / f"{name}.tiktoken.gz").read_bytes()))
            genc = gigatoken.Tokenizer.from_tiktoken(path).as_tiktoken()
        return (genc.encode, lambda t: len(genc.encode(t, disallowed_special=())),
                genc.decode_bytes)
    from tokend.core import get_encoding  # noqa: PLC0415

    tenc = get_encoding(name)
    # The calls tokend's App makes for Encode (policy "disallow all") and CountTokens.
    encode = getattr(tenc, "encode_varints", None)
    return ((lambda t: encode(t, allowed_special=frozenset(), disallowed_special="all"))
            if encode is not None else tenc.encode,
            lambda t: tenc.count(t, allowed_special=frozenset(), disallowed_special=frozenset()),
            tenc.decode_bytes)


class BaselineService(pb_grpc.TokenizerServiceServicer):
    """Encode / CountTokens / Decode straight on the library; other RPCs are UNIMPLEMENTED."""

    def __init__(self, names: list[str], library: str = "tiktoken") -> None:
        self.library = library
        self.calls = {name: load(library, name) for name in names}

    def _calls(self, ref: str, context: grpc.ServicerContext) -> Calls:
        calls = self.calls.get(ref)
        if calls is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown tokenizer {ref!r}")
        return calls

    def Encode(self, request: pb.EncodeRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802  (proto method name)
        encode = self._calls(request.tokenizer, context)[0]
        try:
            batch = [encode(text) for text in request.texts]
        except ValueError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        if batch and isinstance(batch[0], tuple):  # tokend's packed ids: its response writer
            return encode_response_bytes(request.tokenizer, batch)
        return pb.EncodeResponse(
            tokenizer=request.tokenizer, results=[pb.EncodeResult(ids=ids) for ids in batch]
        )

    def CountTokens(self, request: pb.CountTokensRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802  (proto method name)
        count = self._calls(request.tokenizer, context)[1]
        counts = [count(text) for text in request.texts]
        return pb.CountTokensResponse(
            tokenizer=request.tokenizer, counts=counts, total=sum(counts), fits=True
        )

    def Decode(self, request: pb.DecodeRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802  (proto method name)
        data = self._calls(request.tokenizer, context)[2](list(request.ids))
        return pb.DecodeResponse(
            tokenizer=request.tokenizer, text=data.decode("utf-8", errors="replace"), data=data
        )


def handlers(service: BaselineService) -> grpc.GenericRpcHandler:
    """The three methods; Encode's answer may be bytes already (tokend's packed ids)."""
    methods = {
        "Encode": (service.Encode, pb.EncodeRequest),
        "CountTokens": (service.CountTokens, pb.CountTokensRequest),
        "Decode": (service.Decode, pb.DecodeRequest),
    }
    return grpc.method_handlers_generic_handler("tokend.v1.TokenizerService", {
        name: grpc.unary_unary_rpc_method_handler(
            behaviour, request_deserializer=request.FromString,
            response_serializer=response_serializer)
        for name, (behaviour, request) in methods.items()
    })


def serve_one(host: str, port: int, threads: int, names: list[str], *, reuse_port: bool,
              library: str = "tiktoken") -> None:
    """One worker process: a sync grpc.server with a thread pool, until SIGTERM/SIGINT."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=threads),
        options=[
            ("grpc.so_reuseport", 1 if reuse_port else 0),
            ("grpc.max_receive_message_length", 64 << 20),
            ("grpc.max_send_message_length", -1),
        ],
    )
    server.add_generic_rpc_handlers((handlers(BaselineService(names, library)),))
    if server.add_insecure_port(f"{host}:{port}") == 0:
        raise OSError(f"baseline: could not bind {host}:{port}")
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop(grace=1).wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=50061)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--encodings", default="o200k_base,cl100k_base")
    parser.add_argument("--library", choices=LIBRARIES, default="tiktoken")
    args = parser.parse_args(argv)
    if args.port == 0:
        parser.error("--port 0 cannot be shared by several workers; pick a port")
    names = [n for n in args.encodings.split(",") if n]
    if args.workers == 1:
        serve_one(args.host, args.port, args.threads, names, reuse_port=False,
                  library=args.library)
        return 0
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(
            target=serve_one,
            args=(args.host, args.port, args.threads, names),
            kwargs={"reuse_port": True, "library": args.library},
            name=f"baseline-worker-{i}",
        )
        for i in range(args.workers)
    ]
    for proc in procs:
        proc.start()

    def forward(signum: int, _frame: object) -> None:
        for proc in procs:
            if proc.pid is not None and proc.is_alive():
                os.kill(proc.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for proc in procs:
        proc.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
