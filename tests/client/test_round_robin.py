"""Client-side round robin: one channel, two real servers on two loopback addresses.

The headless Service of deploy/kubernetes/ gives a client every pod's address; with the
``round_robin`` policy (the service config's ``loadBalancingConfig``) the channel connects to
each and spreads its calls. Here the two "pods" are two ``tokend serve`` processes on
127.0.0.1 and 127.0.0.2, the target names both (``ipv4:A:P,B:Q``, what a DNS answer with two
records becomes), and each server's own ``grpc_server_handled_total`` on /metrics says how many
calls reached it. gRPC's default policy (pick_first) on the same target sends everything to one
server, which shows the counts can tell the two apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from node_client import run_node

from tokend.client import AsyncClient, Client

HOSTS = ("127.0.0.1", "127.0.0.2")
CALLS = 40
# round_robin only picks connections that are ready; until the second one is, calls go to the
# first. How long to wait for both to have answered before counting, on a loaded machine.
SPREAD_SECONDS = 20.0


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


class Backend:
    """One server and a way to read how many CountTokens calls it has answered."""

    def __init__(self, server: Any, metrics: str) -> None:
        self.server = server
        self.metrics = metrics

    def handled(self) -> int:
        with urllib.request.urlopen(self.metrics, timeout=10) as reply:
            text = reply.read().decode()
        pattern = r'^grpc_server_handled_total\{([^}]*)\} (\S+)$'
        return sum(
            int(float(value))
            for labels, value in re.findall(pattern, text, flags=re.MULTILINE)
            if 'grpc_method="CountTokens"' in labels
        )


@pytest.fixture(scope="module")
def backends(
    tokend_launcher: Callable[..., contextlib.AbstractContextManager[Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[list[Backend]]:
    """Two servers, on 127.0.0.1 and 127.0.0.2, each with its own /metrics."""
    with contextlib.ExitStack() as stack:
        out: list[Backend] = []
        for host in HOSTS:
            metrics_port = free_port(host)
            base: Path = tmp_path_factory.mktemp(f"rr-{host}")
            server = stack.enter_context(
                tokend_launcher(base, "--metrics-port", str(metrics_port), host=host)
            )
            out.append(Backend(server, f"http://{host}:{metrics_port}/metrics"))
        yield out


def both(backends: list[Backend]) -> str:
    """The target a DNS answer with both addresses amounts to."""
    return "ipv4:" + ",".join(b.server.target for b in backends)


def until_both_answer(backends: list[Backend], call: Callable[[], object]) -> None:
    """Call until every backend has answered one of this channel's calls (both connected)."""
    before = [b.handled() for b in backends]
    deadline = time.monotonic() + SPREAD_SECONDS
    while time.monotonic() < deadline:
        call()
        if all(b.handled() > n for b, n in zip(backends, before, strict=True)):
            return
        time.sleep(0.05)
    raise AssertionError(f"one channel did not reach both servers in {SPREAD_SECONDS} s")


def spread(backends: list[Backend], make_calls: Callable[[], None]) -> list[int]:
    """How many of the calls made by ``make_calls`` reached each backend."""
    before = [b.handled() for b in backends]
    make_calls()
    return [b.handled() - n for b, n in zip(backends, before, strict=True)]


class TestRoundRobin:
    def test_python_client_reaches_both_servers(self, backends: list[Backend]) -> None:
        """round_robin: every call lands somewhere, and each server takes a fair share."""

        with Client(both(backends), load_balancing="round_robin") as client:
            until_both_answer(backends, lambda: client.count_tokens("o200k_base", "warm-up"))

            def calls() -> None:
                for _ in range(CALLS):
                    assert client.count_tokens("o200k_base", "hello world").total == 2

            counts = spread(backends, calls)
        assert sum(counts) == CALLS
        assert min(counts) >= CALLS // 4, counts

    def test_pick_first_sticks_to_one_server(self, backends: list[Backend]) -> None:
        """gRPC's default policy on the same target: every call goes to one server."""

        def calls() -> None:
            with Client(both(backends)) as client:
                for _ in range(CALLS):
                    client.count_tokens("o200k_base", "hello world")

        counts = spread(backends, calls)
        assert sorted(counts) == [0, CALLS]

    def test_async_client_reaches_both_servers(self, backends: list[Backend]) -> None:
        """The asyncio client takes the same option."""

        counts: list[int] = []

        async def run() -> None:
            async with AsyncClient(both(backends), load_balancing="round_robin") as client:
                before = [b.handled() for b in backends]
                deadline = time.monotonic() + SPREAD_SECONDS
                while not all(b.handled() > n for b, n in zip(backends, before, strict=True)):
                    assert time.monotonic() < deadline, "the channel did not reach both servers"
                    await client.count_tokens("o200k_base", "warm-up")
                    await asyncio.sleep(0.05)
                start = [b.handled() for b in backends]
                for _ in range(CALLS):
                    await client.count_tokens("o200k_base", "hello world")
                counts.extend(b.handled() - n for b, n in zip(backends, start, strict=True))

        asyncio.run(run())
        assert sum(counts) == CALLS
        assert min(counts) >= CALLS // 4, counts

    def test_node_client_reaches_both_servers(self, backends: list[Backend]) -> None:
        """The Node.js client's loadBalancing option does the same through grpc-js (calls
        25 ms apart, so the second connection is up for most of them)."""
        payload = {"tokenizer": "o200k_base", "texts": ["hello world"], "repeat": CALLS,
                   "repeat_interval_ms": 25}  # fmt: skip
        result: list[tuple[int, dict[str, object], str]] = []
        counts = spread(
            backends,
            lambda: result.append(
                run_node(both(backends), payload, "--load-balancing", "round_robin")
            ),
        )
        status, out, err = result[0]
        assert status == 0, err
        assert out["repeated"] == [2] * CALLS
        assert sum(counts) == CALLS + 1  # the round trip's own CountTokens, then the repeats
        assert min(counts) >= CALLS // 8, counts

    def test_unknown_policy_is_refused(self) -> None:
        """A misspelt policy is a clear error, naming the ones there are."""
        with pytest.raises(ValueError, match="round_robin"):
            Client("127.0.0.1:1", load_balancing="round-robin")
        status, _, err = run_node_error("round-robin")
        assert status == 2
        assert "loadBalancing must be one of pick_first, round_robin" in err


def run_node_error(policy: str) -> tuple[int, str, str]:
    """Run cli.js with a bad policy: it fails before printing any JSON."""
    import shutil
    import subprocess

    from node_client import NODE_DIR

    node = shutil.which("node")
    assert node is not None
    result = subprocess.run(
        [node, str(NODE_DIR / "cli.js"), "--target", "127.0.0.1:1", "--load-balancing", policy],
        input='{"tokenizer": "o200k_base", "texts": ["x"]}',
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr
