"""How the client's channel is built: retry service config, load balancing, limits, TLS, auth.

Retries are gRPC's own (the ``retryPolicy`` of the channel's service config), not a loop of
ours: gRPC only retries a call that the server never started answering, on UNAVAILABLE.
Load balancing too is gRPC's (the service config's ``loadBalancingConfig``): with
``load_balancing="round_robin"`` and a target that resolves to several addresses
(``dns:///tokend-headless.ns.svc:50051``, ``ipv4:10.0.0.1:50051,10.0.0.2:50051``) the channel
keeps a connection to each and spreads the calls over them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

SERVICE_NAME = "tokend.v1.TokenizerService"
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# The load-balancing policies every gRPC implementation ships (pick_first is gRPC's default:
# one connection to the first address that answers).
LB_POLICIES = ("pick_first", "round_robin")


def service_config(
    max_attempts: int = DEFAULT_MAX_ATTEMPTS, *, load_balancing: str | None = None
) -> dict[str, Any]:
    """The channel's service config: retry every method on UNAVAILABLE, except Train.

    Train streams a whole corpus and starts a job, so it is left to the caller to retry
    (the most specific ``name`` entry wins in gRPC's method-config matching).
    ``load_balancing`` names the policy (``LB_POLICIES``); None keeps gRPC's default.

    >>> service_config(3)["methodConfig"][0]["retryPolicy"]["retryableStatusCodes"]
    ['UNAVAILABLE']
    >>> service_config(3, load_balancing="round_robin")["loadBalancingConfig"]
    [{'round_robin': {}}]
    """
    if not 1 <= max_attempts <= 5:  # gRPC caps maxAttempts at 5
        raise ValueError(f"max_attempts must be in [1, 5] (gRPC's cap), got {max_attempts}")
    if load_balancing is not None and load_balancing not in LB_POLICIES:
        raise ValueError(
            f"load_balancing must be one of {', '.join(LB_POLICIES)} or None, "
            f"got {str(load_balancing)[:100]!r}"
        )
    retry = {
        "maxAttempts": max_attempts,
        "initialBackoff": "0.05s",
        "maxBackoff": "2s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"],
    }
    config: dict[str, Any] = {"methodConfig": [{"name": [{"service": SERVICE_NAME}]}]}
    if max_attempts > 1:
        config["methodConfig"][0]["retryPolicy"] = retry
    config["methodConfig"].append({"name": [{"service": SERVICE_NAME, "method": "Train"}]})
    if load_balancing is not None:
        config["loadBalancingConfig"] = [{load_balancing: {}}]
    return config


def channel_options(
    *,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    server_name: str | None = None,
    load_balancing: str | None = None,
    extra: Sequence[tuple[str, Any]] = (),
) -> list[tuple[str, Any]]:
    """Channel arguments: retries enabled with our service config, generous message limits."""
    config = service_config(max_attempts, load_balancing=load_balancing)
    options: list[tuple[str, Any]] = [
        ("grpc.enable_retries", 1 if max_attempts > 1 else 0),
        ("grpc.service_config", json.dumps(config)),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
    ]
    if server_name:
        options.append(("grpc.ssl_target_name_override", server_name))
    options.extend(extra)
    return options


@dataclass(frozen=True, slots=True)
class TlsConfig:
    """TLS material (PEM bytes): the CA to trust, and a client certificate for mutual TLS.

    ``root_certificates=None`` trusts the system roots. ``server_name`` overrides the name the
    server certificate is checked against (e.g. connecting by IP to a cert for "tokend").
    """

    root_certificates: bytes | None = None
    certificate_chain: bytes | None = None
    private_key: bytes | None = None
    server_name: str | None = None

    @classmethod
    def from_files(
        cls,
        root_cert: str | Path | None = None,
        client_cert: str | Path | None = None,
        client_key: str | Path | None = None,
        *,
        server_name: str | None = None,
    ) -> TlsConfig:
        """Read the PEM files; a client cert needs its key (and the other way round)."""
        if (client_cert is None) != (client_key is None):
            raise ValueError("mutual TLS needs both client_cert and client_key")
        return cls(
            root_certificates=_read(root_cert),
            certificate_chain=_read(client_cert),
            private_key=_read(client_key),
            server_name=server_name,
        )

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.root_certificates,
            private_key=self.private_key,
            certificate_chain=self.certificate_chain,
        )


def _read(path: str | Path | None) -> bytes | None:
    return None if path is None else Path(path).read_bytes()


def resolve_tls(tls: bool | TlsConfig | None) -> TlsConfig | None:
    """``tls=True`` means TLS with the system roots; False/None a plaintext channel."""
    if tls is True:
        return TlsConfig()
    if tls is False or tls is None:
        return None
    return tls


def auth_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    """Per-call metadata: ``authorization: Bearer <token>`` when a token is set."""
    if token is None:
        return ()
    if not token or any(c.isspace() for c in token):
        raise ValueError("token must be a non-empty string without whitespace")
    return (("authorization", f"Bearer {token}"),)


@dataclass(frozen=True, slots=True)
class ChannelSettings:
    """What both clients derive from their constructor arguments before opening a channel."""

    options: list[tuple[str, Any]]
    credentials: grpc.ChannelCredentials | None  # None: a plaintext channel
    metadata: tuple[tuple[str, str], ...]


def channel_settings(
    *,
    tls: bool | TlsConfig | None,
    token: str | None,
    max_attempts: int,
    max_message_bytes: int,
    extra_options: Sequence[tuple[str, Any]],
    load_balancing: str | None = None,
) -> ChannelSettings:
    """The sync and async clients' shared set-up: per-call metadata, channel options, TLS."""
    metadata = auth_metadata(token)
    tls_config = resolve_tls(tls)
    options = channel_options(
        max_attempts=max_attempts,
        max_message_bytes=max_message_bytes,
        server_name=tls_config.server_name if tls_config else None,
        load_balancing=load_balancing,
        extra=extra_options,
    )
    credentials = None if tls_config is None else tls_config.credentials()
    return ChannelSettings(options, credentials, metadata)
