"""HTTP keep-alive: every request on one connection is answered at once, not after a stall.

Without TCP_NODELAY on the server's accepted sockets, a response written in two parts waits
for the client's delayed ACK (~40 ms on Linux) on every request after the first on a
connection; an SDK reusing its connection would then top out near 25 requests a second.
"""

from __future__ import annotations

import http.client
import json
import socket
import statistics
import time
from urllib.parse import urlsplit

from http_api import HttpServed

from tokend.server.web.serve import listen_socket

REQUESTS = 20
# The stall is ~40 ms per request; an answer here takes ~1 ms (generous for a loaded machine).
MEDIAN_MS = 15.0


class TestKeepAlive:
    def test_sequential_requests_on_one_connection_do_not_stall(
        self, http_server: HttpServed
    ) -> None:
        """20 POST /count on one keep-alive connection: the median answer is far below the
        ~40 ms of a Nagle / delayed-ACK stall, and the connection is the same throughout."""
        address = urlsplit(http_server.base)
        connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
        body = json.dumps({"tokenizer": "o200k_base", "texts": ["hello keep-alive"]}).encode()
        headers = {"content-type": "application/json"}
        times: list[float] = []
        try:
            for i in range(REQUESTS + 1):
                start = time.perf_counter()
                connection.request("POST", "/count", body=body, headers=headers)
                response = connection.getresponse()
                answer = json.loads(response.read())
                elapsed = (time.perf_counter() - start) * 1000
                assert response.status == 200, answer
                assert answer["total"] > 0
                if i == 0:
                    sock = connection.sock  # the first request opened it (and loaded o200k)
                    continue
                assert connection.sock is sock, "the server closed the keep-alive connection"
                times.append(elapsed)
        finally:
            connection.close()
        assert statistics.median(times) < MEDIAN_MS, [round(t, 1) for t in times]

    def test_accepted_sockets_are_tcp(self) -> None:
        """The listening socket names its protocol, so asyncio sets TCP_NODELAY on each
        connection it accepts (it does so only for sockets whose proto is IPPROTO_TCP)."""
        sock = listen_socket("127.0.0.1", 0, reuse_port=False)
        try:
            assert sock.proto == socket.IPPROTO_TCP
            client = socket.create_connection(sock.getsockname()[:2])
            sock.setblocking(True)
            accepted, _ = sock.accept()
            with client, accepted:
                assert accepted.proto == socket.IPPROTO_TCP
        finally:
            sock.close()
