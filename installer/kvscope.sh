#!/usr/bin/env bash
# The two things a newcomer does on a fresh Debian/Ubuntu machine:
#   installer/kvscope.sh run    install what is missing, build, start the app
#                               (with no display: its main job headless, a
#                               synthetic model chatting under a workload,
#                               saved as a screenshot mid-generation)
#   installer/kvscope.sh test   install what is missing (the test tools too),
#                               build, run all tests; then the unit tests and
#                               fuzzers under ASan + UBSan and the threaded
#                               tests under TSan (CMakePresets.json: asan, tsan)
#   installer/kvscope.sh package  install what is missing (the package tools
#                               too), build what the .deb installs, make it
#                               (build/kvscope_VERSION_ARCH.deb) and lintian it
# Build folder: build/ (override with KVSCOPE_BUILD_DIR); the sanitizer
# builds: build-asan/, build-tsan/. Extra CMake options for build/:
# KVSCOPE_CMAKE_ARGS (e.g. "-DKVSCOPE_CUDA=OFF").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KVSCOPE_BUILD_DIR:-$root/build}"

configure() {
  # shellcheck disable=SC2086 # KVSCOPE_CMAKE_ARGS is a list of options
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${KVSCOPE_CMAKE_ARGS:-} >/dev/null
}

build_all() {
  "$root/installer/deps.sh" "$@"
  configure
  cmake --build "$build" -j "$(nproc)"
}

# lintian on the .deb: its report, then failure on any error (docs/install.md
# lists the tags that stay, and why).
lint_package() {
  local deb="$1" report
  report="$(lintian "$deb" 2>&1 | grep -v 'root privileges is not recommended' || true)"
  [ -z "$report" ] || echo "$report" >&2
  if grep -q '^E: ' <<<"$report"; then
    echo "kvscope: lintian found errors in $deb" >&2
    return 1
  fi
}

# ctest with ARGS, then how many tests it skipped (a Qt Test that skipped
# all of its functions, a gpu test without a GPU, a model test without the
# shared models), which ctest lists but does not count.
run_ctest() {
  local what="$1" log rc=0
  shift
  log="$(mktemp)"
  ctest "$@" | tee "$log" || rc=$?
  echo "kvscope: $what: $(grep -c '(Skipped)$' "$log" || true) tests skipped" >&2
  rm -f "$log"
  return "$rc"
}

case "${1:-}" in
  run)
    build_all
    shift
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
      exec "$build/app/kvscope" "$@"
    fi
    # kvscope's main job, with no one to watch: a model (random weights of
    # llama-110m's shape, as the start page's "Synthetic model" builds)
    # answers a chat message while a workload of 16 requests shares its KV
    # pool, and the window is saved mid-generation.
    echo "kvscope: no display; running headless." >&2
    "$build/app/kvscope" --synthetic llama-110m --prompt "Tell me how a paged KV cache works." \
      --workload 16 --after-ms 4000 --screenshot "$build/kvscope.png"
    echo "kvscope: a synthetic llama-110m chatting with 16 requests running, mid-generation" \
         "(its block map, fragmentation heatmap and figures): $build/kvscope.png" >&2
    ;;
  test)
    build_all --test
    run_ctest "all tests" --test-dir "$build" --output-on-failure -j "$(nproc)"
    # Sanitizer builds: clang, no CUDA, no GUI, only the tests they run.
    cd "$root"
    for preset in asan tsan; do
      cmake --preset "$preset" >/dev/null
      cmake --build --preset "$preset" -j "$(nproc)"
      run_ctest "$preset" --preset "$preset" -j "$(nproc)"
    done
    ;;
  package)
    "$root/installer/deps.sh" --package
    configure
    cmake --build "$build" --target deb -j "$(nproc)"
    # shellcheck disable=SC2012 # the newest of our own kvscope_VERSION_ARCH.deb names
    deb="$(ls -t "$build"/kvscope_*.deb | head -n 1)"
    lint_package "$deb"
    echo "kvscope: the package is $deb (install it: sudo apt install $deb)" >&2
    ;;
  *)
    echo "usage: $0 run|test|package" >&2
    exit 2
    ;;
esac
