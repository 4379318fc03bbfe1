#!/bin/sh
# private_archive.sh OUT INTERNAL.a LUAJIT.a LD OBJCOPY AR NM: makes the
# libpawl.a that embedders link (and `make install` installs).
#
# A game that scripts in Lua links a LuaJIT of its own. Had libpawl.a left
# its LuaJIT's lua_*, luaL_*, luaJIT_* and lj_* names global, the linker
# would merge the two copies by link order: with the game's first, pawl
# would run on a LuaJIT without its patches (no check hook: a compiled
# runaway loop never stops), with pawl's first, the game on pawl's. So
# the archive holds one relocatable object: libpawl's objects and every
# object of its LuaJIT linked together (ld -r), pawl's calls into LuaJIT
# bound there, and then every definition but the public pawl_ functions
# made local (objcopy --keep-global-symbols, and --localize-hidden for the
# hidden ones): the same names libpawl.so exports, nothing a program's
# own symbols can clash with. Undefined references (libc, SQLite, libuv,
# ...) stay as they are.
set -eu
out=$1 internal=$2 luajit=$3 ld=$4 objcopy=$5 ar=$6 nm=$7
tmp=$(mktemp -d "$out.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
obj=$tmp/libpawl.o
"$ld" -r -o "$obj" --whole-archive "$internal" "$luajit" --no-whole-archive
# The public functions: those include/pawl.h declares (pawl_ then a
# letter; internal names are pawl__).
"$nm" -g --defined-only "$obj" | awk 'NF == 3 && $3 ~ /^pawl_[a-z]/ { print $3 }' |
  sort -u > "$tmp/public"
if ! grep -qx pawl_open "$tmp/public"; then
  echo "private_archive.sh: $internal defines no pawl_open" >&2
  exit 1
fi
"$objcopy" --localize-hidden --keep-global-symbols="$tmp/public" "$obj"
"$ar" rcs "$tmp/libpawl.a" "$obj"
mv -f "$tmp/libpawl.a" "$out"
