-- recurring_spec.lua: recurring definitions through the real
-- `pawl` binary: `pawl recurring ...` with --json, bad input refused with
-- one line and nothing changed, and definitions job scripts declare,
-- written, fired and disabled by a running `pawl run`.
--
-- The misfire policies, the ticks of two nodes and the store's part are
-- tested with an injected clock in spec/unit/test_recurring.c (both
-- backends). Here the host fires a script's every-second definition for
-- real: the tests wait for conditions (a job in the database, a flag in
-- the listing), with hang guards only.
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

-- A script's load and the cluster: a script that fails to load keeps its
-- definition; two scripts of a node that declare one cron_name are refused
-- at load; nodes with different scripts do not flip a definition. Each on
-- SQLite and on PostgreSQL, with real `pawl run` processes.
local P = require "pg_helper"
local C = require "cli_helper"
local PG_SKIP = P.skip_reason()

local TICK = [[
return { cron = "0 3 * * *", payload = { v = %d }, run = function() end }]]

for _, backend in ipairs({ "sqlite", "postgres" }) do
  describe("script definitions and the load (" .. backend .. ")", function()
    local env
    before_each(function()
      if backend == "postgres" and PG_SKIP then return end
      env = P.env_for(backend)
    end)
    after_each(function()
      if env then env:cleanup() end
      env = nil
    end)
    local run_it = (backend == "postgres" and PG_SKIP) and function(name)
      pending(name .. " -- SKIPPED: " .. PG_SKIP)
    end or it

    run_it("a script that fails to load at a fresh start keeps its definition and says why", function()
      env:script("tick", TICK:format(1))
      env:script("other", "return { run = function() end }")
      env:run_idle("--node-id", "n1")
      local d = find(list(env), "tick")
      assert.is_true(d.enabled)
      assert.equal(cjson.null, d.load_error)
      -- A syntax error, then a top level that raises: each a fresh start.
      for i, broken in ipairs({ "return { cron = ", "error('no db here')" }) do
        env:script("tick", broken)
        local p = env:run_idle("--node-id", "n1")
        assert.truthy(p:stderr():find("script not loaded", 1, true))
        d = find(list(env), "tick")
        assert.is_true(d.enabled, "disabled by a failed load (" .. i .. ")")
        assert.equal("0 3 * * *", d.cron)
        assert.truthy(d.load_error:find("^node n1: "), d.load_error)
        assert.truthy(d.load_error:find("tick", 1, true), d.load_error)
        local text = env:ok("recurring", "list")
        assert.truthy(text:find("script:tick (does not load)", 1, true), text)
        assert.is_nil(text:find("(gone)", 1, true), text)
        assert.truthy(text:find("tick: script tick does not load (the definition is kept as it was): node n1: ", 1, true), text)
      end
      -- An operator's pause of a broken script's definition stays.
      env:ok("recurring", "pause", "tick")
      env:run_idle("--node-id", "n1")
      assert.is_true(find(list(env), "tick").paused)
      env:ok("recurring", "resume", "tick")
      -- It loads again: the error is cleared.
      env:script("tick", TICK:format(2))
      env:run_idle("--node-id", "n1")
      d = find(list(env), "tick")
      assert.is_true(d.enabled)
      assert.equal(cjson.null, d.load_error)
      assert.same({ v = 2 }, d.payload)
      -- It is removed while no node runs: the next node, alone, disables it.
      os.remove(env.scripts .. "/tick.lua")
      env:run_idle("--node-id", "n1")
      d = find(list(env), "tick")
      assert.is_false(d.enabled)
      assert.truthy(env:ok("recurring", "list"):find("script:tick (gone)", 1, true))
    end)

    run_it("two scripts that declare one cron_name: the second is refused at load, naming both", function()
      env:script("alpha", [[
return { cron = "0 3 * * *", cron_name = "nightly", run = function() return "a" end }]])
      env:script("beta", [[
return { cron = "0 4 * * *", cron_name = "nightly", run = function() return "b" end }]])
      env:script("gamma", [[
return { cron = "0 5 * * *", cron_name = "nightly", run = function() return "c" end }]])
      local a = env:enqueue("alpha", "{}")
      for round = 1, 2 do
        local p = env:run_idle()
        local err = p:stderr()
        for _, loser in ipairs({ "beta", "gamma" }) do
          assert.truthy(err:find(env.scripts .. "/" .. loser .. '.lua: cron_name \\?"nightly\\?" is declared by '
                                 .. env.scripts .. "/alpha.lua too"), err)
        end
        local d = find(list(env), "nightly")
        assert.equal("alpha", d.script, "round " .. round)
        assert.equal("0 3 * * *", d.cron)
        assert.equal(1, #list(env))
      end
      assert.equal("succeeded", env:show(a).state)
      -- Renamed: it loads, and serves.
      env:script("beta", [[
return { cron = "0 4 * * *", cron_name = "early", run = function() return "b" end }]])
      local b = env:enqueue("beta", "{}")
      local p = env:run_idle()
      assert.is_nil(p:stderr():find("beta.lua: cron_name", 1, true))
      assert.equal("succeeded", env:show(b).state)
      assert.equal("beta", find(list(env), "early").script)
      assert.equal("alpha", find(list(env), "nightly").script)
    end)

    run_it("nodes with different scripts do not flip a definition", function()
      -- Node A has tick and a_own; node B has b_own and not tick.
      local bdir = env:path("scripts_b")
      assert(C.sh("mkdir " .. C.quote(bdir)))
      env:script("tick", TICK:format(1))
      env:script("a_own", [[return { cron = "0 1 * * *", payload = { v = 1 }, run = function() end }]])
      C.write_file(bdir .. "/b_own.lua",
        [[return { cron = "0 2 * * *", payload = { v = 1 }, run = function() end }]])
      local na = env:start("--node-id", "A", "--poll", "0.05")
      local tick = env:wait_until("A's definitions", function()
        local d = find(list(env), "tick")
        return d and find(list(env), "a_own") and d
      end)
      assert.is_true(tick.enabled)
      local nb = env:spawn("--db", env.db, "run", "--scripts", bdir,
                           "--node-id", "B", "--poll", "0.05")
      -- Each round, a change on one node makes it sync (seen in its own
      -- definition's payload); tick stays as A wrote it, enabled.
      for v = 1, 3 do
        env:wait_until("B's sync " .. v, function()
          local d = find(list(env), "b_own")
          return d and d.payload.v == v
        end)
        local d = find(list(env), "tick")
        assert.is_true(d.enabled, "B disabled tick at its sync " .. v)
        assert.equal(tick.version, d.version)
        env:script("a_own", ([[return { cron = "0 1 * * *", payload = { v = %d }, run = function() end }]]):format(v + 1))
        env:wait_until("A's sync " .. v, function()
          return find(list(env), "a_own").payload.v == v + 1
        end)
        d = find(list(env), "tick")
        assert.is_true(d.enabled)
        assert.equal(tick.version, d.version, "A rewrote tick at its sync " .. v)
        C.write_file(bdir .. "/b_own.lua",
          ([[return { cron = "0 2 * * *", payload = { v = %d }, run = function() end }]]):format(v + 1))
      end
      -- Removed from A while it runs: gone.
      os.remove(env.scripts .. "/tick.lua")
      env:wait_until("tick to be disabled", function()
        return not find(list(env), "tick").enabled
      end)
      for _, p in ipairs({ na, nb }) do p:signal("TERM") end
      for _, p in ipairs({ na, nb }) do assert.truthy(p:wait(2 * H.HANG_S)) end
    end)
  end)
end

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
