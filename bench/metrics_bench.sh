#!/bin/sh
# metrics_bench.sh BUILD DB_URL [SCRAPES]: what a scrape of `pawl run
# --metrics` costs with a million jobs in the table.
#
# Fills DB_URL (a new database: sqlite:PATH, or a PostgreSQL URL with a
# schema of its own) with 1,000,000 jobs finished two hours ago and 10,000
# pending (bench/metrics_fill.lua), starts `pawl run --metrics
# 127.0.0.1:0` on it (debug log: each gauge read logs what it cost), and
# scrapes /metrics SCRAPES times (default 200) with curl, a real HTTP
# client over a new connection each time: prints the median, p99 and
# worst of curl's time_total, and the cost of the host's gauge reads
# (the first, full one, and the incremental ones). Then the same while
# the host runs 200,000 no-op jobs. A benchmark, never a test.
set -eu
build=${1:?usage: metrics_bench.sh BUILD DB_URL [SCRAPES]}
url=${2:?usage: metrics_bench.sh BUILD DB_URL [SCRAPES]}
scrapes=${3:-200}
src=$(cd "$(dirname "$0")/.." && pwd)
pawl="$build/pawl"
tmp=$(mktemp -d)
host=""
cleanup() {
  [ -n "$host" ] && kill "$host" 2>/dev/null && wait "$host" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

mkdir "$tmp/scripts"
echo 'return { run = function() return true end }' > "$tmp/scripts/noop.lua"
echo "# filling $url"
t0=$(date +%s)
LUA_CPATH="$build/lua/?.so;;" LUA_PATH="$src/lua/?.lua;;" \
  "$build/luajit/src/luajit" "$src/bench/metrics_fill.lua" "$url" 1000000 10000
echo "# filled in $(( $(date +%s) - t0 )) s"

start_host() {
  "$pawl" --db "$url" run --scripts "$tmp/scripts" --workers 2 \
    --admin-socket none --metrics 127.0.0.1:0 --metrics-refresh 0.5 --log-level debug \
    2> "$tmp/host.log" &
  host=$!
  i=0
  until addr=$(grep -o 'metrics listening http=[^ ]*' "$tmp/host.log" | cut -d= -f2) &&
        [ -n "$addr" ]; do
    i=$((i + 1)); [ $i -gt 600 ] && { cat "$tmp/host.log"; exit 1; }
    sleep 0.1
  done
  # Until the first (full) read of the gauges is published.
  until curl -s "http://$addr/metrics" | grep -q '^pawl_jobs{'; do sleep 0.1; done
}

scrape() { # label
  : > "$tmp/times"
  n=0
  while [ $n -lt "$scrapes" ]; do
    curl -s -o "$tmp/body" -w '%{time_total}\n' "http://$addr/metrics" >> "$tmp/times"
    n=$((n + 1))
  done
  sort -n "$tmp/times" | awk -v label="$1" -v bytes="$(wc -c < "$tmp/body")" '
    { v[NR] = $1 * 1000 }
    END { p50 = v[int((NR + 1) / 2)]; p99 = v[int(NR * 0.99 + 0.5)];
          printf "%s: %d scrapes of %d bytes: median %.2f ms, p99 %.2f ms, worst %.2f ms\n",
                 label, NR, bytes, p50, p99, v[NR] }'
}

renders() {
  grep 'metrics: scraped' "$tmp/host.log" | sed 's/.*render_us=//; s/ .*//' |
    sort -n | awk '{ v[NR] = $1 }
      END { printf "server side (render, all scrapes so far: %d): median %d us, p99 %d us, worst %d us\n",
                   NR, v[int((NR + 1) / 2)], v[int(NR * 0.99 + 0.5)], v[NR] }'
}

reads() {
  grep 'metrics: gauges read' "$tmp/host.log" | grep 'full=1' |
    sed 's/.* ms=//' | tr '\n' ' ' | sed 's/^/gauge reads: full (ms): /'
  echo
  grep 'metrics: gauges read' "$tmp/host.log" | grep 'full=0' |
    sed 's/.* ms=//' | sort -n | awk '{ v[NR] = $1 }
      END { printf "gauge reads: incremental (%d): median %d ms, worst %d ms\n",
                   NR, v[int((NR + 1) / 2)], v[NR] }'
}

start_host
scrape "idle host, 1,010,000 jobs"
renders
reads
# Under load: 200,000 no-op jobs enqueued (in the background) and run by
# the host while scraping.
cat > "$tmp/load.lua" <<'LUA'
local pawl = require "pawl"
local db = assert(pawl.open{ db = arg[1] })
for _ = 1, 200 do
  local items = {}
  for i = 1, 1000 do items[i] = { "noop", {}, {} } end
  assert(db:enqueue_many(items))
end
db:close()
LUA
LUA_CPATH="$build/lua/?.so;;" LUA_PATH="$src/lua/?.lua;;" \
  "$build/luajit/src/luajit" "$tmp/load.lua" "$url" &
loader=$!
scrape "busy host (200,000 no-op jobs enqueued and run meanwhile)"
wait "$loader"
renders
reads
curl -s "http://$addr/metrics" | grep -E '^pawl_jobs\{queue="default"|^pawl_jobs_succeeded_total|^pawl_workers_busy'
