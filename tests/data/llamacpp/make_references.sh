#!/bin/sh
# Regenerates llama.cpp's reference outputs that test_llamacpp_match
# compares kvscope with (tests/data/README.md). For each model of
# models.txt, in F16, Q8_0 and Q4_0 (gpt-oss also in MXFP4, its own files'
# layout: experts MXFP4, the rest Q8_0): kvscope-cli make-model writes the
# file, llama.cpp's llgen gives the 64 tokens it generates greedily after the
# 576 positions of prompt.txt, and lltop the top-4 log-probabilities after
# each position of the prompt followed by those 64 tokens (so a test can
# tell a near-tie where two engines' greedy choices part). One file per
# model and type, <architecture>-<type>.txt:
#   make-model ARGS          the command that wrote the model
#   sha256 HEX               of the model file: a test that regenerates a
#                            different file knows these references are stale
#   greedy ID ...            llgen's 64 tokens
#   ID:LOGPROB ... (x 640)   lltop's top 4 after each position of the prompt
#                            (576 rows), then of the greedy tokens (64)
# Then make_float64_references.sh gives the F16 files of the same
# architectures their float64 rows (<architecture>-f16.float64.txt), which
# are of these greedy tokens.
#
# Usage: tests/data/llamacpp/make_references.sh [ARCHITECTURE...]
# (default: every one of models.txt). Needs a built kvscope-cli (KVSCOPE_CLI,
# default build/app/kvscope-cli) and llama.cpp's harness tools
# (../shared/peers/llamacpp/build.sh; LLAMACPP_HARNESS, LLAMA_LIBDIR), and
# for the float64 rows a built kvscope_float64_forward.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cli=${KVSCOPE_CLI:-$here/../../../build/app/kvscope-cli}
harness=${LLAMACPP_HARNESS:-/tmp/refmodels/harness}
LLAMA_LIBDIR=${LLAMA_LIBDIR:-/tmp/refmodels/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}
export LLAMA_LIBDIR
seed=29
top_k=4
greedy_tokens=64
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
llamacpp_src=${LLAMACPP_SRC:-/tmp/refmodels/llama.cpp-src}
gcc -O2 -std=c11 -o "$work/llself" "$here/llself.c" -I"$llamacpp_src/include" -I"$llamacpp_src/ggml/include" \
    -L"$LLAMA_LIBDIR" -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so -Wl,-rpath,"$LLAMA_LIBDIR" -lm

# The prompt: 576 token ids drawn uniformly from 3..2047 (no <unk>, <s>,
# </s>), the same for every model; written once, kept.
if [ ! -f "$here/prompt.txt" ]; then
    python3 -c 'import random; r = random.Random(29); print(",".join(str(r.randrange(3, 2048)) for _ in range(576)))' \
        > "$here/prompt.txt"
fi
prompt=$(cat "$here/prompt.txt")

# llama.cpp against itself on a quantized file (llself.c: its batch and
# one-token-at-a-time logits over the same 640 tokens): the line
# "<file> TOP1 KL" of self_consistency.txt, the bar test_llamacpp_match
# holds kvscope to on that file.
self_consistency() { # MODEL FILE-NAME GREEDY-IDS
    result=$(LLAMA_LIBDIR=$LLAMA_LIBDIR "$work/llself" "$1" 2 "$prompt,$(echo "$3" | tr ' ' ',')" | sed -n 's/^self //p')
    touch "$here/self_consistency.txt"
    { grep -v "^$2 " "$here/self_consistency.txt" | grep -v '^#' || true; echo "$2 $result"; } | sort > "$work/self.txt"
    { echo "# llama.cpp's batch against its one-token-at-a-time logits (llself.c): file, top-1 agreement, mean KL"
      cat "$work/self.txt"; } > "$here/self_consistency.txt"
}

reference() { # ARCHITECTURE TYPE MAKE-MODEL-ARGS...
    arch=$1 type=$2
    shift 2
    model=$work/$arch-$type.gguf
    "$cli" make-model "$@" --type "$type" --seed "$seed" -o "$model" > /dev/null
    {
        echo "make-model $* --type $type --seed $seed"
        echo "sha256 $(sha256sum "$model" | cut -d ' ' -f 1)"
        greedy=$("$harness/llgen" "$model" "$greedy_tokens" 2 -i "$prompt" 2> /dev/null | sed -n 's/^GEN //p')
        echo "greedy $greedy"
        "$harness/lltop" "$model" 2 "$top_k" "$prompt,$(echo "$greedy" | tr ' ' ',')" |
            awk '{ line = ""; for (i = 3; i <= NF; ++i) { split($i, t, ":");
                   line = line (i > 3 ? " " : "") sprintf("%s:%.3f", t[1], t[2]) } print line }'
    } > "$work/$arch-$type.txt"
    if [ "$type" != f16 ]; then
        self_consistency "$model" "$arch-$type" "$greedy"
    fi
    lines=$(wc -l < "$work/$arch-$type.txt")
    [ "$lines" -eq 643 ] || { echo "$arch $type: llama.cpp gave $lines lines, not 643" >&2; exit 1; }
    mv "$work/$arch-$type.txt" "$here/$arch-$type.txt"
    rm -f "$model"
    echo "$here/$arch-$type.txt"
}

grep -v '^#' "$here/models.txt" | while read -r arch args; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$arch"; then
        continue
    fi
    types="f16 q8_0 q4_0"
    if [ "$arch" = gpt-oss ]; then
        types="$types mxfp4"
    fi
    for type in $types; do
        # shellcheck disable=SC2086 # the arguments are words
        reference "$arch" "$type" $args
    done
done
"$here/make_float64_references.sh" "$@"
