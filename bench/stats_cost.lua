-- stats_cost.lua: what stats() (pawl_stats(), the console's stats() and
-- `pawl stats`) costs with a million finished jobs kept as history.
--
--   LUA_CPATH='build-release/lua/?.so' build-release/luajit/src/luajit \
--     bench/stats_cost.lua DB_URL [HISTORY] [RECENT]
--
-- Fills DB_URL (a new, empty database: sqlite:PATH, or a PostgreSQL URL
-- with its own schema) through the Lua module: HISTORY jobs (default
-- 1,000,000) finished two hours ago (succeeded, one in ten failed), then
-- RECENT jobs (default 10,000) finished over the last ten minutes, and 1,000
-- pending; then times stats() 11 times and prints the median and the
-- range, and the same with RECENT raised by 100,000 (the throughput's
-- index ranges grow with the jobs finished in the last 15 minutes, never
-- with the history). A benchmark, never a test: it judges nothing.
local pawl = require "pawl"
local finish_jobs = dofile((arg[0]:match("^(.*/)") or "./") .. "fill_finished.lua")

local url = assert(arg[1], "usage: stats_cost.lua DB_URL [HISTORY] [RECENT]")
local history = tonumber(arg[2] or 1000000)
local recent = tonumber(arg[3] or 10000)

local db = assert(pawl.open{ db = url, create = true })
local real_now = db:now()

-- Enqueues n jobs and finishes them with the clock at `at` (ms).
local function finish_at(n, at, queue_of)
  db:set_now(at)
  finish_jobs(db, "bench.job", n, queue_of)
end

local queues = { "default", "mail", "reports", "billing" }
local function queue_of(i) return queues[i % #queues + 1] end

local t0 = os.clock()
local wall0 = os.time()
finish_at(history, real_now - 2 * 3600 * 1000, queue_of)
for i = 1, 10 do
  finish_at(recent / 10, real_now - i * 60 * 1000, queue_of)
end
db:set_now(real_now)
local pend = {}
for i = 1, 1000 do pend[i] = { "bench.job", {}, { queue = queue_of(i), delay_ms = 3600000 } } end
assert(db:enqueue_many(pend))
db:set_now(nil)
io.write(("# %s: filled %d + %d finished jobs in %d s (%.0f s CPU)\n"):format(
  url:match("^sqlite") and "sqlite" or "postgres", history, recent,
  os.time() - wall0, os.clock() - t0))

local function time_stats()
  local v = {}
  for i = 1, 11 do
    local c0 = os.clock()
    local w0 = db:now()
    local s = assert(db:stats())
    v[i] = { wall = db:now() - w0, cpu = (os.clock() - c0) * 1000, s = s }
  end
  table.sort(v, function(a, b) return a.wall < b.wall end)
  return v[6], v[1], v[11]
end

local med, lo, hi = time_stats()
io.write(("stats() with %d finished (%d in the last 15 min): median %d ms (%d..%d), "
          .. "client CPU %.1f ms; counts: succeeded %d, failed %d, pending %d, "
          .. "finished_15m %d\n"):format(history + recent, recent, med.wall, lo.wall,
          hi.wall, med.cpu, med.s.counts.succeeded, med.s.counts.failed,
          med.s.counts.pending, med.s.finished_15m))

finish_at(100000, real_now - 5 * 60 * 1000, queue_of)
db:set_now(nil)
med, lo, hi = time_stats()
io.write(("stats() with %d in the last 15 min: median %d ms (%d..%d)\n"):format(
  recent + 100000, med.wall, lo.wall, hi.wall))
db:close()
