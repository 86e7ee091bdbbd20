#!/usr/bin/env bash
# The official OpenAI Node SDK (npm's `openai`, pinned) runs session.mjs
# against a `kvscope-cli serve` of a tiny synthetic Qwen3 with its real chat
# template and an API key. Exit 77 (ctest: skipped) with the reason where
# node or npm is missing or the npm registry cannot be reached.
#
#   run_session.sh KVSCOPE_CLI CHAT_TEMPLATE WORK_DIR
set -euo pipefail
cli=$1 template=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
sdk_version=7.60.0

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node and npm are not installed (Debian: nodejs npm)"
  exit 77
fi
mkdir -p "$work"
sdk=$work/sdk-$sdk_version # kept between runs: one download per build folder
if [[ ! -f $sdk/node_modules/openai/package.json ]]; then
  if ! timeout 120 npm install --no-audit --no-fund --prefix "$sdk" "openai@$sdk_version" >"$work/npm.log" 2>&1; then
    echo "SKIP: npm could not install openai@$sdk_version (is the registry reachable?):"
    tail -5 "$work/npm.log"
    exit 77
  fi
fi
cp "$here/session.mjs" "$sdk/" # node finds 'openai' in the node_modules beside the script

model=$work/qwen3-tiny.gguf
"$cli" --log-level warn make-model --preset qwen3-0.6b --layers 1 --vocab 512 --ffn 64 \
  --context 4096 --chat-template "$template" -o "$model" >/dev/null
log=$work/serve.log
"$cli" --log-level warn serve --model "$model" --port 0 --api-key test-key >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
url=
for _ in $(seq 300); do # until it says where it listens (it loads first)
  url=$(grep -o 'listening on http://[0-9.:]*' "$log" | cut -d' ' -f3 || true)
  [[ -n $url ]] && break
  kill -0 $server 2>/dev/null || { cat "$log"; echo "FAILED: the server exited"; exit 1; }
  sleep 0.1
done
[[ -n $url ]] || { cat "$log"; echo "FAILED: the server did not start"; exit 1; }
node "$sdk/session.mjs" "$url" test-key
