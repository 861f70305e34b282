"""The worked examples in the Unigram trainer's docstrings run and give what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["unigram", "unigram_seed", "unigram_scripts"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"tokend.core.training.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
