#!/usr/bin/env bash
# Copies the seed inputs into fuzz/corpus/<target>/ (which is not committed): the
# repository's scenarios and traces, plus the hand-written seeds in fuzz/seeds/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$here/.."
for t in scenario trace rules_toml algorithm_ops; do mkdir -p "$here/corpus/$t"; done
cp "$repo"/scenarios/*.toml "$here/corpus/scenario/"
cp "$repo"/scenarios/traces/*.csv "$here/corpus/trace/"
cp "$here"/seeds/trace/* "$here/corpus/trace/"
cp "$here"/seeds/rules_toml/* "$here/corpus/rules_toml/"
