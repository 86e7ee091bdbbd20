#!/bin/bash
# Regenerates the llama.cpp reference blocks in this folder (see
# tests/data/README.md): a synthetic F32 model from kvscope-cli make-model,
# quantized by llama.cpp's own llama-quantize --pure to each type below, and
# per type the first rows of one weight matrix: the block bytes
# llama-quantize wrote and the floats llama.cpp's ggml dequantizes them to
# (lldequant.c, linked against the peer's libggml-base). The test
# (tests/model/test_quant_reference.cpp) checks that kvscope's
# dequantize_row gives the same floats, bit for bit, from the same bytes.
#
# Needs the llama.cpp peer (../shared/peers/llamacpp/build.sh, which also
# unpacks the source snapshot) and a built kvscope-cli.
#   tests/data/quant_reference/make.sh [build/app/kvscope-cli]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CLI=$(realpath "${1:-$HERE/../../../build/app/kvscope-cli}")
W=${W:-/tmp/refmodels}
B="$W/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
L="$W/llama.cpp-src"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

gcc -O2 -std=c11 -o "$TMP/lldequant" "$HERE/lldequant.c" -I"$L/ggml/include" \
    -L"$B" -l:libggml-base.so -Wl,-rpath,"$B"
# llama-42m: rows of 512 values, whole super-blocks for the K-quants.
"$CLI" make-model --preset llama-42m --type f32 --seed 7 -o "$TMP/f32.gguf" >/dev/null
TENSOR=blk.0.attn_q.weight
for TYPE in Q4_1 Q5_1 IQ4_NL Q2_K Q3_K IQ4_XS; do
    # one row of 512 values: 16 blocks of 32; two rows: 4 super-blocks
    case $TYPE in Q2_K | Q3_K | IQ4_XS) VALUES=1024 ;; *) VALUES=512 ;; esac
    "$W/harness/llama-quantize" --pure "$TMP/f32.gguf" "$TMP/$TYPE.gguf" "$TYPE" 2 >/dev/null 2>&1
    LOWER=$(echo "$TYPE" | tr 'A-Z' 'a-z')
    {
        echo "# llama.cpp $(git -C "$L" rev-parse --short HEAD) llama-quantize --pure, $TENSOR of make-model --preset llama-42m --seed 7"
        "$TMP/lldequant" "$TMP/$TYPE.gguf" "$TENSOR" "$VALUES"
    } >"$HERE/$LOWER.txt"
done
ls -l "$HERE"/*.txt
