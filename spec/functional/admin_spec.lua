-- admin_spec.lua: the admin API through `require "pawl"` (db:jobs with
-- tag and older_than, db:job, bulk db:retry/cancel/pause/resume, db:count,
-- db:stats, db:nodes, db:locks, pawl.scripts, pawl.duration), on SQLite
-- and on the throwaway PostgreSQL server the pg fixture starts.
--
-- The handle's clock is injected (frozen at T0) so that throughput windows
-- and older_than are driven with db:set_now(), never with sleeps.
local pawl = require "pawl"
local C = require "cli_helper"
local PG = require "pg_helper"

local T0 = 1800000000000
local MIN = 60000

local backends = { "sqlite", "postgres" }

for _, backend in ipairs(backends) do
  describe("admin API on " .. backend, function()
    local env, db, url

    local function skip_pg()
      if backend == "postgres" and PG.skip_reason() then
        pending(PG.skip_reason())
        return true
      end
      return false
    end

    before_each(function()
      if backend == "postgres" then
        if PG.skip_reason() then return end
        env = PG.env()
        url = env.db
      else
        env = require("host_helper").env()
        url = env.db
      end
      db = assert(pawl.open{ db = url, node_id = "node-a", principal = "tester",
                             now = T0, age_boost_ms = 0 })
    end)

    after_each(function()
      if db then db:close() end
      db = nil
      if env then env:cleanup() end
      env = nil
    end)

    -- Claims every due job and finishes each as `kind`.
    local function finish_all(kind, extra)
      local got = assert(db:claim(1000))
      local outs = {}
      for i, j in ipairs(got) do
        local o = { id = j.id, attempt = j.attempt, kind = kind, error = "boom" }
        for k, v in pairs(extra or {}) do o[k] = v end
        outs[i] = o
      end
      if #outs > 0 then assert(db:finish(outs)) end
      return #got
    end

    it("lists jobs by tag and by age", function()
      if skip_pg() then return end
      db:enqueue("t", nil, { tags = { "vip" } })
      db:enqueue("t", nil, {})
      db:set_now(T0 + 10 * MIN)
      db:enqueue("t", nil, { tags = { "vip", "eu" } })
      db:set_now(T0 + 20 * MIN)
      assert.are.equal(2, #assert(db:jobs{ tag = "vip" }))
      assert.are.equal(1, #assert(db:jobs{ tag = "eu" }))
      assert.are.equal(0, #assert(db:jobs{ tag = "v" }))
      assert.are.equal(2, #assert(db:jobs{ older_than = "15m" }))
      assert.are.equal(2, #assert(db:jobs{ older_than = 900 }))
      assert.are.equal(1, #assert(db:jobs{ older_than = "15m", tag = "vip" }))
      assert.are.equal(3, #assert(db:jobs{ older_than = "5m", state = "pending" }))
      assert.are.equal(1, #assert(db:jobs{ limit = 1 }))
    end)

    it("moves every matching job in bulk, with its history", function()
      if skip_pg() then return end
      for _ = 1, 3 do db:enqueue("x", nil, { queue = "q" }) end
      db:enqueue("y", nil, { queue = "q" })
      assert.are.equal(4, finish_all("failed"))
      local keep = assert(db:enqueue("x", nil, { queue = "q" }))
      assert.are.equal(3, db:count("retry", { type = "x" }))
      assert.are.equal(4, db:count("retry", { state = "failed" }))
      db:set_now(T0 + 1000)
      local changed, skipped, refused = db:retry({ type = "x" }, "fixed")
      assert.are.same({ 3, 0, 0 }, { changed, skipped, refused })
      local pend = assert(db:jobs{ type = "x", state = "pending" })
      assert.are.equal(4, #pend)
      for _, j in ipairs(pend) do
        assert.are.equal(0, j.attempt)
        if j.id ~= keep then
          local h = assert(db:history(j.id))
          local e = h.events[#h.events]
          assert.are.same({ "failed", "pending", "tester", "fixed", T0 + 1000 },
                          { e.from, e.to, e.actor, e.reason, e.at })
        end
      end
      -- Pause everything pending in q, then resume two of them.
      assert.are.equal(4, (db:pause{ queue = "q", state = "pending" }))
      assert.are.equal(2, (db:resume{ state = "paused", limit = 2 }))
      assert.are.equal(2, #assert(db:jobs{ state = "paused" }))
      assert.are.equal(4, (db:cancel{ queue = "q" }))
      assert.are.equal(4, #assert(db:jobs{ state = "canceled" }))
      -- The single-job forms are unchanged.
      local y = assert(db:jobs{ type = "y" })[1]
      local j = assert(db:retry(y.id, "once more"))
      assert.are.equal("pending", j.state)
    end)

    it("refuses bad filters with a message naming the problem", function()
      if skip_pg() then return end
      db:enqueue("t")
      local function err(f, ...)
        local ok, e = pcall(f, db, ...)
        assert.is_false(ok)
        return e
      end
      assert.matches('unknown jobs option "stat"', err(db.jobs, { stat = "x" }))
      assert.matches('unknown state "bogus"', err(db.jobs, { state = "bogus" }))
      assert.matches("not a duration", err(db.jobs, { older_than = "2 hours" }))
      assert.matches("older_than must be", err(db.jobs, { older_than = true }))
      assert.matches("older_than must be a number between 0 and 315360000",
                     err(db.cancel, { older_than = -1 }))
      assert.matches('unknown action "explode"', err(db.count, "explode", {}))
      assert.matches('unknown retry option "typ"', err(db.retry, { typ = "t" }))
      local r, msg, code = db:retry{ state = "pending" }
      assert.is_nil(r)
      assert.matches("retry moves failed jobs: state pending never matches", msg)
      assert.are.equal("PAWL_EINVAL", code)
      -- Nothing moved.
      assert.are.equal(1, #assert(db:jobs{ state = "pending" }))
    end)

    it("shows a job with its attempts, events, logs, progress and result", function()
      if skip_pg() then return end
      local id = assert(db:enqueue("report", { n = 1 }, { tags = { "t1" } }))
      local j = assert(db:claim(1))[1]
      assert(db:finish{ { id = id, attempt = j.attempt, kind = "retry",
                          error = "flaky", run_at = T0,
                          logs = { { level = "warn", message = "try 1" } } } })
      j = assert(db:claim(1))[1]
      assert(db:progress(id, j.attempt, 3, 4))
      assert(db:finish{ { id = id, attempt = j.attempt, kind = "succeeded",
                          result = { rows = 7 },
                          logs = { { level = "info", message = "done",
                                     fields = { rows = 7 } } } } })
      local full = assert(db:job(id))
      assert.are.equal("succeeded", full.state)
      assert.are.equal(7, full.result.rows)
      assert.are.equal(3, full.progress_done)
      assert.are.equal(4, full.progress_total)
      assert.are.same({ "t1" }, { full.tags[1] })
      assert.are.equal(2, #full.attempts)
      assert.are.equal("retry", full.attempts[1].outcome)
      assert.are.equal("flaky", full.attempts[1].error)
      assert.are.equal("succeeded", full.attempts[2].outcome)
      assert.are.equal("enqueued", full.events[1].from)
      assert.are.equal("succeeded", full.events[#full.events].to)
      assert.are.equal(2, #full.logs)
      assert.are.equal("try 1", full.logs[1].message)
      assert.are.equal(7, full.logs[2].fields.rows)
      local none, msg, code = db:job("0190aaaa-0000-7000-8000-000000000000")
      assert.is_nil(none)
      assert.matches("no job with id", msg)
      assert.are.equal("PAWL_ENOTFOUND", code)
      none, msg = db:job("nope")
      assert.is_nil(none)
      assert.matches('invalid job id "nope"', msg)
    end)

    it("counts by state and queue, with throughput and queue waits", function()
      if skip_pg() then return end
      local s = assert(db:stats())
      assert.are.equal(T0, s.at)
      assert.are.same({}, s.queues)
      assert.are.equal(0, s.counts.pending)
      for _ = 1, 3 do db:enqueue("m", nil, { queue = "mail" }) end
      assert.are.equal(3, finish_all("succeeded"))
      db:set_now(T0 + 12 * MIN)
      for _ = 1, 2 do db:enqueue("m", nil, { queue = "mail" }) end
      assert.are.equal(2, finish_all("failed"))
      db:enqueue("s", nil, { queue = "sms" })
      db:enqueue("s", nil, { queue = "sms", delay_ms = 3600000 })
      db:set_now(T0 + 14 * MIN)
      s = assert(db:stats())
      assert.are.equal(2, #s.queues)
      local mail, sms = s.queues[1], s.queues[2]
      assert.are.same({ "mail", "sms" }, { mail.queue, sms.queue })
      assert.are.equal(3, mail.counts.succeeded)
      assert.are.equal(2, mail.counts.failed)
      assert.are.equal(5, mail.finished_15m)
      assert.are.equal(2, mail.finished_5m)
      assert.are.equal(0, mail.finished_1m)
      assert.are.equal(2, mail.failed_5m)
      assert.are.equal(2, sms.counts.pending)
      assert.are.equal(2 * MIN, sms.oldest_due_ms)
      assert.are.equal(3, s.counts.succeeded)
      assert.are.equal(5, s.finished_15m)
      assert.are.equal(2 * MIN, s.oldest_due_ms)
    end)

    it("lists nodes with their running jobs, and locks", function()
      if skip_pg() then return end
      assert.are.same({}, assert(db:nodes()))
      assert.are.same({}, assert(db:locks()))
      -- A real host beats into the node table.
      local H = require "host_helper"
      local p = env:spawn("--db", url, "run", "--scripts", env.scripts,
                          "--until-idle", "--idle-wait", "0", "--node-id",
                          "worker-1", "--queues", "mail,sms")
      assert.is_truthy(p:wait(2 * H.HANG_S), "pawl run did not end")
      db:set_now(nil)
      local nodes = assert(db:nodes())
      assert.are.equal(1, #nodes)
      assert.are.equal("worker-1", nodes[1].id)
      assert.are.same({ "mail", "sms" }, nodes[1].queues)
      assert.are.equal(pawl.VERSION, nodes[1].version)
      assert.are.equal(0, nodes[1].running)
      assert.is_number(nodes[1].last_beat)
      -- Jobs held by a handle count under its node id.
      db:set_now(T0)
      local w = assert(pawl.open{ db = url, node_id = "worker-1", now = T0 })
      db:enqueue("t")
      db:enqueue("t")
      assert.are.equal(2, #assert(w:claim(2)))
      w:close()
      assert.are.equal(2, assert(db:nodes())[1].running)
      local w2 = assert(pawl.open{ db = url, now = T0 })
      w2:close()
      -- Locks, as a job's pawl.lock leaves them.
      if backend == "sqlite" then
        C.sqlite3(env.db_path, ("INSERT INTO pawl_locks VALUES ('report', "
          .. "'job-1', %d, %d), ('sweep', 'n', %d, %d)"):format(
          T0, T0 + MIN, T0 - 2 * MIN, T0 - MIN))
      else
        env:psql(("INSERT INTO pawl_locks VALUES ('report', 'job-1', "
          .. "pawl_ts(%d), pawl_ts(%d)), ('sweep', 'n', pawl_ts(%d), "
          .. "pawl_ts(%d))"):format(T0, T0 + MIN, T0 - 2 * MIN, T0 - MIN))
      end
      local locks = assert(db:locks())
      assert.are.equal(2, #locks)
      assert.are.same({ "report", "job-1", T0, T0 + MIN, false },
                      { locks[1].name, locks[1].owner, locks[1].acquired_at,
                        locks[1].expires_at, locks[1].expired })
      assert.are.same({ "sweep", true }, { locks[2].name, locks[2].expired })
    end)
  end)
end

describe("admin helpers of the module", function()
  it("parses durations", function()
    assert.are.equal(900000, pawl.duration("15m"))
    assert.are.equal(1500, pawl.duration("1.5"))
    local ms, err = pawl.duration("soon")
    assert.is_nil(ms)
    assert.matches("not a duration", err)
  end)

  it("lists the job types of a scripts directory, with their settings and load errors", function()
    local H = require "host_helper"
    local env = H.env()
    finally(function() env:cleanup() end)
    env:script("mail", 'return { queue = "mail", priority = 3, max_attempts = 4, '
                       .. 'timeout = 20, run = function() end }')
    env:script("broken", "return { run = ")
    env:script("_defaults", "return { max_attempts = 9 }")
    env:script("plain", "return { run = function() end }")
    local list = assert(pawl.scripts(env.scripts))
    assert.are.same({ "broken", "mail", "plain" },
                    { list[1].type, list[2].type, list[3].type })
    assert.matches("broken", list[1].error)
    assert.are.same({ "mail", 3, 4, 20 },
                    { list[2].queue, list[2].priority, list[2].max_attempts,
                      list[2].timeout })
    assert.is_nil(list[2].error)
    assert.are.equal(9, list[3].max_attempts) -- from _defaults.lua
    local none, msg = pawl.scripts(env:path("missing"))
    assert.is_nil(none)
    assert.matches("cannot read scripts directory", msg)
  end)
end)
