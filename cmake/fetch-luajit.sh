#!/bin/sh
# Fetches Debian's LuaJIT source package (with Debian's patches applied)
# into DEST, default third_party/luajit, unless it is already there.
#
# Why pawl builds its own LuaJIT: job code must be stoppable when it runs
# past its timeout, also inside a loop the JIT has compiled. Debian's
# LuaJIT builds check for hooks only in the interpreter, so a compiled
# `while true do end` can never be interrupted. Built with
# -DLUAJIT_ENABLE_CHECKHOOK, compiled code checks the hook mask at every
# loop iteration (no measurable cost: bench/RESULTS.md). The source is
# Debian's own package, the same version and patches as libluajit-5.1-dev.
set -eu
dest=${1:-third_party/luajit}
if [ -f "$dest/src/lj_record.c" ]; then
  exit 0
fi
if ! apt-get source --print-uris luajit >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "fetch-luajit: Debian source packages are not enabled; run as root" >&2
    exit 1
  fi
  # The same archive the binary packages come from, for sources.
  cat > /etc/apt/sources.list.d/pawl-deb-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt-get update -q
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get source -q luajit)
src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'luajit-*' | head -n 1)
if [ -z "$src" ] || [ ! -f "$src/src/lj_record.c" ]; then
  echo "fetch-luajit: apt-get source luajit gave no source tree" >&2
  exit 1
fi
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$src" "$dest"
echo "fetch-luajit: $(basename "$src") in $dest"
