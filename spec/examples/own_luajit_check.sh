#!/bin/sh
# own_luajit_check.sh BUILD_DIR SOURCE_DIR: the installed libpawl.a in a
# program that links a LuaJIT of its own (Debian's libluajit-5.1-dev or
# OpenResty's libluajit2-5.1-dev, whichever `make deps` installed: both
# give pkg-config's `luajit`) and names it FIRST, as a game that scripts
# in Lua does. Installs the build into a temporary prefix (cmake
# --install), then:
#  - nm of the installed libpawl.a shows no global definition but the
#    public pawl_ functions: none of lua_*, luaL_*, luaJIT_*, luaopen_*,
#    lj_* (pawl's LuaJIT is inside, private), nor pawl__ internals;
#  - examples/own_luajit.c, linked with the game's LuaJIT before
#    libpawl.a, is run in three builds: the game's LuaJIT shared
#    (libluajit-5.1.so), static (libluajit-5.1.a), and shared but named
#    last, after libpawl.a and what it needs. Each must show that the game's own lua_* calls reach
#    the game's LuaJIT (it nests coroutine resumes past pawl's limit),
#    that a job runs on pawl's (the same nesting fails with "C stack
#    overflow") and that compiled runaway loops with `timeout = 1` are
#    stopped at their timeout (own_luajit.c says how).
set -eu
build=$1 src=$2
# A sanitizer build's libraries need the program built with it too (CMake
# sets PAWL_EXAMPLE_CFLAGS then, as for example.install).
PAWL_EXAMPLE_CFLAGS=${PAWL_EXAMPLE_CFLAGS:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$prefix/lib/libpawl.a

# nm -g --defined-only on an archive: "ADDR TYPE NAME" per symbol, plus
# member headers and blank lines. AddressSanitizer's __odr_asan.NAME
# guards NAME: the name guarded is the one checked.
globals=$(nm -g --defined-only "$lib" | awk 'NF == 3 { print $3 }' |
          sed 's/^__odr_asan[._]//' | sort -u)
lua=$(echo "$globals" | grep -E '^(lua_|luaL_|luaJIT_|luaopen_|lj_)' || true)
if [ -n "$lua" ]; then
  echo "the installed libpawl.a defines LuaJIT's symbols as global:"
  echo "$lua" | head -20
  exit 1
fi
other=$(echo "$globals" | grep -v '^pawl_[a-z]' || true)
if [ -n "$other" ]; then
  echo "the installed libpawl.a defines global symbols that are not public pawl_ functions:"
  echo "$other" | head -20
  exit 1
fi
for f in pawl_open pawl_step pawl_define pawl_close; do
  echo "$globals" | grep -qx "$f" || { echo "libpawl.a does not define $f"; exit 1; }
done
# ... while its LuaJIT is inside it: pawl's code is bound to it.
nm --defined-only "$lib" | grep -q ' [tT] lua_newstate$' ||
  { echo "libpawl.a carries no lua_newstate of its own"; exit 1; }

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cflags="$(pkg-config --cflags pawl) $(pkg-config --cflags luajit)"
# What libpawl.a needs besides itself (-lpawl would pick the .so).
deps=$(pkg-config --static --libs pawl | sed 's/ -lpawl / /; s/^-lpawl //')
lj_dir=$(pkg-config --variable=libdir luajit)
lj_libs=$(pkg-config --libs luajit)
lj_static=$lj_dir/lib$(echo "$lj_libs" | sed 's/.*-l\(luajit[^ ]*\).*/\1/').a
cp "$src/examples/own_luajit.c" "$tmp/"
cd "$tmp"
build_one() {
  name=$1; shift
  # shellcheck disable=SC2086
  cc $PAWL_EXAMPLE_CFLAGS -std=c11 -Wall -Wextra -Werror $cflags \
     own_luajit.c -o "$name" "$@"
}
# The game's LuaJIT shared, first.
# shellcheck disable=SC2086
build_one own_shared $lj_libs "$lib" $deps
# Its LuaJIT static, first.
# shellcheck disable=SC2086
build_one own_static "$lj_static" "$lib" $deps -lm -ldl
# libpawl.a and what it needs first, the game's shared LuaJIT last.
# shellcheck disable=SC2086
build_one own_after "$lib" $deps $lj_libs
ldd ./own_shared | grep -q 'libluajit' ||
  { echo "own_shared does not link the game's libluajit"; exit 1; }
if ldd ./own_static | grep -q 'libluajit'; then
  echo "own_static links a shared libluajit"; exit 1
fi
for b in own_shared own_static own_after; do
  echo "--- $b"
  "./$b" "$tmp/$b.db"
done
echo "own_luajit: ok"
