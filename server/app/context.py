"""What the application layer knows of a call in flight: its deadline and whether it was cancelled.

Both transports implement ``CallContext``: the gRPC adapter over grpcio's ServicerContext
(``server/grpc_context.py``), the HTTP adapter with no deadline (``server/web/``). Long calls
check it between items, so a caller that gave up stops costing CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tokend.core.errors import Cancelled, DeadlineExceeded


class CallContext(Protocol):
    """A call's deadline and cancellation, as the transport sees them."""

    def time_remaining(self) -> float | None:
        """Seconds left before the caller's deadline, or None when it set none."""

    def cancelled(self) -> bool:
        """True once the caller went away (cancelled, disconnected, deadline passed)."""

    def add_done_callback(self, callback: Callable[[], None]) -> bool:
        """Run ``callback`` when the call ends (e.g. to stop a helper thread); False when the
        transport cannot tell (the caller then cleans up itself, as it always must)."""


class Unbounded:
    """A call with no deadline whose caller is not watched: an HTTP request (bounded by the
    limits anyway) or a call made in-process."""

    def time_remaining(self) -> float | None:
        return None

    def cancelled(self) -> bool:
        return False

    def add_done_callback(self, callback: Callable[[], None]) -> bool:
        return False


UNBOUNDED = Unbounded()


def check_alive(context: CallContext) -> None:
    """Stop work between items once the caller's deadline passed or the caller went away."""
    remaining = context.time_remaining()
    if remaining is not None and remaining <= 0:
        raise DeadlineExceeded("deadline exceeded before the request was fully processed")
    if context.cancelled():
        raise Cancelled("the client cancelled the call")
