"""TLS and mutual TLS: the client's ``TlsConfig`` against ``tokend serve --tls-*``.

A throwaway CA signs a server certificate (for 127.0.0.1 and "tokend.test") and a client
certificate; the server requires client certificates from that CA.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tokend.client import AsyncClient, Client, TlsConfig
from tokend.core import errors as core


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    san: list[x509.GeneralName] | None = None,
    usage: ExtendedKeyUsageOID | None = None,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name, issuer_key = issuer if issuer else (name, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    base = tmp_path_factory.mktemp("pki")
    ca_key, other_key = _key(), _key()
    ca = _cert("tokend test CA", ca_key, None, ca=True)
    other_ca = _cert("some other CA", other_key, None, ca=True)
    server_key, client_key = _key(), _key()
    server = _cert(
        "tokend.test",
        server_key,
        (ca.subject, ca_key),
        san=[x509.DNSName("tokend.test"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
    )
    client = _cert(
        "client", client_key, (ca.subject, ca_key), usage=ExtendedKeyUsageOID.CLIENT_AUTH
    )
    files = {
        "ca": ca.public_bytes(serialization.Encoding.PEM),
        "other_ca": other_ca.public_bytes(serialization.Encoding.PEM),
        "server_cert": server.public_bytes(serialization.Encoding.PEM),
        "server_key": _pem_key(server_key),
        "client_cert": client.public_bytes(serialization.Encoding.PEM),
        "client_key": _pem_key(client_key),
    }
    for name, data in files.items():
        (base / f"{name}.pem").write_bytes(data)
    return Pki(**{name: base / f"{name}.pem" for name in files})


@pytest.fixture(scope="module")
def mtls_server(
    pki: Pki,
    tmp_path_factory: pytest.TempPathFactory,
    tokend_launcher: Callable[..., AbstractContextManager[Any]],
) -> Iterator[Any]:
    good = TlsConfig.from_files(pki.ca, pki.client_cert, pki.client_key)
    with tokend_launcher(
        tmp_path_factory.mktemp("tls-server"),
        "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
        "--tls-client-ca", str(pki.ca),
        probe=lambda target: Client(target, timeout=2, max_attempts=1, tls=good),
    ) as server:  # fmt: skip
        yield server


class TestTls:
    def test_mutual_tls_round_trip(self, mtls_server: Any, pki: Pki) -> None:
        """CA + client certificate: calls work, sync and async."""
        tls = TlsConfig.from_files(pki.ca, pki.client_cert, pki.client_key)
        with Client(mtls_server.target, timeout=10, tls=tls) as client:
            ids = client.encode("o200k_base", "over TLS").ids
            assert client.decode("o200k_base", ids).text == "over TLS"

        import asyncio

        async def via_aio() -> int:
            async with AsyncClient(mtls_server.target, timeout=10, tls=tls) as aclient:
                return (await aclient.count_tokens("o200k_base", "over TLS")).total

        assert asyncio.run(via_aio()) == len(ids)

    def test_server_name_override(self, mtls_server: Any, pki: Pki) -> None:
        """server_name checks the certificate against another name than the target's host."""
        tls = TlsConfig.from_files(
            pki.ca, pki.client_cert, pki.client_key, server_name="tokend.test"
        )
        with Client(mtls_server.target, timeout=10, tls=tls) as client:
            assert client.count_tokens("o200k_base", "x").total == 1

    def test_refusals(self, mtls_server: Any, pki: Pki) -> None:
        """No client cert, an untrusted server CA, or plaintext: the call fails UNAVAILABLE."""
        attempts = {
            "no client certificate": TlsConfig.from_files(pki.ca),
            "server CA not trusted": TlsConfig.from_files(
                pki.other_ca, pki.client_cert, pki.client_key
            ),
            "plaintext": None,
        }
        for why, tls in attempts.items():
            with (
                Client(mtls_server.target, timeout=5, tls=tls, max_attempts=1) as client,
                pytest.raises(core.Unavailable, match="UNAVAILABLE"),
            ):
                client.count_tokens("o200k_base", f"{why}: must not be answered")

    def test_client_cert_needs_its_key(self, pki: Pki) -> None:
        with pytest.raises(ValueError, match="client_key"):
            TlsConfig.from_files(pki.ca, pki.client_cert)
