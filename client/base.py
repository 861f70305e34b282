"""What the sync and async clients share besides their calls: options, deadline, metadata.

Each client subclasses ``ClientBase`` and only opens its own kind of channel (``_connect``);
the requests and results are shared through ``requests.py`` (see its docstring for the design).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokend.client.channel import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_MESSAGE_BYTES,
    ChannelSettings,
    TlsConfig,
    channel_settings,
)

DEFAULT_TIMEOUT = 30.0


class ClientBase:
    """The constructor both clients share; see ``Client`` for what each option means."""

    def __init__(
        self,
        target: str,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        tls: bool | TlsConfig | None = None,
        token: str | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        options: Sequence[tuple[str, Any]] = (),
        load_balancing: str | None = None,
    ) -> None:
        self.target = target
        self.timeout = timeout
        settings = channel_settings(
            tls=tls,
            token=token,
            max_attempts=max_attempts,
            max_message_bytes=max_message_bytes,
            extra_options=options,
            load_balancing=load_balancing,
        )
        self._metadata = settings.metadata
        self._connect(target, settings)

    def _connect(self, target: str, settings: ChannelSettings) -> None:
        """Open the channel and its stub (``grpc`` or ``grpc.aio``)."""
        raise NotImplementedError

    def _deadline(self, timeout: float | None) -> float | None:
        """A call's deadline: its own ``timeout``, else the client's default."""
        return self.timeout if timeout is None else timeout
