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
# with it), and the package tools but lintian (the package test builds and
# checks the .deb).
set -euo pipefail

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

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "kvscope: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
