"""The bad-input catalogue, sent through the HTTP JSON API: the same refusals as over gRPC.

Every catalogue row of an RPC the HTTP API serves (Encode -> POST /tokenize, Decode -> POST
/detokenize, CountTokens -> POST /count, GetTokenizer -> GET /tokenizers/{ref}) is turned
into its JSON request (the same fields by their proto names; invalid UTF-8 as raw bytes in the
body or ``%FF`` in the path; bytes that are no protobuf message become a body that is no
JSON) and must get the HTTP status that the gRPC code maps to (the HTTP column of
docs/service.md's table), a JSON error naming the same field and stating the same rule, with
a bounded message. A few rows only HTTP can get follow.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any
from urllib.parse import quote, quote_from_bytes

import pytest
from bad_inputs import (
    CATALOGUE,
    GARBAGE,
    INVALID_UTF8,
    PLACEHOLDER,
    Case,
    deep_tool,
    http_status,
)
from google.protobuf.message import Message
from http_api import HttpServed, call

from tokend.core import errors as E  # noqa: N812 - E.UnknownTokenizer reads as a table
from tokend.server.errors import HTTP_STATUS_TABLE, STATUS_TABLE
from tokend.server.web.app import DRAIN_SECONDS
from tokend.v1 import tokenizer_pb2 as pb

MAX_MESSAGE = 1200  # as tests/server/test_bad_inputs.py: quoted values are cut short
# The HTTP status each gRPC code must become (written out here, not read from the server).
HTTP_FOR = {"INVALID_ARGUMENT": 400, "NOT_FOUND": 404, "RESOURCE_EXHAUSTED": 413,
            "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "ALREADY_EXISTS": 409,
            "FAILED_PRECONDITION": 400, "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504}
POSTS: dict[str, tuple[str, type[Message]]] = {
    "Encode": ("/tokenize", pb.EncodeRequest),
    "Decode": ("/detokenize", pb.DecodeRequest),
    "CountTokens": ("/count", pb.CountTokensRequest),
}


def as_json(message: Message) -> dict[str, Any]:
    """The fields set in ``message`` by their proto names (enums as numbers, as sent)."""
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        if field.message_type is not None:
            out[field.name] = [as_json(v) for v in value] if field.is_repeated \
                else as_json(value)
        else:
            out[field.name] = list(value) if field.is_repeated else value
    return out


def quote_json(message: pb.QuoteRequest) -> dict[str, Any] | None:
    """/quote's body of a Quote row: /count's fields flat beside the quote's, the vendor body
    as an object (None when it is no JSON object: that row is the gRPC spelling's alone)."""
    fields = as_json(message)
    body = {**fields.pop("count", {}), **fields}
    if "vendor_body_json" in body:
        try:
            body["vendor_body"] = json.loads(body.pop("vendor_body_json"))
        except ValueError:
            return None
    return body


def http_form(case: Case) -> tuple[str, str, bytes | None, str] | None:
    """(method, path, body, rule) of a catalogue case over HTTP; None for RPCs HTTP lacks."""
    if case.rpc == "Quote" and len(case.request) == 1:
        (raw,) = case.request
        if raw == GARBAGE:
            return "POST", "/quote", GARBAGE, "not JSON"
        quote_body = quote_json(pb.QuoteRequest.FromString(raw))
        if quote_body is None:
            return None
        return "POST", "/quote", json.dumps(quote_body).encode(), case.rule
    if case.rpc in POSTS and len(case.request) == 1:
        path, kind = POSTS[case.rpc]
        (raw,) = case.request
        if raw == GARBAGE:
            return "POST", path, GARBAGE, "not JSON"
        message = kind.FromString(raw.replace(INVALID_UTF8, PLACEHOLDER.encode()))
        body = json.dumps(as_json(message)).encode()
        # json.dumps writes the placeholder's control characters as \u0001 escapes.
        body = body.replace(json.dumps(PLACEHOLDER)[1:-1].encode(), INVALID_UTF8)
        return "POST", path, body, case.rule
    if case.rpc == "GetTokenizer" and case.request != (GARBAGE,):
        (raw,) = case.request
        ref = pb.GetTokenizerRequest.FromString(raw.replace(INVALID_UTF8, PLACEHOLDER.encode()))
        encoded = ref.tokenizer.encode().replace(PLACEHOLDER.encode(), INVALID_UTF8)
        return "GET", "/tokenizers/" + quote_from_bytes(encoded, safe="@"), None, case.rule
    if case.rpc in GETS and case.request != (GARBAGE,):
        return "GET", get_path(case), None, case.rule
    return None


# The GET routes whose query string carries the request's fields (Lint's tokenizer: the path).
GETS: dict[str, type[Message]] = {"Lint": pb.LintRequest, "Diff": pb.DiffRequest}


def get_path(case: Case) -> str:
    """The path and query of a Lint or Diff row: each field set, by its proto name (enums as
    numbers, as sent), invalid UTF-8 as %FF-style escapes."""
    (raw,) = case.request
    message = GETS[case.rpc].FromString(raw.replace(INVALID_UTF8, PLACEHOLDER.encode()))
    fields = as_json(message)

    def escaped(value: object) -> str:
        data = str(value).encode().replace(PLACEHOLDER.encode(), INVALID_UTF8)
        return quote_from_bytes(data, safe="@")

    path = "/diff"
    if case.rpc == "Lint":
        path = f"/tokenizers/{escaped(fields.pop('tokenizer', ''))}/lint"
    query = "&".join(f"{key}={escaped(value)}" for key, value in fields.items())
    return f"{path}?{query}" if query else path


HTTP_CASES = [(case, form) for case in CATALOGUE if (form := http_form(case)) is not None]


@pytest.mark.parametrize(("case", "form"), HTTP_CASES, ids=[c.id for c, _ in HTTP_CASES])
def test_catalogue_row_over_http(http_server: HttpServed, case: Case,
                                 form: tuple[str, str, bytes | None, str]) -> None:
    """The gRPC row's status (mapped), field and rule, from the JSON API."""
    method, path, body, rule = form
    answer = call(http_server.base, method, path, body)
    assert answer.status == HTTP_FOR[case.code] == http_status(case), answer.body
    error = answer.body["error"]
    assert error["field"] == case.field, error
    assert error["message"].startswith(case.field), error
    assert rule in error["message"], error
    assert error["status"] == case.code
    assert len(error["message"]) <= MAX_MESSAGE
    assert answer.headers.get("x-request-id")


def test_every_row_of_the_served_rpcs_is_sent() -> None:
    """All rows of Encode, Decode, CountTokens and Quote (but its vendor_body_json that is no
    JSON: HTTP's vendor_body is an object); those of GetTokenizer, Lint and Diff but the
    garbage ones."""
    served = [c for c in CATALOGUE if c.rpc in (*POSTS, "Quote", "GetTokenizer", *GETS)]
    assert len(HTTP_CASES) == len(served) - 3 - 1
    assert len(HTTP_CASES) >= 45


def test_the_readme_http_column_is_what_is_sent() -> None:
    """A row has an HTTP status in the status table exactly when it is sent over HTTP here."""
    sent = {case.id for case, _ in HTTP_CASES}
    assert {case.id for case in CATALOGUE if http_status(case) is not None} == sent


# -- refusals only HTTP has --------------------------------------------------------------
BIG = json.dumps({"tokenizer": "o200k_base", "texts": ["x" * (1 << 20)]}).encode()
# (id, method, path, body, status, field, rule)
ONLY_HTTP: list[tuple[str, str, str, bytes | None, int, str | None, str]] = [
    ("not-an-object", "POST", "/tokenize", b"[1, 2]", 400, "request", "must be a JSON object"),
    ("unknown-field", "POST", "/tokenize", b'{"tokenizer": "gpt2", "textz": ["a"]}', 400,
     "textz", "unknown field of EncodeRequest"),
    ("text-not-string", "POST", "/count", b'{"tokenizer": "gpt2", "texts": [1]}', 400,
     "texts[0]", "must be a string, not a number"),
    ("negative-id", "POST", "/detokenize", b'{"tokenizer": "gpt2", "ids": [5, -1]}', 400,
     "ids[1]", "integer from 0 to 2^32 - 1"),
    ("bool-as-string", "POST", "/tokenize",
     b'{"tokenizer": "gpt2", "texts": "a", "add_special_tokens": "yes"}', 400,
     "add_special_tokens", "true or false"),
    ("unknown-mode-name", "POST", "/tokenize",
     b'{"tokenizer": "gpt2", "texts": "a", "special_tokens": {"disallowed_mode": "some"}}', 400,
     "special_tokens.disallowed_mode", "unknown DisallowedSpecial 'some'"),
    ("mode-number-2^40", "POST", "/tokenize",
     b'{"tokenizer": "gpt2", "texts": "a", "special_tokens": {"disallowed_mode": 1099511627776}}',
     400, "special_tokens.disallowed_mode", "enum numbers are int32"),
    ("tools-nested-1000", "POST", "/count",
     b'{"tokenizer": "gpt2", "messages": [{"role": "user", "content": "a"}], "tools_json": '
     + deep_tool(1000).encode() + b"}", 400, "request", "nests deeper"),
    ("tools-nested-40", "POST", "/count",
     b'{"tokenizer": "gpt2", "messages": [{"role": "user", "content": "a"}], "tools_json": '
     + deep_tool(40).encode() + b"}", 400, "tools_json", "nests deeper than 32"),
    ("duplicate-key", "POST", "/count", b'{"tokenizer": "gpt2", "texts": ["a"], "texts": ["b"]}',
     400, "request", "'texts' is given twice"),
    ("body-nested-100000", "POST", "/count",
     b'{"tokenizer": "gpt2", "texts": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400,
     "request", "nests deeper"),
    ("lone-surrogate", "POST", "/tokenize", b'{"tokenizer": "gpt2", "texts": ["ok", "\\ud800"]}',
     400, "texts[1]", "must be valid UTF-8"),
    ("body-too-large", "POST", "/tokenize", BIG, 413, "request", "--max-message-bytes"),
    ("unknown-path", "GET", "/v1/tokenize", None, 404, None, "no route GET '/v1/tokenize'"),
    ("wrong-method", "GET", "/count", None, 405, None, "Method Not Allowed"),
    ("lint-tokenizer-in-query", "GET", "/tokenizers/gpt2/lint?tokenizer=gpt2", None, 400,
     "tokenizer", "is named by the path"),
    ("lint-unknown-param", "GET", "/tokenizers/gpt2/lint?dept=full", None, 400, "dept",
     "unknown field of LintRequest"),
    ("lint-bool-not-bool", "GET", "/tokenizers/gpt2/lint?list_partial_utf8=yes", None, 400,
     "list_partial_utf8", "must be true or false"),
    ("lint-depth-name", "GET", "/tokenizers/gpt2/lint?depth=deep", None, 400, "depth",
     "unknown LintDepth 'deep'; one of ['unspecified', 'import', 'full']"),
    ("diff-param-twice", "GET", "/diff?a=gpt2&a=gpt2&b=gpt2", None, 400, "a",
     "is given twice in the query"),
    ("diff-top-not-int", "GET", "/diff?a=gpt2&b=gpt2&top=-1", None, 400, "top",
     "must be an integer from 0 to 2^32 - 1"),
    ("diff-post", "POST", "/diff", b"{}", 405, None, "Method Not Allowed"),
]


@pytest.mark.parametrize("row", ONLY_HTTP, ids=[row[0] for row in ONLY_HTTP])
def test_http_only_refusal(
    http_server: HttpServed, row: tuple[str, str, str, bytes | None, int, str | None, str]
) -> None:
    """Status, field and rule in the same JSON error shape; the server still answers after."""
    _, method, path, body, status, field, rule = row
    answer = call(http_server.base, method, path, body)
    assert answer.status == status, answer.body
    error = answer.body["error"]
    assert error["field"] == field
    assert rule in error["message"], error
    still = call(http_server.base, "POST", "/count",
                 {"tokenizer": "o200k_base", "texts": ["still ok"]})
    assert still.status == 200 and still.body["total"] == 2


def test_too_large_bodies_get_their_413_every_time(http_server: HttpServed) -> None:
    """The server reads and drops a refused body before answering: without that, closing a
    socket with unread bytes resets it and the client sees a broken pipe (3 of 60 before)."""
    statuses = [call(http_server.base, "POST", "/tokenize", BIG).status for _ in range(60)]
    assert statuses == [413] * 60


def test_a_stalled_too_large_body_is_answered_after_the_drain_bound(
    http_server: HttpServed,
) -> None:
    """A client that declares 10 GB and stops sending gets its 413 after DRAIN_SECONDS."""
    host, port = http_server.base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Content-Length: 10000000000\r\n\r\n{\"texts\": [")
        reply = sock.recv(4096)
        waited = time.monotonic() - started
    assert reply.startswith(b"HTTP/1.1 413"), reply[:80]
    assert DRAIN_SECONDS - 0.5 <= waited < DRAIN_SECONDS + 10, waited


def test_http_table_follows_the_grpc_table() -> None:
    """The same classes in the same order; each HTTP code is the one its gRPC code maps to,
    but a limit (413: retrying cannot help) and a full disk (507)."""
    assert [cls for cls, _ in HTTP_STATUS_TABLE] == [cls for cls, _ in STATUS_TABLE]
    grpc_code = dict(STATUS_TABLE)
    special = {E.LimitExceeded: 413, E.StorageFull: 507, E.StorageError: 503,
               E.CorruptData: 500, E.Cancelled: 499}
    for cls, status in HTTP_STATUS_TABLE:
        assert status == special.get(cls, HTTP_FOR.get(grpc_code[cls].name)), cls


def test_quoted_values_are_cut(http_server: HttpServed) -> None:
    """A 7,000-character reference is echoed as a bounded prefix, not in full."""
    answer = call(http_server.base, "GET", "/tokenizers/" + quote("y" * 7000))
    assert answer.status == 400
    assert "(7000 characters)" in answer.body["error"]["message"]
    assert len(answer.body["error"]["message"]) <= MAX_MESSAGE
