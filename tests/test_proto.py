"""The gRPC contract: buf's STANDARD lint passes, nothing breaks against the contract as it last
landed without language options, and the committed generated code is current."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
GENERATED_DIR = PROTO_DIR / "tokend" / "v1"
BUF = ROOT / "tools" / "node_modules" / ".bin" / "buf"
SETUP_HINT = "run `bash scripts/setup-test-tools.sh` (needs node + npm) to install buf"
# The contract as it landed before the language options were set (issue 33), in this clone's
# history: setting those options once is the only FILE-level change allowed against it.
BEFORE_OPTIONS = "3865f95"
OPTIONS_SET_ONCE = [
    "FILE_SAME_CSHARP_NAMESPACE", "FILE_SAME_GO_PACKAGE", "FILE_SAME_JAVA_MULTIPLE_FILES",
    "FILE_SAME_JAVA_OUTER_CLASSNAME", "FILE_SAME_JAVA_PACKAGE", "FILE_SAME_OBJC_CLASS_PREFIX",
    "FILE_SAME_PHP_NAMESPACE", "FILE_SAME_RUBY_PACKAGE",
]


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

    def test_buf_breaking_against_the_contract_before_the_options(self) -> None:
        """`buf breaking` with proto/buf.yaml's FILE rules against the last landed contract
        without language options: nothing but the options' first setting (new RPCs and messages
        are additions, not breaks), and the wire and JSON rules pass with no exception."""
        assert BUF.exists(), f"buf not found at {BUF}: {SETUP_HINT}"
        against = f"../.git#ref={BEFORE_OPTIONS},subdir=proto"
        file_rules = {"version": "v2", "breaking": {"use": ["FILE"], "except": OPTIONS_SET_ONCE}}
        wire = {"version": "v2", "breaking": {"use": ["WIRE_JSON"]}}
        for config in (file_rules, wire):
            result = subprocess.run(
                [str(BUF), "breaking", "--against", against, "--config", json.dumps(config)],
                cwd=PROTO_DIR, capture_output=True, text=True, check=False,
            )
            assert result.returncode == 0, f"buf breaking: {result.stdout}{result.stderr}"
        plain = subprocess.run(
            [str(BUF), "breaking", "--against", against], cwd=PROTO_DIR, capture_output=True,
            text=True, check=False,
        )
        flagged = plain.stdout.splitlines()
        assert flagged and all("File option" in line for line in flagged), plain.stdout

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
