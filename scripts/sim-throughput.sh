#!/usr/bin/env bash
# Simulator throughput, side by side: each bench scenario run by each given `ratesim`
# binary in turn, ROUNDS times, interleaved (so a busy machine slows them alike), and the
# median decisions per CPU-second and peak RSS of each. Issue 17's measurement.
#
#   scripts/sim-throughput.sh BINARY [BINARY...]
#
# To compare with an older commit, build it beside this checkout first:
#   git worktree add /tmp/ratesim-old REV && (cd /tmp/ratesim-old && cargo build --release)
#   scripts/sim-throughput.sh /tmp/ratesim-old/target/release/ratesim target/release/ratesim
#
# Every run is `ratesim run SCENARIO --no-decisions --no-charts --threads $THREADS` (every
# metric on); decisions = the attempts of all algorithms (summary.csv), CPU = user + system
# seconds of the process (GNU time). Env: ROUNDS (default 3), THREADS (default 2),
# SCENARIOS (default: every file in benches/scenarios/, which holds issue 27's
# 100,000-client Zipf(1.0) run, scale_100k_zipf1).
#
# Then the log replay (issue 27): a 5,015,199-line combined log made from the bundled
# one (313 copies, each shifted by 151 s and with its own client addresses) in a temp
# dir, replayed by each binary as scenarios/nginx_log.toml does (`same_second =
# "spread"`, `reorder = "2s"`): one algorithm at --threads 1 and all six at --threads 2,
# and, when `goaccess` is installed, `goaccess --log-format=COMBINED -o report.json` on
# the same file, interleaved, ROUNDS times; medians of CPU-seconds and lines per
# CPU-second. LOG=0 skips it; SCENARIOS= (empty) runs only it; COPIES (default 313).
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,24p' "$0" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
bins=()
for bin in "$@"; do
    [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 2; }
    bins+=("$(realpath "$bin")") # resolved before the cd below
done
cd "$(dirname "$0")/.."
rounds="${ROUNDS:-3}"
threads="${THREADS:-2}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a whole number ≥ 1" >&2; exit 2; }
scenarios="${SCENARIOS-$(ls benches/scenarios/*.toml)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for s in $scenarios; do
    for r in $(seq "$rounds"); do
        b=0
        for bin in "${bins[@]}"; do
            b=$((b + 1))
            out="$work/out-$b"
            rm -rf "$out"
            /usr/bin/time -o "$work/time" -f "%U %S %M" "$bin" run "$s" --no-decisions \
                --no-charts --quiet --threads "$threads" --out "$out" >/dev/null
            read -r user sys rss <"$work/time"
            decisions="$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "attempts") c = i
                if (!c) exit 1; next } { n += $c } END { print n }' "$out/summary.csv")" || {
                echo "no attempts column in $out/summary.csv" >&2
                exit 1
            }
            echo "$(basename "$s" .toml) $b $decisions $user $sys $rss" | tee -a "$work/runs" >&2
        done
    done
done

[ -z "$scenarios" ] || python3 - "$work/runs" "${bins[@]}" <<'PY'
import statistics, sys
runs, bins = sys.argv[1], sys.argv[2:]
rows = {}
for line in open(runs):
    s, b, d, u, sy, rss = line.split()
    rows.setdefault((s, int(b)), []).append((int(d) / (float(u) + float(sy)), int(rss) / 1024))
head = ["%16s %5s" % ("#%d M dec/CPU-s" % (i + 1), "MB") for i in range(len(bins))]
print("%-20s " % "scenario" + " ".join(head))
for s in dict.fromkeys(k[0] for k in rows):
    cells = []
    for b in range(1, len(bins) + 1):
        rates = [r for r, _ in rows[(s, b)]]
        rss = max(m for _, m in rows[(s, b)])
        cells.append(f"{statistics.median(rates) / 1e6:16.2f} {rss:5.0f}")
    ratio = ""
    if len(bins) > 1:
        first = statistics.median(r for r, _ in rows[(s, 1)])
        last = statistics.median(r for r, _ in rows[(s, len(bins))])
        ratio = f"   ×{last / first:.2f}"
    print(f"{s:20} " + " ".join(cells) + ratio)
for i, b in enumerate(bins):
    print(f"#{i + 1}: {b}")
PY

[ "${LOG:-1}" = 0 ] && exit 0
copies="${COPIES:-313}"
[[ "$copies" =~ ^[1-9][0-9]*$ ]] || { echo "COPIES must be a whole number ≥ 1" >&2; exit 2; }
log="$work/access.log"
python3 - "$copies" "$log" <<'PY'
# The bundled log, COPIES times: copy k is shifted by k × 151 s (the log spans 150 s)
# and its clients 127.0.0.X become 10.(k / 256).(k % 256).X.
import datetime, gzip, re, sys
copies, out = int(sys.argv[1]), sys.argv[2]
lines = gzip.open("scenarios/traces/nginx-access.log.gz", "rt").read().splitlines()
clf = "%d/%b/%Y:%H:%M:%S %z"
stamp = re.compile(r"\[([^]]+)\]")
times = {}
with open(out, "w") as f:
    for k in range(copies):
        shift = datetime.timedelta(seconds=151 * k)
        addr = f"10.{k // 256}.{k % 256}."
        for line in lines:
            m = stamp.search(line)
            key = (m.group(1), k)
            if key not in times:
                t = datetime.datetime.strptime(m.group(1), clf) + shift
                times[key] = t.strftime(clf)
            f.write(addr + line[len("127.0.0."):m.start(1)] + times[key] + line[m.end(1):] + "\n")
PY
lines="$(wc -l <"$log")"
span=$((151 * copies + 10))
sed -e "s|^path = .*|path = \"$log\"|" -e "s|^duration = .*|duration = \"${span}s\"|" \
    scenarios/nginx_log.toml >"$work/log.toml"
have_goaccess=1
command -v goaccess >/dev/null || {
    have_goaccess=0
    echo "goaccess is not installed: the log replay runs without the goaccess comparison" >&2
}
: >"$work/log-runs"
for r in $(seq "$rounds"); do
    b=0
    for bin in "${bins[@]}"; do
        b=$((b + 1))
        for run in "one 1 fixed_window" "six 2 all"; do
            read -r name t algos <<<"$run"
            rm -rf "$work/out"
            /usr/bin/time -o "$work/time" -f "%U %S %M" "$bin" run "$work/log.toml" \
                --algos "$algos" --no-decisions --no-charts --quiet --threads "$t" \
                --out "$work/out" >/dev/null
            read -r user sys rss <"$work/time"
            echo "$name#$b $user $sys $rss" | tee -a "$work/log-runs" >&2
        done
    done
    if [ "$have_goaccess" = 1 ]; then
        /usr/bin/time -o "$work/time" -f "%U %S %M" goaccess "$log" --log-format=COMBINED \
            -o "$work/report.json" >/dev/null 2>&1
        read -r user sys rss <"$work/time"
        echo "goaccess $user $sys $rss" | tee -a "$work/log-runs" >&2
    fi
done
python3 - "$work/log-runs" "$lines" "${bins[@]}" <<'PY'
import statistics, sys
runs, lines, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cpu, peak = {}, {}
for line in open(runs):
    name, u, s, rss = line.split()
    cpu.setdefault(name, []).append(float(u) + float(s))
    peak[name] = max(peak.get(name, 0), int(rss) / 1024)
med = {k: statistics.median(v) for k, v in cpu.items()}
print(f"\nlog replay: {lines:,} lines, medians of {len(cpu[next(iter(cpu))])} rounds")
print(f"{'run':42} {'CPU-s':>7} {'M lines/CPU-s':>14} {'MB':>6}")
what = {"one": "one algorithm (fixed_window), --threads 1", "six": "six algorithms, --threads 2"}
for b in range(1, len(bins) + 1):
    for name in ("one", "six"):
        m = med[f"{name}#{b}"]
        print(f"#{b} {what[name]:39} {m:7.2f} {lines / m / 1e6:14.2f} {peak[f'{name}#{b}']:6.1f}")
if "goaccess" in med:
    g = med["goaccess"]
    print(f"{'goaccess --log-format=COMBINED -o report.json':42} {g:7.2f} {lines / g / 1e6:14.2f} {peak['goaccess']:6.1f}")
    for b in range(1, len(bins) + 1):
        print(f"#{b} one algorithm is x{g / med[f'one#{b}']:.1f} faster than goaccess")
else:
    print("goaccess: not installed, not compared")
for i, b in enumerate(bins):
    print(f"#{i + 1}: {b}")
PY
