#!/usr/bin/env bash
# kvscope's CPU kernels against llama.cpp's on the same GGUF files, same
# machine, 2 threads, interleaved (kvscope, llama.cpp, kvscope, ...): the
# "Against llama.cpp" tables of docs/benchmarks.md.
#
#   docs/bench/kernels_vs_llamacpp.sh PAIRS MODEL.gguf [MODEL.gguf ...]
#
# Per pair and file, each side measures the same three things:
#   pp512   prompt processing, one 512-token prompt
#           kvscope-cli bench batch -npp 512 -ntg 1 -npl 1      (S_PP)
#           llama-bench -p 512 -n 0                              (avg_ts)
#   tg128   one sequence decoding 128 tokens from an empty context
#           kvscope-cli bench batch -npp 1 -ntg 128 -npl 1      (S_TG)
#           llama-bench -p 0 -n 128                              (avg_ts)
#   b8      8 sequences, 128-token prompts, decoding 128 tokens together
#           kvscope-cli bench batch -npp 128 -ntg 128 -npl 1,8  (S_TG at B = 8)
#           llama-batched-bench -npp 128 -ntg 128 -npl 1,8       (speed_tg at pl = 8)
#           and, for each side, the 8-sequence decode step over the 1-sequence step.
# Needs the peer tools from ../shared/peers/llamacpp/build.sh (H overrides
# their folder) and a built kvscope-cli (KVSCOPE_CLI). Every figure is one
# line in $OUT (default kernels_vs_llamacpp.jsonl); the summary on stdout is
# the median over the pairs of each pair's kvscope / llama.cpp ratio.
set -euo pipefail
pairs=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
cli=${KVSCOPE_CLI:-$root/build/app/kvscope-cli}
H=${H:-/tmp/refmodels/harness}
out=${OUT:-kernels_vs_llamacpp.jsonl}
: > "$out"

emit() { # MODEL SIDE PAIR METRIC VALUE
  jq -nc --arg m "$(basename "$1")" --arg s "$2" --argjson p "$3" --arg k "$4" --argjson v "$5" \
    '{gguf:$m, side:$s, pair:$p, metric:$k, value:$v}' | tee -a "$out"
}

kvscope() { # MODEL PAIR
  local rows
  rows=$("$cli" bench batch --model "$1" -npp 512 -ntg 1 -npl 1 --threads 2 --json 2>/dev/null)
  emit "$1" kvscope "$2" pp512 "$(jq '.rows[0].S_PP' <<<"$rows")"
  rows=$("$cli" bench batch --model "$1" -npp 1 -ntg 128 -npl 1 --threads 2 --json 2>/dev/null)
  emit "$1" kvscope "$2" tg128 "$(jq '.rows[0].S_TG' <<<"$rows")"
  rows=$("$cli" bench batch --model "$1" -npp 128 -ntg 128 -npl 1,8 --threads 2 --json 2>/dev/null)
  emit "$1" kvscope "$2" b8 "$(jq '.rows[1].S_TG' <<<"$rows")"
  emit "$1" kvscope "$2" step8_over_step1 "$(jq '(.rows[1].T_TG) / (.rows[0].T_TG)' <<<"$rows")"
}

llamacpp() { # MODEL PAIR
  local rows
  rows=$("$H/llama-bench" -m "$1" -t 2 -p 512 -n 128 -r 1 -o jsonl 2>/dev/null)
  emit "$1" llamacpp "$2" pp512 "$(jq -s 'map(select(.n_prompt == 512))[0].avg_ts' <<<"$rows")"
  emit "$1" llamacpp "$2" tg128 "$(jq -s 'map(select(.n_gen == 128))[0].avg_ts' <<<"$rows")"
  rows=$("$H/llama-batched-bench" -m "$1" -c 4096 -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8 -t 2 \
    --output-format jsonl 2>/dev/null | grep '^{')
  emit "$1" llamacpp "$2" b8 "$(jq -s 'map(select(.pl == 8))[0].speed_tg' <<<"$rows")"
  emit "$1" llamacpp "$2" step8_over_step1 \
    "$(jq -s '(map(select(.pl == 8))[0].t_tg) / (map(select(.pl == 1))[0].t_tg)' <<<"$rows")"
}

for pair in $(seq 1 "$pairs"); do
  for model in "$@"; do
    kvscope "$model" "$pair"
    llamacpp "$model" "$pair"
  done
done

echo
echo "median over $pairs pairs of kvscope / llama.cpp (step8_over_step1: each side's own figure, median):"
jq -rs '
  def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  group_by(.gguf)[] | . as $g | ($g[0].gguf) as $m |
  ([ "pp512", "tg128", "b8" ] | map(. as $k |
     [$g[] | select(.metric == $k)] | group_by(.pair) |
     map((map(select(.side == "kvscope"))[0].value) / (map(select(.side == "llamacpp"))[0].value)) |
     "\($k) \(median * 100 | round / 100)x")) as $ratios |
  ([ "kvscope", "llamacpp" ] | map(. as $s |
     [$g[] | select(.metric == "step8_over_step1" and .side == $s) | .value] | "\($s) step8/step1 \(median * 100 | round / 100)")) as $steps |
  "\($m): \($ratios | join(", ")); \($steps | join(", "))"' "$out"
