#!/usr/bin/env bash
# Mutation testing (issue 18), one area at a time: which files, which tests, a timeout.
#
#   scripts/mutants.sh AREA [extra cargo-mutants args...]
#
# AREA: metrics | algorithm | limiter | sim | report | presets | tower | tower-redis | all (every area in turn;
# presets-sim, a second look at the presets with the simulator's tests, only by name); sim is
# six parts, sim-engine, sim-traffic, sim-scenario, sim-trace, sim-redis, sim-search, each
# also an AREA.
# Each area mutates only its own files and runs only the tests that exercise them: the
# whole suite per mutant costs ~25 s, and a mutant's rebuild another 10-30 s on 2 busy
# cores. The light library (algorithm, registry, limiter, composite, rule, time,
# middleware) is built without the `cli` feature, which leaves out the simulator and the
# reports and makes each rebuild several times cheaper; its tests (tests/algorithms.rs,
# conformance.rs, bounds.rs, states.rs, reset_after.rs, limiter.rs, composite.rs,
# dense.rs, packed.rs) need nothing more.
# (properties.rs is left out: it is the slowest to rebuild, and conformance.rs checks
# the same decisions.) Debug info is off for the same reason. Results go to
# mutants.out/AREA/mutants.out/ (git-ignored): caught.txt, missed.txt, unviable.txt,
# timeout.txt. Equivalent mutants are excluded, each with its reason, in
# .cargo/mutants.toml, so a clean run reports no `missed`.
#
# Not part of .ci/run (too slow for every push); run it before a release and after
# changing the files of an area. Needs `cargo install cargo-mutants --locked` (27.x).
#
# Extra arguments go to cargo mutants: `scripts/mutants.sh metrics --list`,
# `scripts/mutants.sh algorithm -F gcra` (a regex on the mutant's name),
# `scripts/mutants.sh algorithm --shard 1/4` (a quarter of the mutants).
set -euo pipefail
cd "$(dirname "$0")/.."

area="${1:-}"
[ $# -gt 0 ] && shift
EXTRA=("$@")

# Per-mutant test timeout, seconds (the slowest baseline here is under 20 s).
TIMEOUT="${MUTANTS_TIMEOUT:-60}"
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0

# run NAME [--light] FILE|--MUTANTS-OPTION=VALUE... -- CARGO-TEST-ARGS...
run() {
    local name="$1" files=() features=() options=()
    shift
    # The conformance suite is random streams over every rule: 35 s unoptimised, a few
    # seconds at opt-level 1, which the small light library compiles almost as fast.
    local opt=0 timeout="$TIMEOUT"
    if [ "${1:-}" = "--light" ]; then
        # toml-rules keeps the middleware's hot reload in: a mutant in code that is
        # compiled out would count as missed.
        features=(--no-default-features --features toml-rules)
        opt=1
        shift
    elif [ "${1:-}" = "--tower" ]; then
        # The tower layer: the light library with `tower` (which brings toml-rules), no
        # simulator. Its HTTP tests run real axum servers on loopback.
        features=(--no-default-features --features tower)
        opt=1
        shift
    elif [ "${1:-}" = "--tower-redis" ]; then
        # The tower layer's Redis store: `tower` and `redis`, no simulator, against a
        # real redis-server that the tests start (they must not skip).
        features=(--no-default-features --features tower,redis)
        opt=1
        timeout="${MUTANTS_REDIS_TIMEOUT:-300}"
        export RATESIM_REQUIRE_REDIS=1
        shift
    elif [ "${1:-}" = "--redis" ]; then
        # The Redis tests replay whole runs through a real redis-server: minutes
        # unoptimised, 90 s at opt-level 1. They must not skip (a skipped test passes,
        # and every mutant would look missed).
        features=(--features redis)
        opt=1
        timeout="${MUTANTS_REDIS_TIMEOUT:-300}"
        export RATESIM_REQUIRE_REDIS=1
        shift
    fi
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        case "$1" in
        -*) options+=("$1") ;;
        *) files+=(-f "$1") ;;
        esac
        shift
    done
    shift
    # The test targets go to every cargo call as `--cargo-arg`s (`--test NAME` becomes
    # `--test=NAME`): cargo-mutants passes arguments after `--` to the test phase only,
    # so its build phase would otherwise compile and link every test target of the
    # crate for each mutant.
    local targets=()
    while [ $# -gt 0 ]; do
        if [ "$1" = "--test" ]; then
            targets+=(--cargo-arg "--test=$2")
            shift 2
        else
            targets+=(--cargo-arg "$1")
            shift
        fi
    done
    echo "== mutants: $name: ${files[*]} ${options[*]} ${features[*]} -- ${targets[*]}" >&2
    # MUTANTS_TAG=x writes to mutants.out/AREA-x instead (runs of one area, filtered
    # apart, that should not overwrite each other).
    local out="mutants.out/$name${MUTANTS_TAG:+-$MUTANTS_TAG}"
    mkdir -p "$out"
    CARGO_PROFILE_DEV_OPT_LEVEL=$opt cargo mutants --timeout "$timeout" --output "$out" \
        --copy-target=false "${features[@]}" "${files[@]}" ${options[@]+"${options[@]}"} \
        "${targets[@]}" ${EXTRA[@]+"${EXTRA[@]}"}
}

status=0
case "$area" in
metrics | all)
    # The unit tests next to the code pin every metric; the simulator's tests add little
    # here and cost 15 s a mutant.
    run metrics src/sim/metrics.rs src/sim/metrics/series.rs src/sim/metrics/window.rs \
        -- --lib || status=$?
    ;;&
algorithm | all)
    run algorithm --light 'src/algorithm/*.rs' src/registry.rs \
        -- --lib --test algorithms --test conformance --test bounds --test states \
        --test reset_after --test packed || status=$?
    ;;&
limiter | all)
    run limiter --light src/limiter.rs src/composite.rs src/rule.rs src/time.rs \
        src/middleware.rs src/dense.rs src/prefetch.rs \
        -- --lib --test limiter --test algorithms --test conformance --test bounds \
        --test composite --test dense --test packed || status=$?
    ;;&
sim | sim-* | all)
    # The simulator, in six parts: each mutates its own files and runs only the test
    # targets that exercise them (17-33 s a mutant instead of 25-60 s with every
    # simulator test). `sim` runs the six in turn; `sim-engine` etc. one of them.
    # The Redis store's side of the engine (src/sim/engine/remote.rs, dispatch.rs's
    # `remote`) is compiled only with `--features redis` and is tested against a real
    # server by tests/redis_sim.rs; in this build its mutants change no code, so they are
    # left out here (-E). So are the hooks only the Redis states act on (`upcoming`, the
    # sweep's instant handed to them, the driver's `in_stream_order`: in memory they
    # change nothing), and `check_store` → `Ok(())`: without the feature its only arm,
    # `Memory`, is `Ok(())`. sim-redis runs all of these against a real server.
    # plugin: a registered algorithm through the engine and calibrate's own runs; edges
    # (tests/edges/): the shapers' delayed admissions through the engine, among others.
    REDIS_SIDE='src/sim/engine/remote\.rs|remote::|upcoming|next_sweep|in_stream_order'
    part() { [ "$area" = sim ] || [ "$area" = all ] || [ "$area" = "$1" ]; }
    if part sim-engine; then
        run sim-engine 'src/sim/engine/*.rs' src/sim/mod.rs \
            --exclude-re="$REDIS_SIDE" --exclude-re='replace check_store' \
            -- --lib --test sim_engine --test sim_limits --test sim_deployment --test sweep \
            --test plugin --test edges || status=$?
    fi
    if part sim-traffic; then
        run sim-traffic 'src/sim/traffic/*.rs' \
            -- --lib --test sim_engine --test sim_scenarios --test sim_limits || status=$?
    fi
    if part sim-scenario; then
        run sim-scenario 'src/sim/scenario/**/*.rs' \
            -- --lib --test sim_scenarios --test sim_limits --test sim_deployment \
            --test trace_formats --test trace_input --test trace_times || status=$?
    fi
    if part sim-trace; then
        run sim-trace 'src/sim/trace/*.rs' \
            -- --lib --test trace_formats --test trace_input --test trace_times || status=$?
    fi
    if part sim-redis; then
        # The Redis store's side of the engine, with `--features redis`, against a real
        # redis-server (tests/redis_sim.rs starts its own): about 90 s a mutant.
        run sim-redis --redis src/sim/engine/remote.rs src/sim/engine/server.rs \
            src/sim/engine/dispatch.rs src/sim/engine/driver.rs \
            --re="$REDIS_SIDE|check_store" -- --lib --test redis_sim || status=$?
    fi
    if part sim-search; then
        run sim-search src/sim/worst_case.rs src/sim/calibrate.rs \
            -- --lib --test worst_case --test sim_limits --test plugin || status=$?
    fi
    ;;&
report | all)
    run report src/report/csvout.rs -- --lib --test report_csv || status=$?
    ;;&
presets | all)
    # The presets live in the light library, so this area builds without the simulator
    # (a mutant rebuilds in seconds, not half a minute): their unit tests, the
    # differential tests against governor and tower, the peers' worked examples
    # (presets_envoy), reset_after, and preset_edges (every preset's documented edges,
    # light). The nginx, HAProxy and Python `limits` differential tests need a server or
    # a venv and take 20 s each: left out, as is properties.rs.
    run presets --light 'src/presets/*.rs' \
        -- --lib --test presets_governor --test preset_tower --test presets_envoy \
        --test reset_after --test preset_edges || status=$?
    ;;&
presets-sim)
    # A second look at what the light `presets` run missed, with the simulator's edge
    # tests (tests/edges/, scenarios through the engine) added; give it the missed
    # mutants' names: `scripts/mutants.sh presets-sim -F 'envoy.rs:1[0-9]{2}'`.
    run presets-sim 'src/presets/*.rs' \
        -- --lib --test edges --test presets_governor --test preset_tower \
        --test presets_envoy --test reset_after --test preset_edges || status=$?
    ;;
tower | all)
    # The tower layer (issue 27): its unit tests and real HTTP on loopback. The Redis
    # half (src/tower/redis.rs) is compiled only with `redis` too and is tested by
    # tests/tower_redis.rs against a real server: left out here, as a file (cargo-mutants
    # 27.1's --exclude-re lets its "delete field" mutants through).
    run tower --tower 'src/tower/*.rs' --exclude=src/tower/redis.rs \
        -- --lib --test tower_http --test tower_edges || status=$?
    ;;&
tower-redis | all)
    # The layer's Redis store (src/tower/redis.rs), with `--features tower,redis`:
    # tests/tower_redis.rs starts its own redis-server and two server processes.
    run tower-redis --tower-redis src/tower/redis.rs -- --test tower_redis || status=$?
    ;;&
metrics | algorithm | limiter | sim | sim-engine | sim-traffic | sim-scenario | sim-trace | sim-redis | sim-search | report | presets | tower | tower-redis | all) ;;
*)
    echo "usage: scripts/mutants.sh metrics|algorithm|limiter|sim|sim-{engine,traffic,scenario,trace,redis,search}|report|presets|presets-sim|tower|tower-redis|all [cargo-mutants args]" >&2
    exit 2
    ;;
esac
exit "$status"
