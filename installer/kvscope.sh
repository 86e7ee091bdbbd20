#!/usr/bin/env bash
# The two things a newcomer does on a fresh Debian/Ubuntu machine:
#   installer/kvscope.sh run    install what is missing, build, start the app
#                               (with no display: its main job headless, a
#                               synthetic model chatting under a workload,
#                               saved as a screenshot mid-generation)
#   installer/kvscope.sh test   install what is missing (the test tools too),
#                               build, run all tests; then the unit tests and
#                               fuzzers under ASan + UBSan, the threaded
#                               tests under TSan, and on x86-64 the kernels'
#                               and engine's tests cross-built for arm64 and
#                               run under qemu (CMakePresets.json: asan,
#                               tsan, arm64)
#   installer/kvscope.sh package  install what is missing (the package tools
#                               too), build what the .deb installs, make it
#                               (build/kvscope_VERSION_ARCH.deb) and lintian it
# Build folder: build/ (override with KVSCOPE_BUILD_DIR); the sanitizer
# builds: build-asan/, build-tsan/; the arm64 one: build-arm64/. Extra CMake options for build/:
# KVSCOPE_CMAKE_ARGS (e.g. "-DKVSCOPE_CUDA=OFF").
#
# On macOS (uname -s = Darwin; Homebrew, Xcode's command-line tools) the same
# three commands, written and reviewed for issue 35 but not run (no Mac here):
#   run      starts build/app/kvscope.app (a Mac always has a display)
#   test     all tests, then the asan preset without the fuzzers (Apple
#            clang has no libFuzzer) and the tsan preset
#   package  kvscope.app with kvscope-cli inside, its Qt and Homebrew
#            libraries copied in by macdeployqt, ad-hoc signed, in
#            build/kvscope_VERSION_ARCH.dmg
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KVSCOPE_BUILD_DIR:-$root/build}"
darwin=false
[ "$(uname -s)" = Darwin ] && darwin=true

# Parallel jobs: nproc is GNU coreutils; macOS counts CPUs with sysctl.
cpu_count() {
  if $darwin; then sysctl -n hw.ncpu; else nproc; fi
}

# macOS: Homebrew's keg-only openssl@3 and curl are not on CMake's search
# path by themselves; the prefix itself is there for the rest. (Without
# brew, deps.sh stops with the reason.)
if $darwin && command -v brew >/dev/null; then
  CMAKE_PREFIX_PATH="$(brew --prefix):$(brew --prefix openssl@3):$(brew --prefix curl)${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CMAKE_PREFIX_PATH
fi

configure() {
  # shellcheck disable=SC2086 # KVSCOPE_CMAKE_ARGS is a list of options
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${KVSCOPE_CMAKE_ARGS:-} >/dev/null
}

build_all() {
  "$root/installer/deps.sh" "$@"
  configure
  cmake --build "$build" -j "$(cpu_count)"
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

# macdeployqt exits 0 even when it leaves a library out: fail if anything in
# APP still loads a library from Homebrew's prefix instead of the bundle.
check_bundle() {
  local app="$1" left
  left="$(find "$app/Contents" -type f -exec otool -L {} + 2>/dev/null | grep -F "$(brew --prefix)/" || true)"
  if [ -n "$left" ]; then
    echo "kvscope: $app still loads from Homebrew (macdeployqt left these out):" >&2
    echo "$left" >&2
    return 1
  fi
}

# macOS: kvscope.app with kvscope-cli beside the app's binary, made
# self-contained by macdeployqt (-executable= points kvscope-cli at the
# same copied libraries), signed again ad hoc (macdeployqt's install-name
# edits break the linker's signatures, and Apple silicon runs no unsigned
# code), then a compressed disk image with an Applications link to drag it
# onto. Staged in build/dmg/, so build/app/kvscope.app stays as built.
package_macos() {
  local stage="$build/dmg" app version dmg
  cmake --build "$build" --target kvscope kvscope-cli -j "$(cpu_count)"
  rm -rf "$stage"
  mkdir -p "$stage"
  app="$stage/kvscope.app"
  ditto "$build/app/kvscope.app" "$app"
  cp "$build/app/kvscope-cli" "$app/Contents/MacOS/"
  "$(brew --prefix qt)/bin/macdeployqt" "$app" -executable="$app/Contents/MacOS/kvscope-cli" -always-overwrite
  check_bundle "$app"
  # kvscope-cli first: --deep signs nested frameworks and plugins, and a
  # second executable in Contents/MacOS is not one of those.
  codesign --force --sign - "$app/Contents/MacOS/kvscope-cli"
  codesign --force --deep --sign - "$app"
  ln -s /Applications "$stage/Applications"
  version="$(/usr/libexec/PlistBuddy -c 'Print :CFBundleShortVersionString' "$app/Contents/Info.plist")"
  dmg="$build/kvscope_${version}_$(uname -m).dmg"
  hdiutil create -volname kvscope -srcfolder "$stage" -format UDZO -ov "$dmg" >/dev/null
  echo "kvscope: the disk image is $dmg (open it, drag kvscope to Applications;" \
       "kvscope-cli is kvscope.app/Contents/MacOS/kvscope-cli)" >&2
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
    if $darwin; then
      exec "$build/app/kvscope.app/Contents/MacOS/kvscope" "$@"
    fi
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
    run_ctest "all tests" --test-dir "$build" --output-on-failure -j "$(cpu_count)"
    # Sanitizer builds: clang, no CUDA, no GUI, only the tests they run.
    cd "$root"
    if $darwin; then
      # Apple clang has no libFuzzer: the asan preset without its fuzzers
      # (build preset asan would ask for tests_fuzz, which is then absent).
      echo "kvscope: macOS: the fuzzers are skipped (Apple clang has no libFuzzer)" >&2
      cmake --preset asan -DKVSCOPE_FUZZ=OFF >/dev/null
      cmake --build build-asan --target tests_unit -j "$(cpu_count)"
      run_ctest asan --preset asan -j "$(cpu_count)"
      cmake --preset tsan >/dev/null
      cmake --build --preset tsan -j "$(cpu_count)"
      run_ctest tsan --preset tsan -j "$(cpu_count)"
      exit 0
    fi
    # On x86-64 also the arm64 cross build's tests under qemu (every NEON
    # path); an ARM machine ran those natively above.
    presets=(asan tsan)
    [ "$(uname -m)" = x86_64 ] && presets+=(arm64)
    for preset in "${presets[@]}"; do
      cmake --preset "$preset" >/dev/null
      cmake --build --preset "$preset" -j "$(nproc)"
      run_ctest "$preset" --preset "$preset" -j "$(nproc)"
    done
    ;;
  package)
    "$root/installer/deps.sh" --package
    configure
    if $darwin; then
      package_macos
      exit 0
    fi
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
