"""Shared pytest fixtures for the whole suite."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import seaweed
from hypothesis import settings
from registry_backends import Backend, local_backend, s3_backend
from tokend_process import ServedProcess, start_tokend

FIXTURES = Path(__file__).parent / "fixtures"

# scripts/test.sh (so CI) runs hypothesis derandomized: the same examples on every run, so a
# verdict never depends on luck and a red run reproduces. Elsewhere it searches anew each run
# and keeps what it finds in .hypothesis/ (TOKEND_HYPOTHESIS_PROFILE=default in test.sh too).
settings.register_profile("ci", derandomize=True)
settings.load_profile(os.environ.get("TOKEND_HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="module", params=["compiled", "python"])
def each_engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test once per engine: new encodings (``get_encoding``'s shared ones too) use it.

    Module-scoped so hypothesis tests can use it; modules opt in with
    ``pytestmark = pytest.mark.usefixtures("each_engine")``.
    """
    from tokend.core import engine

    previous = engine.default_engine()
    engine.set_default_engine(request.param)
    yield request.param
    engine.set_default_engine(previous)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The folder of small test inputs copied from ../shared/data (the suite never reads that)."""
    return FIXTURES


# -- a real `tokend serve` (supervisor + workers) for service and client tests ------------------


@pytest.fixture(scope="session")
def tokend_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedProcess]:
    """One real ``tokend serve --workers 2`` for the whole session.

    ``.target`` is "127.0.0.1:PORT", ``.registry`` its registry folder (publish there and the
    server picks it up), ``.admin_token`` the bearer token Train/Cancel need, ``.train_dir``
    the folder server-side corpora are read from, ``.metrics_port`` the /metrics port.
    """
    served = start_tokend(tmp_path_factory.mktemp("tokend-serve"))
    yield served
    served.stop()


@pytest.fixture
def tokend_factory(tmp_path: Path) -> Iterator[Callable[..., ServedProcess]]:
    """Start extra ``tokend serve`` instances (own registry each); stopped at teardown."""
    started: list[ServedProcess] = []

    def start(*args: str, workers: int = 2) -> ServedProcess:
        served = start_tokend(tmp_path / f"serve{len(started)}", *args, workers=workers)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


# -- registries: a folder and S3-compatible object storage (a real SeaweedFS) -------------------


@pytest.fixture(scope="session")
def seaweed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[seaweed.Seaweed]:
    """One ``weed server`` with its S3 gateway on loopback for the whole session."""
    server = seaweed.start(tmp_path_factory.mktemp("seaweed"))
    yield server
    server.stop()


@pytest.fixture
def s3_backend_env(
    seaweed_server: seaweed.Seaweed, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The AWS variables pointing boto3 at the test server, set for this test."""
    env = seaweed_server.env()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture(params=["local", "s3"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A fresh, empty registry location: once as a folder, once as an S3 prefix."""
    if request.param == "local":
        return local_backend(tmp_path / "reg")
    return s3_backend(request.getfixturevalue("s3_backend_env"))
