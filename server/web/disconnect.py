"""The ``CallContext`` of an HTTP call: no deadline, cancelled once the client disconnects.

A call handed to the handler pool can run for seconds (a large batch, a slow tokenizer); when
its client hangs up meanwhile, the work should stop as a cancelled gRPC call's does, between
items (``server/app/context.check_alive``), instead of finishing for nobody.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from starlette.types import Receive


class HttpCall:
    """An HTTP call in flight, told by :func:`watch` when its client went away."""

    __slots__ = ("_gone",)

    def __init__(self) -> None:
        self._gone = threading.Event()

    def time_remaining(self) -> float | None:
        return None  # HTTP carries no deadline; the limits bound the work

    def cancelled(self) -> bool:
        return self._gone.is_set()

    def add_done_callback(self, callback: Callable[[], None]) -> bool:
        return False

    def disconnected(self) -> None:
        self._gone.set()


async def watch(receive: Receive, call: HttpCall) -> None:
    """Wait for the ASGI ``http.disconnect`` of a request whose body was read, then mark
    ``call`` cancelled. Cancel this task once the call ends (the server also sends a
    disconnect after the response, which must not count)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            call.disconnected()
            return

