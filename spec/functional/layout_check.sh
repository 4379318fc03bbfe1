#!/bin/sh
# layout_check.sh [SRC]: checks the dependency rules of the layout (docs/internals.md,
# "Layout") from the #include lines of every C file under SRC (default: the
# current directory). Prints each broken rule as FILE:LINE: ... and exits 1
# if there is one, 0 otherwise.
#
# Who may include what (a header belongs to the folder it is in; includes
# name headers bare, and CMake's per-layer include directories resolve
# them, so a header name is unique across the tree):
#   include/pawl.h   nothing of the tree
#   host/core/       core/ (and pawl.h)
#   stores/          core/; a backend folder also its own headers and its
#                    database's client library, never the other backend's
#                    (stores/common/, what the backends share, is stores/)
#   host/api/        core/ and stores/store.h (with store_types.h, which it
#                    includes; nothing else of stores/)
#   host/lua/        core/ and LuaJIT; the Lua module (lua_module*.c and
#                    its private lua_module_int.h) only ljson.h of lua/,
#                    and nothing else of lua/ includes the module's header
#   host/runner/     core/, api/pawl_internal.h and lua/bridge.h: no store
#                    header, no handle layout, no Lua header, no ops/ header
#   host/ops/        what runner/ may, and runner/'s headers (host.h,
#                    hooks.h: the engine's internal hooks)
#   host/cli/, bench/cli_bench.c   include/pawl.h, core/ and LuaJIT (the
#                    console is a Lua state running the Lua module)
# Everything else (spec/, bench/ but cli_bench.c) may include anything.
#
# The backends mirror each other: each file of stores/sqlite/ has a
# namesake in stores/postgres/ and the reverse (one file per group of the
# store interface), but for MIRROR_OWN below.
set -u
src=${1:-.}
cd "$src" || exit 2

# The folders a bare header name is looked up in, besides the including
# file's own folder.
DIRS="include host/core host/api host/runner host/ops host/lua host/cli stores stores/common stores/sqlite stores/postgres"

# The files of a backend folder that have no namesake in the other: the
# private headers, and the SQL headers the tests and benchmarks include.
MIRROR_OWN="sqlite_int.h sqlite_sql.h sqlite_admin_sql.h pg_int.h pg_sql.h pg_admin_sql.h"

layer_of() {
  case $1 in
    include/*) echo public ;;
    host/core/*) echo core ;;
    host/api/*) echo api ;;
    host/runner/*) echo runner ;;
    host/ops/*) echo ops ;;
    host/lua/lua_module.c | host/lua/lua_module_*.[ch]) echo luamod ;;
    host/lua/*) echo lua ;;
    host/cli/* | bench/cli_bench.c) echo cli ;;
    stores/sqlite/*) echo sqlite ;;
    stores/postgres/*) echo postgres ;;
    stores/*) echo stores ;;
    *) echo other ;;
  esac
}

# What a library header outside the tree belongs to.
external_of() {
  case $1 in
    lua.h | lauxlib.h | lualib.h | luajit.h | luaconf.h) echo luajit ;;
    sqlite3.h) echo sqlite3 ;;
    libpq-fe.h) echo libpq ;;
    *) echo system ;;
  esac
}

# Where "name" included from `dir` resolves to: a path, AMBIGUOUS, or
# nothing (outside the tree).
resolve() {
  name=$1 dir=$2 found=""
  if [ -f "$dir/$name" ]; then
    echo "$dir/$name"
    return
  fi
  for d in $DIRS; do
    [ "$d" = "$dir" ] && continue
    if [ -f "$d/$name" ]; then
      if [ -n "$found" ]; then
        echo AMBIGUOUS
        return
      fi
      found="$d/$name"
    fi
  done
  echo "$found"
}

# 0 if a file of layer `from` may include header `name` of layer `to`.
allowed() {
  from=$1 to=$2 name=$3
  [ "$to" = system ] && return 0
  [ "$to" = public ] && [ "$from" != public ] && return 0
  case $from in
    public) return 1 ;;
    core) [ "$to" = core ] ;;
    stores) [ "$to" = core ] || [ "$to" = stores ] ;;
    sqlite) [ "$to" = core ] || [ "$to" = stores ] || [ "$to" = sqlite ] || [ "$to" = sqlite3 ] ;;
    postgres) [ "$to" = core ] || [ "$to" = stores ] || [ "$to" = postgres ] || [ "$to" = libpq ] ;;
    api) [ "$to" = core ] || [ "$to" = api ] ||
           { [ "$to" = stores ] && { [ "$name" = store.h ] || [ "$name" = store_types.h ]; }; } ;;
    lua) [ "$to" = core ] || [ "$to" = lua ] || [ "$to" = luajit ] ;;
    luamod) [ "$to" = core ] || [ "$to" = luajit ] || [ "$to" = luamod ] ||
              { [ "$to" = lua ] && [ "$name" = ljson.h ]; } ;;
    runner) [ "$to" = core ] || [ "$to" = runner ] ||
              { [ "$to" = api ] && [ "$name" = pawl_internal.h ]; } ||
              { [ "$to" = lua ] && [ "$name" = bridge.h ]; } ;;
    ops) [ "$to" = core ] || [ "$to" = runner ] || [ "$to" = ops ] ||
              { [ "$to" = api ] && [ "$name" = pawl_internal.h ]; } ||
              { [ "$to" = lua ] && [ "$name" = bridge.h ]; } ;;
    cli) [ "$to" = core ] || [ "$to" = cli ] || [ "$to" = luajit ] ;;
    *) return 0 ;;
  esac
}

rule_of() {
  case $1 in
    public) echo "include/pawl.h includes nothing of the tree" ;;
    core) echo "core/ uses core/ only" ;;
    stores | sqlite | postgres) echo "stores/ use core/ only (a backend also its own folder and its client library)" ;;
    api) echo "api/ uses stores/store.h and core/ only" ;;
    lua) echo "lua/ uses core/ and LuaJIT only" ;;
    luamod) echo "the Lua module uses include/pawl.h, core/, lua/ljson.h and its own lua_module_int.h only" ;;
    runner) echo "runner/ uses api/pawl_internal.h, lua/bridge.h and core/ only" ;;
    ops) echo "ops/ uses runner/, api/pawl_internal.h, lua/bridge.h and core/ only" ;;
    cli) echo "the CLI uses include/pawl.h, core/ and LuaJIT only" ;;
  esac
}

bad=0
files=$(find include host stores -name '*.[ch]' 2>/dev/null | sort)
[ -f bench/cli_bench.c ] && files="$files bench/cli_bench.c"
for f in $files; do
  from=$(layer_of "$f")
  [ "$from" = other ] && continue
  dir=$(dirname "$f")
  # LINE:"name" or LINE:<name>, one per #include.
  grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$f" |
    sed 's/^\([0-9]*\):[[:space:]]*#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*/\1 \2/' >"${TMPDIR:-/tmp}/layout_check.$$"
  while read -r line inc; do
    name=$(printf '%s' "$inc" | sed 's/^[<"]//; s/[>"]$//')
    to="" where=""
    case $inc in
      \"*)
        where=$(resolve "$name" "$dir")
        if [ "$where" = AMBIGUOUS ]; then
          echo "$f:$line: \"$name\" names headers in several folders: header names must be unique"
          bad=1
          continue
        fi
        ;;
    esac
    if [ -n "$where" ]; then
      to=$(layer_of "$where")
    else
      to=$(external_of "$name")
    fi
    if ! allowed "$from" "$to" "$name"; then
      echo "$f:$line: includes $inc (${where:-$to}): $(rule_of "$from")"
      bad=1
    fi
  done <"${TMPDIR:-/tmp}/layout_check.$$"
  rm -f "${TMPDIR:-/tmp}/layout_check.$$"
done

# The mirrored file names.
mirror() {
  here=$1 there=$2
  for f in $(find "$here" -maxdepth 1 -name '*.[ch]' 2>/dev/null | sort); do
    name=$(basename "$f")
    case " $MIRROR_OWN " in *" $name "*) continue ;; esac
    if [ ! -f "$there/$name" ]; then
      echo "$f: no $there/$name: the backends' files mirror each other (one per group of the store interface)"
      bad=1
    fi
  done
}
if [ -d stores/sqlite ] || [ -d stores/postgres ]; then
  mirror stores/sqlite stores/postgres
  mirror stores/postgres stores/sqlite
fi
exit $bad
