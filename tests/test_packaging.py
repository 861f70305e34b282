"""The package layout: one ``tokend`` namespace, core free of gRPC, a working CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fresh_python import run_fresh


class TestLayout:
    def test_core_imports_no_grpc(self) -> None:
        """tokend.core must stay usable without grpc, protobuf or prometheus loaded."""
        code = (
            "import sys, tokend.core\n"
            "heavy = ('grpc', 'google.protobuf', 'prometheus_client')\n"
            "bad = [m for m in heavy if m in sys.modules]\n"
            "print(','.join(bad))\n"
        )
        assert run_fresh(code).strip() == ""

    def test_client_loads_no_encoder(self) -> None:
        """The client needs only the stubs and tokend.core.errors: the encoder, trainer and
        registry stay unloaded (tokend.core exports them lazily)."""
        code = (
            "import sys, tokend.client, tokend.core\n"
            "heavy = ('tokend.core.engine.encoding', 'tokend.core.training.byte_bpe',\n"
            "         'tokend.core.registry')\n"
            "print(','.join(m for m in heavy if m in sys.modules))\n"
            "tokend.core.get_encoding  # and they still load on first use\n"
            "print('tokend.core.engine.builtins' in sys.modules)\n"
        )
        assert run_fresh(code).split("\n")[:2] == ["", "True"]

    def test_client_results_and_requests_load_no_grpc(self) -> None:
        """tokend.client loads lazily: its results and requests (protobuf messages) need no
        grpc, so the CLI answering in process never pays for it; Client still imports."""
        code = (
            "import sys, tokend.client.results, tokend.client.requests\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'grpc'))\n"
            "from tokend.client import Client, TokenizerNotFound\n"
            "print('grpc' in sys.modules, Client.__name__, TokenizerNotFound.__name__)\n"
            "import tokend.client as c\n"
            "print(all(getattr(c, name) is not None for name in c.__all__))\n"
        )
        assert run_fresh(code).splitlines() == ["[]", "True Client TokenizerNotFound", "True"]

    def test_lazy_exports_resolve(self) -> None:
        """Every name in tokend.core.__all__ is importable."""
        import tokend.core

        for name in tokend.core.__all__:
            assert getattr(tokend.core, name) is not None, name
        with pytest.raises(AttributeError, match="no attribute 'nope'"):
            _ = tokend.core.nope  # type: ignore[attr-defined]

    def test_no_generic_top_level_names_installed(self) -> None:
        """core/client/server/proto are importable only under tokend.*."""
        import tokend.core

        assert tokend.core.__name__ == "tokend.core"
        assert tokend.core.__file__ is not None
        assert tokend.core.__file__.endswith("core/__init__.py")

    def test_cli_version(self) -> None:
        """The console script answers --version."""
        out = subprocess.run(
            [sys.executable, "-m", "tokend.cli", "--version"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out.startswith("tokend ")


class TestEngineBuild:
    def test_no_compiler_falls_back_with_one_warning(self, tmp_path) -> None:
        """A build whose C compiler fails warns in one line and still succeeds (the package
        then serves with the pure-Python engine); TOKEND_REQUIRE_COMPILED=1 makes it fail."""
        import os
        import shutil
        from pathlib import Path

        root = Path(__file__).resolve().parent.parent
        for name in ("setup.py", "pyproject.toml", "README.md"):
            shutil.copy(root / name, tmp_path / name)
        for folder in ("engine", "training"):  # the two compiled extensions' sources
            shutil.copytree(
                root / "core" / folder,
                tmp_path / "core" / folder,
                ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"),
            )
        env = {**os.environ, "CC": "/bin/false", "TOKEND_REQUIRE_COMPILED": ""}
        command = [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", "out"]
        done = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )
        warnings = [
            line
            for line in (done.stdout + done.stderr).splitlines()
            if "compiled engine was not built" in line
        ]
        assert done.returncode == 0, done.stderr[-2000:]
        assert len(warnings) == 1, warnings
        assert not list((tmp_path / "out").rglob("*.so"))
        env["TOKEND_REQUIRE_COMPILED"] = "1"
        failed = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )
        assert failed.returncode != 0
