"""TLS and mutual TLS with certificates made in the test (a throwaway CA signs both ends)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class Certs:
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate."""

    def __init__(self, folder: Path) -> None:
        now = dt.datetime.now(dt.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = (x509.CertificateBuilder().subject_name(_name("tokend test CA"))
              .issuer_name(_name("tokend test CA")).public_key(ca_key.public_key())
              .serial_number(x509.random_serial_number())
              .not_valid_before(now - dt.timedelta(minutes=5))
              .not_valid_after(now + dt.timedelta(days=1))
              .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
              .sign(ca_key, hashes.SHA256()))
        self.folder = folder
        self.ca = folder / "ca.pem"
        self.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        self.server_cert, self.server_key = self._leaf("server", ca, ca_key, server=True)
        self.client_cert, self.client_key = self._leaf("client", ca, ca_key, server=False)

    def _leaf(self, label: str, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey,
              *, server: bool) -> tuple[Path, Path]:
        now = dt.datetime.now(dt.UTC)
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(_name(f"tokend test {label}"))
                   .issuer_name(ca.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5))
                   .not_valid_after(now + dt.timedelta(days=1)))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        cert_path, key_path = self.folder / f"{label}.pem", self.folder / f"{label}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(_pem_key(key))
        return cert_path, key_path


@pytest.fixture
def certs(tmp_path: Path) -> Certs:
    return Certs(tmp_path)


def encode_over(channel: grpc.Channel) -> str:
    stub = pb_grpc.TokenizerServiceStub(channel)
    return stub.Encode(pb.EncodeRequest(tokenizer="gpt2", texts=["tls"]), timeout=10).tokenizer


class TestTls:
    def test_tls_serves_verified_clients_only(self, fresh_server, certs: Certs) -> None:
        """With --tls-cert/--tls-key a client trusting the CA gets answers; plaintext fails."""
        server = fresh_server(tls_cert=certs.server_cert, tls_key=certs.server_key)
        creds = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
        with grpc.secure_channel(server.target, creds) as channel:
            assert encode_over(channel) == "gpt2"
        with grpc.insecure_channel(server.target) as channel, \
                pytest.raises(grpc.RpcError) as info:
            encode_over(channel)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE

    def test_mutual_tls_requires_a_client_certificate(self, fresh_server, certs: Certs) -> None:
        """With --tls-client-ca only clients presenting a certificate from that CA get in."""
        server = fresh_server(tls_cert=certs.server_cert, tls_key=certs.server_key,
                              tls_client_ca=certs.ca)
        anonymous = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
        with grpc.secure_channel(server.target, anonymous) as channel, \
                pytest.raises(grpc.RpcError) as info:
            encode_over(channel)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        mutual = grpc.ssl_channel_credentials(
            root_certificates=certs.ca.read_bytes(),
            private_key=certs.client_key.read_bytes(),
            certificate_chain=certs.client_cert.read_bytes())
        with grpc.secure_channel(server.target, mutual) as channel:
            assert encode_over(channel) == "gpt2"
