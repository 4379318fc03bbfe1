#!/bin/sh
# install_cli_check.sh BUILD_DIR SOURCE_DIR: installs the build into a
# temporary prefix (cmake --install, what `make install PREFIX=` runs)
# and uses the installed program and manual pages with nothing of the
# build or source tree on any path: bin/pawl runs from a clean
# environment (no RPATH into the build, no library from it), migrates,
# enqueues and runs a job; every docs/man page is installed, renders
# with man, and groff finds nothing to warn about.
set -eu
build=$1 src=$2
fail() { echo "install_cli_check: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/pawl" || fail "not installed: bin/pawl"
# No path into the build or source tree.
if readelf -d "$prefix/bin/pawl" | grep -E 'RPATH|RUNPATH' | grep -q -e "$build" -e "$src"; then
  fail "bin/pawl has an RPATH into the build: $(readelf -d "$prefix/bin/pawl" | grep -E 'RPATH|RUNPATH')"
fi
if ldd "$prefix/bin/pawl" | grep -q -e "$build" -e "$src"; then
  fail "bin/pawl loads a library from the build: $(ldd "$prefix/bin/pawl")"
fi
# A clean environment: the prefix's bin and the system's, a fresh HOME
# and working directory.
work=$tmp/work
mkdir -p "$work/scripts" "$tmp/home"
cat > "$work/scripts/hello.lua" <<'LUA'
return { run = function(job) return { hi = job.payload.name } end }
LUA
run() {
  (cd "$work" && env -i PATH="$prefix/bin:/usr/bin:/bin" HOME="$tmp/home" \
     LC_ALL=C.UTF-8 "$@")
}
[ "$(run sh -c 'command -v pawl')" = "$prefix/bin/pawl" ] || fail "pawl is not the installed one"
run pawl --help | grep -q "^usage: pawl" || fail "pawl --help"
run pawl run --help | grep -q -- "--until-idle" || fail "pawl run --help"
run pawl version | grep -q "^pawl [0-9]" || fail "pawl version"
run pawl migrate >/dev/null
id=$(run pawl enqueue hello '{"name":"ada"}')
run pawl run --until-idle --workers 1 --admin-socket none 2>"$tmp/run.log" ||
  { cat "$tmp/run.log"; fail "pawl run"; }
run pawl show "$id" | grep -q "^state: *succeeded" || fail "the job did not succeed: $(run pawl show "$id")"
# The manual pages: one per docs/man source, in its section's folder.
n=0
for scd in "$src"/docs/man/*.scd; do
  page=$(basename "$scd" .scd)         # pawl-run.1
  sec=${page##*.}
  f=$prefix/share/man/man$sec/$page
  test -f "$f" || fail "not installed: share/man/man$sec/$page (was scdoc found when CMake ran? make deps-build installs it)"
  warn=$(groff -man -Tutf8 -ww -z "$f" 2>&1) || fail "groff failed on $page: $warn"
  [ -z "$warn" ] || fail "groff warns on $page: $warn"
  out=$(MANWIDTH=80 man -l "$f" 2>&1) || fail "man -l $page: $out"
  echo "$out" | grep -q "^NAME" || fail "man -l $page shows no NAME section"
  n=$((n + 1))
done
[ "$n" -ge 8 ] || fail "only $n manual pages in docs/man"
# man finds them by name under the prefix.
MANPATH="$prefix/share/man" man -w pawl-jobs | grep -q "^$prefix/share/man/man1/pawl-jobs.1" ||
  fail "man -w pawl-jobs does not find the installed page"
MANPATH="$prefix/share/man" man -w 5 pawl-scripts >/dev/null || fail "man -w 5 pawl-scripts"
echo "install cli: ok ($n manual pages)"
