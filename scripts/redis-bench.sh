#!/usr/bin/env bash
# Server-side cost of the Redis store's scripts, side by side in one redis-benchmark
# session (issue 30, item 8): each algorithm's production call (one rule, deciding on the
# server's TIME, one key) against a minimal EVALSHA GET+SET Lua counter and a plain SET,
# on a unix socket, -c 16.
#
#   [BASE=<git revision>] scripts/redis-bench.sh [RATESIM_BINARY]
#
# The binary (default target/release/ratesim, built with `--features redis`) only shows
# the keys and arguments: `ratesim run scenarios/uniform.toml --store …` is watched with
# `MONITOR`, one algorithm at a time, and its first decision taken. The call is then
# rebuilt as `RedisLimiter::try_acquire_n` sends it on the server's clock (cost 1, '' ''
# = TIME, mode `abs`, no per-rule detail) with the script `script_for_call` picks for one
# rule: the family's fast script (lua/fast_*.lua) when the sources have one, else the
# general one (common.lua + the family's file + main.lua). Scripts come from the working
# tree; with BASE also from that revision (`git show`), measured in the same session in
# interleaved rounds, its rows marked `@base`. Env: REQUESTS (default 200000), ROUNDS
# (default 3; the median of each). Prints requests/s, the ratio to the counter, and the
# server's own time per call (INFO commandstats), which a busy machine disturbs less.
# Four references run beside them (`empty`, `bare`, `read` and `floor`, below): what
# calling a script with the token bucket's arguments costs, what any script that keeps
# a state with an expiry costs, a decision that writes nothing, and the least any exact
# server-clock decision that writes can cost.
set -euo pipefail
bin="$(realpath "${1:-target/release/ratesim}")"
[ -x "$bin" ] || { echo "not an executable: $bin (cargo build --release --features redis)" >&2; exit 2; }
command -v redis-benchmark >/dev/null || { echo "needs redis-server, redis-cli, redis-benchmark" >&2; exit 2; }
cd "$(dirname "$0")/.."
base="${BASE:-}"
[ -z "$base" ] || git rev-parse --verify -q "$base^{commit}" >/dev/null \
    || { echo "BASE: not a git revision: $base" >&2; exit 2; }
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

# One call per algorithm and source: keys and arguments from a real run (MONITOR quotes
# every word), the script as the library picks it for one rule deciding.
algos="token_bucket leaky_bucket gcra fixed_window sliding_window_counter sliding_window_log"
labels="now"; [ -n "$base" ] && labels="now base"
declare -A line
runs=""
for algo in $algos; do
    rm -rf "$work/out"
    redis-cli -s "$sock" MONITOR > "$work/monitor" & mon=$!
    sleep 0.2
    "$bin" run scenarios/uniform.toml --algos "$algo" --no-charts -q --no-decisions \
        --out "$work/out" --store "redis+unix://$sock" >/dev/null
    kill "$mon"; wait "$mon" 2>/dev/null || true
    for label in $labels; do
        name="$algo"; [ "$label" = now ] || name="$algo@base"
        runs="$runs $name"
        made=$(python3 - "$work/monitor" "$label" "${base:-HEAD}" "$work/$name.lua" <<'PY'
import shlex, subprocess, sys
monitor, label, rev, out = sys.argv[1:5]
def source(path):  # a Lua file of the working tree ('now') or of the revision; None if absent
    if label == 'now':
        try:
            return open(path).read()
        except FileNotFoundError:
            return None
    r = subprocess.run(['git', 'show', f'{rev}:{path}'], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None
lua = 'src/redis/lua/'
for raw in open(monitor):
    if '"EVALSHA"' not in raw or '"ttl' not in raw:
        continue
    words = shlex.split(raw.split(']', 1)[1])
    nkeys = int(words[2])
    argv = words[3 + nkeys:]
    family = argv[5]
    argv[0:5] = ['1', '', '', 'abs', '0']   # try_acquire_n(key, 1, Now::Server)
    keys = [f'bench:{label}:' + k for k in words[3:3 + nkeys]]
    fast = {'bucket': ['fast_bucket.lua'], 'fixed': ['fast_common.lua', 'fast_window.lua'],
            'counter': ['fast_common.lua', 'fast_window.lua'],
            'log': ['fast_common.lua', 'fast_log.lua']}[family]
    general = ['common.lua', {'bucket': 'bucket.lua', 'log': 'log.lua'}.get(family, 'window.lua'),
               'main.lua']
    texts = [source(lua + f) for f in fast]
    if None in texts:
        texts = [source(lua + f) for f in general]
    open(out, 'w').write(''.join(texts))
    print(shlex.join(['EVALSHA', '@SHA@', str(nkeys)] + keys + argv))
    break
PY
)
        sha=$(redis-cli -s "$sock" -x SCRIPT LOAD < "$work/$name.lua")
        line[$name]="${made/@SHA@/$sha}"
        # The store's marker key (checked by the calls) exists while its store is open.
        for marker in $(grep -o "bench:[^ ']*:marker:[^ ']*" <<<"${line[$name]}"); do
            redis-cli -s "$sock" SET "$marker" 1 >/dev/null
        done
        # A benchmark of an error reply would measure nothing: run the line once first.
        reply=$(eval "redis-cli -s \"\$sock\" ${line[$name]}" 2>&1)
        if [ -z "$made" ] || grep -qiE 'err|statelost' <<<"$reply"; then
            echo "$name: no usable call (${line[$name]:-none}): $reply" >&2
            exit 1
        fi
    done
done

# Two references with the token bucket's arguments and key count (the same EVALSHA line,
# another script and state key): `empty` returns at once (what calling a script with these keys and
# arguments costs), `floor` does only the commands an exact decision on the server's
# clock must make, TIME, GET and SET … PXAT, and returns eight integers, with no
# arithmetic, parsing or printing: no script of that shape can cost less.
floor_sha=$(redis-cli -s "$sock" SCRIPT LOAD \
    "local t = redis.call('TIME'); local v = redis.call('GET', KEYS[1]); \
redis.call('SET', KEYS[1], t[1], 'PXAT', t[1] * 1000 + 60000); return {1, 2, 3, 4, 5, 6, 7, 8}")
empty_sha=$(redis-cli -s "$sock" SCRIPT LOAD "return 1")
# Two more, below the floor: `bare` keeps only what any script that keeps a state with
# an expiry must do, whatever its clock and reply (GET, then SET … PXAT of an instant
# the caller passed, one integer back); `read` is the floor without its write (what a
# decision that changes nothing costs: a fixed window's denial).
bare_sha=$(redis-cli -s "$sock" SCRIPT LOAD \
    "local v = redis.call('GET', KEYS[1]); \
redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[2] * 1000 + 60000); return 1")
read_sha=$(redis-cli -s "$sock" SCRIPT LOAD \
    "local t = redis.call('TIME'); local v = redis.call('GET', KEYS[1]); return {1, 2, 3, 4, 5, 6, 7, 8}")
tb="${line[token_bucket]}"
# The token bucket's line with another script and its own state key (a reference's
# value is not a bucket's state); with an instant, passed where the bucket has '' ''.
beside_tb() { # SHA NAME [UNIX_SECONDS]
    awk -v sha="$1" -v key="bench:$2" -v t="${3:-}" \
        '{$2 = sha; $4 = key; if (t != "") { $(5 + $3) = t; $(6 + $3) = 0 } print}' <<<"$tb"
}
line[floor]="$(beside_tb "$floor_sha" floor)"
line[empty]="$(beside_tb "$empty_sha" empty)"
line[read]="$(beside_tb "$read_sha" read)"
line[bare]="$(beside_tb "$bare_sha" bare "$(date +%s)")"
runs="empty bare read floor $runs"

bench() { # prints requests/s of one redis-benchmark run of "$@"; appends the server's
    # own time per call (INFO commandstats, usec_per_call) to $work/u.$name
    redis-cli -s "$sock" CONFIG RESETSTAT >/dev/null
    redis-benchmark -s "$sock" -c 16 -n "$requests" -q "$@" 2>/dev/null \
        | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1
    redis-cli -s "$sock" INFO commandstats | tr -d '\r' \
        | grep -i "^cmdstat_$1:" | grep -o 'usec_per_call=[0-9.]*' | cut -d= -f2 >> "$work/u.$name"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

names="set counter $runs"
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
printf '%-28s %12s %10s %16s\n' command requests/s "x counter" "server us/call"
for name in $names; do
    m=$(median < "$work/r.$name")
    u=$(median < "$work/u.$name")
    printf '%-28s %12.0f %10.2f %16.2f\n' "$name" "$m" "$(echo "$m / $counter" | bc -l)" "$u"
done
