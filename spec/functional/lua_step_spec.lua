-- lua_step_spec.lua: db:define and db:step of the Lua module: job types
-- whose code lives in the program's own Lua state, run there, on the
-- calling thread, with the host's retry policy, sanitizer, timeouts, logs
-- and hooks. No sleeps: db:step is pumped until the outcome is stored
-- (a bounded number of steps, each running what is due).
local pawl = require "pawl"

local function mktempdir()
  local path = os.tmpname()
  os.remove(path)
  os.execute("mkdir -p '" .. path .. "'")
  return path
end

describe("db:define / db:step", function()
  local dir, db

  before_each(function()
    dir = mktempdir()
    db = assert(pawl.open{ db = "sqlite:" .. dir .. "/pawl.db" })
  end)
  after_each(function()
    if db then db:close() end
    os.execute("rm -rf '" .. dir .. "'")
  end)

  -- Steps until done() holds (at most `max` steps; each runs what is due).
  local function pump(done, max)
    local ran = 0
    for _ = 1, max or 2000 do
      local n, err = db:step(5, { log_level = 4 })
      assert(n, err)
      ran = ran + n
      if done() then return ran end
    end
    error("not done after the steps given")
  end

  local function state_of(id) return db:get(id).state end

  it("runs jobs in this state: they change the program's own tables", function()
    local game = { score = 0 }
    local co_self = coroutine.running()
    local where = {}
    assert.is_true(db:define("score", function(job, ctx)
      game.score = game.score + job.payload.points
      where[#where + 1] = coroutine.running() == co_self
      return { score = game.score }
    end))
    local ids = {}
    for i = 1, 5 do ids[i] = db:enqueue("score", { points = i }) end
    local ran = pump(function() return game.score == 15 end)
    assert.equal(5, ran)
    assert.equal(15, game.score)
    for i = 1, 5 do assert.equal("succeeded", state_of(ids[i])) end
    -- On the caller's own thread of the state (the coroutine calling
    -- db:step), not a state of pawl's.
    for _, same in ipairs(where) do assert.is_true(same) end
    assert.equal(15, db:get(ids[5]).result.score)
    assert.equal(0, db:step(5)) -- nothing due
  end)

  it("applies the type's retry policy, max_attempts, sanitizer and hooks", function()
    local tries, hooked, policy_saw = 0, {}, {}
    db:define("flaky", {
      run = function()
        tries = tries + 1
        if tries < 3 then error("token=s3cr3t not yet") end
        return "ok"
      end,
      retry = function(attempt) policy_saw[#policy_saw + 1] = attempt return 0 end,
      sanitize = function(msg) return (msg:gsub("s3cr3t", "XXX")) end,
      max_attempts = 5,
      on_success = function(job) hooked[#hooked + 1] = "success " .. job.type end,
    })
    db:define("doomed", {
      run = function() error("no way") end,
      max_attempts = 2,
      retry = function() return 0 end,
      on_dead = function(job) hooked[#hooked + 1] = "dead " .. job.type end,
    })
    local f = db:enqueue("flaky", {})
    local d = db:enqueue("doomed", {})
    pump(function() return #hooked == 2 end)
    assert.equal("succeeded", state_of(f))
    assert.equal(3, tries)
    assert.same({ 1, 2 }, policy_saw)
    assert.equal("failed", state_of(d))
    assert.equal(2, db:get(d).attempt)
    table.sort(hooked)
    assert.same({ "dead doomed", "success flaky" }, hooked)
    -- The stored errors went through the type's sanitizer.
    local hist = db:history(f)
    local texts = {}
    for _, a in ipairs(hist.attempts or hist) do
      if a.error then texts[#texts + 1] = a.error end
    end
    local all = table.concat(texts, "\n")
    assert.matches("token=XXX not yet", all, 1, true)
    assert.not_matches("s3cr3t", all, 1, true)
  end)

  it("stops a runaway job at its timeout, and the state serves the next job", function()
    db:define("spin", { run = function() while true do end end, timeout = 0.2,
                        max_attempts = 1 })
    local after = 0
    db:define("after", function() after = after + 1 end)
    local s = db:enqueue("spin", {})
    local a = db:enqueue("after", {})
    pump(function() return state_of(s) == "failed" and after == 1 end)
    assert.matches("timed out", db:get(s).last_error)
    assert.equal("succeeded", state_of(a))
  end)

  it("keeps ctx:log lines and fails jobs of a type whose table is bad", function()
    db:define("logs", function(job, ctx) ctx:log("info", "hello from the game") end)
    db:define("odd", { run = function() end, colour = "red" })
    local l = db:enqueue("logs", {})
    local o = db:enqueue("odd", {})
    pump(function() return state_of(l) == "succeeded" and state_of(o) == "failed" end)
    assert.equal("hello from the game", db:logs(l)[1].message)
    assert.matches('job type odd: unknown field "colour"', db:get(o).last_error,
                   1, true)
  end)

  it("leaves the program's state as it was: globals, modules, hook", function()
    local hook_calls = 0
    local function hook() hook_calls = hook_calls + 1 end
    debug.sethook(hook, "", 1000000)
    local mt = getmetatable("")
    local before = {}
    for k in pairs(_G) do before[k] = true end
    db:define("x", function() return 1 end)
    local id = db:enqueue("x", {})
    pump(function() return state_of(id) == "succeeded" end)
    local h, mask, count = debug.gethook()
    debug.sethook()
    assert.equal(hook, h)
    assert.equal(1000000, count)
    assert.equal(mt, getmetatable(""))
    assert.is_nil(rawget(mt, "__metatable"))
    for k in pairs(_G) do assert.is_true(before[k], "new global " .. tostring(k)) end
    for _, name in ipairs{ "pawl.worker", "pawl.host", "pawl.retry",
                           "pawl.sanitize", "pawl.json" } do
      assert.is_nil(package.loaded[name], name)
      assert.is_nil(package.preload[name], name)
    end
    assert.equal(pawl, package.loaded.pawl)
    local _ = mask
  end)

  -- A job that keeps the CPU for at least `ms` (os.clock is CPU time: the
  -- wall clock only runs further).
  local function busy(ms)
    local t = os.clock()
    while os.clock() - t < ms / 1000 do end
  end

  it("measures db:step's budget by the monotonic clock, not the handle's", function()
    -- The handle's clock frozen: due times stand still, the budget does not.
    db:set_now(1800000000000)
    local ran = 0
    db:define("busy", function() busy(1) ran = ran + 1 end)
    for _ = 1, 30 do db:enqueue("busy", {}) end
    local n = assert(db:step(2, { log_level = 4 }))
    -- Jobs of 1 ms or more, a 2 ms budget: the third starts at the latest.
    assert.is_true(n >= 1 and n <= 3, "ran " .. n .. " jobs in a 2 ms step")
    -- Released: the whole-millisecond wall clock decides due times again,
    -- and the budget still holds (jobs of 0.3 ms, budget 1 ms: at most 4).
    db:set_now(nil)
    db:define("short", function() busy(0.3) end)
    for _ = 1, 30 do db:enqueue("short", {}) end
    local m
    repeat
      m = assert(db:step(1, { log_level = 4 }))
      assert.is_true(m <= 4, "ran " .. m .. " jobs of 0.3 ms in a 1 ms step")
    until m == 0
  end)

  it("refuses bad arguments", function()
    assert.has_error(function() db:define("", function() end) end)
    assert.has_error(function() db:define("t", 42) end)
    assert.has_error(function() db:define("t", { retry = function() end }) end,
                     nil)
    assert.has_error(function() db:step(-1) end)
    assert.has_error(function() db:step(5, { workers = 3 }) end)
    -- A second handle on the same database steps on its own.
    local db2 = assert(pawl.open{ db = "sqlite:" .. dir .. "/pawl.db" })
    local n = 0
    db2:define("two", function() n = n + 1 end)
    local id = db2:enqueue("two", {})
    for _ = 1, 100 do
      assert(db2:step(5, { log_level = 4 }))
      if db2:get(id).state == "succeeded" then break end
    end
    assert.equal(1, n)
    db2:close()
  end)
end)
