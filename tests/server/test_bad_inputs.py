"""The bad-input catalogue (tests/support/bad_inputs.py) against a real ``tokend serve``.

Every case must get its status code, a message that names the request field and states the
rule (a bounded message: no client value echoed in full), a BadRequest violation naming the
field where the status carries one, an ErrorInfo naming the case's error class (whose row in
the server's status tables gives the gRPC and HTTP columns of docs/service.md's table), and
the server must still answer afterwards.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from bad_inputs import CATALOGUE, SERVER_FLAGS, SHAPES, Case, grpc_status
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from tokend_process import ServedProcess, start_tokend
from versioned import publish_versions

from tokend.core import errors as E  # noqa: N812 - E.UnknownTokenizer reads as a table
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "/tokend.v1.TokenizerService/"
# Longest message a case may get: the server cuts quoted values (and whole messages) short.
MAX_DETAILS = 1200


@pytest.fixture(scope="module")
def catalogue_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedProcess]:
    """A real server with the catalogue's small limits (one worker: one place to look) and
    a registry tokenizer with versions and an alias (``vtok``)."""
    base = tmp_path_factory.mktemp("catalogue")
    publish_versions(base / "registry")
    served = start_tokend(base, *SERVER_FLAGS, workers=1)
    (served.train_dir / "corpus.txt").write_text("a small corpus\n")
    yield served
    served.stop()


@pytest.fixture(scope="module")
def channel(catalogue_server: ServedProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(catalogue_server.target) as ch:
        yield ch


def call(channel: grpc.Channel, case: Case) -> grpc.RpcError:
    """Send the case's raw bytes and return the error (failing if the call succeeds)."""
    streaming_in, streaming_out = SHAPES[case.rpc]
    path = SERVICE + case.rpc
    kwargs = {"metadata": case.metadata or None, "timeout": 30}
    try:
        if streaming_in and streaming_out:
            list(channel.stream_stream(path)(iter(case.request), **kwargs))
        elif streaming_in:
            channel.stream_unary(path)(iter(case.request), **kwargs)
        elif streaming_out:
            (request,) = case.request
            list(channel.unary_stream(path)(request, **kwargs))
        else:
            (request,) = case.request
            channel.unary_unary(path)(request, **kwargs)
    except grpc.RpcError as err:
        return err
    raise AssertionError(f"{case.id}: the call succeeded")


def violations(err: grpc.RpcError) -> list[str]:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    found = []
    for detail in status.details if status else []:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            found += [v.field for v in bad.field_violations]
    return found


def error_reasons(err: grpc.RpcError) -> list[str]:
    """The ErrorInfo reasons of a failed call: the tokend.core.errors class names."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    found = []
    for detail in status.details if status else []:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            found.append(info.reason)
    return found


def test_the_catalogue_covers_every_rpc() -> None:
    """At least 60 cases, every RPC of the service among them, ids unique."""
    rpcs = set(pb.DESCRIPTOR.services_by_name["TokenizerService"].methods_by_name)
    assert {case.rpc for case in CATALOGUE} == rpcs == set(SHAPES)
    assert len(CATALOGUE) >= 60
    assert len({case.id for case in CATALOGUE}) == len(CATALOGUE)


@pytest.mark.parametrize("case", CATALOGUE, ids=[case.id for case in CATALOGUE])
def test_bad_input_gets_a_clear_status(channel: grpc.Channel, case: Case) -> None:
    """Status, field and rule in the message, BadRequest field, and the server still serves."""
    err = call(channel, case)
    details = err.details() or ""
    assert err.code().name == case.code, details
    assert case.field in details, details
    assert case.rule in details, details
    assert len(details) <= MAX_DETAILS
    if case.code in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "NOT_FOUND"):
        assert violations(err) == [case.field]
    (reason,) = error_reasons(err)
    assert issubclass(getattr(E, reason), case.error_class), reason
    stub = pb_grpc.TokenizerServiceStub(channel)
    answer = stub.CountTokens(pb.CountTokensRequest(tokenizer="o200k_base", texts=["still ok"]),
                              timeout=30)
    assert answer.total == 2


def test_each_rows_status_is_its_error_class_in_the_status_table() -> None:
    """The written-out status of every row is what server/errors.py's STATUS_TABLE gives the
    row's error class (the class the call above must raise), so the gRPC and HTTP columns of
    docs/service.md's table, both read from the tables through that class, cannot disagree
    with the server."""
    for case in CATALOGUE:
        assert grpc_status(case) == case.code, case.id


def test_service_doc_table_is_generated_from_the_catalogue() -> None:
    """docs/service.md holds exactly what scripts/gen_status_table.py renders (re-run it if not)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_status_table.py"), "--check"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
