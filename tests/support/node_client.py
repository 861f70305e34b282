"""Test helper: run client/node/cli.js against a server with a JSON payload on stdin.

No skipping: without node or the npm packages the calling test fails and says how to install
them (scripts/setup-test-tools.sh, which scripts/test.sh runs).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "client" / "node"
HINT = "run `bash scripts/setup-test-tools.sh` (needs Node.js >= 18 and npm)"


def run_node(
    target: str, payload: dict[str, object], *args: str, token: str | None = None
) -> tuple[int, dict[str, Any], str]:
    """(exit status, the JSON it printed, stderr); ``args`` go to cli.js after the target;
    ``token``: the admin token, if any."""
    node = shutil.which("node")
    assert node is not None, f"node is not on PATH: {HINT}"
    assert (NODE_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir(), f"npm packages: {HINT}"
    result = subprocess.run(
        [node, str(NODE_DIR / "cli.js"), "--target", target, *args,
         *(["--token", token] if token else [])],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.stdout, f"node printed nothing; stderr:\n{result.stderr}"
    return result.returncode, json.loads(result.stdout), result.stderr
