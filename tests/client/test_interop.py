"""scripts/interop.sh: the Go, Java, C++, Node and Python clients against one fresh server.

Every cell of its language x case table must pass, and every language's results must equal
the Python client's (the script checks those against tiktoken first). No skipping: without
the toolchains the script fails and says how to install them (scripts/setup-test-tools.sh).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class TestInterop:
    def test_every_language_passes_every_case(self) -> None:
        """The table has a row per case and a column per language, and no MISS."""
        result = subprocess.run(["bash", str(ROOT / "scripts" / "interop.sh")], cwd=ROOT,
                                capture_output=True, text=True, timeout=900, check=False)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        header = output.splitlines()[0].split()
        assert header == ["python", "node", "go", "cpp", "java"], output
        assert "MISS" not in output, output
        assert "10 cases, 0 misses" in output, output
