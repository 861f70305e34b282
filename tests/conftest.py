"""Shared pytest fixtures for the whole suite."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The folder of small test inputs copied from ../shared/data (the suite never reads that)."""
    return FIXTURES
