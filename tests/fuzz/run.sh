#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS [SURFACE...]: fuzzes each surface (gguf,
# tokenizer, chat_template, engine; default all) for SECONDS, one after the
# other, with ASan + UBSan. Builds the asan preset's fuzzers first.
# Inputs that add coverage go to build-asan/tests/fuzz/fuzz_SURFACE.corpus;
# a crash is written to build-asan/fuzz-findings/ and stops the run: copy
# it into tests/fuzz/corpus/SURFACE/ once fixed, which makes it a
# regression input that ctest (label fuzz) runs every time.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:?usage: $0 SECONDS [gguf|tokenizer|chat_template|engine ...]}"
shift
surfaces=("$@")
[ ${#surfaces[@]} -gt 0 ] || surfaces=(gguf tokenizer chat_template engine)

cd "$root"
cmake --preset asan >/dev/null
cmake --build --preset asan --target tests_fuzz
build="$root/build-asan"
mkdir -p "$build/fuzz-findings"
for s in "${surfaces[@]}"; do
  echo "== fuzz_$s for ${seconds}s" >&2
  "$build/tests/fuzz/fuzz_$s" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-findings/$s-" \
    "$build/tests/fuzz/fuzz_$s.corpus" "$root/tests/fuzz/corpus/$s"
done
