"""The refusals of a client's behaviour, not of its request's bytes: floods, idle and stalled
connections, hang-ups. The bad-input catalogue (``bad_inputs.py``) sends one request and reads
one status; these need a condition held over time, so each row names the test that brings it
about and checks it against the row (``row(id)``). ``scripts/gen_status_table.py`` renders them
into docs/service.md under the bad-input table; ``tests/server/test_conditions.py`` checks that
every row's test exists and uses its row.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Condition:
    """One way a client can hold or flood the server, and what it gets."""

    id: str
    transport: str  # "gRPC <RPC>" or "HTTP"
    what: str  # the condition, as the table states it
    answer: str  # a gRPC status name, an HTTP status number, or what happens to the connection
    flag: str  # the limit's flag (named by the error, counted in tokend_limit_hits_total)
    test: str  # tests/server/<file>.py::<Class>::<test> that brings it about


CONDITIONS: tuple[Condition, ...] = (
    Condition("max-streams", "gRPC EncodeStream",
              "one EncodeStream more than --max-streams open in the worker",
              "RESOURCE_EXHAUSTED", "--max-streams",
              "test_idle_streams.py::TestHalfOpenStreams::"
              "test_probes_answer_while_48_streams_stay_half_open"),
    Condition("stream-idle", "gRPC EncodeStream",
              "an EncodeStream whose client sends nothing for --stream-idle-seconds",
              "RESOURCE_EXHAUSTED", "--stream-idle-seconds",
              "test_idle_streams.py::TestHalfOpenStreams::"
              "test_probes_answer_while_48_streams_stay_half_open"),
    Condition("train-idle", "gRPC Train",
              "a Train upload that stops sending (its job is removed, its slot given back)",
              "RESOURCE_EXHAUSTED", "--stream-idle-seconds",
              "test_idle_streams.py::TestStalledUpload::test_a_stalled_upload_gives_its_job_slot_back"),
    Condition("http-head", "HTTP",
              "a connection whose request head is not complete within --http-head-seconds "
              "(a slow-head attack; also between keep-alive requests)",
              "connection closed", "--http-head-seconds",
              "test_http_guards.py::TestStalledHeads::"
              "test_600_stalled_heads_are_held_probes_answer_and_they_are_closed"),
    Condition("http-max-connections", "HTTP",
              "one connection more than --http-max-connections open to the worker",
              "connection closed at once", "--http-max-connections",
              "test_http_guards.py::TestConnectionLimits::"
              "test_connections_over_the_cap_are_closed_at_once"),
    Condition("http-body", "HTTP",
              "a request body that does not arrive within --http-body-seconds",
              "413", "--http-body-seconds",
              "test_http_guards.py::TestConnectionLimits::test_a_stalled_body_is_413_naming_the_flag"),
    Condition("http-hang-up", "HTTP",
              "the client hangs up while its call runs on the handler pool (the work stops "
              "between items)",
              "499 (logged)", "",
              "test_http_disconnect.py::TestClientGone::test_count_stops_when_its_client_hangs_up"),
    Condition("http-hang-up-body", "HTTP",
              "the client hangs up before its request body arrived",
              "499 (logged)", "",
              "test_http_disconnect.py::TestClientGone::"
              "test_a_client_gone_before_its_body_arrived_is_499_not_500"),
)

BY_ID = {condition.id: condition for condition in CONDITIONS}


def row(condition_id: str) -> Condition:
    """The row a test brings about (KeyError for an id the table lacks)."""
    return BY_ID[condition_id]
