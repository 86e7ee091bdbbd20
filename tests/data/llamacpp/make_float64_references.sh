#!/bin/sh
# Regenerates the float64 references beside llama.cpp's (tests/data/README.md):
# for each model of models.txt in F16, the model's exact next-token
# log-probabilities over the same 640 tokens as llama.cpp's <arch>-f16.txt
# (prompt.txt, then llama.cpp's greedy tokens), computed in double by
# kvscope_float64_forward (tests/runtime/float64_forward.cpp), with no f16
# rounding of activations or K/V. test_llamacpp_match reads them to tell
# which of kvscope and llama.cpp is nearer the exact answer where the two
# differ. One file per model, <arch>-f16.float64.txt:
#   make-model ARGS          \
#   sha256 HEX                > the first three lines of <arch>-f16.txt: the
#   greedy ID ...            /  model and tokens these rows are of
#   ID:LOGPROB ... (x 640)   the top 4 after each position, 4 decimals
#
# Usage: tests/data/llamacpp/make_float64_references.sh [ARCHITECTURE...]
# (default: every one of models.txt; make_references.sh runs it for the
# architectures it regenerates). Needs a built kvscope-cli (KVSCOPE_CLI,
# default build/app/kvscope-cli) and kvscope_float64_forward
# (KVSCOPE_FLOAT64_FORWARD, default build/tests/runtime/kvscope_float64_forward);
# no llama.cpp. About 20 to 40 seconds per model.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../../build
cli=${KVSCOPE_CLI:-$build/app/kvscope-cli}
forward=${KVSCOPE_FLOAT64_FORWARD:-$build/tests/runtime/kvscope_float64_forward}
top_k=4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

float64_reference() { # ARCHITECTURE
    reference=$here/$1-f16.txt
    model=$work/$1-f16.gguf
    # shellcheck disable=SC2046 # the recorded arguments are words
    "$cli" make-model $(sed -n '1s/^make-model //p' "$reference") -o "$model" > /dev/null
    if [ "sha256 $(sha256sum "$model" | cut -d ' ' -f 1)" != "$(sed -n 2p "$reference")" ]; then
        echo "$1: make-model wrote another file than $reference was made from: rerun make_references.sh" >&2
        exit 1
    fi
    { cat "$here/prompt.txt"; sed -n '3s/^greedy //p' "$reference"; } | tr ',' ' ' > "$work/ids"
    { head -n 3 "$reference"; "$forward" "$model" "$work/ids" "$top_k"; } > "$work/$1.txt"
    lines=$(wc -l < "$work/$1.txt")
    [ "$lines" -eq 643 ] || { echo "$1: the float64 pass gave $lines lines, not 643" >&2; exit 1; }
    mv "$work/$1.txt" "$here/$1-f16.float64.txt"
    rm -f "$model"
    echo "$here/$1-f16.float64.txt"
}

grep -v '^#' "$here/models.txt" | while read -r arch _; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$arch"; then
        continue
    fi
    float64_reference "$arch"
done
