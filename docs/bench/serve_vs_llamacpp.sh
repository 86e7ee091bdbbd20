#!/usr/bin/env bash
# kvscope-cli serve against llama.cpp's llama-server on the same GGUF, same
# machine, alternately (kvscope, llama.cpp, kvscope, ...), through the same
# load generator (kvscope-cli bench client): docs/serving.md's "against llama.cpp's server" table.
#
#   docs/bench/serve_vs_llamacpp.sh MODEL.gguf CONTEXT [PAIRS] [CONCURRENCY...]
#
# CONTEXT: tokens of context per sequence (the model's, e.g. 1024 for the
# llama-110m preset). llama-server gets -np C -c C*CONTEXT (one slot per
# client, each the full context); kvscope-serve gets the same KV bytes as
# --kv-budget-mib, in its paged pool. Both use 2 threads and f16 KV.
# Needs llama-server from ../shared/peers/llamacpp/build-server.sh
# (LLAMA_SERVER overrides its path) and a built kvscope-cli (KVSCOPE_CLI).
# Each run's `bench client --json` is one line in $OUT (default
# serve_vs_llamacpp.jsonl); a summary of ratios goes to stdout.
set -euo pipefail
model=$1 context=$2 pairs=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
concurrencies=("$@")
[ ${#concurrencies[@]} -eq 0 ] && concurrencies=(8 32)
root=$(cd "$(dirname "$0")/../.." && pwd)
cli=${KVSCOPE_CLI:-$root/build/app/kvscope-cli}
llama=${LLAMA_SERVER:-/tmp/refmodels/harness/llama-server}
out=${OUT:-serve_vs_llamacpp.jsonl}
requests=${REQUESTS:-64}
port=18180
pid=

stop_server() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap stop_server EXIT

wait_ready() {
  for _ in $(seq 1 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && return 0
    sleep 0.5
  done
  echo "server on port $port did not become ready" >&2; exit 1
}

# KV bytes per token at f16, from kvscope's own calculator.
bytes_per_token=$("$cli" info "$model" --json 2>/dev/null | jq '.kv_bytes_per_token.f16')

run() { # SERVER CONCURRENCY
  local server=$1 c=$2 tokens=$(( $2 * context ))
  if [ "$server" = kvscope ]; then
    local mib=$(( (tokens * bytes_per_token + (1 << 20) - 1) >> 20 ))
    "$cli" serve --model "$model" --port "$port" --threads 2 --kv-budget-mib "$mib" --max-seqs "$c" \
      > /dev/null 2> "serve-$server.log" & pid=$!
  else
    "$llama" -m "$model" --host 127.0.0.1 --port "$port" -np "$c" -c "$tokens" -t 2 --metrics \
      > /dev/null 2> "serve-$server.log" & pid=$!
  fi
  wait_ready
  "$cli" bench client --url "http://127.0.0.1:$port" --requests "$requests" --concurrency "$c" \
    --lengths sharegpt --max-total "$context" --json |
    jq -c --arg s "$server" --argjson c "$c" --arg m "$(basename "$model")" '. + {server:$s, concurrency:$c, gguf:$m}' |
    tee -a "$out"
  stop_server
}

for c in "${concurrencies[@]}"; do
  for _ in $(seq 1 "$pairs"); do
    run kvscope "$c"
    run llamacpp "$c"
  done
done

# Per concurrency: each side's range, and kvscope/llama.cpp per pair.
jq -s -r --arg m "$(basename "$model")" '
  map(select(.gguf == $m)) | group_by(.concurrency)[] |
  (map(select(.server == "kvscope"))) as $k | (map(select(.server == "llamacpp"))) as $l |
  "\($m) c=\(.[0].concurrency): output tok/s kvscope \([$k[].output_tokens_per_second | floor] | min)-\([$k[].output_tokens_per_second | floor] | max), " +
  "llama.cpp \([$l[].output_tokens_per_second | floor] | min)-\([$l[].output_tokens_per_second | floor] | max); " +
  "ratio per pair \([range(0; [$k, $l | length] | min) | ($k[.].output_tokens_per_second / $l[.].output_tokens_per_second * 100 | floor) / 100]); " +
  "TTFT p99 ms kvscope \([$k[].ttft_ms.p99 | floor]), llama.cpp \([$l[].ttft_ms.p99 | floor]); " +
  "failed \([.[].failed] | add)"' "$out"
