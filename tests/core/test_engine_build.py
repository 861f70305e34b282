"""The compiled engine is built and chosen; TOKEND_ENGINE=python forces the twin."""

from __future__ import annotations

import os

import pytest
from fresh_python import run_fresh


class TestEngineChoice:
    @pytest.mark.skipif(
        os.environ.get("TOKEND_REQUIRE_COMPILED", "") in ("", "0"),
        reason="only where the build must have compiled the engine (scripts/test.sh, CI)",
    )
    def test_compiled_engine_was_built(self) -> None:
        """A build that silently fell back to the pure-Python engine fails here."""
        from tokend.core import engine

        assert engine.COMPILED_AVAILABLE, "the compiled engine did not build"
        assert run_fresh("import tokend.core as c; print(c.ENGINE)").strip() == "compiled"

    def test_environment_forces_python(self) -> None:
        """TOKEND_ENGINE=python selects the pure-Python engine, whatever was built."""
        code = (
            "import os; os.environ['TOKEND_ENGINE'] = 'python'\n"
            "import tokend.core as c; print(c.ENGINE)"
        )
        assert run_fresh(code).strip() == "python"
