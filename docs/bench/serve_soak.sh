#!/usr/bin/env bash
# kvscope-cli serve under many clients: REQUESTS (default 2000) requests at
# CONCURRENCY (default 256) through kvscope-cli bench client, with the
# server's resident memory sampled every second. Prints the client's JSON
# on one line, then the server's RSS at 10%, 25%, 50%, 75% and 100% of the
# run and its peak (MiB): flat from 10% on means nothing grows per request
# (the first seconds page in the model's weights and the KV pool).
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
"$cli" bench client --url "$url" --requests "$requests" --concurrency "$concurrency" --json "$@" | jq -c .
kill "$sampler"
mapfile -t samples < "$rss_log"
n=${#samples[@]}
at() { echo "${samples[$(( (n - 1) * $1 / 100 ))]}"; }
echo "RSS MiB at 10% $(at 10), 25% $(at 25), 50% $(at 50), 75% $(at 75), end $(at 100);" \
  "peak $(printf '%s\n' "${samples[@]}" | sort -n | tail -1) ($n samples, one a second)"
