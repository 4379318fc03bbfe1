-- embed.lua: pawl from a plain LuaJIT script (require "pawl"), in step
-- mode: the jobs are functions of this script, run in its own Lua state
-- by db:step, so they change its tables directly.
--
--   luajit examples/embed.lua DB_PATH        (LUA_CPATH finds pawl.so)
--
-- It enqueues a few jobs (one fails once and is retried), steps until
-- they are done, prints what happened, and exits 0 if all succeeded.
local pawl = require "pawl"

local path = assert(arg[1], "usage: luajit embed.lua DB_PATH")
local db = assert(pawl.open{ db = "sqlite:" .. path })

local inventory = { gold = 0, log = {} }

db:define("loot", function(job, ctx)
  inventory.gold = inventory.gold + job.payload.gold
  ctx:log("info", "looted " .. job.payload.gold)
  return { gold = inventory.gold }
end)

local tries = 0
db:define("save_game", {
  run = function(job)
    tries = tries + 1
    if tries == 1 then error("disk busy") end -- the first try fails
    inventory.log[#inventory.log + 1] = "saved " .. job.payload.slot
  end,
  retry = function() return 0 end,             -- again at once
  max_attempts = 3,
})

local ids = {}
for i = 1, 3 do ids[#ids + 1] = db:enqueue("loot", { gold = i * 10 }) end
ids[#ids + 1] = db:enqueue("save_game", { slot = 1 })

local function all_done()
  for _, id in ipairs(ids) do
    local s = db:get(id).state
    if s ~= "succeeded" and s ~= "failed" then return false end
  end
  return true
end

local steps, ran = 0, 0
while not all_done() and steps < 10000 do
  ran = ran + assert(db:step(2, { log_level = 3 }))
  steps = steps + 1
end

local ok = 0
for _, id in ipairs(ids) do
  if db:get(id).state == "succeeded" then ok = ok + 1 end
end
print(("gold %d, %s, save tries %d, jobs %d/%d succeeded, %d runs"):format(
  inventory.gold, inventory.log[1] or "not saved", tries, ok, #ids, ran))
db:close()
os.exit(ok == #ids and 0 or 1)
