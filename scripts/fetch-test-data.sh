#!/usr/bin/env bash
# Fetch the files the tests take from PyPI packages (pinned, sha256-checked) into .test-data/:
#   trl 1.16.0 ships verbatim copies of real models' chat templates (trl/chat_templates/*.jinja);
#   tests/core/counting/test_templates.py renders them with tokend and with transformers.
# Only the wheel is downloaded (pip download --no-deps), never installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
DEST=.test-data
TRL_VERSION=1.16.0
TRL_WHEEL="trl-${TRL_VERSION}-py3-none-any.whl"
TRL_SHA256=c4726e139dd40e1a41661511c639c8a68416782b2e3e8c0befebd77bb7ba0396
OUT="$DEST/trl-${TRL_VERSION}/chat_templates"
exec 7>".setup-data.lock"
flock 7
if [ -f "$OUT/.sha256" ] && [ "$(cat "$OUT/.sha256")" = "$TRL_SHA256" ]; then
  exit 0
fi
mkdir -p "$DEST/wheels"
if [ ! -f "$DEST/wheels/$TRL_WHEEL" ]; then
  "$PY" -m pip download -q --disable-pip-version-check --no-deps "trl==${TRL_VERSION}" \
    -d "$DEST/wheels"
fi
got="$(sha256sum "$DEST/wheels/$TRL_WHEEL" | cut -d' ' -f1)"
if [ "$got" != "$TRL_SHA256" ]; then
  echo "fetch-test-data: $TRL_WHEEL has sha256 $got, expected $TRL_SHA256" >&2
  rm -f "$DEST/wheels/$TRL_WHEEL"
  exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT"
"$PY" - "$DEST/wheels/$TRL_WHEEL" "$OUT" <<'PYEOF'
import sys, zipfile, pathlib
wheel, out = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("trl/chat_templates/") and name.endswith(".jinja"):
            (out / pathlib.Path(name).name).write_bytes(z.read(name))
PYEOF
echo "$TRL_SHA256" > "$OUT/.sha256"
