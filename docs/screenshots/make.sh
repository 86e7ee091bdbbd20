#!/usr/bin/env bash
# Remakes the layout screenshots in this folder: the chat with a workload,
# the Compare A/B tab, the KV quantization dock, a single chat (its
# fragmentation heatmap and waste plot) and the app connected to a
# `kvscope-cli serve` with a pool of 112,640 blocks under load, at 1024x700,
# 1600x1000 and 2560x1440, light and dark (30 PNGs), rendered offscreen.
#
#   docs/screenshots/make.sh [BUILD_DIR] [MODEL.gguf]
#
# BUILD_DIR defaults to build/ (it must hold app/kvscope); MODEL to
# stories260K from ../shared/models next to the repository. Each shot is
# taken mid-generation (--after-ms) with a fresh settings folder, so a
# layout saved by the app's own use cannot change the pictures.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
model=$(realpath -m "${2:-$root/../shared/models/stories260K-f32.gguf}") # the Model dock shows the path
app=$build/app/kvscope
[[ -x $app ]] || { echo "make.sh: no $app: build the kvscope target first" >&2; exit 1; }
[[ -f $model ]] || { echo "make.sh: no model at $model: give one as the second argument" >&2; exit 1; }

settings=$(mktemp -d)
trap 'rm -rf "$settings"' EXIT
export XDG_CONFIG_HOME=$settings QT_QPA_PLATFORM=offscreen

prompt="Once upon a time"
after_ms=2500 # the workload and the chat mid-way, the plots with some history

shot() { # NAME THEME SIZE [ARGS...]
  local name=$1 theme=$2 size=$3
  shift 3
  local out=$here/$name-$size-$theme.png
  "$app" --model "$model" --prompt "$prompt" --workload 64 --after-ms "$after_ms" \
    --theme "$theme" --window-size "$size" --log-level warn --screenshot "$out" "$@"
  echo "$out"
}

one_chat() { # THEME SIZE: one chat, no workload, after its turn has ended
  local out=$here/one-chat-$2-$1.png
  "$app" --model "$model" --prompt "$prompt" --theme "$1" --window-size "$2" --log-level warn \
    --show fragmentation --screenshot "$out"
  echo "$out"
}

# A server with a pool of 112,640 blocks (1100 MiB of f16 KV for stories260K)
# and 128 clients streaming to it: the map gathers runs of blocks into cells.
cli=$build/app/kvscope-cli
[[ -x $cli ]] || { echo "make.sh: no $cli: build the kvscope-cli target first" >&2; exit 1; }
serve_log=$settings/serve.log
load=
"$cli" --log-level warn serve --model "$model" --port 0 --kv-budget-mib 1100 >"$serve_log" 2>&1 &
server=$!
trap 'kill $server $load 2>/dev/null || true; rm -rf "$settings"' EXIT
url=
for _ in $(seq 100); do # until it says where it listens
  url=$(grep -o 'listening on http://[0-9.:]*' "$serve_log" | cut -d' ' -f3 || true)
  [[ -n $url ]] && break
  sleep 0.1
done
[[ -n $url ]] || { cat "$serve_log" >&2; echo "make.sh: the server did not start" >&2; exit 1; }
"$cli" bench client --url "$url" --requests 1000000 --concurrency 128 --lengths uniform \
  --prompt-len 300 --output-len 200 --vocab 512 >/dev/null 2>&1 &
load=$!

server_shot() { # THEME SIZE
  local out=$here/server-112k-blocks-$2-$1.png
  "$app" --connect "$url" --after-ms 8000 --theme "$1" --window-size "$2" --log-level warn --screenshot "$out"
  echo "$out"
}

for size in 1024x700 1600x1000 2560x1440; do
  for theme in light dark; do
    shot chat "$theme" "$size" # the fragmentation heatmap at the front
    shot compare "$theme" "$size" --compare --tab compare
    shot kv-quant "$theme" "$size" --show kv-quant
    one_chat "$theme" "$size"
    server_shot "$theme" "$size"
  done
done
