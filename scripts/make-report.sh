#!/usr/bin/env bash
# Draw the README's report from the bundled corpora, in one command:
#   bash scripts/make-report.sh            -> docs/report/report.{png,svg,json,txt}
# Compares the built-in encodings on the shipped parallel corpus (core/data/parallel.json,
# written for tokend) and draws held-out tokens against vocabulary size for every training
# kind, trained on Shakespeare's complete works (public domain; tests/fixtures/corpora/
# shakespeare.txt.gz, in every clone) with the Gettysburg Address (public domain;
# tests/fixtures/corpora/address.txt) as the held-out paragraph.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT="${1:-docs/report}"
mkdir -p "$OUT"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
gzip -dc tests/fixtures/corpora/shakespeare.txt.gz > "$tmp/shakespeare.txt"
args=(o200k_base cl100k_base r50k_base
  --curve-corpus "$tmp/shakespeare.txt" --heldout tests/fixtures/corpora/address.txt
  --vocab-sizes 300,500,1000,2000,5000,10000)
.venv/bin/tokend report "${args[@]}" --json --plot "$OUT/report.png" --plot "$OUT/report.svg" \
  > "$OUT/report.json"
.venv/bin/tokend report --from-json "$OUT/report.json" > "$OUT/report.txt"
echo "wrote $OUT/report.png, report.svg, report.json, report.txt"
