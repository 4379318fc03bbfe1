#!/bin/sh
# link_check.sh BUILD: the layout's dependency rules (README, "Layout") at
# link level, from the objects CMake builds for each layer (the lists in
# BUILD/layers/LAYER.txt, one object per line): every pawl_ or pawl__ name
# a layer's objects leave undefined must be defined by the layers it may
# use. An #include can be right while a call still reaches up (a store
# calling a free that the API defines links fine into libpawl), which
# layout_check.sh cannot see. Checked: core/ uses core/ only; stores/ use
# core/ and stores/. Prints each offender as OBJECT: NAME: RULE and exits
# 1 if there is one, 0 otherwise.
set -u
build=${1:?usage: link_check.sh BUILD}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/link_check.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
bad=0

# check LAYER RULE ALLOWED...: LAYER's undefined pawl names against what
# the ALLOWED layers define.
check() {
  layer=$1 rule=$2
  shift 2
  if [ ! -s "$build/layers/$layer.txt" ]; then
    echo "$build/layers/$layer.txt: no objects listed for the layer $layer"
    bad=1
    return
  fi
  for l in "$@"; do cat "$build/layers/$l.txt"; done |
    xargs nm -g --defined-only 2>/dev/null | awk 'NF == 3 { print $3 }' |
    sort -u >"$tmp/defined"
  for o in $(cat "$build/layers/$layer.txt"); do
    nm -u "$o" | awk '{ print $NF }' | grep '^pawl_' | sort -u >"$tmp/undefined"
    for name in $(comm -23 "$tmp/undefined" "$tmp/defined"); do
      echo "$o: $name: $rule"
      bad=1
    done
  done
}

check core "core/ uses core/ only" core
check stores "stores/ use core/ only" core stores
exit $bad
