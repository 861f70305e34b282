"""Every row of the vendors' bad-input catalogue (tests/support/vendor_bad_inputs.py), sent to a
real server: the status, the vendor's own error shape (the one its SDK reads), the vendor's
field named, the rule stated, a bounded message; the server still answers after."""

from __future__ import annotations

from typing import Any

import pytest
from http_api import HttpServed, call
from vendor_bad_inputs import VENDOR_CASES, VendorCase

from tokend.server.web.dispatch import handler_label

MAX_MESSAGE = 1200  # as tests/server/test_bad_inputs.py: quoted values are cut short
ANTHROPIC_TYPES = {400: "invalid_request_error", 404: "not_found_error",
                   413: "request_too_large"}
GRPC_NAMES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 413: "RESOURCE_EXHAUSTED"}


def named(case: VendorCase, body: Any) -> tuple[str, str]:
    """(the field the answer names, its message), checking the vendor's shape on the way."""
    if case.vendor == "anthropic":
        assert set(body) == {"type", "error"} and body["type"] == "error"
        assert set(body["error"]) == {"type", "message"}
        assert body["error"]["type"] == ANTHROPIC_TYPES[case.status]
        message = body["error"]["message"]
        return message.split(": ", 1)[0], message
    error = body["error"]
    if case.vendor == "openai":
        assert set(error) == {"message", "type", "param", "code"}
        assert error["type"] == "invalid_request_error"
        assert error["code"] == GRPC_NAMES[case.status].lower()
        assert error["message"].startswith(f"{error['param']}: ")
        return error["param"], error["message"]
    assert error["code"] == case.status and error["status"] == GRPC_NAMES[case.status]
    (violation,) = error["details"][0]["fieldViolations"]
    assert error["details"][0]["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert error["message"].startswith(f"{violation['field']}: ")
    return violation["field"], error["message"]


@pytest.mark.parametrize("case", VENDOR_CASES, ids=[c.id for c in VENDOR_CASES])
def test_vendor_refusal(http_server: HttpServed, case: VendorCase) -> None:
    answer = call(http_server.base, "POST", case.path, case.body,
                  headers={"content-type": case.content_type})
    assert answer.status == case.status, answer.body
    field, message = named(case, answer.body)
    assert field == case.field, message
    assert case.rule in message, message
    assert len(message) <= MAX_MESSAGE
    assert answer.headers.get("x-request-id")


def test_every_vendor_and_status_is_covered() -> None:
    assert {c.vendor for c in VENDOR_CASES} == {"anthropic", "openai", "gemini"}
    assert {c.status for c in VENDOR_CASES} == {400, 404, 413}
    assert len({c.id for c in VENDOR_CASES}) == len(VENDOR_CASES)


def test_the_server_still_counts_after_the_refusals(http_server: HttpServed) -> None:
    for case in VENDOR_CASES:
        call(http_server.base, "POST", case.path, case.body,
             headers={"content-type": case.content_type})
    still = call(http_server.base, "POST", "/v1/messages/count_tokens",
                 {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "ok"}]})
    assert still.status == 200 and still.body["input_tokens"] > 0


def test_the_vendor_paths_have_fixed_metric_labels() -> None:
    """The metrics' ``handler`` label of a vendor path is one of three, whatever the model."""
    assert handler_label("/v1/messages/count_tokens") == "anthropic_count_tokens"
    assert handler_label("/v1/responses/input_tokens") == "openai_input_tokens"
    assert {handler_label(f"/{v}/models/{m}:countTokens") for v in ("v1", "v1beta")
            for m in ("gemini-2.5-flash", "x" * 300)} == {"gemini_count_tokens"}
    assert handler_label("/v1/models/gemini:embedContent") == "other"
