#!/usr/bin/env bash
# Remakes the layout screenshots in this folder: the chat with a workload,
# the Compare A/B tab and the KV quantization dock, at 1024x700, 1600x1000
# and 2560x1440, light and dark (18 PNGs), rendered offscreen by the app.
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

for size in 1024x700 1600x1000 2560x1440; do
  for theme in light dark; do
    shot chat "$theme" "$size" # the fragmentation heatmap at the front
    shot compare "$theme" "$size" --compare --tab compare
    shot kv-quant "$theme" "$size" --show kv-quant
  done
done
