#!/bin/sh
# rate_limit_bench.sh: throughput under a rate limit, SQLite.
#
#   bench/rate_limit_bench.sh PAWL_BIN [RATE] [WINDOW] [WINDOWS] [WORKERS]
#
# Sets `pawl limit set api --rate RATE/WINDOW`, enqueues RATE x WINDOWS + RATE
# jobs of a type that holds resource "api" and does nothing, runs
# `pawl run --until-idle` and reads every job's start time from the
# database. Prints the starts per fixed window and the throughput over the
# full windows (the first window and the last, partial ones, left out):
# with work waiting, every full window should have RATE starts. Needs the
# sqlite3 shell. Defaults: 200/1s, 10 windows, 4 workers.
set -eu
PAWL=${1:?usage: rate_limit_bench.sh PAWL_BIN [RATE] [WINDOW] [WINDOWS] [WORKERS]}
RATE=${2:-200}
WINDOW=${3:-1s}
WINDOWS=${4:-10}
WORKERS=${5:-4}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
DB="sqlite:$DIR/pawl.db"
mkdir "$DIR/scripts"
echo 'return { resource = "api", run = function() end }' > "$DIR/scripts/api.lua"
"$PAWL" --db "$DB" --create migrate >/dev/null
"$PAWL" --db "$DB" limit set api --rate "$RATE/$WINDOW" >/dev/null
N=$((RATE * WINDOWS + RATE))
# One transaction for all the jobs (the SQL the store would run is beside
# the point here): the resource column set directly.
sqlite3 "$DIR/pawl.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $N) INSERT INTO pawl_jobs (id, type, queue, state, priority, rank, payload, run_at, max_attempts, created_at, updated_at, resource) SELECT randomblob(16), 'api', 'default', 0, 0, 0, '{}', t, 25, t, t, 'api' FROM n, (SELECT CAST(strftime('%s', 'now') AS INTEGER) * 1000 AS t)"
"$PAWL" --db "$DB" run --scripts "$DIR/scripts" --until-idle --workers "$WORKERS" \
  --poll 0.1 --log-level warn
WMS=$(sqlite3 "$DIR/pawl.db" "SELECT rate_window_ms FROM pawl_limits WHERE name = 'api'")
echo "limit: $RATE starts per $WMS ms; $N jobs, $WORKERS workers"
sqlite3 "$DIR/pawl.db" "SELECT started_at / $WMS AS w, count(*) FROM pawl_jobs WHERE state = 2 GROUP BY w ORDER BY w" |
  awk -F'|' -v rate="$RATE" -v wms="$WMS" '
    { w[NR] = $1; c[NR] = $2; if ($2 > max) max = $2 }
    END {
      for (i = 1; i <= NR; i++) printf "window %d: %d starts\n", i, c[i]
      full = 0; n = 0
      for (i = 2; i < NR; i++) { full += c[i]; n++ }
      if (n > 0)
        printf "full windows %d: %.1f starts per window = %.1f%% of the limit; most in one window: %d\n",
               n, full / n, 100 * full / n / rate, max
    }'
