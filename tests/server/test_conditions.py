"""The conditions table (tests/support/conditions.py) cannot drift from the tests: every row
names a test that exists and looks its row up, and every flag it names is a served flag."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest
from conditions import CONDITIONS, Condition

from tokend.server.config import add_arguments

HERE = Path(__file__).resolve().parent


def function_source(case: Condition) -> str:
    """The source of the test a row names (read, not imported: its module's fixtures stay)."""
    file, *path = case.test.split("::")
    tree = ast.parse((HERE / file).read_text(encoding="utf-8"))
    body: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in path:
        node = next((n for n in body if isinstance(n, ast.ClassDef | ast.FunctionDef)
                     and n.name == part), None)
        assert node is not None, f"{case.test}: no {part}"
        body = node.body  # type: ignore[attr-defined]
    return ast.unparse(node) if node is not None else ""


@pytest.mark.parametrize("case", CONDITIONS, ids=[c.id for c in CONDITIONS])
def test_the_named_test_brings_the_row_about(case: Condition) -> None:
    assert f"row('{case.id}')" in function_source(case), \
        f"{case.test} does not look up row({case.id!r})"


@pytest.mark.parametrize("case", [c for c in CONDITIONS if c.flag],
                         ids=[c.id for c in CONDITIONS if c.flag])
def test_the_flag_is_a_flag_of_tokend_serve(case: Condition) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert case.flag in parser._option_string_actions
