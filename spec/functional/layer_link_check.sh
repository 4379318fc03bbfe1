#!/bin/sh
# layer_link_check.sh LIST: checks the dependency rules of the layout
# (docs/internals.md, "Layout") from what each layer's objects ask of the linker, as
# layout_check.sh does from the #include lines: a layer's call that names
# no header of another (a declaration written by hand, a header that
# declares more than its folder defines) shows here. LIST is a file of
# lines "LAYER OBJECT...", LAYER one of core, stores, api, luabridge,
# runner, ops (CMake's OBJECT libraries pawl_LAYER); the build writes
# its own as layer_objects.txt, from the objects each layer has now (a
# build folder may still hold those of files that moved away).
#
# Every symbol a layer's object leaves undefined (nm -u) and another
# layer defines must be defined by a layer it may use:
#   core      nothing
#   stores    core
#   api       core, stores
#   lua       core; and the public API (include/pawl.h: pawl_ names, not
#             pawl__) of any layer: the Lua module and the functions job
#             code calls are written on it, as the CLI is
#   runner    core, api, lua
#   ops       core, api, lua, runner
# Prints each offence as "OBJECT: SYMBOL is defined in LAYER/, and this
# object is LAYER/'s: RULE" and exits 1 if there is one, 0 otherwise; 2
# when LIST names no object, or one that is not there (a check that sees
# nothing must not pass).
set -u
list=${1:?usage: layer_link_check.sh LIST}
LAYERS="core stores api luabridge runner ops"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/layer_link.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

n=0
for l in $LAYERS; do
  : >"$tmp/def.$l"
  : >"$tmp/und.$l"
  awk -v l="$l" '$1 == l { for (i = 2; i <= NF; i++) print $i }' "$list" >"$tmp/obj.$l"
  while read -r o; do
    if [ ! -f "$o" ]; then
      echo "layer_link_check.sh: $o ($l, in $list) is not there"
      exit 2
    fi
    n=$((n + 1))
    # "ADDR TYPE NAME" for definitions; "U NAME" for the undefined ones.
    nm -g --defined-only "$o" | awk -v l="$l" 'NF == 3 { print $3, l }' >>"$tmp/def.$l"
    nm -u "$o" | awk -v o="$o" 'NF == 2 && $1 == "U" { print o, $2 }' >>"$tmp/und.$l"
  done <"$tmp/obj.$l"
done
if [ "$n" -eq 0 ]; then
  echo "layer_link_check.sh: $list names no layer's object"
  exit 2
fi
cat "$tmp"/def.* | sort -u >"$tmp/defs"

bad=0
for l in $LAYERS; do
  case $l in
    core) may="" name="core/" ;;
    stores) may="core" name="stores/" ;;
    api) may="core stores" name="api/" ;;
    luabridge) may="core" name="lua/" ;;
    runner) may="core api luabridge" name="runner/" ;;
    ops) may="core api luabridge runner" name="ops/" ;;
  esac
  rule=$(case $l in
    core) echo "core/ uses nothing of the other layers" ;;
    stores) echo "stores/ use core/ only" ;;
    api) echo "api/ uses stores/ and core/ only" ;;
    luabridge) echo "lua/ uses core/ and the public API (include/pawl.h) only" ;;
    runner) echo "runner/ uses api/, lua/ and core/ only" ;;
    ops) echo "ops/ uses the engine (runner/, api/, lua/) and core/ only" ;;
  esac)
  # OBJECT SYMBOL DEFINING-LAYER, for symbols another layer defines.
  awk -v self="$l" 'NR == FNR { layer[$1] = $2; next }
       ($2 in layer) && layer[$2] != self { print $1, $2, layer[$2] }' \
    "$tmp/defs" "$tmp/und.$l" >"$tmp/cross.$l"
  while read -r o sym from; do
    ok=0
    for m in $may; do [ "$m" = "$from" ] && ok=1; done
    if [ "$l" = luabridge ]; then
      case $sym in pawl__*) ;; pawl_[a-z]*) ok=1 ;; esac
    fi
    [ $ok -eq 1 ] && continue
    case $from in luabridge) fname="lua/" ;; *) fname="$from/" ;; esac
    echo "$o: $sym is defined in $fname, and this object is $name's: $rule"
    bad=1
  done <"$tmp/cross.$l"
done
exit $bad
