"""TLS and mutual TLS with certificates made in the test (a throwaway CA signs both ends)."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from tls_certs import Certs

from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc


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
