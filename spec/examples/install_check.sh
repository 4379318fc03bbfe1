#!/bin/sh
# install_check.sh BUILD_DIR SOURCE_DIR LUAJIT: installs the build into a
# temporary prefix (cmake --install, what `make install PREFIX=` runs) and
# uses it as an embedder would, with nothing of the source tree but the
# examples' sources: the header and pawl.pc from the prefix, game_loop.c
# linked against libpawl.so and uv_server.c statically (pkg-config
# --static), both run; examples/embed.lua run with the installed Lua
# module; nm -D of the installed libpawl.so exports pawl_* only.
set -eu
build=$1 src=$2 luajit=$3
# A sanitizer build's libraries need the examples built with it too
# (CMake sets PAWL_EXAMPLE_CFLAGS then, and preloads the runtime for
# luajit, which is not instrumented).
PAWL_EXAMPLE_CFLAGS=${PAWL_EXAMPLE_CFLAGS:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/pawl.h lib/libpawl.a lib/libpawl.so lib/libpawl.so.0 \
         lib/lua/5.1/pawl.so lib/pkgconfig/pawl.pc; do
  test -e "$prefix/$f" || { echo "not installed: $f"; exit 1; }
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cflags=$(pkg-config --cflags pawl)
libs=$(pkg-config --libs pawl)
static=$(pkg-config --static --libs pawl)
echo "cflags: $cflags"
echo "libs: $libs"
echo "static: $static"
case "$cflags" in *"$prefix"/lib/pkgconfig/../../include*) ;; *)
  echo "pkg-config --cflags does not name the prefix's include dir"; exit 1;; esac
# The optional libraries this build has (PAWL_WITH_*: CMake passes them
# as PAWL_OPTIONAL_LIBS, default all three): pawl.pc asks for those, and
# for none of the others.
optional=${PAWL_OPTIONAL_LIBS--lpq -lcurl -lmicrohttpd}
for l in -lpawl -lsqlite3 -luv $optional -lm -ldl -lpthread; do
  case " $static " in *" $l "*) ;; *) echo "--static lacks $l"; exit 1;; esac
done
for l in -lpq -lcurl -lmicrohttpd; do
  case " $optional " in *" $l "*) continue;; esac
  case " $static " in *" $l "*) echo "--static has $l, which this build does not use"; exit 1;; esac
done
# The source tree's include/ must not be what compiles them.
mkdir "$tmp/ex"
cp "$src/examples/game_loop.c" "$src/examples/uv_server.c" "$tmp/ex/"
cd "$tmp/ex"
cc $PAWL_EXAMPLE_CFLAGS -std=c11 -Wall -Wextra -Werror $cflags game_loop.c -o game_loop_shared \
   $libs -Wl,-rpath,"$prefix/lib"
ldd ./game_loop_shared | grep -q "$prefix/lib/libpawl.so.0" ||
  { echo "game_loop_shared does not use the installed libpawl.so"; exit 1; }
./game_loop_shared "$tmp/gl.db" 30
# Statically: libpawl.a and what pkg-config --static adds (-lpawl would
# pick the .so beside it, so the archive is named).
cc $PAWL_EXAMPLE_CFLAGS -std=c11 -Wall -Wextra -Werror $cflags $(pkg-config --cflags libuv) \
   uv_server.c -o uv_server_static "$prefix/lib/libpawl.a" \
   $(echo "$static" | sed 's/ -lpawl / /') $(pkg-config --libs libuv)
if ldd ./uv_server_static | grep -q libpawl; then
  echo "uv_server_static is linked against libpawl.so"; exit 1
fi
cc $PAWL_EXAMPLE_CFLAGS -std=c11 $cflags game_loop.c -o game_loop_static "$prefix/lib/libpawl.a" \
   $(echo "$static" | sed 's/ -lpawl / /')
./game_loop_static "$tmp/gl2.db" 30
# The Lua module from a plain LuaJIT script.
LUA_CPATH="$prefix/lib/lua/5.1/?.so" "$luajit" "$src/examples/embed.lua" "$tmp/embed.db"
# The installed libpawl.so exports pawl_* only.
out=$(nm -D --defined-only "$prefix/lib/libpawl.so" | awk 'NF == 3 { print $3 }' |
      grep -v '^pawl_[a-z]' || true)
if [ -n "$out" ]; then
  echo "the installed libpawl.so exports more than pawl_*:"; echo "$out"; exit 1
fi
echo "install: ok"
