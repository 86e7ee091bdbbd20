#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages kvscope needs to build, test and run,
# and nothing when they are all present already. Package names and why each
# is needed: ../shared/design/TOOLCHAIN.md and docs/building.md.
# --package adds what the .deb needs (installer/kvscope.sh package): rsvg-convert
# and help2man draw the icons and write the man pages at build time,
# desktop-file-validate and appstreamcli check the desktop files, lintian the
# package. --test adds what only `installer/kvscope.sh test` needs: clang and
# its sanitizer and libFuzzer runtimes (the asan and tsan presets), Python's
# jinja2 (test_chat_template_jinja compares kvscope's chat-template renders
# with it), the package tools but lintian (the package test builds and
# checks the .deb), and the arm64 cross build (install_arm64 below).
#
# On macOS (uname -s = Darwin) it installs Homebrew formulae instead, by
# install_homebrew below; the Debian part after it is not reached. Written
# and reviewed for issue 35, not run: there is no Mac here.
set -euo pipefail

# The Homebrew formulae kvscope needs, installed when `brew list --versions`
# does not know them. zlib is the SDK's; clang, iconutil, codesign and hdiutil
# are Xcode's (xcode-select --install). QCustomPlot has no formula: CMake
# builds its pinned release (cmake/KvscopeQCustomPlotFetch.cmake). openssl@3
# and curl are keg-only: installer/kvscope.sh puts them on CMAKE_PREFIX_PATH.
# librsvg draws the app's icon (rsvg-convert); Debian's package tools
# (help2man, lintian, appstream) have no part in a .dmg. --test adds no
# compiler: the sanitizer builds use Apple clang, which has ASan, UBSan and
# TSan but no libFuzzer, so the fuzzers stay Linux's (kvscope.sh test says
# so); Homebrew's llvm has libFuzzer, but its libc++ is not the one the
# Homebrew bottles (Qt, spdlog, fmt) were built against.
install_homebrew() {
  local formulae=(
    cmake ninja pkgconf
    qt spdlog nlohmann-json cpp-httplib boost prometheus-cpp
    cppzmq zeromq msgpack-cxx curl openssl@3
  )
  case "${1:-}" in
    --test | --package) formulae+=(librsvg) ;;
  esac
  command -v brew >/dev/null ||
    { echo "kvscope: Homebrew is needed on macOS (https://brew.sh)" >&2; exit 1; }
  local missing=() f
  for f in "${formulae[@]}"; do
    brew list --versions "$f" >/dev/null || missing+=("$f")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "kvscope: installing ${missing[*]}" >&2
    brew install --quiet "${missing[@]}"
  fi
  # test_chat_template_jinja compares with Python's jinja2 and skips without
  # it; a Homebrew or system python3 refuses pip installs (PEP 668), so this
  # only says how to get it.
  if [ "${1:-}" = --test ] && ! python3 -c 'import jinja2' 2>/dev/null; then
    echo "kvscope: python3 has no jinja2: test_chat_template_jinja will be skipped" \
         "(a venv with jinja2 first on PATH runs it)" >&2
  fi
}
if [ "$(uname -s)" = Darwin ]; then
  install_homebrew "$@"
  exit 0
fi

packages=(
  cmake ninja-build g++ pkg-config dpkg-dev file fonts-dejavu-core
  qt6-base-dev libqcustomplot-dev libqcustomplot2.1-qt6
  libspdlog-dev nlohmann-json3-dev
  libcpp-httplib-dev libboost-dev zlib1g-dev prometheus-cpp-dev
  cppzmq-dev libzmq3-dev libmsgpack-cxx-dev
  libcurl4-openssl-dev libssl-dev
  xvfb xauth
)
package_tools=(librsvg2-bin help2man desktop-file-utils appstream)
case "${1:-}" in
  --test) packages+=(clang libclang-rt-dev python3-jinja2 "${package_tools[@]}") ;;
  --package) packages+=("${package_tools[@]}" lintian) ;;
esac

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

# The arm64 cross build (CMakePresets.json's arm64, run by `kvscope.sh
# test`): Debian's cross compiler, qemu-user to run what it builds, and the
# arm64 libraries the kernels' and engine's tests load (multiarch). Qt's
# arm64 development files (CMake packages, headers, mkspecs) are unpacked
# into build-arm64/qt6-arm64 rather than installed: qt6-base-dev:arm64
# would pull ~190 arm64 packages, its GUI stack among them.
arm64_packages=(g++-aarch64-linux-gnu qemu-user libc6:arm64 libqt6core6:arm64 libqt6test6:arm64
                libspdlog-dev:arm64 libfmt-dev:arm64)
root="$(cd "$(dirname "$0")/.." && pwd)"
qt_arm64="$root/build-arm64/qt6-arm64"
arm64_cross=false
[ "${1:-}" = --test ] && [ "$(uname -m)" = x86_64 ] && arm64_cross=true
if $arm64_cross; then
  packages+=("${arm64_packages[@]}")
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "kvscope: adding the arm64 architecture (dpkg --add-architecture arm64)" >&2
    $sudo dpkg --add-architecture arm64
    $sudo apt-get update -qq
  fi
fi

# Unpacks the arm64 Qt files build-arm64 configures against, once per Qt
# version (the stamp names it).
unpack_qt_arm64() {
  local version stamp="$qt_arm64/.debian-version" tmp deb
  version="$(dpkg-query -W -f='${Version}' libqt6core6:arm64)"
  [ "$(cat "$stamp" 2>/dev/null)" = "$version" ] && return 0
  echo "kvscope: unpacking Qt $version's arm64 development files into $qt_arm64" >&2
  tmp="$(mktemp -d)"
  (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root \
     "qt6-base-dev:arm64=$version" "qmake6:arm64=$version" \
     "libqt6core6:arm64=$version" "libqt6test6:arm64=$version")
  rm -rf "$qt_arm64"
  mkdir -p "$qt_arm64"
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$qt_arm64"; done
  rm -rf "$tmp"
  echo "$version" >"$stamp"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "kvscope: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if $arm64_cross; then
  unpack_qt_arm64
fi
