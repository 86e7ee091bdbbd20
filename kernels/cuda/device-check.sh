#!/usr/bin/env bash
# The prepared GPU check of the CUDA kernels, for a short device lease:
#
#   bash kernels/cuda/device-check.sh        (from the repository root)
#
# 1. builds kernels/cuda/check (the CUDA and CPU kernels, the gpu tests and
#    kvscope-cuda-bench; no Qt, spdlog or JSON needed) for sm_90, Release,
#    Ninja, -j16, into build/device-check/ (KVSCOPE_DEVICE_BUILD overrides);
# 2. prints each kernel's registers and shared memory (cuobjdump), then
#    runs the gpu tests (ctest -L gpu): every CUDA kernel against its CPU
#    twin;
# 3. runs each gpu test again under compute-sanitizer memcheck;
# 4. runs kvscope-cuda-bench: decode attention, f16/int8/int4 KV, contexts
#    1k/8k/32k, batch 32, Llama-3-8B geometry, paged vs contiguous, against
#    a device-to-device copy measured in the same run.
# Every step runs even when an earlier one fails (one lease, all the
# evidence); the exit status is non-zero if any failed. Output goes to
# stdout and, when $OUT is set, to $OUT/device-check.log. Budget: the
# steps' timeouts add up to under 8 minutes (45+110+20+60+140+90 s); expected
# about 3 on one H200 (16 cores).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${KVSCOPE_DEVICE_BUILD:-$root/build/device-check}"
log=/dev/null
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  log="$OUT/device-check.log"
fi
exec > >(tee "$log") 2>&1

export PATH="/usr/local/cuda/bin:$PATH"
export KVSCOPE_REQUIRE_GPU=1 # here a gpu test that finds no device fails instead of skipping
failed=()
step() { # step NAME TIMEOUT_S COMMAND...: runs and records the outcome
  local name="$1" limit="$2"
  shift 2
  echo
  echo "=== $name ($(date -u +%H:%M:%S), limit ${limit}s)"
  local start=$SECONDS
  timeout "$limit" "$@"
  local rc=$?
  local outcome="exit $rc"
  [ "$rc" -eq 124 ] && outcome="timed out after ${limit}s"
  echo "=== $name: $outcome after $((SECONDS - start))s"
  [ "$rc" -eq 0 ] || failed+=("$name ($outcome)")
  return "$rc"
}

echo "=== kvscope CUDA device check, $(date -u)"
missing=()
for tool in nvcc cmake ninja; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
command -v c++ >/dev/null || command -v g++ >/dev/null || missing+=("c++ (g++ or clang++)")
if [ "${#missing[@]}" -gt 0 ]; then
  echo "device-check: missing on this machine: ${missing[*]} (the check needs nvcc, cmake >= 3.25, ninja and a C++20 compiler)"
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
nvcc --version | tail -1
cmake --version | head -1
{ c++ --version || g++ --version; } 2>/dev/null | head -1

step configure 45 cmake -S "$root/kernels/cuda/check" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 || { echo "device-check: configure failed"; exit 1; }
step build 110 cmake --build "$build" -j 16 || { echo "device-check: build failed"; exit 1; }

# Registers, shared memory and spills per kernel: the occupancy behind the
# bench's numbers (cuobjdump ships with the toolkit).
if command -v cuobjdump >/dev/null; then
  step "kernel resources" 20 bash -c 'for f in "$@"; do cuobjdump -res-usage "$f" | grep -B1 REG || true; done' _ \
    "$build/gpu/kvscope-cuda-bench" "$build/gpu/test_cuda_layer_ops"
fi

step "gpu tests" 60 ctest --test-dir "$build" -L gpu --output-on-failure

if command -v compute-sanitizer >/dev/null; then
  for t in test_cuda_copy_blocks test_cuda_kv_write test_cuda_layer_ops test_cuda_paged_attention; do
    limit=30
    [ "$t" = test_cuda_paged_attention ] && limit=50
    step "memcheck $t" "$limit" compute-sanitizer --tool memcheck --error-exitcode 1 "$build/gpu/$t"
  done
else
  echo "device-check: compute-sanitizer not found; memcheck skipped"
  failed+=("memcheck (no compute-sanitizer)")
fi

step "kvscope-cuda-bench" 90 "$build/gpu/kvscope-cuda-bench"

echo
if [ "${#failed[@]}" -eq 0 ]; then
  echo "=== device check passed"
  exit 0
fi
echo "=== device check: failed steps:"
printf '  %s\n' "${failed[@]}"
exit 1
