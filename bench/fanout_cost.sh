#!/bin/sh
# fanout_cost.sh: job code's fan-out at 100x the spec's sizes
# (docs/security.md, "What job code may write"), through the real
# `pawl run` on SQLite:
#
#   * a parent makes 100,000 children in 10 pawl.batch calls of 10,000
#     (max_batch at its bound), then another makes 100,000 in 100
#     pawl.chain calls of 1,000 steps; each call timed by the job;
#   * each parent then fails once (as a crash would leave it) and its
#     second attempt makes the same calls, which find what the first made
#     (status "duplicate"); each call timed again;
#   * meanwhile another process enqueues one job at a time with the CLI,
#     and each enqueue's wall time is recorded: how long job code's
#     transactions keep other writers waiting.
#
#   bench/fanout_cost.sh BUILD_DIR [WORK_DIR]
set -eu
BUILD=${1:?usage: fanout_cost.sh BUILD_DIR [WORK_DIR]}
PAWL=$(cd "$BUILD" && pwd)/pawl
WORK=${2:-$(mktemp -d)}
mkdir -p "$WORK/scripts"
DB="sqlite:$WORK/fan.db"
rm -f "$WORK"/fan.db*

# The children go to a queue the host does not serve: only the parents run.
cat > "$WORK/scripts/fan.lua" <<'EOF'
return {
  max_children = 100000, max_batch = 10000, max_attempts = 2,
  retry = function() return 0 end,
  run = function(job)
    local kind, calls, size = job.payload.kind, job.payload.calls, job.payload.size
    local times, statuses = {}, {}
    for c = 1, calls do
      local list = {}
      for i = 1, size do
        list[i] = { "child", { c = c, i = i }, { queue = "parked" } }
      end
      local t0 = pawl.time()
      local st
      if kind == "batch" then
        local _, _, s = pawl.batch { jobs = list }
        st = s
      else
        local _, s = pawl.chain(list)
        st = s
      end
      times[c] = pawl.time() - t0
      statuses[st] = (statuses[st] or 0) + 1
    end
    table.sort(times)
    local sum = 0
    for _, t in ipairs(times) do sum = sum + t end
    local line = ("%s attempt %d: %d calls of %d, total %.2f s, median %.3f s, max %.3f s, new %d, duplicate %d"):format(
      kind, job.attempt, calls, size, sum, times[math.ceil(#times / 2)],
      times[#times], statuses.new or 0, statuses.duplicate or 0)
    print(line)
    if job.attempt == 1 then error("as a crash would: run again") end
    return { line = line }
  end,
}
EOF
echo 'return { run = function() end }' > "$WORK/scripts/child.lua"
echo 'return { run = function() end }' > "$WORK/scripts/other.lua"

"$PAWL" --db "$DB" --create migrate >/dev/null
"$PAWL" --db "$DB" enqueue fan '{"kind":"batch","calls":10,"size":10000}' \
  --scripts "$WORK/scripts" >/dev/null
"$PAWL" --db "$DB" enqueue fan '{"kind":"chain","calls":100,"size":1000}' \
  --scripts "$WORK/scripts" >/dev/null

"$PAWL" --db "$DB" run --scripts "$WORK/scripts" --queues default \
  --workers 1 --until-idle > "$WORK/host.out" 2> "$WORK/host.err" &
HOST=$!

# Another writer: one enqueue at a time while the host runs.
: > "$WORK/other.ms"
while kill -0 "$HOST" 2>/dev/null; do
  t0=$(date +%s%N)
  if "$PAWL" --db "$DB" enqueue other '{}' --queue parked \
       --scripts "$WORK/scripts" >/dev/null 2>>"$WORK/other.err"; then
    echo $(( ($(date +%s%N) - t0) / 1000000 )) >> "$WORK/other.ms"
  else
    echo "failed" >> "$WORK/other.ms"
  fi
done
wait "$HOST" || true

grep -o 'text="[^"]*"' "$WORK/host.err" | sed 's/^text="//; s/"$//'
n=$(grep -c . "$WORK/other.ms" || true)
failed=$(grep -c failed "$WORK/other.ms" || true)
sort -n "$WORK/other.ms" | grep -v failed > "$WORK/other.sorted" || true
med=$(awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}' "$WORK/other.sorted")
p99=$(awk '{a[NR]=$1} END {i=int(NR*0.99); if (i<1) i=1; print a[i]}' "$WORK/other.sorted")
max=$(tail -1 "$WORK/other.sorted")
echo "other writer: $n CLI enqueues while the host ran, $failed failed;" \
  "wall ms median $med, p99 $p99, max $max"
echo "children stored: $(sqlite3 "$WORK/fan.db" \
  "SELECT count(*) FROM pawl_jobs WHERE type = 'child'" 2>/dev/null || echo '?')," \
  "batches: $(sqlite3 "$WORK/fan.db" "SELECT count(*) FROM pawl_batches" 2>/dev/null || echo '?')"
