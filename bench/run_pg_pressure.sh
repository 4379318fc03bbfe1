#!/usr/bin/env bash
# The PostgreSQL hot path under pressure (bench/pg_pressure.c), on a
# throwaway server with PostgreSQL's default durability:
#
#   bench/run_pg_pressure.sh [pawl_pg_pressure options]
#
# e.g. bench/run_pg_pressure.sh --scenario pinned --rate 0.5C --clean 120 \
#        --stress 600 --recovery 60
#
# With --scenario chaos it gives the benchmark --restart-cmd: a command
# that restarts this server (pg_server.sh restart, down for a second).
#
# Builds pawl and pawl_pg_pressure in Release (build-release/, or
# $BUILD_DIR), or uses those already built in $PAWL_PRESSURE_BIN_DIR
# without building, checks the options, starts a server
# (spec/support/pg_server.sh start DIR bench), writes a no-op job script
# into a temp dir, and runs the benchmark in a schema of its own. The CSV
# goes to build-release/pressure/DATE-SHA-SCENARIO.csv unless --csv is
# given; the summaries and the audit to stdout and, with the machine and
# its load average, to a .log beside the CSV; the nodes' warnings and
# errors to a .nodes.log beside it. The server and the temp dir
# are removed at the end, also on failure, Ctrl-C or SIGTERM (the
# benchmark stops its nodes first). The exit status is the benchmark's:
# 0 only if the exactly-once audit held.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "${PAWL_PRESSURE_BIN_DIR:-}" ]; then
  bin=$PAWL_PRESSURE_BIN_DIR
else
  bin=${BUILD_DIR:-$root/build-release}
  cmake -S "$root" -B "$bin" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$bin" --target pawl pawl_pg_pressure -j"$(nproc)" >/dev/null
fi
for exe in pawl pawl_pg_pressure; do
  [ -x "$bin/$exe" ] || {
    echo "run_pg_pressure.sh: no $bin/$exe (build it, or set PAWL_PRESSURE_BIN_DIR)" >&2
    exit 2
  }
done

case " $* " in
*" --help "* | *" -h "*)
  "$bin/pawl_pg_pressure" --help
  exit 0
  ;;
esac
scenario=pinned
csv=
prev=
for a in "$@"; do
  case "$prev" in
  --scenario) scenario=$a ;;
  --csv) csv=$a ;;
  esac
  case "$a" in
  --db | --pawl | --scripts | --node-log | --restart-cmd)
    echo "run_pg_pressure.sh: $a is this script's to give (its server, build and temp dir); run build-release/pawl_pg_pressure for another" >&2
    exit 2
    ;;
  esac
  prev=$a
done
# Bad options are refused before any server starts. The ones this
# script provides are placeholders here.
chaos=
[ "$scenario" = chaos ] && chaos=--restart-cmd
"$bin/pawl_pg_pressure" --db postgres:host=/nonexistent --pawl "$bin/pawl" \
  --scripts /nonexistent ${chaos:+"$chaos" :} "$@" --check-args
sha=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -z "$csv" ]; then
  mkdir -p "$bin/pressure"
  csv=$bin/pressure/$(date -u +%Y%m%dT%H%M%SZ)-$sha-$scenario.csv
  set -- "$@" --csv "$csv"
fi
log=${csv%.csv}.log
nodes_log=${csv%.csv}.nodes.log

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pawl-pressure-XXXXXX")
state=$tmp/server
child=
server_dir=
cleanup() {
  trap - EXIT INT TERM
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  # The server's directory is named in $state/dir; kept here as well, so
  # that the server is stopped even if the temp dir went first.
  if [ -n "$server_dir" ] && [ ! -f "$state/dir" ]; then
    mkdir -p "$state" && echo "$server_dir" >"$state/dir"
  fi
  sh "$root/spec/support/pg_server.sh" stop "$state" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

url=$(sh "$root/spec/support/pg_server.sh" start "$state" bench)
server_dir=$(cat "$state/dir")
mkdir "$tmp/scripts"
echo 'return { run = function() end }' >"$tmp/scripts/noop.lua"

{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) bench/run_pg_pressure.sh $* (commit $sha)"
  echo "# $(nproc) cores;$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# $("$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/postgres" --version)"
  echo "# server: $url"
} | tee "$log"
# chaos restarts the server once, down for a second, through
# pg_server.sh (the paths quoted for sh -c).
restart="sh '$root/spec/support/pg_server.sh' restart '$state' 1"
# In the background, so that the traps run at once on a signal.
"$bin/pawl_pg_pressure" --db "$url" --pawl "$bin/pawl" --scripts "$tmp/scripts" \
  --node-log "$nodes_log" ${chaos:+"$chaos" "$restart"} "$@" > >(tee -a "$log") 2>&1 &
child=$!
set +e
wait "$child"
rc=$?
set -e
child=
echo "# load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log"
if [ -s "$nodes_log" ]; then
  echo "# the nodes' warnings and errors: $nodes_log (the last 20 lines):" | tee -a "$log"
  tail -20 "$nodes_log" | tee -a "$log"
fi
echo "# csv: $csv" | tee -a "$log"
exit "$rc"
