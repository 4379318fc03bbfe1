#!/usr/bin/env bash
# console_attach_bench.sh: what an attached console costs a running host.
#
#   bench/console_attach_bench.sh [RUNS] [JOBS] [PAWL]
#
# Each run enqueues JOBS (default 2,000) CPU-bound Lua jobs (about a
# millisecond each) into a fresh SQLite database and runs them with
# `pawl run --until-idle --workers 2`, alternately
#   - alone, and
#   - with a console attached (`pawl console --connect`) that sends
#     stats() and workers() over and over: "paced", every $PACE seconds
#     (default 0.05: a screen refreshed 20 times a second; PACE=1 is an
#     operator's pace), and "flat out", back to back.
# The time measured is the jobs' own window, from the first job's start to
# the last one's finish (stored on the rows), so the host's start and the
# console's connection are not in it. After every run it checks that the
# console changed no job: JOBS succeeded, each in its first attempt, with
# the result its payload asks for. Prints one line per run and the
# medians. A benchmark, never a test: it judges nothing.
set -euo pipefail

runs=${1:-5}
jobs=${2:-2000}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pawl=${3:-$root/build-release/pawl}
[ -x "$pawl" ] || { echo "no pawl binary at $pawl (make bench builds build-release/)" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 shell" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ms between the first start and the last finish; checks every job.
run_once() { # mode
  local mode=$1 dir="$work/$1.$RANDOM"
  mkdir -p "$dir/scripts"
  cat >"$dir/scripts/work.lua" <<'EOF'
return { run = function(job)
  local x = 0
  for i = 1, job.payload.n do x = (x + i * 7) % 1000003 end
  return { x = x }
end }
EOF
  local db="sqlite:$dir/db" sock="$dir/admin.sock"
  "$pawl" --db "$db" migrate >/dev/null
  "$pawl" --db "$db" console -e "for i = 1, $jobs do enqueue('work', { n = 100000 }) end" >/dev/null
  # The host's CPU time too (user + system, all its threads): steadier
  # than wall time on a shared machine.
  ( TIMEFORMAT='cpu %3U %3S'; time "$pawl" --db "$db" run --scripts "$dir/scripts" \
      --workers 2 --until-idle --idle-wait 0 --log-level warn \
      --admin-socket "$sock" 2>/dev/null ) 2>"$dir/time" &
  local host=$!
  local console=
  if [ "$mode" != alone ]; then
    while [ ! -S "$sock" ] && kill -0 "$host" 2>/dev/null; do sleep 0.01; done
    local pause=${PACE:-0.05}
    [ "$mode" = flat ] && pause=0
    ( while :; do echo 'stats()'; echo 'workers()'; [ "$pause" = 0 ] || sleep "$pause"; done ) |
      "$pawl" console --connect "$sock" >/dev/null 2>&1 &
    console=$!
  fi
  wait "$host"
  # The host's bye ends the console; its feeding loop ends on the broken
  # pipe.
  [ -n "$console" ] && { kill "$console" 2>/dev/null || true; wait "$console" 2>/dev/null || true; }
  local row
  row=$(sqlite3 "$dir/db" "select count(*), min(attempt), max(attempt),
    count(distinct result), max(finished_at) - min(started_at)
    from pawl_jobs where state = 2")
  IFS='|' read -r n amin amax nres ms <<<"$row"
  if [ "$n" != "$jobs" ] || [ "$amin" != 1 ] || [ "$amax" != 1 ] || [ "$nres" != 1 ]; then
    echo "run $mode changed jobs: succeeded=$n attempts=$amin..$amax results=$nres" >&2
    exit 1
  fi
  local cpu
  cpu=$(awk '/^cpu / { printf "%d", ($2 + $3) * 1000 }' "$dir/time")
  rm -rf "$dir"
  echo "$ms $cpu"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $pawl, $jobs jobs, $runs runs, load $(cut -d' ' -f1-3 /proc/loadavg)"
alone=() paced=() flat=() calone=() cpaced=() cflat=()
for r in $(seq 1 "$runs"); do
  read -r a ca <<<"$(run_once alone)"
  read -r p cp <<<"$(run_once paced)"
  read -r f cf <<<"$(run_once flat)"
  alone+=("$a"); paced+=("$p"); flat+=("$f")
  calone+=("$ca"); cpaced+=("$cp"); cflat+=("$cf")
  echo "run $r: alone ${a} ms (host CPU ${ca} ms), console paced ${p} ms (${cp}), console flat out ${f} ms (${cf})"
done
report() { # what, alone..., then the others
  local ma mp mf
  ma=$(printf '%s\n' "${!2}" | median)
  mp=$(printf '%s\n' "${!3}" | median)
  mf=$(printf '%s\n' "${!4}" | median)
  awk -v w="$1" -v a="$ma" -v p="$mp" -v f="$mf" 'BEGIN {
    printf "median %s: alone %d ms; console paced %d ms (%+.1f%%); console flat out %d ms (%+.1f%%)\n",
           w, a, p, (p - a) * 100 / a, f, (f - a) * 100 / a }'
}
report "jobs' window (wall)" 'alone[@]' 'paced[@]' 'flat[@]'
report "host CPU" 'calone[@]' 'cpaced[@]' 'cflat[@]'
echo "every run: $jobs jobs succeeded in their first attempt with the same result"
