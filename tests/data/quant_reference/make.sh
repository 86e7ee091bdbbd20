#!/bin/bash
# Regenerates the llama.cpp reference blocks in this folder (see
# tests/data/README.md): a synthetic F32 model from kvscope-cli make-model,
# quantized by llama.cpp's own llama-quantize --pure to each type below, and
# per type the first rows of one weight matrix: the block bytes
# llama-quantize wrote and the floats llama.cpp's ggml dequantizes them to
# (lldequant.c, linked against the peer's libggml-base); for MXFP4 also
# the floats ggml's quantizer was given (see below). The test
# (tests/model/test_quant_blocks.cpp) checks that kvscope's
# dequantize_row gives the same floats, bit for bit, from the same bytes,
# and where there are inputs, that its quantize_row gives the same bytes.
#
# Needs the llama.cpp peer (../shared/peers/llamacpp/build.sh, which also
# unpacks the source snapshot), a built kvscope-cli and python3.
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
# MXFP4: llama-quantize writes it only into expert tensors (MXFP4_MOE), so
# ggml's quantizer (ggml_quantize_chunk, what llama-quantize calls) runs on
# the same tensor's first 256 values and the edge blocks below; the file
# keeps those inputs too, for the test of kvscope's quantizer.
mxfp4_edges() {
    python3 - <<'PY'
import struct
def f32(v): return struct.unpack('<f', struct.pack('<f', v))[0]
def step(v, ulps):  # the float `ulps` floats away from positive float v
    return struct.unpack('<f', struct.pack('<I', struct.unpack('<I', struct.pack('<f', v))[0] + ulps))[0]
def below(k): return 2.0 ** k * (1 - 2.0 ** -24)  # the float below 2^k
blocks = []
# Scale 1 (max |x| = 8, e = 128): every midpoint between table values
# (ties go to the first entry), values a float either side of some, zeros.
ties = [8, -8, 0.0, -0.0, 0.25, -0.25, 6, -6]
for m in (0.5, 1.5, 2.5, 3.5, 5, 7):
    ties += [m, -m]
for m in (0.5, 5, 7):
    ties += [step(m, 1), step(m, -1), -step(m, 1), -step(m, -1)]
blocks.append(ties)
def spread(amax):  # amax and 31 values of both signs below it
    return [amax] + [f32(amax * (i + 1) / 32 * (-1) ** i) for i in range(31)]
# max |x| a float below a power of two (floor(log2f) is log2f's rounding),
# up to the largest float; exactly a power of two, down to those giving
# e < 0 (ggml converts them to uint8_t as x86 does); e = 0 and 1 with
# codes (subnormal scales); all zeros.
for k in (1, 24, 64, 100, 128, -100, -125):
    blocks.append(spread(below(k)))
for amax in (1.0, 2.0 ** -126, 2.0 ** -140, 2.0 ** -149, 1.5 * 2.0 ** -125, 1.5 * 2.0 ** -124):
    blocks.append(spread(amax))
blocks.append([0.0] * 32)
assert all(len(b) == 32 for b in blocks)
print(' '.join('%08x' % struct.unpack('<I', struct.pack('<f', v))[0] for b in blocks for v in b))
PY
}
{
    echo "# llama.cpp $(git -C "$L" rev-parse --short HEAD) ggml_quantize_chunk MXFP4: the first 256 values of $TENSOR of make-model --preset llama-42m --seed 7, then make.sh's edge blocks"
    {
        "$TMP/lldequant" "$TMP/f32.gguf" "$TENSOR" 512 | sed -n 's/^floats //p' | tr ' ' '\n' | head -n 256
        mxfp4_edges
    } | "$TMP/lldequant" quantize mxfp4
} >"$HERE/mxfp4.txt"
ls -l "$HERE"/*.txt
