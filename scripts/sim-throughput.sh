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
# SCENARIOS (default: every file in benches/scenarios/).
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
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
scenarios="${SCENARIOS:-$(ls benches/scenarios/*.toml)}"
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

python3 - "$work/runs" "${bins[@]}" <<'PY'
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
