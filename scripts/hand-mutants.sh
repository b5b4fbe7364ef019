#!/usr/bin/env bash
# Hand-made mutants (issue 32): rule-level bugs a person would plausibly write, each a
# patch in tests/mutants/*.diff, each expected to make the suite fail.
#
#   scripts/hand-mutants.sh               every mutant
#   scripts/hand-mutants.sh NAME...       only these (file names without .diff)
#   scripts/hand-mutants.sh --list        names and what each one breaks
#
# cargo-mutants (scripts/mutants.sh) flips one operator at a time; these are the bugs it
# cannot write: a floor that should round, a sort that should be stable, a rule split
# the wrong way round, a float where an exact ratio belongs. Each diff starts with `#`
# lines: `# mutant:` what it breaks, `# documented:` where the rule it breaks is
# written, and `# tests:` the `cargo test` arguments to run (the tests that pin the
# rule, so a mutant costs one rebuild and seconds of tests instead of the whole suite).
#
# For each mutant, the tree as it stands (tracked files and untracked ones git does
# not ignore, so new tests count before they are committed) is copied afresh to a
# scratch directory, the diff alone is applied there, and its tests run: they must
# fail. The caller's tree is never touched. First, every distinct test command runs
# once on the unmutated copy and must pass (a failing baseline would make every mutant
# look caught). Then a table: caught, MISSED, unviable (does not build) or stale (no
# longer applies: the code moved; rewrite the diff). Exit status 1 unless every mutant
# is caught.
#
# Not part of .ci/run: each mutant rebuilds the crate and its test (10-30 s on two busy
# cores, incrementally; the first run also builds the dependencies, some minutes).
# Run it after changing a rule one of the diffs breaks, and when adding a diff.
# Environment: HAND_MUTANTS_FROM (the diffs' directory, default tests/mutants: try a
# diff elsewhere before adding it); HAND_MUTANTS_DIR (scratch, default
# $TMPDIR/ratesim-hand-mutants); HAND_MUTANTS_TARGET (the build directory, default
# target/hand-mutants: its own, whatever CARGO_TARGET_DIR says, so no mutant's build is
# ever reused by an ordinary `cargo test`); HAND_MUTANTS_TIMEOUT (seconds per test run,
# default 600).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"

mutants_dir="${HAND_MUTANTS_FROM:-$repo/tests/mutants}"
work="${HAND_MUTANTS_DIR:-${TMPDIR:-/tmp}/ratesim-hand-mutants}"
tree="$work/tree"
export CARGO_TARGET_DIR="${HAND_MUTANTS_TARGET:-$repo/target/hand-mutants}"
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0
timeout_secs="${HAND_MUTANTS_TIMEOUT:-600}"

# header FILE KEY: the text after `# KEY:` in FILE's leading comment lines.
header() {
    sed -n "/^[^#]/q; s/^# $2: *//p" "$1" | head -n 1
}

files=()
list=false
for arg in "$@"; do
    case "$arg" in
    --list) list=true ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    -*)
        echo "unknown option $arg (try --help)" >&2
        exit 2
        ;;
    *)
        f="$mutants_dir/${arg%.diff}.diff"
        [ -f "$f" ] || { echo "no mutant $arg (see --list)" >&2; exit 2; }
        files+=("$f")
        ;;
    esac
done
if [ ${#files[@]} -eq 0 ]; then
    files=("$mutants_dir"/*.diff)
fi
for f in "${files[@]}"; do
    [ -n "$(header "$f" tests)" ] || { echo "$f: no '# tests:' line" >&2; exit 2; }
done
if $list; then
    for f in "${files[@]}"; do
        printf '%-40s %s\n' "$(basename "$f" .diff)" "$(header "$f" mutant)"
    done
    exit 0
fi

# A fresh copy of the tree, every file newer than any earlier build in the target
# directory (cargo compares times, and a copy keeps the times of its source: a file
# restored to its unmutated text must not look older than the mutant's build).
fresh_copy() {
    rm -rf "$tree"
    mkdir -p "$tree"
    git ls-files -z --cached --others --exclude-standard |
        tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$tree"
    find "$tree" -type f -exec touch {} +
}

# In the copy, which is no repository: stop git from finding one above it.
in_tree() {
    (cd "$tree" && GIT_CEILING_DIRECTORIES="$(dirname "$tree")" "$@")
}

# run_tests ARGS: cargo test with the header's arguments, quiet, time-limited.
run_tests() {
    local log="$1"
    shift
    in_tree timeout "$timeout_secs" cargo test --quiet "$@" >"$log" 2>&1
}

mkdir -p "$work"
echo "hand mutants: ${#files[@]}; scratch $tree; target $CARGO_TARGET_DIR" >&2

# The baseline: each distinct test command passes on the unmutated tree.
fresh_copy
declare -A baseline=()
for f in "${files[@]}"; do
    t="$(header "$f" tests)"
    [ -n "${baseline[$t]:-}" ] && continue
    echo "baseline: cargo test $t" >&2
    # shellcheck disable=SC2086 # the header holds several arguments
    if ! run_tests "$work/baseline.log" $t; then
        echo "the unmutated tree fails 'cargo test $t'; nothing can be judged:" >&2
        tail -n 30 "$work/baseline.log" >&2
        exit 1
    fi
    baseline[$t]=passed
done

results=()
failed=0
for f in "${files[@]}"; do
    name="$(basename "$f" .diff)"
    t="$(header "$f" tests)"
    log="$work/$name.log"
    fresh_copy
    if ! in_tree git apply --check "$f" >"$log" 2>&1; then
        result="stale"
    else
        in_tree git apply "$f"
        echo "mutant $name: cargo test $t" >&2
        # shellcheck disable=SC2086 # the header holds several arguments
        if ! in_tree cargo test --quiet --no-run ${t%% -- *} >"$log" 2>&1; then
            result="unviable"
        else
            status=0
            # shellcheck disable=SC2086
            run_tests "$log" $t || status=$?
            case "$status" in
            0) result="MISSED" ;;
            124) result="caught (timeout)" ;;
            *) result="caught" ;;
            esac
        fi
    fi
    case "$result" in
    caught*)
        # Which tests failed: the evidence that the mutant broke the rule they pin.
        by="$(sed -n 's/^---- \(.*\) stdout ----$/\1/p' "$log" | sed 's/.*:://' | paste -sd, -)"
        ;;
    *)
        by="(cargo test $t)"
        failed=$((failed + 1))
        ;;
    esac
    results+=("$(printf '%-40s %-17s %s' "$name" "$result" "$by")")
done

printf '\n%-40s %-17s %s\n' "mutant" "result" "failed tests"
printf '%s\n' "${results[@]}"
echo
if [ "$failed" -eq 0 ]; then
    echo "all ${#files[@]} caught"
else
    echo "$failed of ${#files[@]} not caught (logs in $work/)"
    exit 1
fi
