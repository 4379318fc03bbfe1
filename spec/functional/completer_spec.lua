-- completer_spec.lua: what `pawl run` does when the database refuses what
-- it is given, or takes nothing at all: one job's bad outcome fails that
-- job alone, a stop always ends, --until-idle gives up instead of looping,
-- and jobs a dead node left running are waited for or counted.
--
-- Real `pawl run` processes on temp SQLite databases (the PostgreSQL side
-- is in completer_pg_spec.lua). Failures the database would rarely produce
-- on cue come from the test-only fault seam, PAWL_TEST_FAULTS (see
-- host/core/fault.h), set in the environment of the host under test only.
-- Every wait is on a condition (a log line, a state, the process's end)
-- with a generous bound, never a sleep.
local ffi = require "ffi"
local cjson = require "cjson"
local H = require "host_helper"

ffi.cdef [[
  int pawl_cs_setenv(const char *name, const char *value, int overwrite)
      __asm__("setenv");
  int pawl_cs_unsetenv(const char *name) __asm__("unsetenv");
]]

local function has(s, text) return s:find(text, 1, true) ~= nil end

-- Starts `pawl run ARGS...` with PAWL_TEST_FAULTS=faults in its
-- environment (and nowhere else: the variable is unset again at once).
local function start_faulty(env, faults, ...)
  ffi.C.pawl_cs_setenv("PAWL_TEST_FAULTS", faults, 1)
  local ok, p = pcall(env.start, env, ...)
  ffi.C.pawl_cs_unsetenv("PAWL_TEST_FAULTS")
  assert(ok, p)
  return p
end

-- Waits for a process to end by itself (60 s at most); its exit status.
local function ended(p)
  local code = p:wait(60)
  if not code then
    p:kill()
    error("the host did not end by itself; stderr:\n" .. p:stderr(), 2)
  end
  return code
end

local GOOD = [[
return {
  run = function(job, ctx)
    ctx:log("info", "hello", { n = 1 })
    return { ok = true }
  end,
}]]

describe("pawl run with a database that refuses", function()
  local env

  before_each(function()
    env = H.env()
    env:script("good", GOOD)
  end)
  after_each(function() env:cleanup() end)

  -- Runs an --until-idle host over `bad` (one job of each type named) and
  -- three good jobs; returns the process, the bad jobs and the good ones.
  local function run_mixed(bad, ...)
    local ids, good = {}, {}
    for _, t in ipairs(bad) do ids[t] = env:enqueue(t, "{}", "--max-attempts", "1") end
    for i = 1, 3 do good[i] = env:enqueue("good") end
    local p = env:start("--until-idle", "--workers", "1", ...)
    return p, ids, good
  end

  local function assert_good(good, p)
    for _, id in ipairs(good) do
      local j = env:show(id)
      assert.are.equal("succeeded", j.state, p:stderr())
      assert.are.same({ ok = true }, j.result)
    end
  end

  describe("a job's outcome the store cannot take", function()
    it("fails only the job whose result is not valid UTF-8", function()
      env:script("bad", [[return { run = function() return { s = "caf\233" } end }]])
      local p, ids, good = run_mixed({ "bad" })
      assert.are.equal(0, ended(p), p:stderr())
      local j = env:show(ids.bad)
      assert.are.equal("failed", j.state)
      -- The worker's encoder refuses it, naming the value; the store never
      -- sees it.
      assert.is_truthy(has(j.last_error, "the job's return value cannot be stored "
                                         .. "as JSON: pawl.json.encode: a string is "
                                         .. "not valid UTF-8 at .s"), j.last_error)
      assert.are.equal(cjson.null, j.result)
      assert_good(good, p)
      assert.are.equal(0, p:count("writing outcomes failed"), p:stderr())
    end)

    it("fails only the job whose result is nested deeper than the store takes",
       function()
      env:script("deep", [[
return { run = function()
  local t = {}
  local c = t
  for i = 1, 600 do c[1] = {}; c = c[1] end
  return t
end }]])
      local p, ids, good = run_mixed({ "deep" })
      assert.are.equal(0, ended(p), p:stderr())
      local j = env:show(ids.deep)
      assert.are.equal("failed", j.state)
      assert.is_truthy(has(j.last_error, "the job's return value cannot be stored "
                                         .. "as JSON: pawl.json.encode: tables nested "
                                         .. "deeper than 512"), j.last_error)
      assert_good(good, p)
    end)

    it("raises in the job a ctx:log whose fields are a list", function()
      env:script("listlog", [[
return { run = function(job, ctx)
  ctx:log("info", "x", { 1, 2 })
  return { ok = true }
end }]])
      local p, ids, good = run_mixed({ "listlog" })
      assert.are.equal(0, ended(p), p:stderr())
      local j = env:show(ids.listlog)
      assert.are.equal("failed", j.state)
      assert.is_truthy(has(j.last_error, "listlog.lua:2: ctx:log: fields must be "
                                         .. "a table of named values"), j.last_error)
      assert_good(good, p)
    end)

    it("stores error texts and log lines with invalid UTF-8 or NUL made valid",
       function()
      env:script("texts", [[
return { run = function(job, ctx)
  ctx:log("info", "x\0y caf\233", { s = "a\0b", t = "caf\233" })
  error("caf\233 a\0b", 0)
end }]])
      local p, ids, good = run_mixed({ "texts" })
      assert.are.equal(0, ended(p), p:stderr())
      local j = env:show(ids.texts)
      assert.are.equal("failed", j.state)
      -- U+FFFD for the bad byte (the traceback handler keeps the message
      -- up to its NUL).
      assert.are.equal("caf\239\191\189 a", j.last_error:sub(1, 8))
      assert.are.equal(1, #j.logs)
      assert.are.equal("x\239\191\189y caf\239\191\189", j.logs[1].message)
      assert.are.same({ s = "a\239\191\189b", t = "caf\239\191\189" }, j.logs[1].fields)
      assert_good(good, p)
    end)
  end)

  describe("through the fault seam (PAWL_TEST_FAULTS)", function()
    it("writes again a batch the database failed to take, losing nothing", function()
      local ids = {}
      for i = 1, 5 do ids[i] = env:enqueue("good") end
      local p = start_faulty(env, "finish:2:transient", "--until-idle", "--workers", "1")
      assert.are.equal(0, ended(p), p:stderr())
      assert_good(ids, p)
      assert.are.equal(1, p:count("writing outcomes failed; retrying"), p:stderr())
      for _, id in ipairs(ids) do
        local j = env:show(id)
        assert.are.equal(1, #j.logs)
        assert.are.equal("hello", j.logs[1].message)
      end
    end)

    it("fails the one outcome the database refuses as bad data", function()
      local ids = {}
      for i = 1, 5 do ids[i] = env:enqueue("good") end
      local p = start_faulty(env, "finish:2:permanent", "--until-idle", "--workers", "1")
      assert.are.equal(0, ended(p), p:stderr())
      local failed = {}
      for _, id in ipairs(ids) do
        local j = env:show(id)
        if j.state == "failed" then
          failed[#failed + 1] = id
          assert.is_truthy(has(j.last_error, "the job's result could not be stored: "),
                           j.last_error)
        else
          assert.are.equal("succeeded", j.state)
        end
      end
      assert.are.equal(1, #failed, p:stderr())
      assert.are.equal(1, p:count("storing a failure that says so instead"), p:stderr())
    end)

    it("refuses to open with a malformed plan", function()
      local p = start_faulty(env, "finish:x", "--until-idle")
      assert.are.equal(2, ended(p)) -- bad input
      assert.is_truthy(has(p:stderr(), "PAWL_TEST_FAULTS: rule \"finish:x\""), p:stderr())
    end)
  end)

  describe("stopping", function()
    -- A host whose every write fails, with its job's outcome waiting.
    local function stuck_host(...)
      local id = env:enqueue("good")
      local p = start_faulty(env, "finish:1+:transient", "--workers", "1", ...)
      env:wait_until("a failed write", function()
        return p:count("writing outcomes failed; retrying") > 0
      end, 60)
      return p, id
    end

    it("ends at a second signal, listing the outcomes not stored", function()
      local p, id = stuck_host()
      p:signal("TERM")
      env:wait_until("the stop to begin", function()
        return p:count("stopping: no new jobs") > 0
      end, 60)
      p:signal("TERM")
      assert.are.equal(1, ended(p), p:stderr())
      assert.are.equal(1, p:count("outcome not stored"), p:stderr())
      assert.is_truthy(has(p:stderr(), "job=" .. id), p:stderr())
      assert.is_truthy(has(p:stderr(), "pawl: 1 outcome could not be stored"), p:stderr())
      -- Not written: still running, until its lease expires.
      assert.are.equal("running", env:show(id).state)
    end)

    it("ends after the grace period and the flush time at one signal", function()
      local p, id = stuck_host("--grace", "0.1")
      p:signal("TERM")
      assert.are.equal(1, ended(p), p:stderr())
      assert.is_truthy(has(p:stderr(), "job=" .. id), p:stderr())
      assert.are.equal(1, p:count("outcomes not stored at the stop"), p:stderr())
    end)
  end)

  describe("--until-idle", function()
    it("gives up with exit 1 once claims have failed for --give-up", function()
      env:enqueue("good")
      local p = start_faulty(env, "claim:1+", "--until-idle", "--give-up", "0.3",
                             "--poll", "0.05")
      assert.are.equal(1, ended(p), p:stderr())
      assert.is_truthy(has(p:stderr(), "pawl: gave up: claiming jobs has failed for"),
                       p:stderr())
    end)

    it("takes --give-up in seconds, up to a day", function()
      for _, v in ipairs({ "0", "2.5", "86400" }) do
        local r = env:pawl("run", "--scripts", env.scripts, "--until-idle",
                           "--give-up", v)
        assert.are.equal(0, r.code, r.err)
      end
      for _, v in ipairs({ "x", "-1", "86401" }) do
        local r = env:pawl("run", "--scripts", env.scripts, "--until-idle",
                           "--give-up", v)
        assert.are.equal(2, r.code, v)
        assert.is_truthy(has(r.err, "--give-up"), r.err)
      end
    end)

    -- A node that dies (SIGKILL) while running a job, its lease
    -- `lease` seconds; returns the job's id.
    local function dead_node(lease)
      env:script("hang", [[
return { run = function(job, ctx)
  if job.attempt == 1 then
    ctx:log("info", "hanging")
    pawl.sleep(3600)
  end
  return { ok = true }
end }]])
      local id = env:enqueue("hang")
      local p = env:start("--workers", "1", "--lease", lease)
      env:wait_until("the job to start", function() return p:count("hanging") > 0 end, 60)
      p:kill()
      return id
    end

    it("waits for the lease of a job a dead node left running, then runs it",
       function()
      local id = dead_node("1")
      local p = env:start("--until-idle", "--idle-wait", "60")
      assert.are.equal(0, ended(p), p:stderr())
      local j = env:show(id)
      assert.are.equal("succeeded", j.state, p:stderr())
      assert.are.equal(2, j.attempt)
      assert.are.equal(0, p:count("still running elsewhere"))
    end)

    it("says how many jobs are still running elsewhere when it exits", function()
      local id = dead_node("3600")
      local other = env:enqueue("good")
      local p = env:start("--until-idle", "--idle-wait", "0.1")
      assert.are.equal(0, ended(p), p:stderr())
      assert.are.equal("running", env:show(id).state)
      assert.are.equal("succeeded", env:show(other).state)
      assert.are.equal(1, p:count("still running elsewhere"), p:stderr())
      assert.is_truthy(has(p:stderr(), "running=1"), p:stderr())
    end)
  end)
end)
