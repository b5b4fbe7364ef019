#!/usr/bin/env bash
# Renders a run's report.html in headless Chromium and saves a full-page screenshot,
# so a person can look at the page a reader would get (JavaScript off, network off).
#
#   scripts/check-html.sh [SCENARIO] [OUT_PNG]
#   (defaults: scenarios/burst.toml, target/report-html/report.png)
#
# Needs Debian's `chromium` (apt-get install -y chromium). Exits non-zero when the run,
# the browser or the screenshot fails.
set -euo pipefail
cd "$(dirname "$0")/.."

scenario=${1:-scenarios/burst.toml}
shot=${2:-target/report-html/report.png}
case $shot in /*) ;; *) shot="$PWD/$shot" ;; esac
out=target/report-html/run
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "check-html: chromium not found (apt-get install -y chromium)" >&2
    exit 1
fi

cargo run --quiet --release -- run "$scenario" --out "$out" --quiet >/dev/null
mkdir -p "$(dirname "$shot")"
rm -f "$shot"
# A tall window: the page is read top to bottom, charts and all, in one image.
"$browser" --headless --no-sandbox --disable-gpu --disable-javascript --proxy-server=127.0.0.1:9 \
    --hide-scrollbars --window-size=1280,4600 \
    --screenshot="$shot" "file://$PWD/$out/report.html" 2>/dev/null
test -s "$shot"
echo "check-html: $out/report.html -> $shot"
