"""The bad-input catalogue: every RPC, the bad requests a client can send, the status each gets.

One row per case: the RPC, what is wrong, the request (serialized by hand, so that bytes no
protobuf library would produce — invalid UTF-8, garbage — can be sent too), the status code,
the request field the message must name, a fragment of the rule it must state and the
``tokend.core.errors`` class raised (the usual one of the status unless the row names one).
``tests/server/test_bad_inputs.py`` sends every case to a real ``tokend serve`` started with
:data:`SERVER_FLAGS` (its registry holds ``vtok``, ``tests/support/versioned.py``);
``tests/server/test_http_bad_inputs.py`` sends the rows the JSON API can take over HTTP;
``scripts/gen_status_table.py`` renders the rows into docs/service.md, the gRPC and HTTP statuses
read from the server's tables through each row's class.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from versioned import NAME as VTOK

from tokend.core import errors as E  # noqa: N812 - E.UnknownTokenizer reads as a table
from tokend.server.errors import HTTP_STATUS_TABLE, STATUS_TABLE
from tokend.v1 import tokenizer_pb2 as pb

# Small limits, so that every limit is reachable with small requests.
SERVER_FLAGS: tuple[str, ...] = (
    "--max-batch", "16",
    "--max-text-bytes", "65536",
    "--max-ids", "20000",
    "--max-detail-tokens", "5000",
    "--max-stream-bytes", "262144",
    "--max-corpus-bytes", "65536",
    "--max-vocab-size", "100000",
    "--max-lint-vocab", "100000",
    "--max-lint-findings", "500",
)
ADMIN_TOKEN = "test-admin-token"  # what tests/support/tokend_process.py starts the server with

# Shapes of the RPCs: (request streaming, response streaming).
SHAPES: dict[str, tuple[bool, bool]] = {
    "Encode": (False, False),
    "EncodeStream": (True, True),
    "Decode": (False, False),
    "CountTokens": (False, False),
    "Quote": (False, False),
    "Truncate": (False, False),
    "Chunk": (False, True),
    "ListTokenizers": (False, False),
    "GetTokenizer": (False, False),
    "Train": (True, False),
    "GetTrainJob": (False, False),
    "WatchTrainJob": (False, True),
    "CancelTrainJob": (False, False),
    "ListTrainJobs": (False, False),
    "Report": (False, False),
    "Lint": (False, False),
    "Diff": (False, False),
}

PLACEHOLDER = "\x01BAD\x01"  # five bytes in UTF-8, swapped for five invalid ones
INVALID_UTF8 = b"ab\xff\xfecd"[:5]
GARBAGE = b"\xff\xff\xff\xff\x0f"  # a field number 0 / unterminated varint: not a message
UNKNOWN_JOB = "0123456789abcdef0123456789abcdef"
LONG_NAME = "x" * 7000  # echoed in full it would overflow the client's 16 KiB trailer limit


@dataclass(frozen=True)
class Case:
    """One bad request and what the server must answer."""

    id: str
    rpc: str
    what: str  # the status table's "bad input" column
    request: tuple[bytes, ...]  # one serialized message per element (unary: exactly one)
    code: str  # grpc.StatusCode name
    field: str  # the request field (or metadata key) the message must name
    rule: str  # a fragment of the rule / limit the message must state
    metadata: tuple[tuple[str, str], ...] = ()
    error: type[E.TokendError] | None = None  # the class raised; None: the code's usual one

    @property
    def error_class(self) -> type[E.TokendError]:
        """The tokend.core.errors class the server must raise (its ErrorInfo reason is this
        class or a subclass): given, or the usual class of the case's status code."""
        return self.error or USUAL_ERROR[self.code]


# The class a case of each status code raises unless the row names another (written out).
USUAL_ERROR: dict[str, type[E.TokendError]] = {
    "INVALID_ARGUMENT": E.InvalidInput, "NOT_FOUND": E.UnknownTokenizer,
    "RESOURCE_EXHAUSTED": E.LimitExceeded, "UNAUTHENTICATED": E.Unauthenticated,
    "PERMISSION_DENIED": E.PermissionDenied, "ALREADY_EXISTS": E.AlreadyExists,
}
# The RPCs the HTTP JSON API serves, and how (tests/server/test_http_bad_inputs.py).
HTTP_ROUTES = {"Encode": "POST /tokenize", "Decode": "POST /detokenize",
               "CountTokens": "POST /count", "Quote": "POST /quote",
               "GetTokenizer": "GET /tokenizers/{ref}",
               "ListTokenizers": "GET /tokenizers", "Lint": "GET /tokenizers/{ref}/lint",
               "Diff": "GET /diff"}


def grpc_status(case: Case) -> str:
    """The gRPC status name of the case's error class in the server's STATUS_TABLE."""
    return next(code.name for cls, code in STATUS_TABLE if issubclass(case.error_class, cls))


def http_status(case: Case) -> int | None:
    """The HTTP status of the case's error class in the server's HTTP_STATUS_TABLE, or None
    when the case cannot be sent over HTTP (an RPC the JSON API lacks; a protobuf body for a
    GET, which has none)."""
    route = HTTP_ROUTES.get(case.rpc)
    if route is None or (route.startswith("GET") and case.request == (GARBAGE,)):
        return None
    if case.field == "vendor_body_json":  # gRPC's spelling; HTTP's vendor_body is an object
        return None
    return next(status for cls, status in HTTP_STATUS_TABLE if issubclass(case.error_class, cls))


def bad_utf8(message: object) -> bytes:
    """Serialize ``message`` with every PLACEHOLDER replaced by invalid UTF-8 (same length)."""
    data: bytes = message.SerializeToString()  # type: ignore[attr-defined]
    raw = PLACEHOLDER.encode()
    assert raw in data and len(raw) == len(INVALID_UTF8)
    return data.replace(raw, INVALID_UTF8)


def ser(*messages: object) -> tuple[bytes, ...]:
    return tuple(m.SerializeToString() for m in messages)  # type: ignore[attr-defined]


ADMIN = (("authorization", f"Bearer {ADMIN_TOKEN}"),)


def _train(config: pb.TrainConfig, *chunks: bytes) -> tuple[bytes, ...]:
    return ser(pb.TrainRequest(config=config), *(pb.TrainRequest(corpus_chunk=c) for c in chunks))


TOOL_PROPERTIES_LIST = ('[{"type": "function", "function": {"name": "f", "parameters": '
                        '{"type": "object", "properties": ["a", "b"]}}}]')
TOOL_ENUM_NUMBER = ('[{"type": "function", "function": {"name": "f", "parameters": {"type": '
                    '"object", "properties": {"unit": {"type": "string", "enum": 3}}}}}]')


def deep_tool(depth: int) -> str:
    """tools_json whose parameters nest ``depth`` objects deep."""
    nested = '{"type": "object", "properties": {"a": ' * depth + "{}" + "}}" * depth
    return '[{"type": "function", "function": {"name": "f", "parameters": ' + nested + "}}]"


def _case(  # noqa: PLR0917 - positional rows read as a table
    id: str, rpc: str, what: str, request: Sequence[bytes], code: str, field: str, rule: str,
    metadata: tuple[tuple[str, str], ...] = (), *, error: type[E.TokendError] | None = None,
) -> Case:
    return Case(id, rpc, what, tuple(request), code, field, rule, metadata, error)


def _enc(**kw: object) -> tuple[bytes, ...]:
    return ser(pb.EncodeRequest(**kw))  # type: ignore[arg-type]


def _count(**kw: object) -> tuple[bytes, ...]:
    return ser(pb.CountTokensRequest(**kw))  # type: ignore[arg-type]


def _quote(model: str = "gpt-4o", **kw: object) -> tuple[bytes, ...]:
    """A Quote of one short user message for ``model`` with the quote fields ``kw``."""
    count = pb.CountTokensRequest(model=model, messages=[pb.ChatMessage(role="user",
                                                                        content="hi")])
    return ser(pb.QuoteRequest(count=count, **kw))  # type: ignore[arg-type]


def _anthropic_body(breakpoints: int, ttl: str = "5m") -> str:
    """An Anthropic Messages body (JSON) whose user message has ``breakpoints`` marked blocks."""
    blocks = [{"type": "text", "text": f"part {i}",
               "cache_control": {"type": "ephemeral", "ttl": ttl}} for i in range(breakpoints)]
    return json.dumps({"model": "claude-sonnet-4-5",
                       "messages": [{"role": "user", "content": blocks}]})


def _truncate(**kw: object) -> tuple[bytes, ...]:
    return ser(pb.TruncateRequest(**kw))  # type: ignore[arg-type]


def _chunk(**kw: object) -> tuple[bytes, ...]:
    return ser(pb.ChunkRequest(**kw))  # type: ignore[arg-type]


def _report(**kw: object) -> tuple[bytes, ...]:
    return ser(pb.ReportRequest(**kw))  # type: ignore[arg-type]


def _lint(**kw: object) -> tuple[bytes, ...]:
    return ser(pb.LintRequest(**kw))  # type: ignore[arg-type]


def _diff(**kw: object) -> tuple[bytes, ...]:
    return ser(pb.DiffRequest(**kw))  # type: ignore[arg-type]


def _decode(**kw: object) -> tuple[bytes, ...]:
    return ser(pb.DecodeRequest(**kw))  # type: ignore[arg-type]


def _stream(*texts: str, tokenizer: str = "o200k_base",
            policy: pb.SpecialTokenPolicy | None = None) -> tuple[bytes, ...]:
    first = pb.EncodeStreamRequest(tokenizer=tokenizer, text=texts[0] if texts else "")
    if policy is not None:
        first.special_tokens.CopyFrom(policy)
    return ser(first, *(pb.EncodeStreamRequest(text=t) for t in texts[1:]))


O2 = "o200k_base"
NONE = pb.DISALLOWED_SPECIAL_NONE
IA, NF, RE = "INVALID_ARGUMENT", "NOT_FOUND", "RESOURCE_EXHAUSTED"
NAME_RULE = "names must match"
UTF8_RULE = "must be valid UTF-8"
PROTO_RULE = "serialized protobuf"

CATALOGUE: tuple[Case, ...] = (
    # -- Encode ---------------------------------------------------------------------------
    _case("encode-empty-ref", "Encode", "empty tokenizer", _enc(tokenizer="", texts=["a"]),
          IA, "tokenizer", "expected 'name', 'name@VERSION' or 'name@ALIAS'"),
    _case("encode-bad-name", "Encode", "malformed tokenizer name", _enc(tokenizer="Bad Name",
          texts=["a"]), IA, "tokenizer", NAME_RULE),
    _case("encode-long-name", "Encode", "7,000-character tokenizer name (echo is cut)",
          _enc(tokenizer=LONG_NAME, texts=["a"]), IA, "tokenizer", "(7000 characters)"),
    _case("encode-unknown", "Encode", "unknown tokenizer", _enc(tokenizer="no-such-tok",
          texts=["a"]), NF, "tokenizer", "no tokenizer named 'no-such-tok'"),
    _case("encode-unknown-model", "Encode", "unknown model name", _enc(tokenizer="gpt-99",
          texts=["a"]), NF, "tokenizer", "known tokenizers"),
    _case("encode-builtin-version", "Encode", "version of a built-in",
          _enc(tokenizer="cl100k_base@2", texts=["a"]), IA, "tokenizer", "no versions or aliases"),
    _case("encode-zero-version", "Encode", "version with a leading zero",
          _enc(tokenizer="tok@01", texts=["a"]), IA, "tokenizer", "without leading zeros"),
    _case("encode-bad-alias", "Encode", "malformed alias", _enc(tokenizer="tok@Bad!",
          texts=["a"]), IA, "tokenizer", NAME_RULE),
    _case("encode-unknown-version", "Encode", "unknown version of a registry tokenizer",
          _enc(tokenizer=f"{VTOK}@9", texts=["a"]), NF, "tokenizer",
          f"{VTOK} has no version 9; versions: 1, 2"),
    _case("encode-unknown-alias", "Encode", "unknown alias of a registry tokenizer",
          _enc(tokenizer=f"{VTOK}@beta", texts=["a"]), NF, "tokenizer",
          f"{VTOK} has no alias 'beta'; aliases: stable"),
    _case("encode-no-texts", "Encode", "no texts", _enc(tokenizer=O2), IA, "texts",
          "send at least one item"),
    _case("encode-batch", "Encode", "more texts than --max-batch",
          _enc(tokenizer=O2, texts=["a"] * 17), RE, "texts", "over the limit of 16"),
    _case("encode-text-size", "Encode", "text over --max-text-bytes",
          _enc(tokenizer=O2, texts=["ok", "é" * 40000]), RE, "texts[1]", "--max-text-bytes"),
    _case("encode-ids", "Encode", "response over --max-ids",
          _enc(tokenizer=O2, texts=["a " * 30000]), RE, "texts[0]", "--max-ids"),
    _case("encode-details-size", "Encode", "details for more tokens than --max-detail-tokens",
          _enc(tokenizer=O2, texts=["a " * 6000], include_details=True), RE, "texts[0]",
          "--max-detail-tokens"),
    _case("encode-disallowed", "Encode", "special-token text not allowed",
          _enc(tokenizer=O2, texts=["ok", "x <|endoftext|>"]), IA, "texts[1]",
          "list it in special_tokens.allowed"),
    _case("encode-unknown-allowed", "Encode", "unknown name in special_tokens.allowed",
          _enc(tokenizer=O2, texts=["a"], special_tokens=pb.SpecialTokenPolicy(
              allowed=["<|endoftxt|>"])), IA, "special_tokens.allowed[0]",
          "not a special token"),
    _case("encode-unknown-disallowed", "Encode", "unknown name in special_tokens.disallowed",
          _enc(tokenizer=O2, texts=["a"], special_tokens=pb.SpecialTokenPolicy(
              disallowed_mode=pb.DISALLOWED_SPECIAL_LISTED, disallowed=["", "<|x|>"])), IA,
          "special_tokens.disallowed[0]", "not a special token"),
    _case("encode-bad-mode", "Encode", "unknown disallowed_mode",
          _enc(tokenizer=O2, texts=["a"], special_tokens=pb.SpecialTokenPolicy(
              disallowed_mode=99)), IA, "special_tokens.disallowed_mode",
          "unknown disallowed_mode 99"),
    _case("encode-utf8-text", "Encode", "invalid UTF-8 in a text",
          (bad_utf8(pb.EncodeRequest(tokenizer=O2, texts=["ok", PLACEHOLDER])),), IA,
          "texts[1]", UTF8_RULE),
    _case("encode-utf8-ref", "Encode", "invalid UTF-8 in the tokenizer",
          (bad_utf8(pb.EncodeRequest(tokenizer=PLACEHOLDER, texts=["a"])),), IA, "tokenizer",
          UTF8_RULE),
    _case("encode-utf8-allowed", "Encode", "invalid UTF-8 in special_tokens.allowed",
          (bad_utf8(pb.EncodeRequest(tokenizer=O2, texts=["a"], special_tokens=pb.
                                     SpecialTokenPolicy(allowed=["a", PLACEHOLDER]))),), IA,
          "special_tokens.allowed[1]", UTF8_RULE),
    _case("encode-garbage", "Encode", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE),
    # -- EncodeStream ---------------------------------------------------------------------
    _case("stream-empty", "EncodeStream", "no message at all", (), IA, "tokenizer",
          "received no message"),
    _case("stream-unknown", "EncodeStream", "unknown tokenizer",
          _stream("a", tokenizer="no-such-tok"), NF, "tokenizer", "no tokenizer named"),
    _case("stream-bad-name", "EncodeStream", "malformed tokenizer name",
          _stream("a", tokenizer="-bad"), IA, "tokenizer", NAME_RULE),
    _case("stream-disallowed", "EncodeStream", "special-token text in a later chunk",
          _stream("fine ", "then <|endoftext|>"), IA, "text",
          "list it in special_tokens.allowed"),
    _case("stream-size", "EncodeStream", "text over --max-stream-bytes",
          _stream(*(["word " * 12000] * 5)), RE, "text", "--max-stream-bytes"),
    _case("stream-utf8", "EncodeStream", "invalid UTF-8 in a later chunk",
          (*_stream("ok"), bad_utf8(pb.EncodeStreamRequest(text=PLACEHOLDER))), IA, "text",
          UTF8_RULE),
    _case("stream-unknown-allowed", "EncodeStream", "unknown name in special_tokens.allowed",
          _stream("a", policy=pb.SpecialTokenPolicy(allowed=["<|nope|>"])), IA,
          "special_tokens.allowed[0]", "not a special token"),
    _case("stream-garbage", "EncodeStream", "bytes that are no protobuf message",
          (GARBAGE,), IA, "request", PROTO_RULE),
    # -- Decode ---------------------------------------------------------------------------
    _case("decode-unknown-id", "Decode", "id not in the vocabulary",
          _decode(tokenizer=O2, ids=[1, 4_000_000]), IA, "ids[1]", "not in the vocabulary"),
    _case("decode-batch-id", "Decode", "id not in the vocabulary, in batch",
          _decode(tokenizer=O2, batch=[pb.TokenIds(ids=[1]), pb.TokenIds(ids=[199_998])]), IA,
          "batch[1].ids[0]", "not in the vocabulary"),
    _case("decode-ids", "Decode", "more ids than --max-ids",
          _decode(tokenizer=O2, ids=[1] * 20001), RE, "ids", "--max-ids"),
    _case("decode-batch", "Decode", "more sequences than --max-batch",
          _decode(tokenizer=O2, batch=[pb.TokenIds(ids=[1])] * 17), RE, "batch",
          "--max-batch"),
    _case("decode-unknown", "Decode", "unknown tokenizer", _decode(tokenizer="nope", ids=[1]),
          NF, "tokenizer", "no tokenizer named"),
    _case("decode-unknown-version", "Decode", "unknown version of a registry tokenizer",
          _decode(tokenizer=f"{VTOK}@3", ids=[1]), NF, "tokenizer", "has no version 3"),
    _case("decode-bad-ref", "Decode", "reference with two '@'",
          _decode(tokenizer="a@b@c", ids=[1]), IA, "tokenizer", NAME_RULE),
    _case("decode-utf8-ref", "Decode", "invalid UTF-8 in the tokenizer",
          (bad_utf8(pb.DecodeRequest(tokenizer=PLACEHOLDER, ids=[1])),), IA, "tokenizer",
          UTF8_RULE),
    _case("decode-garbage", "Decode", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE),
    # -- Quote --------------------------------------------------------------------------
    _case("quote-max-output-negative", "Quote", "negative max_output_tokens",
          _quote(max_output_tokens=-1), IA, "max_output_tokens", "must be from 0"),
    _case("quote-max-output-absurd", "Quote", "max_output_tokens = 2^63 - 1",
          _quote(max_output_tokens=2**63 - 1), IA, "max_output_tokens", "must be from 0"),
    _case("quote-max-output-over-model", "Quote", "max_output_tokens over the model's maximum",
          _quote(max_output_tokens=100000), IA, "max_output_tokens",
          "over gpt-4o's maximum output"),
    _case("quote-cache-unknown", "Quote", "an unknown cache state",
          _quote(cache="hot"), IA, "cache", "unknown cache state"),
    _case("quote-cache-prefix", "Quote", "prefix_tokens not a number",
          _quote(cache="prefix_tokens:many"), IA, "cache.prefix_tokens",
          "non-negative integer"),
    _case("quote-no-price", "Quote", "a model genai-prices does not price",
          _quote(model="gpt2", max_output_tokens=1), NF, "model", "no price for model"),
    _case("quote-no-model", "Quote", "no catalogued model",
          ser(pb.QuoteRequest(count=pb.CountTokensRequest(tokenizer=O2, texts=["a"]))), NF,
          "model", "needs a catalogued model"),
    _case("quote-vendor-unknown", "Quote", "an unknown vendor body shape",
          ser(pb.QuoteRequest(vendor="cohere", vendor_body_json="{}")), IA, "vendor",
          "unknown vendor"),
    _case("quote-vendor-body-json", "Quote", "vendor_body_json that is no JSON",
          ser(pb.QuoteRequest(vendor="anthropic", vendor_body_json="{")), IA,
          "vendor_body_json", "is not JSON"),
    _case("quote-breakpoints", "Quote", "five cache_control breakpoints",
          ser(pb.QuoteRequest(vendor="anthropic", vendor_body_json=_anthropic_body(5))), IA,
          "vendor_body.messages[0].content[4].cache_control", "at most 4"),
    _case("quote-ttl", "Quote", "a cache_control ttl other than 5m or 1h",
          ser(pb.QuoteRequest(vendor="anthropic", vendor_body_json=_anthropic_body(1, "2h"))),
          IA, "vendor_body.messages[0].content[0].cache_control.ttl", "must be \"5m\" or"),
    _case("quote-body-field", "Quote", "a vendor body without messages",
          ser(pb.QuoteRequest(vendor="anthropic",
                              vendor_body_json='{"model": "claude-sonnet-4-5"}')),
          IA, "vendor_body.messages", "is required"),
    _case("quote-garbage", "Quote", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE),
    # -- CountTokens ----------------------------------------------------------------------
    _case("count-nothing", "CountTokens", "neither texts nor messages", _count(tokenizer=O2),
          IA, "texts", "needs texts or messages"),
    _case("count-max-tokens-2^64", "CountTokens", "max_tokens = 2^64 - 1",
          _count(tokenizer=O2, texts=["a"], max_tokens=2**64 - 1), IA, "max_tokens",
          "2^63 - 1"),
    _case("count-max-tokens-2^63", "CountTokens", "max_tokens = 2^63",
          _count(tokenizer=O2, texts=["a"], max_tokens=2**63), IA, "max_tokens", "2^63 - 1"),
    _case("count-batch", "CountTokens", "texts + messages over --max-batch",
          _count(tokenizer=O2, texts=["a"] * 10, messages=[pb.ChatMessage(role="user")] * 7),
          RE, "texts", "--max-batch"),
    _case("count-text-size", "CountTokens", "text over --max-text-bytes",
          _count(tokenizer=O2, texts=["é" * 40000]), RE, "texts[0]", "--max-text-bytes"),
    _case("count-content-size", "CountTokens", "message content over --max-text-bytes",
          _count(tokenizer=O2, messages=[pb.ChatMessage(role="user", content="é" * 40000)]),
          RE, "messages[0].content", "--max-text-bytes"),
    _case("count-disallowed", "CountTokens", "special-token text with DISALLOWED_SPECIAL_ALL",
          _count(tokenizer=O2, texts=["<|endoftext|>"], special_tokens=pb.SpecialTokenPolicy(
              disallowed_mode=pb.DISALLOWED_SPECIAL_ALL)), IA, "texts[0]",
          "list it in special_tokens.allowed"),
    _case("count-utf8-content", "CountTokens", "invalid UTF-8 in a message's content",
          (bad_utf8(pb.CountTokensRequest(tokenizer=O2, messages=[
              pb.ChatMessage(role="user", content="hi"),
              pb.ChatMessage(role="user", content=PLACEHOLDER)])),), IA,
          "messages[1].content", UTF8_RULE),
    _case("count-utf8-role", "CountTokens", "invalid UTF-8 in a message's role",
          (bad_utf8(pb.CountTokensRequest(tokenizer=O2, messages=[
              pb.ChatMessage(role=PLACEHOLDER, content="hi")])),), IA, "messages[0].role",
          UTF8_RULE),
    _case("count-unknown", "CountTokens", "unknown tokenizer",
          _count(tokenizer="nope", texts=["a"]), NF, "tokenizer", "no tokenizer named"),
    _case("count-unknown-alias", "CountTokens", "unknown alias of a registry tokenizer",
          _count(tokenizer=f"{VTOK}@beta", texts=["a"]), NF, "tokenizer", "has no alias 'beta'"),
    _case("count-unknown-allowed", "CountTokens", "unknown name in special_tokens.allowed",
          _count(tokenizer=O2, texts=["a"], special_tokens=pb.SpecialTokenPolicy(
              allowed=["<|im_start|>"])), IA, "special_tokens.allowed[0]",
          "not a special token"),
    _case("count-garbage", "CountTokens", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE),
    _case("count-unknown-model", "CountTokens", "unknown model",
          _count(model="gpt-99", messages=[pb.ChatMessage(role="user", content="a")]), NF,
          "model", "unknown model 'gpt-99'"),
    _case("count-tools-json", "CountTokens", "tools_json that is not JSON",
          _count(tokenizer=O2, messages=[pb.ChatMessage(role="user", content="a")],
                 tools_json="{nope"), IA, "tools_json", "not JSON"),
    _case("count-tools-properties-list", "CountTokens", "a tool whose properties is a list",
          _count(tokenizer=O2, messages=[pb.ChatMessage(role="user", content="a")],
                 tools_json=TOOL_PROPERTIES_LIST), IA, "tools_json",
          "tools[0].function.parameters.properties must be a JSON object"),
    _case("count-tools-parameters-number", "CountTokens", "a tool whose parameters is a number",
          _count(tokenizer=O2, messages=[pb.ChatMessage(role="user", content="a")],
                 tools_json='[{"type": "function", "function": {"name": "f", "parameters": 7}}]'),
          IA, "tools_json", "parameters must be a JSON object"),
    _case("count-tools-enum-number", "CountTokens", "a tool property whose enum is a number",
          _count(tokenizer=O2, messages=[pb.ChatMessage(role="user", content="a")],
                 tools_json=TOOL_ENUM_NUMBER), IA, "tools_json", "enum must be a JSON array"),
    _case("count-tools-deep", "CountTokens", "a tool schema nested 1,000 deep",
          _count(tokenizer=O2, messages=[pb.ChatMessage(role="user", content="a")],
                 tools_json=deep_tool(1000)), IA, "tools_json", "nest"),
    _case("count-tools-json-size", "CountTokens", "tools_json over --max-text-bytes",
          _count(tokenizer=O2, messages=[pb.ChatMessage(role="user", content="a")],
                 tools_json="[" + " " * 70000 + "]"), RE, "tools_json", "--max-text-bytes"),
    _case("count-tool-arguments-size", "CountTokens",
          "tool_calls[].function.arguments over --max-text-bytes",
          _count(tokenizer=O2, messages=[pb.ChatMessage(role="assistant", tool_calls=[
              pb.ToolCall(id="c1", name="f", arguments="é" * 40000)])]), RE,
          "messages[0].tool_calls[0].function.arguments", "--max-text-bytes"),
    _case("count-tool-call-id-size", "CountTokens", "tool_call_id over --max-text-bytes",
          _count(tokenizer=O2, messages=[pb.ChatMessage(role="tool", content="ok",
                                                        tool_call_id="x" * 70000)]), RE,
          "messages[0].tool_call_id", "--max-text-bytes"),
    _case("count-parts-batch", "CountTokens", "content parts over --max-batch",
          _count(tokenizer=O2, messages=[pb.ChatMessage(role="user", parts=[
              pb.ContentPart(text="a")] * 20)]), RE, "texts", "--max-batch"),
    _case("count-image-size", "CountTokens", "image part without its size",
          _count(model="gpt-4o", messages=[pb.ChatMessage(role="user", parts=[
              pb.ContentPart(image=pb.ImagePart(url="https://x/y.png"))])]), IA,
          "messages", "never downloads images"),
    # -- Truncate -------------------------------------------------------------------------
    _case("truncate-unknown", "Truncate", "unknown tokenizer",
          _truncate(tokenizer="no-such-tok", text="a", max_tokens=1), NF, "tokenizer",
          "no tokenizer named"),
    _case("truncate-text-size", "Truncate", "text over --max-text-bytes",
          _truncate(tokenizer=O2, text="é" * 40000, max_tokens=1), RE, "text",
          "--max-text-bytes"),
    _case("truncate-keep", "Truncate", "unknown keep",
          _truncate(tokenizer=O2, text="a b c", max_tokens=1, keep=99), IA, "keep",
          "unknown keep 99"),
    _case("truncate-marker", "Truncate", "marker larger than max_tokens",
          _truncate(tokenizer=O2, text="a b c d e f", max_tokens=1, keep=pb.TRUNCATE_KEEP_BOTH,
                    marker=" [... cut ...] "), IA, "max_tokens", "alone is"),
    _case("truncate-marker-size", "Truncate", "marker over --max-text-bytes",
          _truncate(tokenizer=O2, text="a b c", max_tokens=1, marker="é" * 40000), RE,
          "marker", "--max-text-bytes"),
    _case("truncate-utf8", "Truncate", "invalid UTF-8 in the text",
          (bad_utf8(pb.TruncateRequest(tokenizer=O2, text=PLACEHOLDER, max_tokens=1)),), IA,
          "text", UTF8_RULE),
    _case("truncate-garbage", "Truncate", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE),
    # -- Chunk ----------------------------------------------------------------------------
    _case("chunk-unknown", "Chunk", "unknown tokenizer",
          _chunk(tokenizer="no-such-tok", text="a", max_tokens=4), NF, "tokenizer",
          "no tokenizer named"),
    _case("chunk-zero", "Chunk", "max_tokens 0", _chunk(tokenizer=O2, text="a"), IA,
          "max_tokens", "must be >= 1"),
    _case("chunk-overlap", "Chunk", "overlap not below max_tokens",
          _chunk(tokenizer=O2, text="a b", max_tokens=4, overlap=4), IA, "overlap",
          "below max_tokens"),
    _case("chunk-too-small", "Chunk", "max_tokens below one character's tokens",
          _chunk(tokenizer=O2, text="𓀀", max_tokens=1), IA, "max_tokens", "too small"),
    _case("chunk-text-size", "Chunk", "text over --max-text-bytes",
          _chunk(tokenizer=O2, text="é" * 40000, max_tokens=4), RE, "text", "--max-text-bytes"),
    _case("chunk-garbage", "Chunk", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE),
    # -- Report ---------------------------------------------------------------------------
    _case("report-empty", "Report", "no tokenizers", _report(texts=["a"]), IA, "tokenizers",
          "name at least one tokenizer"),
    _case("report-unknown", "Report", "unknown tokenizer",
          _report(tokenizers=[O2, "no-such-tok"]), NF, "tokenizers[1]", "no tokenizer named"),
    _case("report-twice", "Report", "the same tokenizer twice (gpt-4o is o200k_base)",
          _report(tokenizers=[O2, "gpt-4o"]), IA, "tokenizers[1]", "name each tokenizer once"),
    _case("report-many", "Report", "more tokenizers than --max-report-tokenizers",
          _report(tokenizers=[O2] * 9), RE, "tokenizers", "--max-report-tokenizers"),
    _case("report-batch", "Report", "more texts than --max-batch",
          _report(tokenizers=[O2], texts=["a"] * 17), RE, "texts", "--max-batch"),
    _case("report-text-size", "Report", "texts together over --max-text-bytes",
          _report(tokenizers=[O2], texts=["é" * 9000] * 4), RE, "texts", "--max-text-bytes"),
    _case("report-utf8", "Report", "invalid UTF-8 in a text",
          (bad_utf8(pb.ReportRequest(tokenizers=[O2], texts=[PLACEHOLDER])),), IA, "texts[0]",
          UTF8_RULE),
    _case("report-garbage", "Report", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE),
    # -- Lint / Diff ----------------------------------------------------------------------
    _case("lint-unknown", "Lint", "unknown tokenizer", _lint(tokenizer="no-such-tok"), NF,
          "tokenizer", "no tokenizer named"),
    _case("lint-bad-name", "Lint", "malformed tokenizer name", _lint(tokenizer="Bad Name"), IA,
          "tokenizer", NAME_RULE),
    _case("lint-vocab", "Lint", "a vocabulary over --max-lint-vocab",
          _lint(tokenizer=O2), RE, "tokenizer", "--max-lint-vocab"),
    _case("lint-findings", "Lint", "max_findings over --max-lint-findings",
          _lint(tokenizer="gpt2", max_findings=501), RE, "max_findings",
          "--max-lint-findings"),
    _case("lint-depth", "Lint", "unknown depth", _lint(tokenizer="gpt2", depth=99), IA,
          "depth", "is not a lint depth"),
    _case("lint-utf8", "Lint", "invalid UTF-8 in the tokenizer",
          (bad_utf8(pb.LintRequest(tokenizer=PLACEHOLDER)),), IA, "tokenizer", UTF8_RULE),
    _case("lint-garbage", "Lint", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE),
    _case("diff-unknown", "Diff", "unknown tokenizer b", _diff(a=f"{VTOK}@1", b="no-such-tok"),
          NF, "b", "no tokenizer named"),
    _case("diff-unknown-version", "Diff", "unknown version a",
          _diff(a=f"{VTOK}@9", b=f"{VTOK}@2"), NF, "a", "has no version 9"),
    _case("diff-vocab", "Diff", "a vocabulary over --max-lint-vocab",
          _diff(a="gpt2", b=O2), RE, "b", "--max-lint-vocab"),
    _case("diff-top", "Diff", "top over 100", _diff(a=f"{VTOK}@1", b=f"{VTOK}@2", top=101),
          IA, "top", "at most 100"),
    _case("diff-utf8", "Diff", "invalid UTF-8 in a",
          (bad_utf8(pb.DiffRequest(a=PLACEHOLDER, b="gpt2")),), IA, "a", UTF8_RULE),
    _case("diff-garbage", "Diff", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE),
    # -- ListTokenizers / GetTokenizer ----------------------------------------------------
    _case("list-garbage", "ListTokenizers", "bytes that are no protobuf message", (GARBAGE,),
          IA, "request", PROTO_RULE),
    _case("get-unknown", "GetTokenizer", "unknown tokenizer",
          ser(pb.GetTokenizerRequest(tokenizer="nope")), NF, "tokenizer", "no tokenizer named"),
    _case("get-bad-name", "GetTokenizer", "malformed tokenizer name",
          ser(pb.GetTokenizerRequest(tokenizer="UPPER")), IA, "tokenizer", NAME_RULE),
    _case("get-long-name", "GetTokenizer", "7,000-character tokenizer name (echo is cut)",
          ser(pb.GetTokenizerRequest(tokenizer=LONG_NAME)), IA, "tokenizer",
          "(7000 characters)"),
    _case("get-builtin-alias", "GetTokenizer", "alias of a built-in",
          ser(pb.GetTokenizerRequest(tokenizer="o200k_base@stable")), IA, "tokenizer",
          "no versions or aliases"),
    _case("get-unknown-version", "GetTokenizer", "unknown version of a registry tokenizer",
          ser(pb.GetTokenizerRequest(tokenizer=f"{VTOK}@9")), NF, "tokenizer",
          "has no version 9"),
    _case("get-unknown-alias", "GetTokenizer", "unknown alias of a registry tokenizer",
          ser(pb.GetTokenizerRequest(tokenizer=f"{VTOK}@beta")), NF, "tokenizer",
          "has no alias 'beta'"),
    _case("get-utf8", "GetTokenizer", "invalid UTF-8 in the tokenizer",
          (bad_utf8(pb.GetTokenizerRequest(tokenizer=PLACEHOLDER)),), IA, "tokenizer",
          UTF8_RULE),
    _case("get-garbage", "GetTokenizer", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE),
    # -- Train ----------------------------------------------------------------------------
    _case("train-no-token", "Train", "no admin token", _train(pb.TrainConfig(name="t",
          vocab_size=300), b"abc"), "UNAUTHENTICATED", "authorization", "Bearer <token>"),
    _case("train-wrong-token", "Train", "wrong admin token", _train(pb.TrainConfig(name="t",
          vocab_size=300), b"abc"), "PERMISSION_DENIED", "authorization", "is wrong",
          (("authorization", "Bearer wrong"),)),
    _case("train-no-config", "Train", "first message without the config",
          ser(pb.TrainRequest(corpus_chunk=b"abc")), IA, "config", "must carry the config",
          ADMIN),
    _case("train-empty", "Train", "no message at all", (), IA, "config",
          "must carry the config", ADMIN),
    _case("train-bad-name", "Train", "malformed name", _train(pb.TrainConfig(name="Bad Name",
          vocab_size=300), b"abc"), IA, "config.name", NAME_RULE, ADMIN),
    _case("train-builtin-name", "Train", "a built-in's name", _train(pb.TrainConfig(
          name="o200k_base", vocab_size=300), b"abc"), "ALREADY_EXISTS", "config.name",
          "is a built-in encoding", ADMIN),
    _case("train-vocab-small", "Train", "vocab_size below 256 + specials",
          _train(pb.TrainConfig(name="t", vocab_size=256, special_tokens=["<s>"]), b"abc"), IA,
          "config.vocab_size", "below the minimum 257", ADMIN),
    _case("train-bad-model", "Train", "unknown model kind (echo bounded)",
          _train(pb.TrainConfig(name="t", vocab_size=300, model=LONG_NAME), b"abc"), IA,
          "config.model", "is not a tokenizer kind", ADMIN),
    _case("train-bad-wordpiece-score", "Train", "unknown wordpiece_score (echo bounded)",
          _train(pb.TrainConfig(name="t", vocab_size=300, model="wordpiece",
                                wordpiece_score=LONG_NAME), b"abc"), IA,
          "config.wordpiece_score", "is not a WordPiece score; choose one of gain, ratio, count",
          ADMIN),
    _case("train-score-not-wordpiece", "Train", "wordpiece_score for another model",
          _train(pb.TrainConfig(name="t", vocab_size=300, model="word-bpe",
                                wordpiece_score="count"), b"abc"), IA,
          "config.wordpiece_score", "applies to model wordpiece only", ADMIN),
    _case("train-vocab-small-kind", "Train", "vocab_size not above a kind's special tokens",
          _train(pb.TrainConfig(name="t", vocab_size=2, model="wordpiece",
                                special_tokens=["<s>"]), b"abc"), IA,
          "config.vocab_size", "below the minimum 3 for model wordpiece", ADMIN),
    _case("train-vocab-large", "Train", "vocab_size over --max-vocab-size",
          _train(pb.TrainConfig(name="t", vocab_size=100001), b"abc"), RE,
          "config.vocab_size", "--max-vocab-size", ADMIN),
    _case("train-special-twice", "Train", "a special token listed twice",
          _train(pb.TrainConfig(name="t", vocab_size=300, special_tokens=["<s>", "<s>"]),
                 b"abc"), IA, "config.special_tokens[1]", "listed twice", ADMIN),
    _case("train-special-empty", "Train", "an empty special token",
          _train(pb.TrainConfig(name="t", vocab_size=300, special_tokens=[""]), b"abc"), IA,
          "config.special_tokens[0]", "is empty", ADMIN),
    _case("train-bad-pattern", "Train", "pattern that does not compile",
          _train(pb.TrainConfig(name="t", vocab_size=300, pattern="(unclosed"), b"abc"), IA,
          "config.pattern", "does not compile", ADMIN),
    _case("train-empty-match", "Train", "pattern that matches the empty string",
          _train(pb.TrainConfig(name="t", vocab_size=300, pattern="a*"), b"abc"), IA,
          "config.pattern", "matches the empty string", ADMIN),
    _case("train-abs-path", "Train", "absolute corpus_path",
          _train(pb.TrainConfig(name="t", vocab_size=300, corpus_path="/etc/passwd")), IA,
          "config.corpus_path", "must be relative", ADMIN),
    _case("train-escape-path", "Train", "corpus_path leading out of --train-dir",
          _train(pb.TrainConfig(name="t", vocab_size=300, corpus_path="../../x.txt")), IA,
          "config.corpus_path", "leads outside the train dir", ADMIN),
    _case("train-missing-path", "Train", "corpus_path that is no file",
          _train(pb.TrainConfig(name="t", vocab_size=300, corpus_path="missing.txt")), IA,
          "config.corpus_path", "is not a file", ADMIN),
    _case("train-long-path", "Train", "7,000-character corpus_path (echo is cut)",
          _train(pb.TrainConfig(name="t", vocab_size=300, corpus_path=LONG_NAME)), IA,
          "config.corpus_path", "(7000 characters)", ADMIN),
    _case("train-path-and-chunks", "Train", "corpus_path and streamed chunks",
          _train(pb.TrainConfig(name="t", vocab_size=300, corpus_path="corpus.txt"), b"abc"),
          IA, "corpus_chunk", "do not also stream", ADMIN),
    _case("train-empty-corpus", "Train", "empty streamed corpus",
          _train(pb.TrainConfig(name="t", vocab_size=300)), IA, "corpus_chunk",
          "the corpus is empty", ADMIN),
    _case("train-corpus-utf8", "Train", "corpus that is not UTF-8",
          _train(pb.TrainConfig(name="t", vocab_size=300), b"fine ", b"bad \xff"), IA,
          "corpus_chunk", "not valid UTF-8 at byte 9", ADMIN),
    _case("train-corpus-size", "Train", "corpus over --max-corpus-bytes",
          _train(pb.TrainConfig(name="t", vocab_size=300), b"a" * 40000, b"b" * 40000), RE,
          "corpus_chunk", "--max-corpus-bytes", ADMIN),
    _case("train-config-twice", "Train", "a second config message",
          _train(pb.TrainConfig(name="t", vocab_size=300), b"abc") + ser(pb.TrainRequest(
              config=pb.TrainConfig(name="t"))), IA, "config", "only the first", ADMIN),
    _case("train-utf8-name", "Train", "invalid UTF-8 in config.name",
          (bad_utf8(pb.TrainRequest(config=pb.TrainConfig(name=PLACEHOLDER, vocab_size=300))),),
          IA, "config.name", UTF8_RULE, ADMIN),
    _case("train-garbage", "Train", "bytes that are no protobuf message", (GARBAGE,), IA,
          "request", PROTO_RULE, ADMIN),
    # -- training jobs --------------------------------------------------------------------
    _case("job-get-bad-id", "GetTrainJob", "malformed job id",
          ser(pb.GetTrainJobRequest(job_id="../x")), IA, "job_id", "32 lowercase hex digits"),
    _case("job-get-unknown", "GetTrainJob", "unknown job id",
          ser(pb.GetTrainJobRequest(job_id=UNKNOWN_JOB)), NF, "job_id", "see ListTrainJobs",
          error=E.UnknownJob),
    _case("job-get-long-id", "GetTrainJob", "7,000-character job id (echo is cut)",
          ser(pb.GetTrainJobRequest(job_id=LONG_NAME)), IA, "job_id", "(7000 characters)"),
    _case("job-get-utf8", "GetTrainJob", "invalid UTF-8 in job_id",
          (bad_utf8(pb.GetTrainJobRequest(job_id=PLACEHOLDER)),), IA, "job_id", UTF8_RULE),
    _case("job-get-garbage", "GetTrainJob", "bytes that are no protobuf message", (GARBAGE,),
          IA, "request", PROTO_RULE),
    _case("job-watch-bad-id", "WatchTrainJob", "malformed job id",
          ser(pb.WatchTrainJobRequest(job_id="")), IA, "job_id", "32 lowercase hex digits"),
    _case("job-watch-unknown", "WatchTrainJob", "unknown job id",
          ser(pb.WatchTrainJobRequest(job_id=UNKNOWN_JOB)), NF, "job_id", "see ListTrainJobs",
          error=E.UnknownJob),
    _case("job-watch-garbage", "WatchTrainJob", "bytes that are no protobuf message",
          (GARBAGE,), IA, "request", PROTO_RULE),
    _case("job-cancel-no-token", "CancelTrainJob", "no admin token",
          ser(pb.CancelTrainJobRequest(job_id=UNKNOWN_JOB)), "UNAUTHENTICATED",
          "authorization", "Bearer <token>"),
    _case("job-cancel-bad-id", "CancelTrainJob", "malformed job id",
          ser(pb.CancelTrainJobRequest(job_id="ABC")), IA, "job_id", "32 lowercase hex digits",
          ADMIN),
    _case("job-cancel-unknown", "CancelTrainJob", "unknown job id",
          ser(pb.CancelTrainJobRequest(job_id=UNKNOWN_JOB)), NF, "job_id", "see ListTrainJobs",
          ADMIN, error=E.UnknownJob),
    _case("job-cancel-garbage", "CancelTrainJob", "bytes that are no protobuf message",
          (GARBAGE,), IA, "request", PROTO_RULE, ADMIN),
    _case("job-list-garbage", "ListTrainJobs", "bytes that are no protobuf message",
          (GARBAGE,), IA, "request", PROTO_RULE),
)
