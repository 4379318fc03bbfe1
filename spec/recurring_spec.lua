-- recurring_spec.lua: recurring definitions (issue 14) through the real
-- `pawl` binary: `pawl recurring ...` with --json, bad input refused with
-- one line and nothing changed, and definitions job scripts declare,
-- written, fired and disabled by a running `pawl run`.
--
-- The misfire policies, the ticks of two nodes and the store's part are
-- tested with an injected clock in spec/unit/test_recurring.c (both
-- backends). Here the host fires a script's every-second definition for
-- real: the tests wait for conditions (a job in the database, a flag in
-- the listing), with hang guards only (issue 17).
local cjson = require "cjson"
local H = require "host_helper"

local function list(env)
  return cjson.decode(env:ok("recurring", "list", "--json"))
end

local function find(defs, name)
  for _, d in ipairs(defs) do if d.name == name then return d end end
end

local function jobs_of(env, jtype)
  return H.json_lines(env:ok("jobs", "--type", jtype, "--json"))
end

describe("pawl recurring", function()
  local env
  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  it("adds, lists, changes, pauses, resumes, triggers and removes", function()
    local d = cjson.decode(env:ok("recurring", "add", "nightly", "30 2 * * *",
      "--tz", "Europe/Berlin", "--misfire", "catch_up", "--catch-up-limit",
      "3", "--type", "report", "--payload", '{"a":1}', "--queue", "mail",
      "--priority", "4", "--json"))
    assert.equal("nightly", d.name)
    assert.equal("30 2 * * *", d.cron)
    assert.equal("Europe/Berlin", d.tz)
    assert.equal("catch_up", d.misfire)
    assert.equal(3, d.catch_up_limit)
    assert.equal("report", d.type)
    assert.same({ a = 1 }, d.payload)
    assert.equal("mail", d.queue)
    assert.equal(4, d.priority)
    assert.equal("operator", d.source)
    assert.is_false(d.paused)
    -- next fire in the definition's zone, with its offset
    assert.truthy(d.next_fire_at:match("T02:30:00%+0[12]:00$"))
    assert.equal(cjson.null, d.last_fire_at)
    assert.equal(cjson.null, d.last_job)

    local text = env:ok("recurring", "list")
    assert.truthy(text:match("NAME"))
    assert.truthy(text:match("nightly%s+30 2 %* %* %*%s+Europe/Berlin"))

    d = cjson.decode(env:ok("recurring", "set", "nightly", "--cron",
                            "0 * * * *", "--tz", "UTC", "--json"))
    assert.equal("0 * * * *", d.cron)
    assert.truthy(d.next_fire_at:match("T%d%d:00:00%+00:00$"))
    assert.equal("report", d.type) -- untouched

    d = cjson.decode(env:ok("recurring", "pause", "nightly", "--json"))
    assert.is_true(d.paused)
    d = cjson.decode(env:ok("recurring", "resume", "nightly", "--json"))
    assert.is_false(d.paused)

    local t = cjson.decode(env:ok("recurring", "trigger", "nightly", "--json"))
    local j = env:show(t.id)
    assert.equal("report", j.type)
    assert.equal("mail", j.queue)
    assert.equal("cron:nightly:manual:" .. t.id, j.idempotency_key)

    local r = cjson.decode(env:ok("recurring", "rm", "nightly", "--json"))
    assert.equal("nightly", r.removed)
    assert.same({}, list(env))
    -- its job stays
    assert.equal("report", env:show(t.id).type)
  end)

  it("refuses bad input with one line naming it, changing nothing", function()
    env:ok("recurring", "add", "keep", "0 9 * * MON-FRI")
    local before = list(env)
    local cases = {
      { { "add", "x", "0 24 * * *" }, 2, "hour: 24 is out of range 0%-23" },
      { { "add", "x", "0 0 30 2 *" }, 2, "never fires" },
      { { "add", "x", "* * *" }, 2, "expected 5 or 6 fields" },
      { { "add", "x", "0 0 * * *", "--tz", "Mars/Olympus_Mons" }, 2,
        "Mars/Olympus_Mons" },
      { { "add", "x", "0 0 * * *", "--misfire", "sometimes" }, 2, "sometimes" },
      { { "add", "x", "0 0 * * *", "--catch-up-limit", "5000" }, 2,
        "catch_up_limit must be between 1 and 1000 %(got 5000%)" },
      { { "add", "x", "0 0 * * *", "--catch-up-limit", "many" }, 2, "many" },
      { { "add", "x", "0 0 * * *", "--payload", "{no" }, 2,
        "payload is not valid JSON" },
      { { "add", "keep", "0 0 * * *" }, 1, "already exists" },
      { { "set", "keep", "--cron", "61 * * * *" }, 2, "minute: 61" },
      { { "set", "keep", "--tz", "Nowhere/Town" }, 2, "Nowhere/Town" },
      { { "set", "nope", "--tz", "UTC" }, 1, 'no recurring definition "nope"' },
      { { "pause", "nope" }, 1, "nope" },
      { { "trigger", "nope" }, 1, "nope" },
      { { "rm", "nope" }, 1, "nope" },
      { { "frobnicate" }, 2, "unknown verb" },
      { { "set", "keep" }, 2, "nothing to change" },
    }
    for _, c in ipairs(cases) do
      local args = { "recurring" }
      for _, a in ipairs(c[1]) do args[#args + 1] = a end
      local r = env:pawl(unpack(args))
      assert.equal(c[2], r.code, table.concat(args, " ") .. ": " .. r.err)
      local lines = H.lines(r.err)
      assert.equal(1, #lines, r.err)
      assert.truthy(r.err:match(c[3]), table.concat(args, " ") .. ": " .. r.err)
    end
    assert.same(before, list(env))
  end)
end)

describe("recurring definitions of job scripts", function()
  local env
  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  it("are written, fire, and are disabled when their script goes", function()
    env:ok("migrate")
    -- an operator's definition is never touched by reloads
    env:ok("recurring", "add", "ops", "0 0 1 1 *", "--type", "tick")
    env:script("tick", [[
return {
  cron = "* * * * * *", tz = "Europe/Berlin", misfire = "skip",
  payload = { hello = "cron" },
  run = function(job) return { got = job.payload.hello } end,
}]])
    local p = env:start("--poll", "0.05")
    local d = env:wait_until("the script's definition", function()
      return find(list(env), "tick")
    end)
    assert.equal("script", d.source)
    assert.equal("tick", d.script)
    assert.equal("* * * * * *", d.cron)
    assert.equal("Europe/Berlin", d.tz)
    assert.equal("skip", d.misfire)
    assert.is_true(d.enabled)
    -- it fires: a job of the type succeeds, keyed by its occurrence
    local job = env:wait_until("a fired job to succeed", function()
      for _, j in ipairs(jobs_of(env, "tick")) do
        if j.state == "succeeded" then return j end
      end
    end)
    assert.truthy(job.idempotency_key:match("^cron:tick:%d+$"))
    assert.same({ got = "cron" }, job.result)
    d = env:wait_until("the last job in the listing", function()
      local x = find(list(env), "tick")
      return x.last_job ~= cjson.null and x
    end)
    assert.truthy(d.last_fire_at:match("%+0[12]:00$"))

    -- the script goes: disabled, not deleted; the operator's untouched
    os.remove(env.scripts .. "/tick.lua")
    d = env:wait_until("the definition to be disabled", function()
      local x = find(list(env), "tick")
      return x and not x.enabled and x
    end)
    assert.equal("script", d.source)
    local ops = find(list(env), "ops")
    assert.is_true(ops.enabled)
    assert.equal("operator", ops.source)
    -- it fires no more: the jobs made so far are all there will be
    local n = #jobs_of(env, "tick")
    p:signal("TERM")
    assert.truthy(p:wait(2 * H.HANG_S))
    assert.equal(n, #jobs_of(env, "tick"))
  end)

  it("refuse a bad expression or zone at load, naming it; others serve", function()
    env:ok("migrate")
    env:script("bad_cron", [[
return { cron = "0 24 * * *", run = function() end }]])
    env:script("bad_zone", [[
return { cron = "0 0 * * *", tz = "Mars/Olympus_Mons", run = function() end }]])
    env:script("bad_misfire", [[
return { cron = "0 0 * * *", misfire = "sometimes", run = function() end }]])
    env:script("tz_alone", [[
return { tz = "UTC", run = function() end }]])
    env:script("good", [[return { run = function() return "ok" end }]])
    local id = env:enqueue("good")
    local p = env:run_idle()
    local err = p:stderr()
    assert.truthy(err:match('cron: bad expression \\?"0 24 %* %* %*\\?": hour: 24 is out of range 0%-23'), err)
    assert.truthy(err:match("tz: unknown time zone \\?\"Mars/Olympus_Mons"), err)
    assert.truthy(err:match('misfire must be run_once, catch_up or skip'), err)
    assert.truthy(err:match("field tz needs cron"), err)
    assert.equal("succeeded", env:show(id).state)
    assert.same({}, list(env))
  end)
end)

describe("the Lua module's db:recurring_*", function()
  local pawl = require "pawl"
  local env, db
  before_each(function()
    env = H.env()
    db = assert(pawl.open { db = env.db, create = true })
  end)
  after_each(function()
    db:close()
    env:cleanup()
  end)

  it("adds, lists, changes, triggers and removes; refuses bad input", function()
    assert.is_true(db:recurring_add("r", { cron = "*/5 * * * *",
      tz = "America/New_York", misfire = "catch_up", catch_up_limit = 2,
      payload = { n = 1 }, queue = "q" }))
    local l = db:recurring_list()
    assert.equal(1, #l)
    assert.equal("r", l[1].name)
    assert.equal("*/5 * * * *", l[1].cron)
    assert.equal("America/New_York", l[1].tz)
    assert.equal("catch_up", l[1].misfire)
    assert.equal(2, l[1].catch_up_limit)
    assert.same({ n = 1 }, l[1].payload)
    assert.equal("operator", l[1].source)
    assert.truthy(l[1].next_fire_at > 0)
    assert.is_true(db:recurring_set("r", { cron = "0 0 * * *" }))
    assert.equal("0 0 * * *", db:recurring_list()[1].cron)
    assert.equal("q", db:recurring_list()[1].queue)
    assert.is_true(db:recurring_pause("r"))
    assert.is_true(db:recurring_list()[1].paused)
    assert.is_true(db:recurring_resume("r"))
    local id = db:recurring_trigger("r")
    assert.equal("r", db:get(id).type)
    local ok, msg, code = db:recurring_add("x", { cron = "0 24 * * *" })
    assert.is_nil(ok)
    assert.truthy(msg:match("hour: 24 is out of range 0%-23"))
    assert.equal("PAWL_EINVAL", code)
    ok, msg, code = db:recurring_set("nope", { tz = "UTC" })
    assert.is_nil(ok)
    assert.equal("PAWL_ENOTFOUND", code)
    assert.has_error(function() db:recurring_add("x", { crontab = "x" }) end)
    assert.is_true(db:recurring_rm("r"))
    assert.same({}, db:recurring_list())
  end)
end)
