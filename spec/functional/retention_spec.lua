-- retention_spec.lua: retention and archival through the CLI,
-- on SQLite and PostgreSQL: `pawl cleanup` (dry run, --state,
-- --older-than, --json, --retain with archive), its bad input, an
-- idempotency key that outlives its job, and the sweep of a running
-- `pawl run --retain` host (threaded mode), which removes old finished
-- jobs while a job of its own waits at a gate and leaves that job alone.
-- The CLI has no injected clock, so ages here are --older-than 0 (every
-- finished job) or a policy of 0 for a state; the ages themselves are
-- tested with an injected clock in spec/unit/test_retention.c. No sleeps
-- and no wall-clock bounds: waits are for conditions, with hang
-- guards.
local cjson = require "cjson"
local H = require "host_helper"
local P = require "pg_helper"

local PG_SKIP = P.skip_reason()
local pg_test = PG_SKIP and function(name)
  pending(name .. " -- SKIPPED: " .. PG_SKIP)
end or it

local function count(env, state) return env:count_state(state) end

local function cleanup_json(env, ...)
  return cjson.decode(env:ok("cleanup", "--json", ...))
end

local function by_state(doc)
  local t = {}
  for _, row in ipairs(doc.by) do
    t[row.state] = (t[row.state] or 0) + row.count
  end
  return t
end

local function cli_cleanup(env)
  -- Three canceled, two pending (live), one canceled with a key.
  local ids = {}
  for i = 1, 3 do ids[i] = env:enqueue("t", "{}", "--queue", "mail") end
  local live1 = env:enqueue("t", "{}")
  local live2 = env:enqueue("t", "{}", "--delay", "3600")
  local keyed = env:enqueue("t", "{}", "--key", "order-7")
  for _, id in ipairs(ids) do env:ok("cancel", id) end
  env:ok("cancel", keyed)
  -- The default policy: nothing is a day old.
  local doc = cleanup_json(env, "--dry-run")
  assert.are.equal(0, doc.removed)
  assert.is_true(doc.dry_run)
  -- Every finished job, as a dry run: counted, nothing changes.
  doc = cleanup_json(env, "--dry-run", "--older-than", "0")
  assert.are.equal(4, doc.removed)
  assert.are.same({ canceled = 4 }, by_state(doc))
  assert.are.equal(4, count(env, "canceled"))
  -- --state narrows: no succeeded job.
  doc = cleanup_json(env, "--older-than", "0", "--state", "succeeded")
  assert.are.equal(0, doc.removed)
  -- The text form names state, queue and type.
  local out = env:ok("cleanup", "--older-than", "0")
  assert.matches("4 finished jobs deleted", out, 1, true)
  assert.matches("canceled%s+mail%s+t%s+3", out)
  assert.matches("canceled%s+default%s+t%s+1", out)
  assert.are.equal(0, count(env, "canceled"))
  assert.are.equal(2, count(env, "pending"))
  assert.are.equal("pending", env:show(live1).state)
  assert.are.equal("pending", env:show(live2).state)
  -- The key outlives its job: the duplicate gets the first id, no new job.
  local r = env:pawl("enqueue", "t", "{}", "--key", "order-7")
  assert.are.equal(0, r.code, r.err)
  assert.are.equal(keyed, (r.out:gsub("%s+$", "")))
  assert.matches("duplicate", r.err, 1, true)
  assert.are.equal(2, count(env, "pending"))
  -- Archive: moved, said so.
  local a = env:enqueue("t", "{}")
  env:ok("cancel", a)
  doc = cleanup_json(env, "--retain", "canceled=0,archive")
  assert.are.equal(1, doc.removed)
  assert.is_true(doc.archived)
  assert.are.equal(1, env:pawl("show", a).code) -- gone from the jobs
end

local function cli_bad_input(env)
  env:ok("migrate")
  local cases = {
    { { "cleanup", "--state", "running" }, "state running is not a finished state" },
    { { "cleanup", "--state", "nope" }, "nope" },
    { { "cleanup", "--older-than", "7x" }, "--older-than" },
    { { "cleanup", "--retain", "failed=1y" }, "not a duration" },
    { { "cleanup", "--retain", "pending=1d" }, "unknown state \"pending\"" },
    { { "cleanup", "--retain", "batch=0" }, "from 1 to 100000" },
    { { "cleanup", "--retain", "off" }, "needs a policy" },
    { { "cleanup", "extra" }, "extra" },
    { { "run", "--retain", "queue:.failed=1d" }, "queue:NAME" },
  }
  for _, c in ipairs(cases) do
    local r = env:pawl(unpack(c[1]))
    assert.are.equal(2, r.code, table.concat(c[1], " ") .. ": " .. r.err)
    assert.matches(c[2], r.err, 1, true)
    assert.are.equal(1, select(2, r.err:gsub("\n", "")), r.err) -- one line
  end
end

-- A running host's sweep: old finished jobs go, a job of the host's own,
-- running at a gate the whole time, stays.
local function host_sweep(env)
  local g = env:gate("held")
  env:script("held", H.GATE_LUA .. [[
return { run = function(job) pawl_gate(job.payload.gate) return "done" end }]])
  for _ = 1, 5 do env:ok("cancel", env:enqueue("t", "{}", "--queue", "other")) end
  local held = env:enqueue("held", H.json { gate = g.path })
  local node = env:start("--retain", "canceled=0,batch=2,pause=0",
                         "--log-level", "info")
  g:wait_reached(1)
  -- The sweep logs once its walk is done, which may be a batch after the
  -- last canceled job went: wait for both.
  env:wait_until("the sweep to remove the canceled jobs and say so", function()
    return count(env, "canceled") == 0
      and node:stderr():find("deleted old finished jobs", 1, true) ~= nil
  end)
  assert.are.equal("running", env:show(held).state)
  g:open()
  env:wait_state(held, "succeeded")
  node:signal("TERM")
  assert.are.equal(0, node:wait(H.HANG_S), node:stderr())
  assert.matches("deleted old finished jobs", node:stderr(), 1, true)
  -- A host with --retain off sweeps nothing (its log says nothing of it).
  env:ok("cancel", env:enqueue("t", "{}", "--queue", "other"))
  local idle = env:run_idle("--retain", "off", "--log-level", "info")
  assert.are.equal(0, idle.code, idle:stderr())
  assert.are.equal(1, count(env, "canceled"))
end

describe("retention on SQLite", function()
  local env
  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)
  it("pawl cleanup: dry run, state, older-than, json, archive, keys", function()
    cli_cleanup(env)
  end)
  it("refuses bad input with one line and exit 2", function()
    cli_bad_input(env)
  end)
  it("pawl run sweeps old finished jobs and leaves live ones", function()
    host_sweep(env)
  end)
end)

describe("retention on PostgreSQL", function()
  local env
  before_each(function() if not PG_SKIP then env = P.env() end end)
  after_each(function() if env then env:cleanup() end end)
  pg_test("pawl cleanup: dry run, state, older-than, json, archive, keys", function()
    cli_cleanup(env)
  end)
  pg_test("pawl run sweeps old finished jobs and leaves live ones", function()
    host_sweep(env)
  end)
end)
