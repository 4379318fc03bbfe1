-- signal_replace_spec.lua: signals (a person in the loop) and replace
-- with real `pawl run` nodes, on SQLite and on PostgreSQL.
--
-- A job enqueued with a signal key waits (blocked) until `pawl signal KEY
-- approve|reject [JSON]` delivers a decision, which its code reads as
-- job.signal, or until its timeout fails it (at its deadline: the node's
-- poller wakes then; a decision after it is refused). `pawl replace` enqueues
-- a copy with changes and cancels the job; a running one sees
-- ctx:canceled() and stops. Nothing waits on time: the tests
-- wait for states, with hang guards as caps, and a gate holds the job that
-- must be running.
--
-- Under ThreadSanitizer (PAWL_TSAN=1) the Lua module cannot be loaded into
-- the busted process (see queues_spec): the part that uses it is pending.
local cjson = require "cjson"
local H = require "host_helper"
local P = require "pg_helper"

local TSAN = os.getenv("PAWL_TSAN") == "1"
local pawl = not TSAN and require "pawl"

local PG_SKIP = P.skip_reason()
if PG_SKIP then
  io.stderr:write("\n*** signal_replace_spec: " .. PG_SKIP .. " ***\n\n")
end

-- Reports what the job read as job.signal.
local ORDER = [[
return {
  run = function(job)
    local s = job.signal
    if s.decision == "reject" then
      return { decision = "reject", note = s.payload.note, by = s.by }
    end
    return { decision = s.decision, note = s.payload.note, by = s.by,
             at = s.at, key = s.key, state = s.state }
  end,
}
]]

-- Enqueues an "order" that waits for payload.key, from job code.
local STARTER = [[
return {
  run = function(job)
    local id = pawl.enqueue("order", {}, { signal = job.payload.key,
                                           signal_timeout = 3600 })
    return { id = id, plain = job.signal == nil }
  end,
}
]]

-- Waits at a gate like H.GATE_LUA's, but stops when canceled (the
-- cooperative stop a replace asks for).
local LONG = [[
return {
  run = function(job, ctx)
    local path = job.payload.gate
    local mark = assert(io.open(path .. ".reached", "a"))
    mark:write("reached\n")
    mark:close()
    local deadline = pawl.time() + 600
    while pawl.time() < deadline do
      if ctx:canceled() then return { stopped = true, v = job.payload.v } end
      local f = io.open(path, "r")
      if f then f:close() return { v = job.payload.v } end
      pawl.sleep(0.01)
    end
    error("gate never opened")
  end,
}
]]

local function result(env, id) return env:show(id).result end

-- Runs the pawl program; returns code, stdout, stderr.
local function pawl_run(env, ...)
  local r = env:pawl(...)
  return r.code, r.out, r.err
end

local function scenarios(backend, make_env)
  describe("signals and replace on " .. backend, function()
    local env, node

    before_each(function()
      env = make_env()
      env:script("order", ORDER)
      env:script("starter", STARTER)
      env:script("long", LONG)
      env.gated = true -- LONG opens files: --allow-io
      env:ok("migrate")
      node = env:start("--workers", "2", "--poll", "0.1", "--lease", "2",
                       "--log-level", "warn")
    end)

    after_each(function()
      if node then
        node:signal("TERM")
        node:wait(H.HANG_S)
      end
      if env then env:cleanup() end
      env, node = nil, nil
    end)

    it("approve and reject: the job runs and reads the decision; a second delivery changes nothing", function()
      local a = env:enqueue("order", "{}", "--signal", "approve-1")
      local r = env:enqueue("order", "{}", "--signal", "reject-1",
                            "--signal-timeout", "3600")
      assert.are.equal("blocked", env:show(a).state)
      assert.are.equal("blocked", env:show(r).state)
      -- A key is unique among live jobs.
      local code, _, err = pawl_run(env, "enqueue", "order", "{}", "--signal",
                                    "approve-1")
      assert.are.equal(1, code)
      assert.matches("signal key \"approve-1\" is held by live job " .. a, err, 1, true)

      local out = env:ok("signal", "approve-1", "approve", '{"note":"ok"}')
      assert.are.equal(a, (out:gsub("%s+$", "")))
      env:ok("signal", "reject-1", "reject", '{"note":"too dear"}')
      env:wait_state(a, "succeeded")
      env:wait_state(r, "succeeded")
      local ra, rr = result(env, a), result(env, r)
      assert.are.equal("approve", ra.decision)
      assert.are.equal("ok", ra.note)
      assert.are.equal("approve-1", ra.key)
      assert.are.equal("delivered", ra.state)
      assert.is_number(ra.at)
      assert.is_string(ra.by)
      assert.are.equal("reject", rr.decision)
      assert.are.equal("too dear", rr.note)

      -- Twice: exit 3, and it says what counts.
      code, out, err = pawl_run(env, "signal", "approve-1", "reject")
      assert.are.equal(3, code)
      assert.are.equal(a, (out:gsub("%s+$", "")))
      assert.matches("signal approve-1 was already delivered: approve by", err, 1, true)
      assert.matches("nothing changed", err, 1, true)
      -- Unknown key, bad decision.
      code, _, err = pawl_run(env, "signal", "no-such-key", "approve")
      assert.are.equal(1, code)
      assert.matches("no live job waits for signal \"no-such-key\"", err, 1, true)
      code, _, err = pawl_run(env, "signal", "approve-1", "maybe")
      assert.are.equal(2, code)
      assert.matches("approve or reject", err, 1, true)

      -- History and pawl show record the delivery.
      local j = env:show(a)
      assert.are.equal("approve", j.signal.decision)
      assert.are.equal("delivered", j.signal.state)
      assert.are.equal("ok", j.signal.payload.note)
      local found
      for _, e in ipairs(j.events) do
        if e.reason == "signal approve-1: approve" then found = e end
      end
      assert.truthy(found, "no event of the delivery")
      assert.are.equal("blocked", found.from)
      assert.are.equal("pending", found.to)
      local text = env:ok("show", a)
      assert.matches("signal: +approve%-1: delivered: approve by", text)
    end)

    it("a wait that runs out fails the job", function()
      local id = env:enqueue("order", "{}", "--signal", "late-1",
                             "--signal-timeout", "0.5")
      local j = env:wait_state(id, "failed")
      assert.are.equal("wait timed out", j.last_error)
      assert.are.equal("expired", j.signal.state)
      local last = j.events[#j.events]
      assert.matches("^signal late%-1: no decision by %d%d%d%d%-", last.reason)
      local code, _, err = pawl_run(env, "signal", "late-1", "approve")
      assert.are.equal(1, code)
      assert.matches(("job %s: signal \"late-1\" refused: its deadline passed at %s"):format(
        id, j.signal.timeout_at), err, 1, true)
    end)

    -- Waits until the wall clock is past job `id`'s signal deadline (no
    -- sleep that bets on a duration: the condition is read).
    local function past_deadline(id)
      local at = H.ms(env:show(id).signal.timeout_at)
      env:wait_until("the deadline to pass", function()
        return P.wall() * 1000 > at + 5
      end)
      return at
    end

    -- The decision that comes after the deadline: refused (exit 1), naming
    -- the job, the key and the deadline; the job's outcome is the
    -- timeout's (failed, never run), whether or not a sweep got there
    -- first. No node runs here: nothing but the decision can see the
    -- deadline pass.
    it("a decision after the deadline is refused and the timeout decides", function()
      node:signal("TERM")
      node:wait(H.HANG_S)
      node = nil
      for _, d in ipairs({ "approve", "reject" }) do
        local key = "late-" .. d
        local id = env:enqueue("order", "{}", "--signal", key,
                               "--signal-timeout", "0.2")
        local at = past_deadline(id)
        local code, out, err = pawl_run(env, "signal", key, d, '{"note":"late"}')
        assert.are.equal(1, code, err)
        assert.are.equal("", out)
        local iso = env:show(id).signal.timeout_at
        assert.are.equal(at, H.ms(iso))
        assert.matches(("pawl: job %s: signal \"%s\" refused: its deadline passed at %s; the wait timed out (the job is failed)"):format(
          id, key, iso), err, 1, true)
        local j = env:show(id)
        assert.are.equal("failed", j.state)
        assert.are.equal("wait timed out", j.last_error)
        assert.are.equal("expired", j.signal.state)
        assert.is_nil(j.signal.decision)
        local last = j.events[#j.events]
        assert.are.equal("timeout", last.actor)
        assert.are.equal(("signal %s: no decision by %s"):format(key, iso), last.reason)
        -- Again: the same refusal, nothing written.
        code, _, err = pawl_run(env, "signal", key, "approve")
        assert.are.equal(1, code)
        assert.matches("its deadline passed at " .. iso, err, 1, true)
        assert.are.equal(#j.events, #env:show(id).events)
      end
      -- A node started now has nothing to run: the jobs stay failed.
      local ok = env:enqueue("order", "{}", "--signal", "in-time",
                             "--signal-timeout", "3600")
      env:ok("signal", "in-time", "approve")
      node = env:start("--workers", "2", "--poll", "0.1", "--lease", "2")
      env:wait_state(ok, "succeeded")
      assert.are.equal(2, env:count_state("failed"))
      -- The key of a job that timed out is free for a new job.
      local again = env:enqueue("order", "{}", "--signal", "late-approve")
      env:ok("signal", "late-approve", "approve")
      env:wait_state(again, "succeeded")
    end)

    -- The node expires a wait at its deadline, not at its next lease
    -- sweep (a half lease: 30 s here); a decision after it is refused as
    -- above. The bound (deadline + 2 s, read from the stored history) is
    -- generous: the poller wakes at the deadline.
    it("a wait fails at its deadline, and a decision after it is refused", function()
      node:signal("TERM")
      node:wait(H.HANG_S)
      node = env:start("--workers", "2", "--poll", "5", "--lease", "60")
      local ids = {}
      for i, t in ipairs({ "1", "2.5", "0.3" }) do
        ids[i] = env:enqueue("order", "{}", "--signal", "due-" .. i,
                             "--signal-timeout", t)
      end
      for i, id in ipairs(ids) do
        local j = env:wait_state(id, "failed")
        local at = H.ms(j.signal.timeout_at)
        local failed = H.ms(j.events[#j.events].at)
        assert.is_true(failed >= at, "failed before its deadline")
        assert.is_true(failed <= at + 2000,
          ("job %d failed %d ms after its deadline"):format(i, failed - at))
        local code, _, err = pawl_run(env, "signal", "due-" .. i, "approve")
        assert.are.equal(1, code)
        assert.matches("its deadline passed at " .. j.signal.timeout_at, err, 1, true)
      end
    end)

    -- An approve racing the timeout: each decision either counts (exit 0,
    -- the job runs and reads it, delivered before the deadline) or is
    -- refused (exit 1, the job failed on the timeout), never both.
    it("a decision racing the deadline either counts or is refused, never both", function()
      local ids = {}
      for i = 1, 12 do
        ids[i] = env:enqueue("order", "{}", "--signal", "race-" .. i,
                             "--signal-timeout", "0.3")
      end
      local counted, refused = 0, 0
      for i, id in ipairs(ids) do
        local code, _, err = pawl_run(env, "signal", "race-" .. i, "approve")
        if code == 0 then
          counted = counted + 1
          local j = env:wait_state(id, "succeeded")
          assert.are.equal("approve", j.result.decision)
          assert.is_true(H.ms(j.signal.at) <= H.ms(j.signal.timeout_at))
        else
          refused = refused + 1
          assert.are.equal(1, code, err)
          assert.matches("its deadline passed at", err, 1, true)
          local j = env:wait_state(id, "failed")
          assert.are.equal("expired", j.signal.state)
          assert.is_nil(j.result ~= cjson.null and j.result or nil)
        end
      end
      assert.are.equal(#ids, counted + refused)
    end)

    it("replaces a pending job and a running one (which stops cooperatively)", function()
      -- Pending: a job due in an hour.
      local p = env:enqueue("order", '{"v":1}', "--delay", "3600",
                            "--business-key", "order-5")
      local np = env:ok("replace", p, "--payload", '{"v":2}', "--priority", "4",
                        "--reason", "typo"):gsub("%s+$", "")
      local old, new = env:show(p), env:show(np)
      assert.are.equal("canceled", old.state)
      assert.are.equal(np, old.superseded_by)
      assert.are.equal(p, new.supersedes)
      assert.are.equal(2, new.payload.v)
      assert.are.equal(4, new.priority)
      assert.are.equal("order-5", new.business_key)
      assert.matches("replaced by " .. np .. ": typo",
                     old.events[#old.events].reason, 1, true)
      local code, _, err = pawl_run(env, "replace", p)
      assert.are.equal(1, code)
      assert.matches("already replaced by job " .. np, err, 1, true)

      -- Running: held at a gate until the replace.
      local g = env:gate("long")
      local id = env:enqueue("long", H.json { v = 1, gate = g.path })
      g:wait_reached(1)
      assert.are.equal("running", env:show(id).state)
      local nid = env:ok("replace", id, "--payload",
                         H.json { v = 2, gate = g.path }):gsub("%s+$", "")
      env:wait_state(id, "canceled")
      -- The replacement runs (and waits at the gate: a second arrival).
      g:wait_reached(2)
      g:open()
      env:wait_state(nid, "succeeded")
      assert.are.equal(2, result(env, nid).v)
      local o = env:show(id)
      assert.are.equal("canceled", o.state)
      assert.are.equal(cjson.null, o.result) -- its stop was not stored
      assert.are.equal(nid, o.superseded_by)
      assert.are.equal(id, env:show(nid).supersedes)
      local att = o.attempts[#o.attempts]
      assert.are.equal("canceled", att.outcome)
      -- Succeeded: nothing to replace.
      code, _, err = pawl_run(env, "replace", nid)
      assert.are.equal(1, code)
      assert.matches("succeeded: there is nothing to replace", err, 1, true)
    end)

    local module_test = TSAN and function(name)
      pending(name .. " -- the Lua module cannot load under ThreadSanitizer")
    end or it

    module_test("job code and the Lua module: pawl.enqueue{signal}, db:signal, db:replace", function()
      local s = env:enqueue("starter", H.json { key = "from-job" })
      env:wait_state(s, "succeeded")
      local rs = result(env, s)
      assert.is_true(rs.plain) -- a job without a signal reads nil
      local db = assert(pawl.open { db = env.db, node_id = "spec" })
      local sig = assert(db:signal_of(rs.id))
      assert.are.equal("waiting", sig.state)
      assert.is_number(sig.timeout_at)
      local jid, status = db:signal("from-job", "approve", { note = "lua" })
      assert.are.equal(rs.id, jid)
      assert.are.equal("delivered", status)
      local _, again = db:signal("from-job", "approve")
      assert.are.equal("already", again)
      env:wait_state(rs.id, "succeeded")
      assert.are.equal("lua", result(env, rs.id).note)
      local ok, msg, code = db:signal("nobody", "approve")
      assert.is_nil(ok)
      assert.are.equal("PAWL_ENOTFOUND", code)
      assert.matches("nobody", msg, 1, true)
      -- db:replace of a job due later.
      local id = assert(db:enqueue("order", { v = 1 }, { delay_ms = 3600000 }))
      local nid = assert(db:replace(id, { payload = { v = 3 }, reason = "lua" }))
      assert.are.equal(nid, db:links(id).superseded_by)
      assert.are.equal(id, db:links(nid).supersedes)
      assert.are.equal("canceled", db:get(id).state)
      assert.are.equal(3, db:get(nid).payload.v)
      db:close()
    end)
  end)
end

scenarios("SQLite", function() return H.env() end)

if PG_SKIP then
  describe("signals and replace on PostgreSQL", function()
    pending("SKIPPED: " .. PG_SKIP)
  end)
else
  scenarios("PostgreSQL", function() return P.env(nil, "sigrep") end)
end
