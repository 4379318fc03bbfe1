-- main.lua: a LÖVE 11 game that runs pawl jobs in its own Lua state.
--
--   LUA_CPATH='PREFIX/lib/lua/5.1/?.so;;' love examples/love DB_PATH [MAPS_OUT]
--
-- love.update calls db:step(2) each frame: the jobs due run there, in this
-- Lua state, on this thread (LÖVE's), so they change the game's own tables
-- (the score the HUD shows, the coins on the field). The game enqueues
-- work on load and every few frames, plays at least FRAMES frames, waits
-- for every job to end, prints what happened and quits: exit status 0 if
-- every job ended as expected and the game saw each one's effect, else 1
-- (the reason on stderr). MAPS_OUT: a copy of /proc/self/maps, for the
-- test that checks this process holds one LuaJIT only (LÖVE's).
local pawl = require "pawl"
local ffi = require "ffi"

local FRAMES = 300         -- at least this many frames
local ENQUEUE_UNTIL = 200  -- an award every 25 frames until this one,
                           -- then the high score is saved
local SPARE_FRAMES = 10000 -- hang guard: frames after FRAMES to finish in

local game = {
  frame = 0,
  score = 0,        -- what the "award" jobs add to
  coins = {},       -- what the "spawn_coins" jobs place
  saved = nil,      -- the score a "save_score" job stored
  save_tries = 0,
  hud = "",         -- rebuilt by love.update from the tables above
}
local db, maps_out
local jobs = {}     -- every job enqueued: { id =, type =, points = }
local expect = { score = 0, coins = 0 }

local function fail(msg)
  io.stderr:write("love example: ", msg, "\n")
  love.event.quit(1)
end

local function enqueue(jtype, payload)
  local id = assert(db:enqueue(jtype, payload))
  jobs[#jobs + 1] = { id = id, type = jtype }
  if jtype == "award" then expect.score = expect.score + payload.points end
  if jtype == "spawn_coins" then expect.coins = expect.coins + payload.n end
end

-- Where the Lua API this process calls comes from (dladdr of lua_gettop,
-- which pawl.so uses too: it has no Lua of its own), and where pawl.so was
-- loaded from.
ffi.cdef [[
  typedef struct { const char *fname; void *fbase;
                   const char *sname; void *saddr; } pawl_love_dlinfo;
  void *pawl_love_dlsym(void *handle, const char *name) __asm__("dlsym");
  int pawl_love_dladdr(const void *addr, pawl_love_dlinfo *info) __asm__("dladdr");
]]
local function origins()
  local info = ffi.new("pawl_love_dlinfo")
  local sym = ffi.C.pawl_love_dlsym(nil, "lua_gettop")
  local lua_from = "?"
  if sym ~= nil and ffi.C.pawl_love_dladdr(sym, info) ~= 0 then
    lua_from = ffi.string(info.fname)
  end
  local pawl_from = "?"
  local f = assert(io.open("/proc/self/maps"))
  local maps = f:read("*a")
  f:close()
  pawl_from = maps:match("%s(/%S*/pawl%.so)\n") or pawl_from
  if maps_out then
    local o = assert(io.open(maps_out, "w"))
    o:write(maps)
    o:close()
  end
  return lua_from, pawl_from
end

function love.load(args)
  local path = args[1]
  if not path then
    io.stderr:write("usage: love examples/love DB_PATH [MAPS_OUT]\n")
    love.event.quit(2)
    return
  end
  maps_out = args[2]
  db = assert(pawl.open{ db = "sqlite:" .. path })

  -- The game's jobs: plain functions of this file, touching its tables.
  db:define("award", function(job)
    game.score = game.score + job.payload.points
    return { score = game.score }
  end)
  db:define("spawn_coins", function(job, ctx)
    for i = 1, job.payload.n do
      game.coins[#game.coins + 1] = { x = 40 * i, y = job.payload.row * 40 }
    end
    ctx:log("info", "coins on the field: " .. #game.coins)
    return { coins = #game.coins }
  end)
  -- Saving the high score: the disk is busy on the first try, and the
  -- retry policy tries again at once.
  db:define("save_score", {
    run = function()
      game.save_tries = game.save_tries + 1
      if game.save_tries == 1 then error("disk busy") end
      game.saved = game.score
      return { saved = game.saved }
    end,
    retry = function() return 0 end,
    max_attempts = 3,
  })
  -- A runaway job: its loop is kept out of the JIT (jit.off), so the
  -- count hook that its timeout arms stops it. LÖVE's LuaJIT checks hooks
  -- in the interpreter only: compiled, this loop would never be stopped
  -- (docs/lua-module.md, "The Lua module's step mode").
  local function spin() while true do end end
  jit.off(spin, true)
  db:define("runaway", { run = spin, timeout = 0.5, max_attempts = 1 })

  for i = 1, 5 do enqueue("award", { points = 10 * i }) end
  enqueue("spawn_coins", { n = 3, row = 1 })
  enqueue("runaway", {})
end

local function all_ended()
  for _, j in ipairs(jobs) do
    if not j.state then
      local s = db:get(j.id).state
      if s == "succeeded" or s == "failed" or s == "canceled" then
        j.state = s
      else
        return false
      end
    end
  end
  return true
end

local function finish()
  local lua_from, pawl_from = origins()
  local ok, bad = 0, {}
  for _, j in ipairs(jobs) do
    local want = j.type == "runaway" and "failed" or "succeeded"
    if j.state == want then ok = ok + 1
    else bad[#bad + 1] = j.type .. " " .. j.id .. " " .. j.state end
  end
  local runaway_err = "not enqueued"
  for _, j in ipairs(jobs) do
    if j.type == "runaway" then runaway_err = db:get(j.id).last_error or "" end
  end
  print(("frames %d, jobs %d, %d ended as expected (runaway: %s)"):format(
    game.frame, #jobs, ok, runaway_err:match("timed out") or runaway_err))
  print(game.hud)
  print(("Lua API from %s; pawl.so from %s"):format(lua_from, pawl_from))
  db:close()
  if #bad > 0 then return fail("jobs not as expected: " .. table.concat(bad, ", ")) end
  if not runaway_err:match("timed out") then
    return fail("the runaway job did not time out: " .. runaway_err)
  end
  if game.score ~= expect.score then
    return fail(("score %d, expected %d"):format(game.score, expect.score))
  end
  if #game.coins ~= expect.coins then
    return fail(("coins %d, expected %d"):format(#game.coins, expect.coins))
  end
  if not game.saved or game.save_tries ~= 2 then
    return fail("the high score was not saved on the second try")
  end
  love.event.quit(0)
end

function love.update(dt)
  if not db then return end
  game.frame = game.frame + 1
  if game.frame <= ENQUEUE_UNTIL and game.frame % 25 == 0 then
    enqueue("award", { points = game.frame })
  end
  if game.frame == ENQUEUE_UNTIL then enqueue("save_score", {}) end
  local ran, err = db:step(2, { log_level = 3 })
  if not ran then return fail("db:step: " .. tostring(err)) end
  game.hud = ("score %d, coins %d, high score saved %s after %d tries"):format(
    game.score, #game.coins, tostring(game.saved), game.save_tries)
  if game.frame >= FRAMES and all_ended() then
    finish()
    db = nil
  elseif game.frame > FRAMES + SPARE_FRAMES then
    fail(("jobs still not ended after %d frames"):format(game.frame))
    db = nil
  end
end

function love.draw()
  love.graphics.print(game.hud, 10, 10)
end
