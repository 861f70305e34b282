"""TokenizerService: the gRPC adapter onto the application layer (``server/app/``).

Each method converts the proto request to the app's typed request (``protos.py``), calls the
``App`` with the call's context (``GrpcCall``: deadline and cancellation), and converts the
typed result back. Errors are tokend.core.errors classes raised by the app; the interceptor
turns them into status codes through the one table (``errors.py``). Training and reporting
are the app's too: this class inherits nothing but the generated base.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import grpc

from tokend.server import packed, protos
from tokend.server.app.service import App
from tokend.server.streaming import idle_bounded
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    _Handler = grpc.RpcMethodHandler[Any, Any]
else:
    _Handler = grpc.RpcMethodHandler


class _Captured:
    """Stands in for a grpc.Server to read the generated code's handler of each method."""

    def __init__(self) -> None:
        self.methods: dict[str, _Handler] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass

    def add_registered_method_handlers(self, service: str, methods: dict[str, _Handler]) -> None:
        self.methods.update(methods)


def method_handlers(servicer: TokenizerService) -> dict[str, _Handler]:
    """Each RPC's handler (method name -> handler) as the generated code builds it, Encode's
    with a serializer that passes its packed response bytes through (``packed.py``)."""
    captured = _Captured()
    pb_grpc.add_TokenizerServiceServicer_to_server(servicer, captured)  # type: ignore[arg-type]
    methods = captured.methods
    encode = methods["Encode"]
    assert encode.unary_unary is not None  # the proto's Encode is unary
    methods["Encode"] = grpc.unary_unary_rpc_method_handler(
        encode.unary_unary, request_deserializer=encode.request_deserializer,
        response_serializer=packed.response_serializer)
    return methods


class GrpcCall:
    """``CallContext`` over grpcio's ServicerContext."""

    __slots__ = ("_context",)

    def __init__(self, context: grpc.ServicerContext) -> None:
        self._context = context

    def time_remaining(self) -> float | None:
        return self._context.time_remaining()

    def cancelled(self) -> bool:
        return not self._context.is_active()

    def add_done_callback(self, callback: Callable[[], None]) -> bool:
        return bool(self._context.add_callback(callback))


class TokenizerService(pb_grpc.TokenizerServiceServicer):
    """Every RPC, each a conversion around one ``App`` method."""

    def __init__(self, app: App) -> None:
        self.app = app

    # -- tokens ------------------------------------------------------------------------------

    def Encode(  # type: ignore[override]  # bytes: method_handlers' serializer passes them
        self, request: pb.EncodeRequest, context: grpc.ServicerContext
    ) -> pb.EncodeResponse | bytes:
        result = self.app.encode(protos.encode_request(request, packed=True), GrpcCall(context))
        return protos.encode_wire(result)

    def EncodeStream(
        self, request_iterator: Iterator[pb.EncodeStreamRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.EncodeStreamResponse]:
        with self.app.streams.hold("EncodeStream"):
            requests = idle_bounded(request_iterator, self.app.config.stream_idle_seconds,
                                    what="EncodeStream")
            first = protos.stream_start(next(requests, None))
            pieces = self.app.encode_stream(first, protos.stream_texts(requests),
                                            GrpcCall(context))
            for piece in pieces:
                yield protos.stream_response(piece)

    def Decode(self, request: pb.DecodeRequest, context: grpc.ServicerContext) -> pb.DecodeResponse:
        result = self.app.decode(protos.decode_request(request), GrpcCall(context))
        return protos.decode_response(result)

    def CountTokens(
        self, request: pb.CountTokensRequest, context: grpc.ServicerContext
    ) -> pb.CountTokensResponse:
        result = self.app.count(protos.count_request(request), GrpcCall(context))
        return protos.count_response(result)

    def Quote(self, request: pb.QuoteRequest, context: grpc.ServicerContext) -> pb.QuoteResponse:
        result = self.app.quote(protos.quote_request(request), GrpcCall(context))
        return protos.quote_response(result)

    def Truncate(
        self, request: pb.TruncateRequest, context: grpc.ServicerContext
    ) -> pb.TruncateResponse:
        result = self.app.truncate(protos.truncate_request(request), GrpcCall(context))
        return protos.truncate_response(result)

    def Chunk(
        self, request: pb.ChunkRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ChunkResponse]:
        for batch in self.app.chunk(protos.chunk_request(request), GrpcCall(context)):
            yield protos.chunk_response(batch)

    # -- the registry and reports -------------------------------------------------------------

    def ListTokenizers(
        self, request: pb.ListTokenizersRequest, context: grpc.ServicerContext
    ) -> pb.ListTokenizersResponse:
        return protos.list_response(self.app.list_tokenizers())

    def GetTokenizer(
        self, request: pb.GetTokenizerRequest, context: grpc.ServicerContext
    ) -> pb.GetTokenizerResponse:
        return protos.manifest_response(self.app.get_tokenizer(request.tokenizer))

    def Report(self, request: pb.ReportRequest, context: grpc.ServicerContext) -> pb.ReportResponse:
        result = self.app.report(protos.report_request(request), GrpcCall(context))
        return protos.report_response(result)

    def Lint(self, request: pb.LintRequest, context: grpc.ServicerContext) -> pb.LintResponse:
        result = self.app.lint(protos.lint_request(request), GrpcCall(context))
        return protos.lint_response(result)

    def Diff(self, request: pb.DiffRequest, context: grpc.ServicerContext) -> pb.DiffResponse:
        result = self.app.diff(protos.diff_request(request), GrpcCall(context))
        return protos.diff_response(result)

    # -- training jobs ------------------------------------------------------------------------

    def Train(
        self, request_iterator: Iterator[pb.TrainRequest], context: grpc.ServicerContext
    ) -> pb.TrainResponse:
        # Not held in app.streams: uploads need the admin token and are bounded by
        # --max-train-jobs, so anonymous half-open streams never lock the operator out.
        requests = idle_bounded(request_iterator, self.app.config.stream_idle_seconds,
                                what="Train")
        job = self.app.training.train(protos.train_messages(requests), GrpcCall(context))
        return pb.TrainResponse(job=protos.job_to_proto(job))

    def GetTrainJob(
        self, request: pb.GetTrainJobRequest, context: grpc.ServicerContext
    ) -> pb.GetTrainJobResponse:
        return pb.GetTrainJobResponse(job=protos.job_to_proto(
            self.app.training.get_job(request.job_id)))

    def ListTrainJobs(
        self, request: pb.ListTrainJobsRequest, context: grpc.ServicerContext
    ) -> pb.ListTrainJobsResponse:
        return pb.ListTrainJobsResponse(
            jobs=[protos.job_to_proto(j) for j in self.app.training.list_jobs()])

    def CancelTrainJob(
        self, request: pb.CancelTrainJobRequest, context: grpc.ServicerContext
    ) -> pb.CancelTrainJobResponse:
        return pb.CancelTrainJobResponse(job=protos.job_to_proto(
            self.app.training.cancel_job(request.job_id)))

    def WatchTrainJob(
        self, request: pb.WatchTrainJobRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.WatchTrainJobResponse]:
        for job in self.app.training.watch_job(request.job_id, GrpcCall(context)):
            yield pb.WatchTrainJobResponse(job=protos.job_to_proto(job))
