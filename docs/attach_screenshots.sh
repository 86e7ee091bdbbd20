#!/usr/bin/env bash
# Retakes docs/attaching.md's three screenshots
# (docs/app-server-*.png): the app attached to kvscope-cli serve and to
# llama.cpp's llama-server, each under bench client load, and to fake-vllm
# (the vLLM stand-in the tests use: no vLLM runs without a GPU).
#   docs/attach_screenshots.sh [BUILD_DIR]     (default build)
# KVSCOPE_LLAMA_SERVER names a llama-server binary
# (../shared/peers/llamacpp/build-server.sh builds one); without it the
# llama.cpp shot is skipped. Needs no display (QT_QPA_PLATFORM=offscreen).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cli=$build/app/kvscope-cli
app=$build/app/kvscope
model=../shared/models/stories260K-f32.gguf
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
export QT_QPA_PLATFORM=offscreen

# Starts a command in the background; its first stdout line lands in $tmp/NAME.first.
start() {
  local name=$1; shift
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pids+=($!)
  for _ in $(seq 200); do
    [ -s "$tmp/$name.out" ] && break
    sleep 0.1
  done
  head -n 1 "$tmp/$name.out" >"$tmp/$name.first"
}

load() { # URL CONCURRENCY: bench client in the background, long enough for a screenshot
  "$cli" bench client --url "$1" --requests 400 --concurrency "$2" --lengths fixed \
    --prompt-len 64 --output-len 200 --vocab 512 >/dev/null 2>&1 &
  pids+=($!)
}

shot() { # NAME URL [OPTIONS...]
  local name=$1 url=$2; shift 2
  "$app" --connect "$url" "$@" --window-size 1280x800 --after-ms 12000 --screenshot "docs/app-server-$name.png"
  echo "docs/app-server-$name.png"
}

# kvscope-cli serve: its first line is "kvscope-cli serve: listening on http://HOST:PORT ...".
start serve "$cli" serve --model "$model" --port 0
url=$(grep -o 'http://[0-9.:]*' "$tmp/serve.first")
load "$url" 16
shot kvscope "$url"

if [ -n "${KVSCOPE_LLAMA_SERVER:-}" ]; then
  port=$((20000 + RANDOM % 20000))
  "$KVSCOPE_LLAMA_SERVER" -m "$model" --host 127.0.0.1 --port "$port" -np 4 -c 2048 --metrics -t 1 \
    >"$tmp/llama.log" 2>&1 &
  pids+=($!)
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.2; done
  load "http://127.0.0.1:$port" 3
  shot llamacpp "http://127.0.0.1:$port" --kv-unified no   # -np 4 without -kvu: four separate slots
else
  echo "KVSCOPE_LLAMA_SERVER is not set: the llama.cpp screenshot is not retaken" >&2
fi

# fake-vllm: "fake-vllm: listening on URL (...)", then "fake-vllm: OPTIONS" for top/--connect.
start vllm "$build/tests/net/attach/fake-vllm" --ranks 2 --seconds 120
sleep 0.5
url=$(grep -o 'http://[0-9.:]*' "$tmp/vllm.first")
read -r -a options < <(sed -n '2s/^fake-vllm: //p' "$tmp/vllm.out")
shot vllm "$url" "${options[@]}"
