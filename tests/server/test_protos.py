"""The gRPC adapter's conversions that skip default fields give protobuf's message exactly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokend.core.counting.breakdown import Breakdown
from tokend.server.app.counting import Counted
from tokend.server.protos import count_response
from tokend.v1 import tokenizer_pb2 as pb

SMALL = st.integers(min_value=0, max_value=2**40)
COUNTED = st.builds(
    Counted,
    tokenizer=st.sampled_from(["", "o200k_base", "mytok@7"]),
    counts=st.lists(SMALL, max_size=4),
    messages_count=SMALL | st.just(0),
    total=SMALL,
    fits=st.booleans(),
    remaining=st.integers(min_value=-(2**62), max_value=2**62) | st.just(0),
    exact=st.booleans(),
    estimate_reason=st.sampled_from(["", "closed model"]),
    chat_rule=st.sampled_from(["", "openai", "harmony"]),
    tools_count=SMALL | st.just(0),
    images_count=SMALL | st.just(0),
    model=st.sampled_from(["", "gpt-4o"]),
    context_window=SMALL | st.just(0),
    max_output_tokens=SMALL | st.just(0),
    breakdown=st.builds(Breakdown, system=SMALL | st.just(0), messages=SMALL | st.just(0),
                        tools=SMALL | st.just(0), images=SMALL | st.just(0),
                        framing=st.integers(min_value=-1000, max_value=1000),
                        texts=SMALL | st.just(0)),
)


class TestCountResponse:
    @given(COUNTED)
    def test_same_bytes_as_every_field_set(self, result: Counted) -> None:
        """Setting only the non-default fields writes what passing all of them writes."""
        full = pb.CountTokensResponse(
            tokenizer=result.tokenizer, counts=result.counts,
            messages_count=result.messages_count, total=result.total, fits=result.fits,
            remaining=result.remaining, exact=result.exact,
            estimate_reason=result.estimate_reason, chat_rule=result.chat_rule,
            tools_count=result.tools_count, images_count=result.images_count,
            model=result.model, context_window=result.context_window,
            max_output_tokens=result.max_output_tokens,
            breakdown=pb.CountBreakdown(**result.breakdown.as_dict()),
        )
        assert count_response(result) == full
        assert count_response(result).SerializeToString() == full.SerializeToString()
