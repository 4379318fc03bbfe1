#!/usr/bin/env bash
# The PostgreSQL benchmark, side by side in one run on one throwaway server
# (PostgreSQL's default durability: fsync and synchronous commit on):
#
#   1. pawl_pg_bench: the store against its plain-SQL ceiling (the same
#      claim/complete statements from a C loop, and pipelined);
#   2. pawl bench --db with 1 and with 2 nodes: enqueue, processing and
#      pickup latency of the whole host;
#   3. graphile-worker (bench/graphile) with 1 and with 2 worker processes,
#      in its perfTest configuration, on the same server and job count.
#
#   bench/run_pg_bench.sh [RUNS] [JOBS]        (defaults: 5 runs, 100,000)
#
# pawl and graphile-worker runs alternate, so that the machine's mood
# (this class of VM is noisy) falls on both. Everything is teed to a log
# in build-release/. The server is stopped at the end, also on failure.
set -euo pipefail

runs=${1:-5}
jobs=${2:-100000}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build-release}
log=${LOG:-$build/pg_bench-$(date -u +%Y%m%dT%H%M%SZ).log}
state=$build/pgbench-server

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target pawl pawl_pg_bench -j"$(nproc)" >/dev/null

trap 'sh "$root/spec/support/pg_server.sh" stop "$state"' EXIT
url=$(sh "$root/spec/support/pg_server.sh" start "$state" bench)

# A schema of its own for each pawl bench run, on the same server.
schema_url() {
  local dir port
  dir=$(sed 's/.*host=\([^&]*\).*/\1/' <<<"$url")
  port=$(sed 's/.*port=\([0-9]*\).*/\1/' <<<"$url")
  PGOPTIONS=-cclient_min_messages=warning psql "$url" -qc "DROP SCHEMA IF EXISTS $1 CASCADE; CREATE SCHEMA $1" >/dev/null
  echo "postgres:host=$dir port=$port user=postgres dbname=postgres options=-csearch_path=$1"
}

mkdir -p "$(dirname "$log")"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) bench/run_pg_bench.sh runs=$runs jobs=$jobs"
  echo "# $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "# server: $url"
  echo "## store against its plain-SQL ceiling"
  "$build/pawl_pg_bench" "$url" --jobs "$jobs" --runs "$runs"
  for r in $(seq 1 "$runs"); do
    for nodes in 1 2; do
      echo "## run $r: pawl bench, $nodes node(s)"
      "$build/pawl" bench --db "$(schema_url "pawl_bench_n$nodes")" \
        --jobs "$jobs" --nodes "$nodes" --latency-jobs 1000 2>&1 |
        grep -E '^run 1/1'
      echo "## run $r: graphile-worker, $nodes process(es)"
      sh "$root/bench/graphile/run.sh" "$url" "$nodes" "$jobs" 2>/dev/null
    done
  done
} 2>&1 | tee "$log"
