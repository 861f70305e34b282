"""scripts/setup.sh skips pip when nothing changed, and its stamp notices what must rebuild."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "scripts" / "setup.sh"


def source_hash(tree: Path, **env: str) -> str:
    """Run setup.sh's own ``source_hash`` function in ``tree``."""
    text = SETUP.read_text()
    start = text.index("source_hash() {")
    function = text[start:text.index("\n}\n", start) + 3]
    result = subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{function}\nsource_hash"], cwd=tree,
        capture_output=True, text=True, check=True,
        env={k: v for k, v in os.environ.items() if k != "TOKEND_REQUIRE_COMPILED"} | env,
    )
    return result.stdout.strip()


def make_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    for name in ("pyproject.toml", "setup.py"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tree / name)
    for folder in ("engine", "training"):  # the compiled extensions' sources
        shutil.copytree(ROOT / "core" / folder, tree / "core" / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    for folder in ("server", "client", "proto", "tokend_pkg"):
        (tree / folder).mkdir()
    (tree / ".venv" / "bin").mkdir(parents=True)
    (tree / ".venv" / "bin" / "python").symlink_to(ROOT / ".venv" / "bin" / "python")
    return tree


def pip_stub(tmp_path: Path) -> tuple[str, Path]:
    """A ``pip`` package that ``python -m pip`` finds first on PYTHONPATH: it writes its
    arguments to the mark file and exits 3. Returns the PYTHONPATH entry and the mark."""
    package, mark = tmp_path / "stub" / "pip", tmp_path / "pip-ran"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(
        "import pathlib, sys\n"
        f"pathlib.Path({str(mark)!r}).write_text(' '.join(sys.argv[1:]))\n"
        "sys.exit(3)\n")
    return str(package.parent), mark


class TestSetupStamp:
    def test_engine_sources_config_and_new_modules_change_the_stamp(self, tmp_path) -> None:
        """An edit of an engine source (compiled into the extension), of pyproject.toml or
        setup.py, a new module or page file, or TOKEND_REQUIRE_COMPILED must each make setup.sh
        run pip."""
        tree = make_tree(tmp_path)
        base = source_hash(tree)
        assert source_hash(tree) == base
        engine_sources = sorted(p for folder in ("engine", "training")
                                for p in (tree / "core" / folder).iterdir()
                                if p.suffix in (".pyx", ".pxi", ".h", ".pyi"))
        assert engine_sources
        for path in [*engine_sources, tree / "pyproject.toml", tree / "setup.py"]:
            original = path.read_bytes()
            path.write_bytes(original + b"\n# changed\n")
            assert source_hash(tree) != base, path.name
            path.write_bytes(original)
        assert source_hash(tree) == base
        (tree / "server" / "new_module.py").write_text("")
        assert source_hash(tree) != base
        (tree / "server" / "new_module.py").unlink()
        static = tree / "server" / "web" / "static"
        static.mkdir(parents=True)
        (static / "page.js").write_text("")  # the inspector page's files are package data
        assert source_hash(tree) != base
        shutil.rmtree(tree / "server" / "web")
        assert source_hash(tree) == base
        assert source_hash(tree, TOKEND_REQUIRE_COMPILED="1") != base

    @pytest.mark.parametrize("extras", ["server", ""])
    def test_an_unchanged_checkout_skips_pip(self, tmp_path: Path, extras: str) -> None:
        """With the stamp matching (scripts/test.sh just installed), the server install that
        scripts/serve.sh asks for, and the runtime-only one, run no pip and leave the stamp
        alone (checked by a pip stub, not a time bound: that counted the wait for the lock on
        a loaded machine)."""
        stamp = ROOT / ".venv" / ".tokend-install-stamp"
        subprocess.run(["bash", str(SETUP)], check=True, capture_output=True,
                       env={**os.environ, "TOKEND_EXTRAS": "dev"})
        before = stamp.read_text()
        path, mark = pip_stub(tmp_path)
        run = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True, check=False,
                             env={**os.environ, "TOKEND_EXTRAS": extras, "PYTHONPATH": path})
        assert not mark.exists(), f"setup.sh ran pip: {mark.read_text()}"
        assert run.returncode == 0, run.stderr
        assert stamp.read_text() == before

    def test_the_pip_stub_catches_setups_pip(self, tmp_path: Path) -> None:
        """The stub does intercept setup.sh's ``.venv/bin/python -m pip`` (forced here with
        TOKEND_FORCE_INSTALL=1; the stub fails it before pip could change anything)."""
        path, mark = pip_stub(tmp_path)
        run = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True, check=False,
                             env={**os.environ, "TOKEND_EXTRAS": "", "PYTHONPATH": path,
                                  "TOKEND_FORCE_INSTALL": "1"})
        assert run.returncode == 3 and mark.read_text().startswith("install"), run.stderr

    def test_serve_installs_the_server_extra(self) -> None:
        """serve.sh asks for the `server` extra, which a test or dev install already holds."""
        text = (ROOT / "scripts" / "serve.sh").read_text()
        assert "TOKEND_EXTRAS=server bash scripts/setup.sh" in text
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
            "optional-dependencies"]
        assert "tokend[server,s3,plot]" in extras["test"] and "tokend[test]" in extras["dev"]
        test_sh = (ROOT / "scripts" / "test.sh").read_text()
        assert "export TOKEND_REQUIRE_COMPILED=1" in test_sh
        assert "TOKEND_EXTRAS" not in test_sh  # the dev extras, setup.sh's default
