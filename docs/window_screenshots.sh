#!/usr/bin/env bash
# Retakes docs/app.md's sliding-window screenshots: a Gemma 3 1B chat past
# its 512-token window, light and dark (docs/app-gemma3-window*.png), and
# Compare A/B of freeing what leaves the window against --swa-full with a
# workload (docs/app-compare-swa-full.png, the window cut to 128 tokens so
# the workload's requests pass it).
#   docs/window_screenshots.sh [BUILD_DIR]     (default build)
# Models: make-model's gemma3-1b with random Q8_0 weights, an 8,192-token
# vocabulary (the KV cache does not depend on it) and Gemma 3's chat
# template. Each run gets a fresh settings folder holding the pool size.
# The shots are taken --after-ms into the run, mid-generation: on a slower
# or faster machine than the 2-core one they were made on, adjust them.
# Needs no display (QT_QPA_PLATFORM=offscreen).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cli=$build/app/kvscope-cli
app=$build/app/kvscope
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export QT_QPA_PLATFORM=offscreen
template=tests/data/chat_templates/google-gemma-3-1b-it.jinja

for window in 512 128; do
  "$cli" make-model --preset gemma3-1b --vocab 8192 --type q8_0 --context 8192 --window $window \
    --chat-template $template -o "$tmp/gemma3-w$window.gguf"
done

# A settings folder whose engine has a pool of $1 blocks.
settings() {
  local dir=$tmp/settings-$1-$RANDOM
  mkdir -p "$dir/kvscope"
  printf '[engine]\nconfig="{\\"num_blocks\\": %s}"\n' "$1" >"$dir/kvscope/kvscope.conf"
  echo "$dir"
}

story="Tell me a long story about a lighthouse keeper who finds a strange map in a bottle, with many details about the sea, the storms, the old charts and the town by the harbour."
for theme in light dark; do
  suffix=$([ $theme = dark ] && echo -dark || true)
  XDG_CONFIG_HOME=$(settings 2048) "$app" --model "$tmp/gemma3-w512.gguf" --prompt "$story" \
    --prompt "Go on: what does the map lead to, and who follows her there?" --after-ms 33000 \
    --window-size 1600x1000 --theme $theme --screenshot docs/app-gemma3-window$suffix.png
done
XDG_CONFIG_HOME=$(settings 1200) "$app" --model "$tmp/gemma3-w128.gguf" --prompt "$story" --compare --tab compare \
  --workload 12 --after-ms 40000 --window-size 1600x1000 --theme light --screenshot docs/app-compare-swa-full.png
