-- bounds_spec.lua: numbers from outside are bounded, from every
-- entry point that is not C (spec/unit/test_bounds.c has the C API): the
-- CLI, job code (pawl.enqueue, pawl.snooze, retry policies, script fields)
-- and the Lua module. A value out of its range, NaN, an infinity or a
-- fraction where a whole number is meant is refused with a message naming
-- the value and the range; nothing is clamped or rounded, and nothing is
-- stored.
local H = require "host_helper"

-- Under ThreadSanitizer (make test-tsan) the Lua module, built with it,
-- cannot be loaded into the uninstrumented luajit: its cases wait for the
-- plain and AddressSanitizer runs.
local TSAN = os.getenv("PAWL_TSAN") == "1"
local pawl = not TSAN and require "pawl"

-- The ranges of include/pawl.h.
local PRIORITY = "between -1000000 and 1000000"
local DELAY_S = "between 0 and 315360000"

local function has(s, text) return s:find(text, 1, true) ~= nil end

local function assert_has(s, ...)
  for _, text in ipairs({ ... }) do
    assert.is_true(has(s, text), ("%q lacks %q"):format(s, text))
  end
end

describe("bounds", function()
  local env

  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  local function job_count()
    return #H.json_lines(env:ok("jobs", "--json"))
  end

  -- ---- the CLI -----------------------------------------------------------

  describe("the CLI", function()
    local function refused(args, ...)
      local r = env:pawl(unpack(args))
      assert.are.equal(2, r.code, r.err)
      assert_has(r.err, ...)
      return r
    end

    it("refuses enqueue numbers out of range, naming value and range", function()
      env:ok("migrate")
      refused({ "enqueue", "t", "--priority", "1000001" },
              "--priority must be " .. PRIORITY, '"1000001"')
      refused({ "enqueue", "t", "--priority", "-1000001" }, PRIORITY)
      refused({ "enqueue", "t", "--max-attempts", "10001" },
              "--max-attempts must be between 1 and 10000", '"10001"')
      refused({ "enqueue", "t", "--timeout", "86401" },
              "--timeout must be between 0 and 86400", '"86401"')
      refused({ "enqueue", "t", "--delay", "315360000.001" },
              "--delay must be " .. DELAY_S .. " seconds", '"315360000.001"')
      refused({ "enqueue", "t", "--delay", "99999999999999999999999" },
              "--delay must be " .. DELAY_S)
      refused({ "enqueue", "t", "--run-at", "9999-12-31T23:59:59-10:00" },
              "--run-at must be", "before 10000-01-01")
      assert.are.equal(0, job_count())
      -- The ends of the ranges are fine.
      env:ok("enqueue", "t", "--priority", "1000000", "--max-attempts", "10000",
             "--timeout", "86400", "--delay", "315360000")
      env:ok("enqueue", "t", "--run-at", "9999-12-31T23:59:59.999Z")
      assert.are.equal(2, job_count())
    end)

    it("refuses a lease longer than a day", function()
      -- (--until-idle: were it accepted, the run would end by itself.)
      refused({ "run", "--until-idle", "--lease", "86401" },
              "--lease must be between 0 and 86400 seconds", '"86401"')
    end)
  end)

  -- ---- job code ----------------------------------------------------------

  describe("job code", function()
    it("pawl.enqueue refuses bad numbers, naming value and range", function()
      -- Each call's error message is collected; none may enqueue anything.
      env:script("probe", [[
local cases = {
  { priority = 1.5 }, { priority = 1e300 }, { priority = 0/0 },
  { priority = 2^31 }, { max_attempts = 0.5 }, { max_attempts = 0 },
  { max_attempts = 1e9 }, { delay = 0/0 }, { delay = 1e300 },
  { delay = -1 }, { delay = 1/0 }, { run_at = 1e300 }, { run_at = -1 },
  { timeout = 1.5 }, { timeout = 1e12 }, { timeout = -1/0 },
}
return {
  max_attempts = 1,
  run = function()
    local out = {}
    for i, opts in ipairs(cases) do
      local ok, err = pcall(pawl.enqueue, "child", {}, opts)
      out[i] = ok and "enqueued" or err
    end
    return out
  end,
}]])
      env:script("child", "return { run = function() end }")
      local id = env:enqueue("probe")
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(id)
      assert.are.equal("succeeded", j.state, j.last_error)
      local want = {
        { "priority must be a whole number " .. PRIORITY, "(got 1.5)" },
        { "priority", PRIORITY, "(got 1e+300)" },
        { "priority", PRIORITY, "(got nan)" },
        { "priority", PRIORITY, "(got 2147483648)" },
        { "max_attempts must be a whole number between 1 and 10000", "(got 0.5)" },
        { "max_attempts", "between 1 and 10000", "(got 0)" },
        { "max_attempts", "(got 1000000000)" },
        { "delay must be a number " .. DELAY_S .. " seconds", "(got nan)" },
        { "delay", DELAY_S, "(got 1e+300)" },
        { "delay", "(got -1)" },
        { "delay", "(got inf)" },
        { "run_at must be a number between 0 and 253402300799.999 seconds since the epoch",
          "(got 1e+300)" },
        { "run_at", "(got -1)" },
        { "timeout must be a whole number between 0 and 86400 seconds", "(got 1.5)" },
        { "timeout", "(got 1000000000000)" },
        { "timeout", "(got -inf)" },
      }
      assert.are.equal(#want, #j.result)
      for i, texts in ipairs(want) do
        assert_has(j.result[i], "pawl.enqueue: ", unpack(texts))
      end
      assert.are.equal(1, job_count())
    end)

    it("pawl.snooze refuses a delay out of range instead of looping", function()
      env:script("snoozer", [[
return {
  max_attempts = 1,
  run = function(job) pawl.snooze(job.payload.s) end,
}]])
      local huge = env:enqueue("snoozer", '{"s":1e300}')
      local neg = env:enqueue("snoozer", '{"s":-1}')
      local text = env:enqueue("snoozer", '{"s":"soon"}')
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      for id, got in pairs({ [huge] = "(got 1e+300)", [neg] = "(got -1)",
                             [text] = "(got soon)" }) do
        local j = env:show(id)
        assert.are.equal("failed", j.state)
        assert.are.equal(1, j.attempt)
        assert_has(j.last_error, "pawl.snooze: seconds must be a number "
                   .. DELAY_S, got)
        assert.are.same({ "failed" }, { j.attempts[1].outcome })
      end
    end)

    it("a retry policy's delay out of range fails the job with both errors", function()
      env:script("policy", [[
return {
  retry = function(attempt, err, job) return job.payload.d end,
  run = function() error("the job's own error") end,
}]])
      local ids = {
        env:enqueue("policy", '{"d":1e300}'),
        env:enqueue("policy", '{"d":315360000.5}'),
        env:enqueue("policy", '{"d":-1}'),
      }
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      for _, id in ipairs(ids) do
        local j = env:show(id)
        assert.are.equal("failed", j.state)
        assert.are.equal(1, j.attempt)
        assert.are.equal(1, #j.attempts)
        assert_has(j.last_error, "the job's own error", "retry policy returned ",
                   ", not a delay in seconds (" .. DELAY_S .. ")")
      end
      assert_has(env:show(ids[1]).last_error, "returned 1e+300")
    end)

    it("a script field out of range keeps the script from loading", function()
      env:script("prio", "return { priority = 1.5, run = function() end }")
      env:script("att", "return { max_attempts = 10001, run = function() end }")
      env:script("tmo", "return { timeout = 1e9, run = function() end }")
      local ids = { env:enqueue("prio"), env:enqueue("att"), env:enqueue("tmo") }
      local p = env:run_idle("--idle-wait", "0")
      assert.are.equal(0, p.code, p:stderr())
      local err = p:stderr()
      assert_has(err, "priority must be a whole number " .. PRIORITY .. " (got 1.5)",
                 "max_attempts must be a whole number between 1 and 10000 (got 10001)",
                 "timeout must be a number of seconds above 0 and at most 86400 (got 1000000000)")
      -- Their jobs fail with the load error, naming the file.
      local why = { "priority must be a whole number", "max_attempts must be",
                    "timeout must be" }
      for i, id in ipairs(ids) do
        local j = env:show(id)
        assert_has(j.last_error, "did not load", why[i], ({ "prio", "att", "tmo" })[i] .. ".lua")
      end
    end)
  end)

  -- ---- the Lua module ----------------------------------------------------

  local describe_module = TSAN and function(name)
    pending(name .. " (the Lua module cannot load under ThreadSanitizer)")
  end or describe

  describe_module("the Lua module", function()
    local T0 = 1800000000000
    local db

    before_each(function()
      db = assert(pawl.open{ db = env.db, node_id = "spec", now = T0 })
    end)
    after_each(function() if db then db:close() end end)

    local function refused(opts, ...)
      local ok, msg, code = db:enqueue("t", nil, opts)
      assert.is_nil(ok)
      assert.are.equal("PAWL_EINVAL", code)
      assert_has(msg, ...)
    end

    it("refuses enqueue numbers out of range, naming value and range", function()
      refused({ priority = 2 ^ 31 - 1 }, "priority must be " .. PRIORITY,
              "(got 2147483647)")
      refused({ max_attempts = 2 ^ 31 - 1 }, "max_attempts must be between 1 and 10000")
      refused({ timeout = 86401 }, "timeout must be between 0 and 86400 seconds",
              "(got 86401)")
      refused({ delay_ms = 2 ^ 53 }, "delay must be between 0 and 315360000000 ms",
              "(got 9007199254740992)")
      refused({ run_at = 2 ^ 53 }, "run_at must be between 0 and 253402300799999")
      -- A number that does not even fit is raised as a bad argument.
      local ok, err = pcall(db.enqueue, db, "t", nil, { priority = 1.5 })
      assert.is_false(ok)
      assert_has(err, 'option "priority" must be a whole number', "(got 1.5)")
      ok, err = pcall(db.enqueue, db, "t", nil, { delay_ms = 0 / 0 })
      assert.is_false(ok)
      assert_has(err, 'option "delay_ms"', "(got nan)")
      assert.are.equal(0, #db:jobs{})
    end)

    it("refuses leases and run times out of range", function()
      local ok, msg = pawl.open{ db = env.db, lease_ms = 2 ^ 40 }
      assert.is_nil(ok)
      assert_has(msg, "lease_ms must be between 0 and 86400000",
                 "(got 1099511627776)")
      local id = assert(db:enqueue("t"))
      local _, cmsg, code = db:claim(1, { lease_ms = 2 ^ 40 })
      assert.are.equal("PAWL_EINVAL", code)
      assert_has(cmsg, "lease_ms must be between 0 and 86400000")
      local jobs = assert(db:claim(1))
      assert.are.equal(1, #jobs)
      local _, fmsg, fcode = db:finish{ { id = id, attempt = 1, kind = "retry",
                                          error = "e", run_at = 2 ^ 53 } }
      assert.are.equal("PAWL_EINVAL", fcode)
      assert_has(fmsg, "run_at must be between 0 and 253402300799999")
      assert.are.equal("running", db:get(id).state)
    end)
  end)
end)
