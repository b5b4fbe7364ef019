#!/usr/bin/env bash
# A short fuzz smoke run for CI: builds the targets and runs each for FUZZ_SECONDS
# (default 20) from the seed corpus. Fails on any crash; skips cleanly when cargo-fuzz
# is not installed. Choose targets with FUZZ_TARGETS="scenario trace" (default: all).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
secs="${FUZZ_SECONDS:-20}"
targets="${FUZZ_TARGETS:-scenario trace rules_toml algorithm_ops}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz smoke: SKIPPED: cargo-fuzz is not installed (cargo install cargo-fuzz --locked)"
    exit 0
fi

# cargo-fuzz passes nightly-only flags; the stable toolchain accepts them this way.
export RUSTC_BOOTSTRAP=1
./seed.sh
cargo fuzz build --sanitizer none
for t in $targets; do
    echo "fuzz smoke: $t for ${secs}s"
    dict=()
    if [ -f "dict/$t.dict" ]; then dict=(-dict="dict/$t.dict"); fi
    # -timeout: one input taking over 10 s is a hang, and fails the run.
    if ! cargo fuzz run --sanitizer none "$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 "${dict[@]}" 2>"$here/smoke-$t.log"; then
        grep -m 3 -A 2 -E "panicked at|ERROR: libFuzzer|SUMMARY" "$here/smoke-$t.log" || tail -n 40 "$here/smoke-$t.log"
        echo "fuzz smoke: $t FAILED; the input is in fuzz/artifacts/$t/ (see fuzz/README.md)"
        exit 1
    fi
    grep -E '^Done [0-9]+ runs' "$here/smoke-$t.log" || true
done
echo "fuzz smoke: ok ($targets)"
