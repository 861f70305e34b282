"""docs/architecture.md stays true: every module is named, every path it says to edit exists."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGES = ("core", "server", "client", "tokend_pkg")
SKIP_DIRS = {".venv", "node_modules", "build", ".git", ".test-data"}
# A backticked token that names a file or folder of the repository.
EXTENSIONS = "py|pyx|pxi|pyi|h|proto|json|yaml|yml|js|sh|html|css|cfg|toml|md"
PATH_LIKE = re.compile(rf"^[\w./*-]+(\.({EXTENSIONS})|/)$")


def _section(title: str) -> str:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


@functools.cache
def _repo_files() -> tuple[str, ...]:
    """Every file and folder name in the repository (virtualenv, build and caches pruned)."""
    names: list[str] = []
    for _folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        names += dirs + files
    return tuple(names)


def _change_table_paths() -> list[str]:
    paths = []
    for line in _section("To change X, edit Y").splitlines():
        if not line.startswith("| ") or line.startswith(("| to change", "| ---")):
            continue
        edit = line.split(" | ", 1)[1]  # the "edit" column
        paths += [tok for tok in re.findall(r"`([^`]+)`", edit) if PATH_LIKE.match(tok)]
    return paths


class TestArchitectureDoc:
    def test_change_table_names_paths(self) -> None:
        """The table is read: it names dozens of paths (a broken parse would pass vacuously)."""
        assert len(_change_table_paths()) > 60

    @pytest.mark.parametrize("token", sorted(set(_change_table_paths())))
    def test_every_path_in_the_change_table_exists(self, token: str) -> None:
        """Each path the "to change X, edit Y" table names exists (a bare file name somewhere)."""
        if "/" in token.rstrip("/"):
            matches = list(ROOT.glob(token.rstrip("/")))
            assert matches, f"docs/architecture.md names {token}, which does not exist"
        else:
            pattern = token.rstrip("/")
            assert any(Path(name).match(pattern) for name in _repo_files()), (
                f"no file named {token} in the repository"
            )

    def test_every_module_is_named(self) -> None:
        """Every hand-written module of the packages is named in the doc (path or module name)."""
        text = ARCHITECTURE.read_text(encoding="utf-8")
        named = set(re.findall(r"`([^`]+)`", text))
        words = {w for tok in named for w in re.split(r"[\s/.,()`]+", tok) if w}
        missing = []
        for package in PACKAGES:
            for path in sorted((ROOT / package).rglob("*.py")):
                if "_pb2" in path.name or path.name == "__init__.py":
                    continue
                rel = path.relative_to(ROOT).as_posix()
                if rel not in named and path.stem not in words:
                    missing.append(rel)
        assert not missing, f"docs/architecture.md does not name: {', '.join(missing)}"
