-- metrics_fill.lua: fills a new database for bench/metrics_bench.sh
-- through the Lua module: HISTORY jobs (default 1,000,000) finished two
-- hours ago (one in ten failed) in four queues, then PENDING jobs (default
-- 10,000) due in an hour. A benchmark's setup, never a test.
--
--   LUA_CPATH='build/lua/?.so' build/luajit/src/luajit \
--     bench/metrics_fill.lua DB_URL [HISTORY] [PENDING]
local pawl = require "pawl"
local finish_jobs = dofile((arg[0]:match("^(.*/)") or "./") .. "fill_finished.lua")

local url = assert(arg[1], "usage: metrics_fill.lua DB_URL [HISTORY] [PENDING]")
local history = tonumber(arg[2] or 1000000)
local pending = tonumber(arg[3] or 10000)

local db = assert(pawl.open{ db = url, create = true })
local real_now = db:now()
local queues = { "default", "mail", "reports", "billing" }
local function queue_of(i) return queues[i % #queues + 1] end

db:set_now(real_now - 2 * 3600 * 1000)
finish_jobs(db, "noop", history, queue_of)
db:set_now(real_now)
local n = 0
while n < pending do
  local k = math.min(1000, pending - n)
  local items = {}
  for i = 1, k do
    items[i] = { "noop", {}, { queue = queue_of(n + i), delay_ms = 3600000 } }
  end
  assert(db:enqueue_many(items))
  n = n + k
end
db:set_now(nil)
db:close()
