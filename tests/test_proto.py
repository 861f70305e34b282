"""The gRPC contract: buf's STANDARD lint passes and the committed generated code is current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
GENERATED_DIR = PROTO_DIR / "tokend" / "v1"
BUF = ROOT / "tools" / "node_modules" / ".bin" / "buf"
SETUP_HINT = "run `bash scripts/setup-test-tools.sh` (needs node + npm) to install buf"


class TestProtoContract:
    def test_buf_lint_standard_passes(self) -> None:
        """`buf lint` (STANDARD rules, proto/buf.yaml) reports nothing on the contract."""
        assert BUF.exists(), f"buf not found at {BUF}: {SETUP_HINT}"
        config = (PROTO_DIR / "buf.yaml").read_text(encoding="utf-8")
        assert "STANDARD" in config, "proto/buf.yaml must lint with the STANDARD rule set"
        result = subprocess.run(
            [str(BUF), "lint"], cwd=PROTO_DIR, capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, f"buf lint failed:\n{result.stdout}{result.stderr}"

    def test_generated_code_matches_proto(self, tmp_path: Path) -> None:
        """Regenerating from proto/ into a temp dir gives byte-identical committed files."""
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "gen_proto.py"), "--out", str(tmp_path)],
            check=True,
            capture_output=True,
        )
        fresh = {p.name: p.read_bytes() for p in (tmp_path / "tokend" / "v1").iterdir()}
        assert fresh, "gen_proto.py --out wrote nothing"
        for name, data in sorted(fresh.items()):
            committed = GENERATED_DIR / name
            assert committed.exists(), f"{committed} is missing: run scripts/gen_proto.py"
            assert committed.read_bytes() == data, (
                f"{committed} is stale: run `.venv/bin/python scripts/gen_proto.py`"
            )
