#!/usr/bin/env bash
# The two things a newcomer does on a fresh Debian/Ubuntu machine:
#   installer/kvscope.sh run    install what is missing, build, start the app
#                               (with no display: run its main job headless)
#   installer/kvscope.sh test   install what is missing, build, run all tests
# Build folder: build/ (override with KVSCOPE_BUILD_DIR). Extra CMake
# options: KVSCOPE_CMAKE_ARGS (e.g. "-DKVSCOPE_CUDA=OFF").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KVSCOPE_BUILD_DIR:-$root/build}"

build_all() {
  "$root/installer/deps.sh"
  # shellcheck disable=SC2086 # KVSCOPE_CMAKE_ARGS is a list of options
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${KVSCOPE_CMAKE_ARGS:-} >/dev/null
  cmake --build "$build" -j "$(nproc)"
}

case "${1:-}" in
  run)
    build_all
    shift
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
      exec "$build/app/kvscope" "$@"
    fi
    echo "kvscope: no display; running headless." >&2
    "$build/app/kvscope-cli" calc --preset llama-3-8b --tokens 8192 --seqs 16 --gpu h100-80gb
    "$build/app/kvscope" --scenario abc --screenshot "$build/kvscope.png"
    echo "kvscope: the allocator playground after the A/B/C scenario is in $build/kvscope.png" >&2
    ;;
  test)
    build_all
    ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
    ;;
  *)
    echo "usage: $0 run|test" >&2
    exit 2
    ;;
esac
