#!/usr/bin/env bash
# Server-side cost of the Redis store's scripts, side by side in one redis-benchmark
# session (issue 30, item 8): each algorithm's real EVALSHA (server time, one key) against
# a minimal EVALSHA GET+SET Lua counter and a plain SET, on a unix socket, -c 16.
#
#   scripts/redis-bench.sh [RATESIM_BINARY]     (default: target/release/ratesim)
#
# The binary must be built with `--features redis`. The scripts' arguments are taken from
# a real run: `ratesim run scenarios/uniform.toml --store …` under `MONITOR`, one
# algorithm at a time; the caller instant is replaced by '' '' and the mode by `abs`, so
# the server's TIME decides (production mode). Env: REQUESTS (default 200000), ROUNDS
# (default 3; the median of each). Prints requests/s, the ratio to the counter, and the
# server's own time per call (INFO commandstats), which a busy machine disturbs less.
set -euo pipefail
bin="$(realpath "${1:-target/release/ratesim}")"
[ -x "$bin" ] || { echo "not an executable: $bin (cargo build --release --features redis)" >&2; exit 2; }
command -v redis-benchmark >/dev/null || { echo "needs redis-server, redis-cli, redis-benchmark" >&2; exit 2; }
cd "$(dirname "$0")/.."
requests="${REQUESTS:-200000}"
rounds="${ROUNDS:-3}"
work="$(mktemp -d)"
sock="$work/r.sock"
redis-server --port 0 --save '' --appendonly no --unixsocket "$sock" --dir "$work" \
    --logfile "$work/log" --daemonize yes --pidfile "$work/pid"
trap 'redis-cli -s "$sock" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; sleep 0.2; rm -rf "$work"' EXIT
for _ in $(seq 100); do redis-cli -s "$sock" PING >/dev/null 2>&1 && break; sleep 0.05; done

counter_sha=$(redis-cli -s "$sock" SCRIPT LOAD \
    "local v = tonumber(redis.call('GET', KEYS[1]) or '0') + 1; redis.call('SET', KEYS[1], v); return v")

# One EVALSHA line per algorithm, captured from a real run (MONITOR quotes every word).
algos="token_bucket leaky_bucket gcra fixed_window sliding_window_counter sliding_window_log"
declare -A line
for algo in $algos; do
    redis-cli -s "$sock" MONITOR > "$work/monitor" & mon=$!
    sleep 0.2
    "$bin" run scenarios/uniform.toml --algos "$algo" --no-charts -q --no-decisions \
        --out "$work/out" --store "redis+unix://$sock" >/dev/null
    kill "$mon"; wait "$mon" 2>/dev/null || true
    line[$algo]=$(python3 - "$work/monitor" <<'PY'
import shlex, sys
for raw in open(sys.argv[1]):
    if '"EVALSHA"' not in raw or '"ttl' not in raw:
        continue
    words = shlex.split(raw.split(']', 1)[1])
    nkeys = int(words[2])
    argv = words[3 + nkeys:]
    argv[1:4] = ['', '', 'abs']          # server time: TIME in the script, PXAT TTLs
    keys = ['bench:' + k for k in words[3:3 + nkeys]]
    print(shlex.join(words[:3] + keys + argv))
    break
PY
)
    # The store's marker key (checked by every call) exists while its store is open.
    for marker in $(grep -o "bench:[^ ']*:marker:[^ ']*" <<<"${line[$algo]}"); do
        redis-cli -s "$sock" SET "$marker" 1 >/dev/null
    done
    # A benchmark of an error reply would measure nothing: run the line once first.
    reply=$(eval "redis-cli -s \"\$sock\" ${line[$algo]}" 2>&1)
    if [ -z "${line[$algo]}" ] || grep -qiE 'err|statelost' <<<"$reply"; then
        echo "$algo: no usable EVALSHA captured (${line[$algo]:-none}): $reply" >&2
        exit 1
    fi
done

bench() { # prints requests/s of one redis-benchmark run of "$@"; appends the server's
    # own time per call (INFO commandstats, usec_per_call) to $work/u.$name
    redis-cli -s "$sock" CONFIG RESETSTAT >/dev/null
    redis-benchmark -s "$sock" -c 16 -n "$requests" -q "$@" 2>/dev/null \
        | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1
    redis-cli -s "$sock" INFO commandstats | tr -d '\r' \
        | grep -i "^cmdstat_$1:" | grep -o 'usec_per_call=[0-9.]*' | cut -d= -f2 >> "$work/u.$name"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

names="set counter $algos"
for name in $names; do : > "$work/r.$name"; : > "$work/u.$name"; done
for _ in $(seq "$rounds"); do # interleaved rounds
    for name in $names; do
        case $name in
            set) bench SET bench:set v ;;
            counter) bench EVALSHA "$counter_sha" 1 bench:counter ;;
            *) eval "bench ${line[$name]}" ;;
        esac >> "$work/r.$name"
    done
done
counter=$(median < "$work/r.counter")
printf '%-24s %12s %10s %16s\n' command requests/s "x counter" "server us/call"
for name in $names; do
    m=$(median < "$work/r.$name")
    u=$(median < "$work/u.$name")
    printf '%-24s %12.0f %10.2f %16.2f\n' "$name" "$m" "$(echo "$m / $counter" | bc -l)" "$u"
done
