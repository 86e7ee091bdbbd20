#!/usr/bin/env bash
# tests/package/test_package.sh BUILD_DIR VERSION SKIP_STATUS: builds the .deb
# (target deb), unpacks it into a temporary root and checks what it installs:
# the binaries run from there, the desktop files validate, the man pages, the
# unit and its conffile are in it, and nothing needs the CUDA runtime.
set -euo pipefail
build=$1 version=$2 skipped=$3

fail() { echo "test_package: FAIL: $*" >&2; exit 1; }

for tool in dpkg-deb desktop-file-validate appstreamcli help2man rsvg-convert; do
  command -v "$tool" >/dev/null ||
    { echo "test_package: skipped: $tool is not installed (installer/deps.sh --package)"; exit "$skipped"; }
done

cmake --build "$build" --target deb
deb="$build/kvscope_${version}_$(dpkg --print-architecture).deb"
[[ -f $deb ]] || fail "no $deb after building the deb target"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"
cd "$root"

# What it installs, by path.
id=io.github.kvscope.kvscope
for f in usr/bin/kvscope usr/bin/kvscope-cli \
         usr/share/man/man1/kvscope.1.gz usr/share/man/man1/kvscope-cli.1.gz \
         usr/share/applications/$id.desktop usr/share/metainfo/$id.metainfo.xml \
         usr/share/icons/hicolor/scalable/apps/$id.svg usr/share/doc/kvscope/changelog.gz \
         usr/share/doc/kvscope/copyright \
         usr/lib/systemd/system/kvscope-serve.service etc/default/kvscope-serve; do
  [[ -s $f ]] || fail "the package has no $f"
done
for size in 16 22 24 32 48 64 128 256 512; do
  file "usr/share/icons/hicolor/${size}x$size/apps/$id.png" | grep -q "PNG image data, $size x $size" ||
    fail "no ${size}x$size PNG icon"
done
dpkg-deb --info "$deb" conffiles | grep -qx /etc/default/kvscope-serve || fail "/etc/default/kvscope-serve is not a conffile"

# The metadata validates and agrees with itself and the build.
desktop-file-validate "usr/share/applications/$id.desktop"
appstreamcli validate --no-net "usr/share/metainfo/$id.metainfo.xml"
grep -qx "Icon=$id" "usr/share/applications/$id.desktop" || fail "the desktop entry's Icon is not $id"
grep -q "<release version=\"$version\"" "usr/share/metainfo/$id.metainfo.xml" || fail "the metainfo has no release $version"
for page in kvscope kvscope-cli; do
  zcat "usr/share/man/man1/$page.1.gz" | grep -q "^\.TH ${page^^} \"1\"" || fail "$page.1.gz is not a man page"
done
zcat usr/share/man/man1/kvscope-cli.1.gz | grep -q 'serve' || fail "kvscope-cli.1 does not describe serve"
zcat usr/share/doc/kvscope/changelog.gz | grep -Eq '^ -- [^<]+ <[^>]+@[^>]+>  [A-Z][a-z]{2}, ' ||
  fail "the changelog's trailer has no maintainer and date"
grep -q '^ExecStart=/usr/bin/kvscope-cli serve ' usr/lib/systemd/system/kvscope-serve.service || fail "the unit does not run kvscope-cli serve"

# The binaries: stripped, no absolute library search path (Qt's standard
# setup leaves a relative $ORIGIN one), no CUDA runtime to find.
for bin in usr/bin/kvscope usr/bin/kvscope-cli; do
  file "$bin" | grep -q ', stripped' || fail "$bin is not stripped"
  ! readelf -d "$bin" | grep -Eq 'R(UN)?PATH.*[[:]/' || fail "$bin searches an absolute library path"
  ! readelf -d "$bin" | grep -q 'libcudart' || fail "$bin needs libcudart (the CUDA runtime links statically)"
done
! dpkg-deb --field "$deb" Depends | grep -qi cuda || fail "Depends names a CUDA package"

# Run from the unpacked root, not the build tree.
calc=$(usr/bin/kvscope-cli calc --preset llama-3-8b --tokens 8192 --seqs 16 --gpu h100-80gb)
grep -Eq '^f16 +128\.0 KiB +1\.00 GiB +16\.00 GiB ' <<<"$calc" ||
  fail "kvscope-cli calc: llama-3-8b's f16 KV is not 128 KiB a token, 16 GiB for 16 x 8192 tokens: $calc"
XDG_CONFIG_HOME="$root/config" QT_QPA_PLATFORM=offscreen usr/bin/kvscope --screenshot "$root/shot.png"
file "$root/shot.png" | grep -q 'PNG image data, 1280 x 800' || fail "kvscope --screenshot made no 1280x800 PNG"
# A blank window compresses to a few KiB; the start page with its text does not.
(($(stat -c %s "$root/shot.png") > 20000)) || fail "kvscope's screenshot is nearly empty ($(stat -c %s "$root/shot.png") bytes)"
echo "test_package: $deb installs and runs"
