#!/usr/bin/env bash
# kvscope-cli serve under many clients: REQUESTS (default 2000) requests at
# CONCURRENCY (default 256) through kvscope-cli bench client, with the
# server's resident memory sampled every second. Prints the client's JSON,
# then RSS after loading, at the run's middle and end, and its peak (MiB).
#
#   docs/bench/serve_soak.sh MODEL.gguf [bench client options...]
set -euo pipefail
model=$1; shift
root=$(cd "$(dirname "$0")/../.." && pwd)
cli=${KVSCOPE_CLI:-$root/build/app/kvscope-cli}
requests=${REQUESTS:-2000} concurrency=${CONCURRENCY:-256}
rss_log=$(mktemp)
"$cli" serve --model "$model" --port 0 --threads 2 --max-seqs 256 > serve-soak.out 2> serve-soak.log & pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$rss_log"' EXIT
for _ in $(seq 1 600); do grep -q http serve-soak.out && break; sleep 0.5; done
url=$(grep -o 'http://[^ ]*' serve-soak.out | head -1)
rss() { awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status"; }
( while kill -0 "$pid" 2>/dev/null; do rss >> "$rss_log"; sleep 1; done ) & sampler=$!
"$cli" bench client --url "$url" --requests "$requests" --concurrency "$concurrency" --json "$@"
kill "$sampler"
mapfile -t samples < "$rss_log"
n=${#samples[@]}
echo "RSS MiB: after load ${samples[0]}, middle ${samples[$((n / 2))]}, end ${samples[$((n - 1))]}, peak $(printf '%s\n' "${samples[@]}" | sort -n | tail -1) ($n samples)"
