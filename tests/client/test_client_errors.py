"""Status code -> typed exception, and gRPC's own retries on UNAVAILABLE.

An in-process grpcio server of the same proto answers every call with the status the test asks
for (named in the request's ``tokenizer`` field), so every status class is covered, including
those the real service only produces under rare conditions (DATA_LOSS, INTERNAL, draining).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from tokend.client import (
    STATUS_ERRORS,
    AsyncClient,
    Client,
    RemoteError,
    ServerError,
    TokenizerNotFound,
    service_config,
)
from tokend.client.channel import channel_options
from tokend.core import errors as core
from tokend.v1 import tokenizer_pb2 as pb

SERVICE = "tokend.v1.TokenizerService"


class _Status(grpc.Status):
    """grpc.Status is an interface; abort_with_status reads these three attributes."""

    def __init__(
        self, code: grpc.StatusCode, details: str, trailing_metadata: tuple[tuple[str, object], ...]
    ) -> None:
        self.code = code
        self.details = details
        self.trailing_metadata = trailing_metadata


# Which core class each status must also be, so `except core.X` works against the service.
EXPECTED_CORE_CLASS: dict[grpc.StatusCode, type[Exception]] = {
    grpc.StatusCode.NOT_FOUND: core.UnknownTokenizer,
    grpc.StatusCode.INVALID_ARGUMENT: core.InvalidInput,
    grpc.StatusCode.RESOURCE_EXHAUSTED: core.LimitExceeded,
    grpc.StatusCode.ALREADY_EXISTS: core.AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: core.FailedPrecondition,
    grpc.StatusCode.CANCELLED: core.Cancelled,
    grpc.StatusCode.DATA_LOSS: core.CorruptData,
    grpc.StatusCode.UNAUTHENTICATED: core.Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: core.PermissionDenied,
    grpc.StatusCode.DEADLINE_EXCEEDED: core.DeadlineExceeded,
    grpc.StatusCode.UNAVAILABLE: core.Unavailable,
    grpc.StatusCode.UNIMPLEMENTED: NotImplementedError,
    grpc.StatusCode.INTERNAL: ServerError,
    grpc.StatusCode.UNKNOWN: ServerError,
}


class StatusServer:
    """Fails each call with the status code named by ``tokenizer``; counts attempts."""

    def __init__(self) -> None:
        self.attempts: dict[str, int] = {}
        self.metadata: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handlers = {
            "Encode": grpc.unary_unary_rpc_method_handler(
                self.encode,
                request_deserializer=pb.EncodeRequest.FromString,
                response_serializer=pb.EncodeResponse.SerializeToString,
            ),
            "Train": grpc.stream_unary_rpc_method_handler(
                self.train,
                request_deserializer=pb.TrainRequest.FromString,
                response_serializer=pb.TrainResponse.SerializeToString,
            ),
        }
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, handlers),)
        )
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _count(self, key: str) -> int:
        with self._lock:
            self.attempts[key] = self.attempts.get(key, 0) + 1
            return self.attempts[key]

    def encode(self, request: pb.EncodeRequest, context: grpc.ServicerContext) -> pb.EncodeResponse:
        self.metadata.append({k: v for k, v in context.invocation_metadata() if isinstance(v, str)})
        spec = request.tokenizer  # "CODE", "CODE*n" (fail the first n attempts), or "CODE+rich"
        attempt = self._count(spec)
        name, _, fail_times = spec.partition("*")
        if fail_times and attempt > int(fail_times):
            return pb.EncodeResponse(tokenizer="ok", results=[pb.EncodeResult(ids=[attempt])])
        if name.endswith("+rich"):
            code = grpc.StatusCode[name.removesuffix("+rich")]
            status = status_pb2.Status(code=code.value[0], message=f"bad texts[1] {code.name}")
            status.details.add().Pack(
                error_details_pb2.BadRequest(
                    field_violations=[
                        error_details_pb2.BadRequest.FieldViolation(
                            field="texts[1]", description="too long"
                        )
                    ]
                )
            )
            status.details.add().Pack(
                error_details_pb2.ErrorInfo(reason="LimitExceeded", domain="tokend")
            )
            plain = rpc_status.to_status(status)
            context.abort_with_status(
                _Status(
                    plain.code,
                    plain.details,
                    (*plain.trailing_metadata, ("x-request-id", "req-42")),
                )
            )
        context.abort(grpc.StatusCode[name], f"status {name} as asked")
        raise AssertionError("unreachable")

    def train(
        self, requests: Iterator[pb.TrainRequest], context: grpc.ServicerContext
    ) -> pb.TrainResponse:
        for _ in requests:
            pass
        self._count("train")
        context.abort(grpc.StatusCode.UNAVAILABLE, "draining")
        raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def status_server() -> Iterator[StatusServer]:
    server = StatusServer()
    yield server
    server.server.stop(grace=None)


class TestStatusTable:
    def test_every_status_maps_to_its_core_class(self, status_server: StatusServer) -> None:
        """Each status code raises a RemoteError that is also the matching core error class."""
        with Client(status_server.target, timeout=5, max_attempts=1) as client:
            for code, core_cls in EXPECTED_CORE_CLASS.items():
                with pytest.raises(RemoteError) as info:
                    client.encode(code.name, "x")
                err = info.value
                assert isinstance(err, core_cls), (code, type(err).__mro__)
                assert err.code is code
                assert err.details == f"status {code.name} as asked"
                assert code.name in str(err)

    def test_table_is_one_fixed_mapping(self) -> None:
        """The table is read-only and every class in it carries a distinct status meaning."""
        with pytest.raises(TypeError):
            STATUS_ERRORS[grpc.StatusCode.OK] = ServerError  # type: ignore[index]
        assert STATUS_ERRORS[grpc.StatusCode.NOT_FOUND] is TokenizerNotFound
        assert all(issubclass(cls, RemoteError) for cls in STATUS_ERRORS.values())

    def test_rich_details_are_decoded(self, status_server: StatusServer) -> None:
        """BadRequest violations, the ErrorInfo reason and the request id reach the exception."""
        with (
            Client(status_server.target, timeout=5, max_attempts=1) as client,
            pytest.raises(core.LimitExceeded) as info,
        ):
            client.encode("RESOURCE_EXHAUSTED+rich", "x")
        err = info.value
        assert isinstance(err, RemoteError)
        assert [(v.field, v.description) for v in err.violations] == [("texts[1]", "too long")]
        assert err.reason == "LimitExceeded"
        assert err.request_id == "req-42"
        assert err.code.value[0] == code_pb2.RESOURCE_EXHAUSTED

    def test_reason_refines_not_found(self) -> None:
        """NOT_FOUND with ErrorInfo reason UnknownJob is a JobNotFound (core.UnknownJob)."""
        from tokend.client.errors import error_for_status

        job = error_for_status(grpc.StatusCode.NOT_FOUND, "no job x", reason="UnknownJob")
        tok = error_for_status(grpc.StatusCode.NOT_FOUND, "no tok", reason="UnknownTokenizer")
        assert isinstance(job, core.UnknownJob)
        assert not isinstance(job, core.UnknownTokenizer)
        assert isinstance(tok, TokenizerNotFound)

    def test_async_client_maps_the_same(self, status_server: StatusServer) -> None:
        """grpc.aio errors go through the same table."""

        async def run() -> list[type[BaseException]]:
            raised: list[type[BaseException]] = []
            async with AsyncClient(status_server.target, timeout=5, max_attempts=1) as client:
                for code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT):
                    try:
                        await client.encode(code.name, "x")
                    except RemoteError as err:
                        raised.append(type(err))
            return raised

        assert asyncio.run(run()) == [
            STATUS_ERRORS[grpc.StatusCode.NOT_FOUND],
            STATUS_ERRORS[grpc.StatusCode.INVALID_ARGUMENT],
        ]


class TestRetries:
    def test_service_config_retries_unavailable(self) -> None:
        """The channel enables retries with a retryPolicy on UNAVAILABLE for the service."""
        options = dict(channel_options(max_attempts=4))
        assert options["grpc.enable_retries"] == 1
        config = json.loads(options["grpc.service_config"])
        assert config == service_config(4)
        policy = config["methodConfig"][0]["retryPolicy"]
        assert config["methodConfig"][0]["name"] == [{"service": SERVICE}]
        assert policy["retryableStatusCodes"] == ["UNAVAILABLE"]
        assert policy["maxAttempts"] == 4

    def test_unavailable_is_retried_by_grpc(self, status_server: StatusServer) -> None:
        """A call failing UNAVAILABLE twice succeeds on the third attempt, transparently."""
        with Client(status_server.target, timeout=10, max_attempts=3) as client:
            result = client.encode("UNAVAILABLE*2", "x")
        assert result.ids == [3]
        assert status_server.attempts["UNAVAILABLE*2"] == 3

    def test_attempts_are_bounded(self, status_server: StatusServer) -> None:
        """After max_attempts the UNAVAILABLE reaches the caller as Unavailable."""
        with (
            Client(status_server.target, timeout=10, max_attempts=2) as client,
            pytest.raises(core.Unavailable),
        ):
            client.encode("UNAVAILABLE*5", "x")
        assert status_server.attempts["UNAVAILABLE*5"] == 2

    def test_other_codes_are_not_retried(self, status_server: StatusServer) -> None:
        """INVALID_ARGUMENT is final: exactly one attempt."""
        with (
            Client(status_server.target, timeout=10, max_attempts=5) as client,
            pytest.raises(core.InvalidInput),
        ):
            client.encode("INVALID_ARGUMENT*3", "x")
        assert status_server.attempts["INVALID_ARGUMENT*3"] == 1

    def test_train_is_not_retried(self, status_server: StatusServer) -> None:
        """Train (it starts a job) is excluded from the retry policy."""
        with (
            Client(status_server.target, timeout=10, max_attempts=5) as client,
            pytest.raises(core.Unavailable),
        ):
            client.train("t", "corpus", vocab_size=300)
        assert status_server.attempts["train"] == 1


class TestAuthMetadata:
    def test_bearer_token_is_sent(self, status_server: StatusServer) -> None:
        """token= becomes `authorization: Bearer <token>` on every call."""
        with (
            Client(status_server.target, timeout=5, token="s3cret", max_attempts=1) as client,
            pytest.raises(TokenizerNotFound),
        ):
            client.encode("NOT_FOUND", "x")
        assert status_server.metadata[-1]["authorization"] == "Bearer s3cret"

    def test_bad_token_is_refused_locally(self) -> None:
        """A token with whitespace would corrupt the header: refused before any call."""
        with pytest.raises(ValueError, match="whitespace"):
            Client("127.0.0.1:1", token="two words")


class TestDependencies:
    def test_client_imports_only_stubs_and_core_errors(self) -> None:
        """tokend.client depends on the generated stubs and tokend.core.errors, not the encoder."""
        import ast
        from pathlib import Path

        import tokend.client

        package = Path(tokend.client.__file__).parent
        allowed_tokend = ("tokend.client", "tokend.v1", "tokend.core.errors")
        offenders: list[str] = []
        for source in sorted(package.glob("*.py")):
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                    if node.module == "tokend.core":  # `from tokend.core import errors`
                        names = [f"tokend.core.{alias.name}" for alias in node.names]
                for name in names:
                    if name.startswith("tokend") and not name.startswith(allowed_tokend):
                        offenders.append(f"{source.name}: {name}")
        assert offenders == []


class TestServerStatuses:
    """Each error path of the real service arrives as its typed exception."""

    def test_not_found(self, client: Client) -> None:
        with pytest.raises(TokenizerNotFound) as info:
            client.encode("no-such-tok@3", "x")
        assert info.value.code is grpc.StatusCode.NOT_FOUND
        assert "no-such-tok" in info.value.details
        assert info.value.request_id  # the server echoes the request id it logged

    def test_invalid_argument(self, client: Client) -> None:
        """A malformed reference and an empty batch are INVALID_ARGUMENT naming the value."""
        with pytest.raises(core.InvalidInput, match="bad ref!"):
            client.encode("bad ref!", "x")
        with pytest.raises(core.InvalidInput) as info:
            client.encode_batch("o200k_base", [])
        assert info.value.code is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]

    def test_resource_exhausted_names_the_limit(self, client: Client, tokend_service: Any) -> None:
        """Over --max-batch: RESOURCE_EXHAUSTED (LimitExceeded) naming the value and the limit."""
        limit = tokend_service.max_batch
        with pytest.raises(core.LimitExceeded) as info:
            client.encode_batch("o200k_base", ["x"] * (limit + 1))
        message = str(info.value)
        assert str(limit + 1) in message
        assert str(limit) in message
        assert "--max-batch" in message

    def test_unauthenticated_and_permission_denied(self, tokend_service: Any) -> None:
        """Train without the admin token: UNAUTHENTICATED; with a wrong one: PERMISSION_DENIED."""
        with (
            Client(tokend_service.target, timeout=10) as anonymous,
            pytest.raises(core.Unauthenticated),
        ):
            anonymous.train("noauth", "some corpus text", vocab_size=260)
        with (
            Client(tokend_service.target, timeout=10, token="wrong-token") as wrong,
            pytest.raises(core.PermissionDenied),
        ):
            wrong.train("badauth", "some corpus text", vocab_size=260)

    def test_deadline_exceeded(self, client: Client) -> None:
        """A deadline shorter than the work: DEADLINE_EXCEEDED as a TimeoutError."""
        with pytest.raises(core.DeadlineExceeded) as info:
            client.encode("o200k_base", "many words here " * 100_000, timeout=0.001)
        assert isinstance(info.value, TimeoutError)

    def test_unavailable_after_retries(self) -> None:
        """Nobody listening: UNAVAILABLE (a ConnectionError) once the attempts are used up."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # bound but not listening: connections are refused
            with (
                Client(f"127.0.0.1:{port}", timeout=5, max_attempts=2) as dead,
                pytest.raises(core.Unavailable) as info,
            ):
                dead.count_tokens("o200k_base", "x")
        assert isinstance(info.value, ConnectionError)


TRAIN_CORPUS_CASES = [
    ({}, "needs a corpus to stream or a server-side corpus_path"),
    ({"corpus": "text", "corpus_path": "c.txt"}, "not both"),
    ({"corpus": Path("/no/such/corpus.txt")}, "is not a readable file"),
]


class TestTrainCorpusChecks:
    """A Train call with no corpus, two corpora or a missing file is refused before anything
    is sent, as InvalidInput (it used to surface as UNKNOWN "Exception iterating requests!")."""

    @pytest.mark.parametrize(("kwargs", "message"), TRAIN_CORPUS_CASES)
    def test_sync(self, kwargs: dict[str, object], message: str) -> None:
        # nothing listens on port 1: the refusal must come before anything is sent
        with Client("127.0.0.1:1", timeout=2) as client, pytest.raises(
            core.InvalidInput, match=message
        ):
            client.train("t", vocab_size=300, **kwargs)  # type: ignore[arg-type]

    @pytest.mark.parametrize(("kwargs", "message"), TRAIN_CORPUS_CASES)
    def test_async(self, kwargs: dict[str, object], message: str) -> None:
        async def run() -> None:
            async with AsyncClient("127.0.0.1:1", timeout=2) as client:
                with pytest.raises(core.InvalidInput, match=message):
                    await client.train("t", vocab_size=300, **kwargs)  # type: ignore[arg-type]

        asyncio.run(run())
