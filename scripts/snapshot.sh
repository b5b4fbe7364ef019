#!/usr/bin/env bash
# Runs a ratesim binary over every bundled scenario and the commands that print tables,
# and leaves everything it wrote (CSVs, JSON, charts, stdout and stderr) under one folder,
# so two builds can be compared with `diff -r`. Used to show that a refactor changed no
# output:
#
#   scripts/snapshot.sh /tmp/ratesim-before /tmp/snap-before
#   scripts/snapshot.sh target/release/ratesim /tmp/snap-after
#   diff -r /tmp/snap-before /tmp/snap-after && echo byte-identical
#
# Paths printed by the runs are relative to the snapshot folder, so they compare equal.
set -euo pipefail
bin=$(realpath "$1")
repo=$(realpath "$(dirname "$0")/..")
rm -rf "$2"
mkdir -p "$2"
cd "$2"
cp -r "$repo/scenarios" scenarios
for s in scenarios/*.toml; do
    name=$(basename "$s" .toml)
    "$bin" run "$s" --out "run/$name" >"run-$name.txt" 2>&1
    "$bin" validate "$s" >>validate.txt 2>&1
done
"$bin" compare --out compare >compare.txt 2>&1
"$bin" compare --algos all --format csv --no-charts --out compare-csv >compare-csv.txt 2>&1
"$bin" compare --limit 100/60s --format json --no-decisions --out compare-json >compare-json.txt 2>&1
"$bin" worst-case --limit 5/10s --out worst-case >worst-case.txt 2>&1
"$bin" calibrate --limit 100/60s >calibrate.txt 2>&1
"$bin" list >list.txt 2>&1
"$bin" demo >demo.txt 2>&1
rm -r scenarios
