#!/bin/sh
# pressure_check.sh SOURCE_DIR BUILD_DIR: the pressure benchmark
# (bench/pg_pressure.c, bench/run_pg_pressure.sh) in phases of a second or
# two. Nothing here depends on the machine's speed: only what any run
# must show is checked.
#
#   1. Bad options are refused with exit status 2 and a message naming
#      the value and its bounds, before anything starts (the script starts
#      no server for them).
#   2. A readers run on the test server (the pg fixture, in a schema of
#      its own): the CSV has its header and a row per window of every
#      phase, the audit says exactly once; the audit run again on the ids
#      agrees; then the database is corrupted in seven ways (a job
#      deleted, one sent back to pending, an attempt starting with the
#      success, one ending after the success started, an attempt number
#      recorded twice, a transition out of an ended state, a job nobody
#      enqueued) and the audit must say so for each, and fail.
#   3. An overload run through bench/run_pg_pressure.sh on its own server:
#      it ends with the audit holding, and leaves no server and no temp
#      dir behind.
#   4. A pinned run through the script interrupted the way Ctrl-C does (a
#      SIGINT to its whole process group) in the pin: exit status 130, no
#      server, no node, no temp dir left.
#   5. A chaos run through the script on its own server: nodes killed and
#      started again, pawl's connections ended, the server restarted and
#      every connection slot held, each at least once by the counts it
#      prints, the nodes refused during the flood, and the audit holding;
#      no server, node or temp dir left.
set -eu
src=$1
build=$2
bin=$build/pawl_pg_pressure
url=$(cat "$PAWL_TEST_PG_URL_FILE")
fail() {
  echo "pressure_check: $*" >&2
  exit 1
}
work=$(mktemp -d)
pid=
# A run still going when a check fails is stopped (its group: the
# script, the benchmark and its node) before its temp dir goes.
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM -"$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/scripts" "$work/tmp"
echo 'return { run = function() end }' >"$work/scripts/noop.lua"

# ---- 1. refusals -------------------------------------------------------------
run() {
  set +e
  "$@" >"$work/out" 2>"$work/err"
  rc=$?
  set -e
}
refused() {
  text=$1
  shift
  run "$bin" --db "$url" --pawl "$build/pawl" --scripts "$work/scripts" "$@"
  [ "$rc" = 2 ] || fail "$*: exit status $rc, expected 2; stderr: $(cat "$work/err")"
  grep -qF -- "$text" "$work/err" || fail "$*: stderr does not say '$text': $(cat "$work/err")"
  [ ! -s "$work/out" ] || fail "$*: printed on stdout: $(cat "$work/out")"
}
refused "--rate 0 is out of range: it must be from 1 to 1000000 jobs/s" --rate 0
refused "--rate 1000001 is out of range: it must be from 1 to 1000000 jobs/s" --rate 1000001
refused "--rate 6C is out of range: a fraction of the capacity must be from 0.01C to 5C" --rate 6C
refused "--rate 0.001C is out of range" --rate 0.001C
refused "--rate fast is not a rate" --rate fast
refused "--rate nan is not a rate" --rate nan
refused "--rate 2000x is not a rate" --rate 2000x
refused "--clean 0 is out of range: it must be from 1 to 86400 (seconds)" --clean 0
refused "--clean 86401 is out of range" --clean 86401
refused "--clean 1.5 is not a whole number of seconds" --clean 1.5
refused "--stress -1 is out of range: it must be from 1 to 86400 (seconds)" --stress -1
refused "--warmup 99999999999999999999 is not a whole number of seconds" --warmup 99999999999999999999
refused "--capacity 2 is out of range: it must be 0 or from 3 to 3600 (seconds)" --capacity 2
refused "--window 0 is out of range: it must be from 1 to 600 (seconds)" --window 0
refused "--window 601 is out of range" --window 601
refused "--recovery 86401 is out of range" --recovery 86401
refused "--drain 0 is out of range" --drain 0
refused "--reader-hold 0 is out of range" --reader-hold 0
refused "--nodes 0 is out of range: it must be from 1 to 16" --nodes 0
refused "--nodes 17 is out of range: it must be from 1 to 16" --nodes 17
refused "--workers 257 is out of range: it must be from 1 to 256" --workers 257
refused "--capacity-rate 0 is out of range: it must be from 1 to 1000000 jobs/s" --capacity 0 --capacity-rate 0
refused "--capacity-rate 0.5C is not a rate in jobs per second" --capacity 0 --capacity-rate 0.5C
refused "--rate 0.5C is a fraction of the capacity: measure it (--capacity S) or give it (--capacity-rate N)" --capacity 0
refused "--capacity-rate gives the capacity: use --capacity 0 with it" --capacity-rate 100
refused "--scenario storm is unknown: clean, pinned, readers, overload or chaos" --scenario storm
refused "--scenario chaos needs --restart-cmd CMD" --scenario chaos
refused "--restart-cmd is empty" --scenario chaos --restart-cmd ""
refused "--restart-cmd goes with --scenario chaos" --scenario overload --restart-cmd true
refused "--chaos-kill-every goes with --scenario chaos" --chaos-kill-every 3
refused "--chaos-kill-every 0 is out of range: it must be from 1 to 3600 (seconds)" \
  --scenario chaos --restart-cmd true --chaos-kill-every 0
refused "--chaos-terminate-every 3601 is out of range: it must be from 1 to 3600 (seconds)" \
  --scenario chaos --restart-cmd true --chaos-terminate-every 3601
refused "--chaos-flood-hold 0 is out of range" --scenario chaos --restart-cmd true --chaos-flood-hold 0
refused "--chaos-flood-hold 2.5 is not a whole number of seconds" \
  --scenario chaos --restart-cmd true --chaos-flood-hold 2.5
refused "--lease 0 is out of range: it must be from 1 to 3600 (seconds)" --lease 0
refused "--schema Bad-Name is not a plain name" --schema Bad-Name
refused "--schema 1x is not a plain name" --schema 1x
refused "unknown option --speed" --speed 3
refused "--clean needs a value" --clean
refused "--ids FILE goes with --audit-only" --ids "$work/ids"
run "$bin" --db "$url" --audit-only
[ "$rc" = 2 ] && grep -qF -- "--audit-only needs --ids FILE" "$work/err" ||
  fail "--audit-only without --ids: exit status $rc: $(cat "$work/err")"
run "$bin" --db sqlite:x.db --pawl "$build/pawl" --scripts "$work/scripts"
[ "$rc" = 2 ] && grep -qF -- "--db sqlite:x.db is not PostgreSQL" "$work/err" ||
  fail "--db sqlite: exit status $rc: $(cat "$work/err")"
run "$bin" --pawl "$build/pawl" --scripts "$work/scripts"
[ "$rc" = 2 ] && grep -qF -- "--db URL is required" "$work/err" ||
  fail "no --db: exit status $rc: $(cat "$work/err")"
# Through the script: refused before a server starts (no "# server:").
export PAWL_PRESSURE_BIN_DIR=$build TMPDIR=$work/tmp
run bash "$src/bench/run_pg_pressure.sh" --stress 0
[ "$rc" = 2 ] && grep -qF -- "--stress 0 is out of range" "$work/err" ||
  fail "run_pg_pressure.sh --stress 0: exit status $rc: $(cat "$work/err")"
! grep -q "server:" "$work/out" || fail "run_pg_pressure.sh started a server for bad options"
run bash "$src/bench/run_pg_pressure.sh" --db "$url"
[ "$rc" = 2 ] && grep -qF -- "--db is this script's to give" "$work/err" ||
  fail "run_pg_pressure.sh --db: exit status $rc: $(cat "$work/err")"
run bash "$src/bench/run_pg_pressure.sh" --scenario chaos --restart-cmd true
[ "$rc" = 2 ] && grep -qF -- "--restart-cmd is this script's to give" "$work/err" ||
  fail "run_pg_pressure.sh --restart-cmd: exit status $rc: $(cat "$work/err")"
run bash "$src/bench/run_pg_pressure.sh" --scenario chaos --chaos-kill-every 0
[ "$rc" = 2 ] && grep -qF -- "--chaos-kill-every 0 is out of range" "$work/err" ||
  fail "run_pg_pressure.sh --chaos-kill-every 0: exit status $rc: $(cat "$work/err")"
[ -z "$(ls "$work/tmp")" ] || fail "run_pg_pressure.sh left $(ls "$work/tmp") for bad options"

# ---- 2. a readers run on the test server, and the audit corrupted ----------------
schema=pressure_check_$$
short="--capacity 3 --warmup 1 --clean 2 --stress 2 --recovery 1 --window 1 --drain 120"
run "$bin" --db "$url" --schema "$schema" --pawl "$build/pawl" --scripts "$work/scripts" \
  --scenario readers --reader-hold 1 --rate 0.2C $short --csv "$work/readers.csv" \
  --ids-out "$work/ids"
[ "$rc" = 0 ] || fail "readers run: exit status $rc: $(cat "$work/out" "$work/err")"
grep -qx "audit: exactly once: yes" "$work/out" || fail "readers run: no audit: $(cat "$work/out")"
head -1 "$work/readers.csv" | grep -q '^t_s,phase,window_s,target_per_s,offered_per_s,completed_per_s,pickup_p50_ms,pickup_p99_ms,pickup_max_ms,backlog,' ||
  fail "readers.csv: header: $(head -c 300 "$work/readers.csv")"
for col in pawl_jobs.dead pawl_jobs.hot_upd pawl_jobs.bytes pawl_jobs_pkey.bytes oldest_xact_age; do
  head -1 "$work/readers.csv" | tr , '\n' | grep -qx "$col" || fail "readers.csv: no column $col"
done
ncol=$(head -1 "$work/readers.csv" | awk -F, '{print NF}')
for phase in capacity warmup clean readers recovery drain; do
  grep -q "^[0-9.]*,$phase," "$work/readers.csv" || fail "readers.csv: no $phase row"
  grep -q "^phase $phase " "$work/out" || fail "readers run: no $phase summary"
done
awk -F, -v n="$ncol" 'NF != n { exit 1 }' "$work/readers.csv" ||
  fail "readers.csv: a row has not $ncol fields"
grep -q "^capacity C = [0-9]* jobs/s" "$work/out" || fail "readers run: no capacity line"
n=$(wc -l <"$work/ids")
[ "$n" -gt 0 ] || fail "readers run: no ids written"
grep -q "^audit: $n jobs enqueued: $n succeeded" "$work/out" || fail "readers run: audit: $(grep audit "$work/out")"

audit() {
  run "$bin" --db "$url" --schema "$schema" --audit-only --ids "$work/ids"
}
audit
[ "$rc" = 0 ] && grep -qx "audit: exactly once: yes" "$work/out" ||
  fail "--audit-only on the intact run: exit status $rc: $(cat "$work/out" "$work/err")"
psql_do() {
  PGOPTIONS="-csearch_path=$schema -cclient_min_messages=warning" psql "$url" -qAtX -v ON_ERROR_STOP=1 -c "$1" >/dev/null
}
ids_sql() { # the Nth id written
  sed -n "${1}p" "$work/ids"
}
psql_do "DELETE FROM pawl_jobs WHERE id = '$(ids_sql 1)'"
psql_do "UPDATE pawl_jobs SET state = 0, finished_at = NULL WHERE id = '$(ids_sql 2)'"
psql_do "INSERT INTO pawl_attempts (job_id, attempt, node, started_at, ended_at, outcome)
  SELECT id, attempt + 1, 'x', started_at, finished_at + interval '1 second', 'lost'
  FROM pawl_jobs WHERE id = '$(ids_sql 3)'"
psql_do "INSERT INTO pawl_attempts (job_id, attempt, node, started_at, ended_at, outcome)
  SELECT id, attempt, 'x', started_at - interval '1 hour', started_at - interval '59 minutes', 'lost'
  FROM pawl_jobs WHERE id = '$(ids_sql 4)'"
psql_do "INSERT INTO pawl_attempts (job_id, attempt, node, started_at, ended_at, outcome)
  SELECT id, attempt + 1, 'x', started_at - interval '1 hour', started_at + interval '1 millisecond', 'lost'
  FROM pawl_jobs WHERE id = '$(ids_sql 6)'"
psql_do "INSERT INTO pawl_events (job_id, at, from_state, to_state, attempt)
  SELECT id, now(), 2, 0, attempt FROM pawl_jobs WHERE id = '$(ids_sql 5)'"
PAWL_DB="postgres:$(echo "$url" | sed 's/.*host=\([^&]*\).*port=\([0-9]*\).*/host=\1 port=\2/') user=postgres dbname=postgres options=-csearch_path=$schema" \
  "$build/pawl" enqueue noop '{}' >/dev/null || fail "pawl enqueue of an unknown job failed"
audit
[ "$rc" = 1 ] || fail "--audit-only on a corrupted run: exit status $rc, expected 1: $(cat "$work/out" "$work/err")"
for text in "$((n - 2)) succeeded" "1 not ended" "1 lost" "1 unknown" "1 ended twice" \
  "2 with overlapping attempts" "1 with an attempt number run twice" \
  "audit: exactly once: NO"; do
  grep -qF -- "$text" "$work/out" || fail "corrupted audit does not say '$text': $(cat "$work/out")"
done
# The schema is refused for a second run: a run never mixes with another's jobs.
run "$bin" --db "$url" --schema "$schema" --pawl "$build/pawl" --scripts "$work/scripts" \
  --rate 10 --capacity 0
[ "$rc" = 2 ] && grep -qF -- "--schema $schema exists" "$work/err" ||
  fail "an existing schema: exit status $rc: $(cat "$work/err")"
psql_do "DROP SCHEMA $schema CASCADE"

# ---- 3. an overload run through the script ----------------------------------------
run bash "$src/bench/run_pg_pressure.sh" --scenario overload --capacity 0 --rate 200 \
  --warmup 1 --clean 1 --stress 2 --recovery 2 --window 1 --drain 120 --csv "$work/over.csv"
[ "$rc" = 0 ] || fail "run_pg_pressure.sh overload: exit status $rc: $(cat "$work/out" "$work/err")"
grep -qx "audit: exactly once: yes" "$work/out" || fail "overload: no audit: $(cat "$work/out")"
grep -q "^[0-9.]*,overload,[0-9.]*,300," "$work/over.csv" || fail "over.csv: no overload row at 1.5 x 200/s"
grep -q "^[0-9.]*,recovery,[0-9.]*,100," "$work/over.csv" || fail "over.csv: no recovery row at 0.5 x 200/s"
[ -s "$work/over.log" ] || fail "run_pg_pressure.sh wrote no log beside the CSV"
server_dir() {
  sed -n 's/^# server: .*host=\([^&]*\).*/\1/p' "$1"
}
dir=$(server_dir "$work/over.log")
[ -n "$dir" ] || fail "over.log names no server"
[ ! -e "$dir" ] || fail "run_pg_pressure.sh left its server's directory $dir"
[ -z "$(ls "$work/tmp")" ] || fail "run_pg_pressure.sh left $(ls "$work/tmp") in TMPDIR"

# ---- 4. Ctrl-C in the pin ------------------------------------------------------------
# A group of its own, with SIGINT at its default (a background job of a
# script starts with it ignored), as a terminal's foreground job has.
setsid perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' \
  bash "$src/bench/run_pg_pressure.sh" --scenario pinned --capacity 3 --rate 0.3C \
  --warmup 1 --clean 1 --stress 600 --recovery 600 --window 1 --csv "$work/pin.csv" \
  >"$work/pin.out" 2>"$work/pin.err" &
pid=$!
deadline=$(($(date +%s) + 120))
until grep -q "^[0-9.]*,pin," "$work/pin.csv" 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || fail "the pinned run ended early: $(cat "$work/pin.out" "$work/pin.err")"
  [ "$(date +%s)" -lt "$deadline" ] || { kill -TERM -"$pid"; fail "no pin row within 120 s"; }
  sleep 0.2
done
dir=$(server_dir "$work/pin.log")
[ -n "$dir" ] && [ -e "$dir" ] || fail "pin.log names no running server: $(cat "$work/pin.log")"
kill -INT -"$pid"
deadline=$(($(date +%s) + 60))
while kill -0 "$pid" 2>/dev/null; do
  [ "$(date +%s)" -lt "$deadline" ] || { kill -KILL -"$pid"; fail "the run did not end within 60 s of SIGINT"; }
  sleep 0.2
done
set +e
wait "$pid"
rc=$?
set -e
pid=
[ "$rc" = 130 ] || fail "interrupted run: exit status $rc, expected 130: $(cat "$work/pin.err")"
[ ! -e "$dir" ] || fail "the interrupted run left its server's directory $dir"
[ -z "$(ls "$work/tmp")" ] || fail "the interrupted run left $(ls "$work/tmp") in TMPDIR"
if ps -eo args | grep -v grep | grep -qF -- "$work/tmp/"; then
  fail "the interrupted run left a process: $(ps -eo pid,args | grep -F -- "$work/tmp/" | grep -v grep)"
fi

# ---- 5. chaos through the script ------------------------------------------------------
# Two nodes at 200 jobs/s; in 12 s of chaos a node is killed every 3 s
# (stopped first until it holds a job), pawl's connections are ended
# every 2 s, the server restarts at 4 s and the flood holds every slot
# from 8 s. Whatever the timing, the scenario does each kind at least
# once; the counts printed must say so, the nodes must have met the
# flood's refusals, the jobs of the killed nodes must have come back by
# lease recovery, and every job must have run exactly once.
run bash "$src/bench/run_pg_pressure.sh" --scenario chaos --nodes 2 --capacity 0 --rate 200 \
  --warmup 1 --clean 1 --stress 12 --recovery 1 --window 1 --drain 120 \
  --chaos-kill-every 3 --chaos-terminate-every 2 --chaos-flood-hold 2 \
  --csv "$work/chaos.csv" --ids-out "$work/chaos.ids"
[ "$rc" = 0 ] || fail "chaos: exit status $rc: $(cat "$work/out" "$work/err")"
grep -qx "audit: exactly once: yes" "$work/out" || fail "chaos: no audit: $(cat "$work/out")"
n=$(wc -l <"$work/chaos.ids")
[ "$n" -gt 0 ] || fail "chaos: no ids written"
grep -q "^audit: $n jobs enqueued: $n succeeded, 0 failed" "$work/out" ||
  fail "chaos: audit: $(grep audit "$work/out")"
grep -q "^phase chaos " "$work/out" || fail "chaos: no chaos summary: $(cat "$work/out")"
grep -q "^[0-9.]*,chaos," "$work/chaos.csv" || fail "chaos.csv: no chaos row"
count() { # the number after "$1 " in the chaos summary
  sed -n "s/^  chaos: .*$1 \([0-9][0-9]*\).*/\1/p" "$work/out" | head -1
}
for what in "node kills" "holding jobs" "termination rounds" "nodes" "producer" \
  "server restarts" "connection floods"; do
  c=$(count "$what")
  [ -n "$c" ] && [ "$c" -ge 1 ] || fail "chaos: $what: '$c', expected 1 or more: $(grep chaos "$work/out")"
done
# Every job a killed node held came back through lease recovery, as a
# lost attempt (the restart and the flood may lose more).
held=$(count "holding jobs")
c=$(sed -n 's/^audit: .*, \([0-9][0-9]*\) of them lost (lease recovered)$/\1/p' "$work/out")
[ -n "$c" ] && [ "$c" -ge "$held" ] ||
  fail "chaos: $held jobs held by killed nodes, '$c' attempts lost: $(grep audit "$work/out")"
grep -q "^  chaos: .*connection floods 1 ([0-9]* connections held .*refused: FATAL:  sorry, too many clients already)" "$work/out" ||
  fail "chaos: the flood was not refused for want of a slot: $(grep chaos "$work/out")"
grep -q "too many clients" "$work/chaos.nodes.log" ||
  fail "chaos: the nodes never met the flood: $(tail -5 "$work/chaos.nodes.log")"
dir=$(server_dir "$work/chaos.log")
[ -n "$dir" ] || fail "chaos.log names no server"
[ ! -e "$dir" ] || fail "the chaos run left its server's directory $dir"
[ -z "$(ls "$work/tmp")" ] || fail "the chaos run left $(ls "$work/tmp") in TMPDIR"
if ps -eo args | grep -v grep | grep -qF -- "$dir"; then
  fail "the chaos run left a process: $(ps -eo pid,args | grep -F -- "$dir" | grep -v grep)"
fi
echo "pressure_check: ok"
