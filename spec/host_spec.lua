-- host_spec.lua: functional specs for the worker host, `pawl run`. Each test
-- writes its job scripts into a temp scripts dir, enqueues with the real
-- binary, runs a real `pawl run` process on a temp database and checks what
-- was stored (`pawl show --json`), what the host logged (its stderr) and,
-- for secrets, the raw bytes of the database files. Delays are short and
-- checked against stored attempt times, never against sleeps.
local cjson = require "cjson"
local H = require "host_helper"

local ms = H.ms

-- Under ThreadSanitizer (make test-tsan) a signal reaches a thread only
-- when it next enters libc, which Lua code spinning in a loop never does:
-- tests that need the watchdog's signal to stop Lua code are left out
-- there, and a job the host stops is handed back by the stuck-worker path
-- (two seconds later) instead.
local TSAN = os.getenv("PAWL_TSAN") == "1"
local it_interrupts = TSAN and function(name)
  pending(name .. " (the interrupt signal cannot land under ThreadSanitizer)")
end or it
local STOP_SLACK = TSAN and 2.5 or 0

-- A stored retry's run_at is computed by the worker when the attempt
-- fails; the attempt's stored end is written a moment later by the
-- completer. Gaps measured between the two clocks allow for that moment.
local SLACK_MS = 25

local function outcomes(j)
  local list = {}
  for i, a in ipairs(j.attempts) do list[i] = a.outcome end
  return list
end

local function find_event(j, pattern)
  for _, e in ipairs(j.events) do
    if e.reason ~= cjson.null and e.reason:find(pattern) then return e end
  end
end

local function has(s, text) return s:find(text, 1, true) ~= nil end

-- Asserts that `hay` (named `where`) contains none of `secrets`.
local function assert_clean(where, hay, secrets)
  for _, s in ipairs(secrets) do
    assert.is_false(has(hay, s), ("%s contains the secret %q:\n%s")
                                 :format(where, s, hay))
  end
end

describe("pawl run", function()
  local env

  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  -- ---- outcomes ----------------------------------------------------------

  describe("outcomes", function()
    it("stores a successful job's return value as its JSON result", function()
      env:script("add", [[
return {
  run = function(job, ctx)
    return { sum = job.payload.a + job.payload.b, list = { "x", "y" },
             nested = { ok = true } }
  end,
}]])
      env:script("nothing", [[return { run = function() end }]])
      local id = env:enqueue("add", '{"a":2,"b":40}')
      local none = env:enqueue("nothing")
      local p = env:run_idle("--workers", "2")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(id)
      assert.are.equal("succeeded", j.state)
      assert.are.same({ sum = 42, list = { "x", "y" }, nested = { ok = true } },
                      j.result)
      assert.are.equal(1, j.attempt)
      assert.are.same({ "succeeded" }, outcomes(j))
      assert.are.equal(cjson.null, j.last_error)
      assert.is_truthy(ms(j.finished_at))
      local n = env:show(none)
      assert.are.equal("succeeded", n.state)
      assert.are.equal(cjson.null, n.result)
    end)

    it("retries with the delays the Lua policy returns, then succeeds", function()
      -- The policy's delay grows with the attempt: 0.2 s, then 0.4 s.
      env:script("flaky", [[
return {
  max_attempts = 5,
  retry = function(attempt, err, job) return 0.2 * attempt end,
  run = function(job)
    if job.attempt < 3 then error("flaky failure " .. job.attempt) end
    return { attempt = job.attempt }
  end,
}]])
      local id = env:enqueue("flaky")
      local p = env:run_idle("--poll", "0.05")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(id)
      assert.are.equal("succeeded", j.state)
      assert.are.equal(3, j.attempt)
      assert.are.same({ attempt = 3 }, j.result)
      assert.are.same({ "retry", "retry", "succeeded" }, outcomes(j))
      for i = 1, 2 do
        local a, nxt = j.attempts[i], j.attempts[i + 1]
        assert.truthy(has(a.error, "flaky failure " .. i), a.error)
        local want = 200 * i
        -- The stored run_at of the retry (the next attempt's scheduled
        -- time) is the policy's delay after the failure...
        local sched = ms(nxt.scheduled_at) - ms(a.ended_at)
        assert.is_true(sched <= want and sched > want - SLACK_MS,
                       ("attempt %d: run_at %d ms after the end, want %d")
                       :format(i, sched, want))
        -- ...the next attempt never starts before it...
        assert.is_true(ms(nxt.started_at) >= ms(nxt.scheduled_at))
        -- ...and not much after it either.
        local gap = ms(nxt.started_at) - ms(a.ended_at)
        assert.is_true(gap >= want - SLACK_MS and gap < want + 500,
                       ("attempt %d: next started %d ms after, want %d")
                       :format(i, gap, want))
      end
      local e = assert(find_event(j, "^retry in %d+ ms$"))
      local delay = tonumber(e.reason:match("%d+"))
      assert.is_true(delay <= 200 and delay > 200 - SLACK_MS, e.reason)
    end)

    it("fails a job for good once it has used max_attempts", function()
      env:script("doomed", [[
return {
  max_attempts = 3,
  retry = pawl.retry.fixed { delay = 0.1 },
  run = function(job)
    error("doomed attempt " .. job.attempt)
  end,
}]])
      local id = env:enqueue("doomed")
      local p = env:run_idle("--poll", "0.05")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(id)
      assert.are.equal("failed", j.state)
      assert.are.equal(3, j.attempt)
      assert.are.same({ "retry", "retry", "failed" }, outcomes(j))
      -- The message keeps where it was raised.
      assert.truthy(j.last_error:find("doomed%.lua:5: doomed attempt 3"), j.last_error)
      for i = 1, 2 do
        local gap = ms(j.attempts[i + 1].started_at) - ms(j.attempts[i].ended_at)
        assert.is_true(gap >= 100 - SLACK_MS and gap < 600, tostring(gap))
      end
      assert.is_truthy(ms(j.finished_at))
      local last = j.events[#j.events]
      assert.are.equal("failed", last.to)
      assert.are.equal("attempts exhausted or fatal error", last.reason)
      assert.are.equal(1, p:count("job failed: dead-lettered"))
      assert.are.equal(2, p:count("job failed: will retry"))
    end)

    it("pawl.fatal fails at once, whatever attempts are left", function()
      env:script("fatal", [[
return {
  max_attempts = 5,
  retry = pawl.retry.fixed { delay = 0.1 },
  run = function(job) pawl.fatal("card permanently declined") end,
}]])
      local id = env:enqueue("fatal")
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(id)
      assert.are.equal("failed", j.state)
      assert.are.equal(1, j.attempt)
      assert.are.same({ "failed" }, outcomes(j))
      assert.are.equal("card permanently declined", j.last_error)
      assert.are.equal("card permanently declined", j.attempts[1].error)
    end)

    it("pawl.snooze runs the job again later without using an attempt", function()
      -- max_attempts = 1: had the snooze used it up, the second run would
      -- be attempt 2.
      env:script("sleepy", [[
return {
  max_attempts = 1,
  run = function(job)
    local f = io.open(job.payload.marker, "r")
    if not f then
      f = assert(io.open(job.payload.marker, "w"))
      f:write("snoozed once")
      f:close()
      pawl.snooze(0.3)
    end
    f:close()
    return { attempt = job.attempt }
  end,
}]])
      local id = env:enqueue("sleepy", H.json { marker = env:path("marker") })
      local p = env:run_idle("--poll", "0.05")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(id)
      assert.are.equal("succeeded", j.state)
      assert.are.same({ attempt = 1 }, j.result)
      assert.are.equal(1, j.attempt)
      assert.are.same({ "snoozed", "succeeded" }, outcomes(j))
      assert.are.equal(1, j.attempts[1].attempt)
      assert.are.equal(1, j.attempts[2].attempt)
      assert.are.equal(cjson.null, j.attempts[1].error)
      local gap = ms(j.attempts[2].started_at) - ms(j.attempts[1].ended_at)
      assert.is_true(gap >= 300 - SLACK_MS and gap < 800, tostring(gap))
      assert.truthy(find_event(j, "^snoozed for %d+ ms$"))
      assert.are.equal(cjson.null, j.last_error)
    end)

    it("calls a policy that raises or returns no delay a failure, with both errors", function()
      env:script("polraise", [[
return {
  max_attempts = 5,
  retry = function() error("policy exploded") end,
  run = function() error("original failure A") end,
}]])
      env:script("polsoon", [[
return {
  max_attempts = 5,
  retry = function() return "soon" end,
  run = function() error("original failure B") end,
}]])
      env:script("polneg", [[
return {
  max_attempts = 5,
  retry = function() return -1 end,
  run = function() error("original failure C") end,
}]])
      local a = env:enqueue("polraise")
      local b = env:enqueue("polsoon")
      local c = env:enqueue("polneg")
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      local ja, jb, jc = env:show(a), env:show(b), env:show(c)
      for _, j in ipairs { ja, jb, jc } do
        assert.are.equal("failed", j.state)
        assert.are.equal(1, j.attempt)
        assert.are.same({ "failed" }, outcomes(j))
      end
      assert.truthy(has(ja.last_error, "original failure A"), ja.last_error)
      assert.truthy(has(ja.last_error, "retry policy failed"), ja.last_error)
      assert.truthy(has(ja.last_error, "policy exploded"), ja.last_error)
      assert.truthy(has(jb.last_error, "original failure B"), jb.last_error)
      assert.truthy(has(jb.last_error, "retry policy returned soon, not a delay in seconds"),
                    jb.last_error)
      assert.truthy(has(jc.last_error, "original failure C"), jc.last_error)
      assert.truthy(has(jc.last_error, "retry policy returned -1"), jc.last_error)
    end)

    it("fails a job whose type has no script, following the retry policy", function()
      env:script("_defaults", [[
return { retry = pawl.retry.fixed { delay = 0.2 } }]])
      local id = env:enqueue("ghost", "{}", "--max-attempts", "2")
      local p = env:run_idle("--poll", "0.05")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(id)
      assert.are.equal("failed", j.state)
      assert.are.equal(2, j.attempt)
      assert.are.same({ "retry", "failed" }, outcomes(j))
      for _, a in ipairs(j.attempts) do
        assert.truthy(has(a.error, "no script for job type ghost"), a.error)
      end
      local gap = ms(j.attempts[2].started_at) - ms(j.attempts[1].ended_at)
      assert.is_true(gap >= 200 - SLACK_MS and gap < 700, tostring(gap))
    end)

    it("retries a job whose type has no script with the default policy", function()
      -- The built-in policy: about 2 s (+-10% jitter) after the first failure.
      local p = env:start("--poll", "0.05")
      local id = env:enqueue("ghost")
      local j = env:wait_until("the first attempt", function()
        local j = env:show(id)
        return #j.attempts == 1 and j.attempts[1].outcome ~= "running" and j
      end)
      assert.are.equal("pending", j.state)
      assert.are.equal(1, j.attempt)
      assert.are.equal("retry", j.attempts[1].outcome)
      assert.are.equal("no script for job type ghost", j.last_error)
      local delay = ms(j.run_at) - ms(j.attempts[1].ended_at)
      assert.is_true(delay > 1800 - SLACK_MS and delay <= 2200, tostring(delay))
      p:signal("TERM")
      assert.are.equal(0, p:wait(10))
    end)
  end)

  -- ---- sanitizers --------------------------------------------------------

  describe("sanitizers", function()
    -- Every place an error can end up: the job (last_error, attempts'
    -- errors, events' reasons, logs: all of `pawl show --json`), the raw
    -- database files, and the host's log.
    local function assert_nowhere(id, p, secrets)
      local j = env:show(id)
      assert_clean("last_error", j.last_error, secrets)
      for _, a in ipairs(j.attempts) do
        if a.error ~= cjson.null then assert_clean("an attempt's error", a.error, secrets) end
      end
      for _, e in ipairs(j.events) do
        if e.reason ~= cjson.null then assert_clean("an event's reason", e.reason, secrets) end
      end
      for _, l in ipairs(j.logs) do
        assert_clean("a log line", l.message .. " " .. cjson.encode(l.fields), secrets)
      end
      assert_clean("pawl show --json", env:show_text(id), secrets)
      assert_clean("the database files", env:db_bytes(), secrets)
      assert_clean("the host's log", p:stderr(), secrets)
      return j
    end

    local SECRETS = { "hunter2", "Url-S3cret-77", "Tok-Zz-9041" }
    local MESSAGE = "login failed for svc-user: password=hunter2 via "
                    .. "https://svc-user:Url-S3cret-77@db.example.com/x token=Tok-Zz-9041"

    it("the default sanitizer keeps a secret out of every stored place", function()
      env:script("leaky", ([[
return {
  max_attempts = 2,
  retry = pawl.retry.fixed { delay = 0.1 },
  run = function(job, ctx)
    ctx:log("info", "connecting", { host = "db.example.com" })
    error(%q)
  end,
  on_failure = function(job, err) print("on_failure saw: " .. err) end,
  on_dead = function(job, err) error("hook choked on password=hunter2") end,
}]]):format(MESSAGE))
      -- An error object (stored as JSON) and pawl.fatal's message too.
      env:script("leaky_table", [[
return {
  max_attempts = 1,
  run = function() error({ reason = "declined", password = "hunter2" }) end,
}]])
      env:script("leaky_fatal", ([[
return { run = function() pawl.fatal(%q) end }]]):format(MESSAGE))
      local id = env:enqueue("leaky")
      local tbl = env:enqueue("leaky_table")
      local fatal = env:enqueue("leaky_fatal")
      local p = env:run_idle("--poll", "0.05")
      assert.are.equal(0, p.code, p:stderr())
      local t = assert_nowhere(tbl, p, SECRETS)
      assert.are.equal("failed", t.state)
      assert.truthy(has(t.last_error, '"reason":"declined"'), t.last_error)
      assert.truthy(has(t.last_error, '"password":"<redacted>"'), t.last_error)
      local f = assert_nowhere(fatal, p, SECRETS)
      assert.are.equal("failed", f.state)
      assert.truthy(has(f.last_error, "login failed for svc-user: password=<redacted>"),
                    f.last_error)
      local j = assert_nowhere(id, p, SECRETS)
      assert.are.equal("failed", j.state)
      assert.are.equal(2, j.attempt)
      assert.are.same({ "retry", "failed" }, outcomes(j))
      -- What is not secret is kept, so the searches above could find text.
      assert.truthy(has(j.last_error, "login failed for svc-user: password=<redacted>"),
                    j.last_error)
      assert.truthy(has(j.last_error, "https://svc-user:<redacted>@db.example.com/x"),
                    j.last_error)
      assert.truthy(has(j.last_error, "token=<redacted>"), j.last_error)
      assert.truthy(has(j.attempts[1].error, "login failed for svc-user"))
      assert.truthy(has(env:db_bytes(), "login failed for svc-user"))
      assert.truthy(has(p:stderr(), "login failed for svc-user"))
      assert.are.equal(2, p:count("on_failure saw: "))
      assert.truthy(has(p:stderr(), "hook choked on password=<redacted>"), p:stderr())
      assert.are.equal("connecting", j.logs[1].message)
    end)

    it("uses a script's own sanitize function", function()
      -- The default sanitizer knows nothing of card numbers: only the
      -- script's function can hide this one.
      env:script("cards", [[
return {
  max_attempts = 1,
  sanitize = function(msg, job)
    return (msg:gsub("%d%d%d%d%-%d%d%d%d%-%d%d%d%d%-(%d%d%d%d)", "****-%1"))
  end,
  run = function(job)
    error("card 4111-2222-3333-4444 declined for order 77")
  end,
}]])
      local id = env:enqueue("cards")
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      local j = assert_nowhere(id, p, { "4111-2222-3333" })
      assert.are.equal("failed", j.state)
      assert.truthy(has(j.last_error, "card ****-4444 declined for order 77"), j.last_error)
      assert.truthy(has(env:db_bytes(), "card ****-4444 declined"))
    end)

    it("falls back to the default when a sanitizer raises or returns no string", function()
      env:script("sanraise", ([[
return {
  max_attempts = 1,
  sanitize = function(msg) error("sanitizer choked on: " .. msg) end,
  run = function() error(%q) end,
}]]):format(MESSAGE))
      env:script("santable", ([[
return {
  max_attempts = 1,
  sanitize = function(msg) return { msg } end,
  run = function() error(%q) end,
}]]):format(MESSAGE))
      local a = env:enqueue("sanraise")
      local b = env:enqueue("santable")
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      for _, id in ipairs { a, b } do
        local j = assert_nowhere(id, p, SECRETS)
        assert.are.equal("failed", j.state)
        assert.truthy(has(j.last_error, "login failed for svc-user: password=<redacted>"),
                      j.last_error)
        assert.is_false(has(j.last_error, "sanitizer choked"))
      end
      assert.is_false(has(env:db_bytes(), "sanitizer choked"))
      assert.is_false(has(p:stderr(), "sanitizer choked"))
    end)
  end)

  -- ---- timeouts ----------------------------------------------------------

  describe("timeouts", function()
    it_interrupts("stops a JIT-compiled runaway loop while other jobs complete", function()
      env:script("spin", [[
return {
  timeout = 0.5,
  max_attempts = 1,
  run = function(job, ctx)
    -- Proves the loop below runs as machine code: log the first trace the
    -- JIT records, then detach.
    local function on_trace(what)
      if what == "stop" then
        jit.attach(on_trace)
        ctx:log("info", "trace recorded")
      end
    end
    jit.attach(on_trace, "trace")
    local x = 0
    while true do x = x + 1 end
  end,
}]])
      env:script("quick", [[
return { run = function(job) return { n = job.payload.n } end }]])
      local spin = env:enqueue("spin")
      local quick = {}
      for i = 1, 10 do quick[i] = env:enqueue("quick", H.json { n = i }) end
      local p = env:run_idle("--workers", "2")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(spin)
      assert.are.equal("failed", j.state)
      assert.are.equal(1, j.attempt)
      assert.truthy(has(j.last_error, "job timed out after 0.5 s"), j.last_error)
      local a = j.attempts[1]
      assert.are.equal("failed", a.outcome)
      assert.is_true(a.duration_ms >= 450 and a.duration_ms < 2500, tostring(a.duration_ms))
      local traced = false
      for _, l in ipairs(j.logs) do traced = traced or l.message == "trace recorded" end
      assert.is_true(traced, "no trace was recorded: " .. cjson.encode(j.logs))
      -- The other worker ran every quick job while the loop spun.
      for i, id in ipairs(quick) do
        local q = env:show(id)
        assert.are.equal("succeeded", q.state)
        assert.are.same({ n = i }, q.result)
        assert.is_true(ms(q.finished_at) <= ms(a.ended_at))
      end
    end)

    it_interrupts("stops a runaway job that catches the timeout with pcall or a coroutine", function()
      env:script("stubborn", [[
return {
  timeout = 0.5,
  max_attempts = 1,
  run = function()
    while true do pcall(function() while true do end end) end
  end,
}]])
      env:script("stubborn_co", [[
return {
  timeout = 0.5,
  max_attempts = 1,
  run = function()
    while true do
      coroutine.resume(coroutine.create(function() while true do end end))
    end
  end,
}]])
      -- Runs after them in the same Lua state (one worker): the interrupt
      -- must be over, so its own loop and pcall work as usual.
      env:script("after", [[
return {
  run = function()
    local s = 0
    for i = 1, 1000000 do s = s + i end
    local ok, err = pcall(error, "caught")
    return { sum = s, ok = ok, err = err }
  end,
}]])
      local a = env:enqueue("stubborn")
      local b = env:enqueue("stubborn_co")
      local c = env:enqueue("after")
      local p = env:run_idle("--workers", "1")
      assert.are.equal(0, p.code, p:stderr())
      for _, id in ipairs { a, b } do
        local j = env:show(id)
        assert.are.equal("failed", j.state, j.type)
        assert.truthy(has(j.last_error, "job timed out after 0.5 s"), j.last_error)
        local d = j.attempts[1].duration_ms
        assert.is_true(d >= 450 and d < 2500, tostring(d))
      end
      local j = env:show(c)
      assert.are.equal("succeeded", j.state, tostring(j.last_error))
      assert.are.same({ sum = 500000500000, ok = false, err = "caught" }, j.result)
    end)

    it_interrupts("pawl.sleep waits, and a timeout cuts the wait short", function()
      env:script("nap", [[
return {
  timeout = 0.3,
  max_attempts = 1,
  run = function(job)
    local t0 = pawl.time()
    pawl.sleep(job.payload.s)
    return { slept = pawl.time() - t0 }
  end,
}]])
      local short = env:enqueue("nap", H.json { s = 0.05 })
      local long = env:enqueue("nap", H.json { s = 30 })
      local p = env:run_idle("--workers", "2")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(short)
      assert.are.equal("succeeded", j.state, tostring(j.last_error))
      assert.is_true(j.result.slept >= 0.049, tostring(j.result.slept))
      j = env:show(long)
      assert.are.equal("failed", j.state)
      assert.truthy(has(j.last_error, "job timed out after 0.3 s"), j.last_error)
      local d = j.attempts[1].duration_ms
      assert.is_true(d >= 250 and d < 2500, tostring(d))
    end)

    it_interrupts("times out a job blocked in a C call once it is back in Lua", function()
      env:script("blocked", [[
return {
  timeout = 0.3,
  max_attempts = 1,
  run = function()
    os.execute("sleep 1")
    return "should have been stopped"
  end,
}]])
      local id = env:enqueue("blocked")
      local p = env:run_idle("--unsafe-lua")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(id)
      assert.are.equal("failed", j.state)
      assert.truthy(has(j.last_error, "job timed out after 0.3 s"), j.last_error)
      local d = j.attempts[1].duration_ms
      assert.is_true(d >= 950 and d < 2500, tostring(d))
    end)
  end)

  -- ---- scripts -----------------------------------------------------------

  describe("scripts", function()
    it("are reloaded when they change; a broken one keeps the old version", function()
      env:script("A", [[return { run = function() return "v1" end }]])
      -- B runs until the test creates its marker file (at most 10 s).
      env:script("B", [[
return {
  run = function(job)
    local t = os.clock()
    while os.clock() - t < 10 do
      local f = io.open(job.payload.marker, "r")
      if f then f:close() break end
      local w = os.clock() while os.clock() - w < 0.01 do end
    end
    return "b-old"
  end,
}]])
      local p = env:start("--poll", "0.05", "--workers", "1")
      local function reloaded(what)
        local loads = p:count("scripts loaded")
        what()
        env:wait_until("the reload", function() return p:count("scripts loaded") > loads end)
      end
      local id1 = env:enqueue("A")
      assert.are.equal("v1", env:wait_state(id1, "succeeded").result)

      -- A changed script serves the next job.
      reloaded(function()
        env:script("A", [[return { run = function() return "v2-reloaded" end }]])
      end)
      local id2 = env:enqueue("A")
      assert.are.equal("v2-reloaded", env:wait_state(id2, "succeeded").result)

      -- The one worker is busy with B through two changes of A: the second
      -- is broken, so the first (v3) is what must serve afterwards.
      local marker = env:path("marker")
      local b = env:enqueue("B", H.json { marker = marker })
      env:wait_state(b, "running")
      reloaded(function()
        env:script("A", [[return { run = function() return "v3" end }]])
        env:script("B", [[return { run = function() return "b-new" end }]])
      end)
      reloaded(function()
        env:script("A", [[
return {
  run = function()
    return "v4" +
  end,
}]])
      end)
      H.write_file(marker, "go")
      -- The job that was running when its script changed ran to its end.
      assert.are.equal("b-old", env:wait_state(b, "succeeded").result)
      local id3 = env:enqueue("A")
      assert.are.equal("v3", env:wait_state(id3, "succeeded").result)
      local b2 = env:enqueue("B")
      assert.are.equal("b-new", env:wait_state(b2, "succeeded").result)

      -- One line names the broken script and where the error is.
      local line
      for l in p:stderr():gmatch("[^\n]+") do
        if has(l, "script not loaded") then line = l end
      end
      assert.truthy(line, p:stderr())
      assert.truthy(line:find("script=A"), line)
      assert.truthy(line:find("A%.lua:4:"), line)
      assert.are.equal(1, p:count("script not loaded"))

      -- A script that is removed takes its type with it.
      reloaded(function() assert(os.remove(env.scripts .. "/A.lua")) end)
      local id4 = env:enqueue("A")
      local j = env:wait_until("the attempt", function()
        local j = env:show(id4)
        return #j.attempts == 1 and j.attempts[1].outcome ~= "running" and j
      end)
      assert.are.equal("no script for job type A", j.last_error)
      assert.is_true(p:alive())
      p:signal("TERM")
      assert.are.equal(0, p:wait(10))
    end)

    it("a removed _defaults.lua leaves no policy behind", function()
      env:script("_defaults", [[
return { retry = pawl.retry.fixed { delay = 0.2 } }]])
      local p = env:start("--poll", "0.05")
      -- A type with no script follows the defaults' policy...
      local first_failure = function(id)
        return env:wait_until("the first attempt", function()
          local j = env:show(id)
          return #j.attempts >= 1 and j.attempts[1].outcome ~= "running" and j
        end)
      end
      local a = first_failure(env:enqueue("ghost"))
      local delay = ms(a.attempts[2] and a.attempts[2].scheduled_at or a.run_at)
                    - ms(a.attempts[1].ended_at)
      assert.is_true(delay <= 200 and delay > 200 - SLACK_MS, tostring(delay))
      -- ...and, once the file is gone, the built-in one (about 2 s) again.
      local loads = p:count("scripts loaded")
      assert(os.remove(env.scripts .. "/_defaults.lua"))
      env:wait_until("the reload", function() return p:count("scripts loaded") > loads end)
      local b = first_failure(env:enqueue("ghost"))
      delay = ms(b.run_at) - ms(b.attempts[1].ended_at)
      assert.is_true(delay > 1800 - SLACK_MS and delay <= 2200, tostring(delay))
      p:signal("TERM")
      assert.are.equal(0, p:wait(10))
    end)

    it("`pawl run` with a missing scripts dir exits with a one-line error", function()
      local r = env:pawl("run", "--scripts", env:path("nope"), "--until-idle")
      assert.are.equal(1, r.code)
      assert.are.equal(1, #H.lines(r.err), r.err)
      assert.truthy(r.err:match("^pawl: "), r.err)
      assert.truthy(has(r.err, env:path("nope")), r.err)
      assert.truthy(has(r.err, "does not exist"), r.err)
    end)
  end)

  -- ---- stopping ----------------------------------------------------------

  describe("stopping", function()
    local LONG = [[
return {
  run = function(job)
    local t = os.clock()
    while os.clock() - t < 10 do end
    return "finished"
  end,
}]]

    -- Asserts that job `id` is pending again with no attempt used, the
    -- last one handed back ("released").
    local function assert_released(id)
      local j = env:show(id)
      assert.are.equal("pending", j.state)
      assert.are.equal(0, j.attempt)
      assert.are.same({ "released" }, outcomes(j))
      assert.are.equal(1, j.attempts[1].attempt)
      assert.are.equal(cjson.null, j.last_error)
      assert.truthy(find_event(j, "^released"))
      return j
    end

    it("SIGTERM hands the running and the queued jobs back", function()
      env:script("long", LONG)
      env:script("quick", [[return { run = function() return true end }]])
      -- --prefetch: the queued jobs are claimed while the long one runs.
      local p = env:start("--workers", "1", "--grace", "0.5", "--poll", "0.05",
                          "--prefetch", "4")
      local long = env:enqueue("long")
      env:wait_state(long, "running")
      local queued = {}
      for i = 1, 3 do queued[i] = env:enqueue("quick") end
      -- Claimed into the worker's queue behind the long job.
      for _, id in ipairs(queued) do env:wait_state(id, "running") end
      local t0 = H.mono()
      p:signal("TERM")
      assert.are.equal(0, p:wait(5 + STOP_SLACK), p:stderr())
      local took = H.mono() - t0
      assert.is_true(took >= 0.45 and took < 3 + STOP_SLACK, tostring(took))
      assert_released(long)
      for _, id in ipairs(queued) do assert_released(id) end
      -- Nothing was left running or done behind our back.
      local r = env:ok("jobs", "--state", "running")
      assert.are.equal(1, #H.lines(r))
    end)

    it("SIGTERM lets a running job finish within the grace period", function()
      env:script("short", [[
return {
  run = function(job)
    local t = os.clock()
    while os.clock() - t < 0.5 do end
    return "finished in time"
  end,
}]])
      env:script("quick", [[return { run = function() return true end }]])
      local p = env:start("--workers", "1", "--grace", "10", "--poll", "0.05",
                          "--prefetch", "4")
      local short = env:enqueue("short")
      env:wait_state(short, "running")
      local queued = {}
      for i = 1, 2 do queued[i] = env:enqueue("quick") end
      for _, id in ipairs(queued) do env:wait_state(id, "running") end
      local t0 = H.mono()
      p:signal("TERM")
      assert.are.equal(0, p:wait(5), p:stderr())
      assert.is_true(H.mono() - t0 < 3)
      local j = env:show(short)
      assert.are.equal("succeeded", j.state)
      assert.are.equal("finished in time", j.result)
      -- The queued ones never started: handed back, not run.
      for _, id in ipairs(queued) do assert_released(id) end
    end)

    it("does not hang on a worker stuck in a C call", function()
      env:script("stuck", [[
return {
  run = function(job)
    assert(io.open(job.payload.marker, "w")):close()
    os.execute("sleep 8")
    return "woke"
  end,
}]])
      local p = env:start("--workers", "1", "--grace", "0.3", "--poll", "0.05",
                          "--unsafe-lua")
      local marker = env:path("marker")
      local stuck = env:enqueue("stuck", H.json { marker = marker })
      env:wait_until("the job to block", function() return H.exists(marker) end)
      local t0 = H.mono()
      p:signal("TERM")
      -- The grace period, then two seconds for the stuck worker.
      assert.are.equal(0, p:wait(6), p:stderr())
      assert.is_true(H.mono() - t0 < 4)
      assert_released(stuck)
      assert.are.equal(1, p:count("workers stuck in blocking C calls were left behind"))
    end)

    it("a second SIGINT during the grace period stops at once", function()
      env:script("long", LONG)
      local p = env:start("--workers", "1", "--grace", "30", "--poll", "0.05")
      local long = env:enqueue("long")
      env:wait_state(long, "running")
      p:signal("INT")
      H.sleep(0.3)
      assert.is_true(p:alive(), "the first SIGINT waits for running jobs")
      local t0 = H.mono()
      p:signal("INT")
      assert.are.equal(0, p:wait(5 + STOP_SLACK), p:stderr())
      assert.is_true(H.mono() - t0 < 2 + STOP_SLACK)
      assert_released(long)
    end)
  end)

  -- ---- waking ------------------------------------------------------------

  it("pawl.lock lets one job at a time into its section, on every node", function()
    -- Two workers start two jobs together; each takes the lock for 0.3 s
    -- and says whether it got it; a third job, run after them, gets it.
    env:script("locked", [[
return {
  max_attempts = 1,
  run = function(job)
    local t0 = pawl.time()
    local got, a, b = pawl.lock("report", 10, function()
      pawl.sleep(job.payload.hold)
      return "done", 42
    end)
    if job.payload.fail then
      local ok, err = pcall(pawl.lock, "report", 10, function() error("inside") end)
      return { raised = tostring(err), again = (pawl.lock("report", 10, function() end)) }
    end
    return { got = got, a = a, b = b, waited = pawl.time() - t0 }
  end,
}]])
    local x = env:enqueue("locked", H.json { hold = 0.3 })
    local y = env:enqueue("locked", H.json { hold = 0.3 })
    local p = env:run_idle("--workers", "2")
    assert.are.equal(0, p.code, p:stderr())
    local rx, ry = env:show(x).result, env:show(y).result
    assert.is_true(rx.got ~= ry.got, "exactly one job got the lock: " .. cjson.encode { rx, ry })
    local winner = rx.got and rx or ry
    assert.are.equal("done", winner.a)
    assert.are.equal(42, winner.b)
    -- Released at the end (also when fn raises): later jobs get it again.
    local z = env:enqueue("locked", H.json { hold = 0, fail = true })
    p = env:run_idle("--workers", "2")
    assert.are.equal(0, p.code, p:stderr())
    local rz = env:show(z).result
    assert.truthy(has(rz.raised, "inside"), rz.raised)
    assert.is_true(rz.again)
  end)

  it("a job's pawl.enqueue wakes the host at once", function()
    -- The parent enqueues a child every 0.5 s while it keeps running; with
    -- --poll 60 only the wakeup can start each child within 0.3 s (the
    -- poller's other timer, the 1 s script check, cannot catch all three).
    env:script("parent", [[
return {
  run = function(job)
    local ids = {}
    for i = 1, 3 do
      ids[i] = pawl.enqueue("child", { n = i })
      local t = pawl.time()
      while pawl.time() - t < 0.5 do end
    end
    return ids
  end,
}]])
    env:script("child", [[
return {
  queue = "kids", priority = 5, max_attempts = 3,
  run = function(job) return job.payload.n end,
}]])
    local parent = env:enqueue("parent")
    local t0 = H.mono()
    local p = env:run_idle("--poll", "60", "--workers", "2")
    assert.are.equal(0, p.code, p:stderr())
    assert.is_true(H.mono() - t0 < 6, "the run took " .. (H.mono() - t0))
    local j = env:show(parent)
    assert.are.equal("succeeded", j.state)
    assert.are.equal(3, #j.result)
    for i, id in ipairs(j.result) do
      local c = env:show(id)
      assert.are.equal("succeeded", c.state)
      assert.are.equal(i, c.result)
      assert.are.equal("job:" .. parent, c.enqueued_by)
      assert.are.equal(parent, c.correlation_id)
      -- The child's script says where and how it runs.
      assert.are.equal("kids", c.queue)
      assert.are.equal(5, c.priority)
      local wait = ms(c.started_at) - ms(c.created_at)
      assert.is_true(wait < 300, ("child %d waited %d ms"):format(i, wait))
      assert.is_true(ms(c.started_at) < ms(j.finished_at))
    end
  end)

  -- ---- hooks -------------------------------------------------------------

  describe("hooks", function()
    -- Each hook reads the job back with `pawl show` (hence --unsafe-lua) and
    -- appends what it saw to a file: the stored state proves it ran after
    -- the outcome was written.
    local HOOKS = [[
local function q(s) return "'" .. s .. "'" end
local function record(name, job, arg)
  local p = assert(io.popen(("%s --db %s show %s --json"):format(
    q(job.payload.bin), q(job.payload.db), job.id)))
  local seen = pawl.json.decode(p:read("*a"))
  p:close()
  local f = assert(io.open(job.payload.out, "a"))
  f:write(("%s %s %s %d %s\n"):format(name, job.id, seen.state, seen.attempt,
    type(arg) == "string" and arg:match("bad thing %d") or type(arg)))
  f:close()
end
local hooks = {
  on_success = function(job, arg) record("on_success", job, arg) end,
  on_failure = function(job, arg) record("on_failure", job, arg) end,
  on_dead = function(job, arg) record("on_dead", job, arg) end,
}
]]

    it("run once each, after the outcome is stored", function()
      env:script("hooked_ok", HOOKS .. [[
hooks.run = function() return { v = 1 } end
return hooks]])
      env:script("hooked_bad", HOOKS .. [[
hooks.max_attempts = 2
-- Long enough for the first failure's hook (which starts `pawl show`, slow
-- under AddressSanitizer) to see the job still pending before the retry.
hooks.retry = pawl.retry.fixed { delay = 2 }
hooks.run = function(job) error("bad thing " .. job.attempt) end
return hooks]])
      env:script("hooked_fatal", HOOKS .. [[
hooks.run = function(job) pawl.fatal("bad thing 9") end
return hooks]])
      local out = env:path("hooks.txt")
      local payload = H.json { bin = H.bin, db = env.db, out = out }
      local ok = env:enqueue("hooked_ok", payload)
      local bad = env:enqueue("hooked_bad", payload)
      local fatal = env:enqueue("hooked_fatal", payload)
      local p = env:run_idle("--unsafe-lua", "--poll", "0.05")
      assert.are.equal(0, p.code, p:stderr())
      assert.are.equal(0, p:count("hook failed"), p:stderr())
      local lines = {}
      for _, l in ipairs(H.lines(H.read_file(out) or "")) do lines[l] = (lines[l] or 0) + 1 end
      local want = {
        [("on_success %s succeeded 1 table"):format(ok)] = 1,
        [("on_failure %s pending 1 bad thing 1"):format(bad)] = 1,
        [("on_failure %s failed 2 bad thing 2"):format(bad)] = 1,
        [("on_dead %s failed 2 bad thing 2"):format(bad)] = 1,
        [("on_failure %s failed 1 bad thing 9"):format(fatal)] = 1,
        [("on_dead %s failed 1 bad thing 9"):format(fatal)] = 1,
      }
      assert.are.same(want, lines)
    end)

    it("a hook that raises is logged and leaves the outcome alone", function()
      env:script("hook_raises", [[
return {
  run = function() return "done" end,
  on_success = function() error("hook exploded") end,
}]])
      local id = env:enqueue("hook_raises")
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(id)
      assert.are.equal("succeeded", j.state)
      assert.are.equal("done", j.result)
      assert.are.equal(cjson.null, j.last_error)
      local line
      for l in p:stderr():gmatch("[^\n]+") do
        if has(l, "hook failed") then line = l end
      end
      assert.truthy(line, p:stderr())
      assert.truthy(has(line, "hook exploded"), line)
      assert.truthy(has(line, "hook=on_success"), line)
      assert.truthy(has(line, id), line)
    end)
  end)

  -- ---- ctx ---------------------------------------------------------------

  it("stores ctx:log lines and ctx:progress", function()
    env:script("chatty", [[
return {
  run = function(job, ctx)
    ctx:log("info", "step one", { rows = 3 })
    ctx:log("warn", "step two")
    ctx:progress(3, 10)
    return true
  end,
}]])
    env:script("finisher", [[
return {
  run = function(job, ctx)
    ctx:progress(1, 4)
    ctx:progress(4, 4) -- at once: the final value is always written
    return true
  end,
}]])
    local id = env:enqueue("chatty")
    local fin = env:enqueue("finisher")
    local p = env:run_idle()
    assert.are.equal(0, p.code, p:stderr())
    local j = env:show(id)
    assert.are.equal("succeeded", j.state)
    assert.are.equal(2, #j.logs)
    assert.are.equal(1, j.logs[1].attempt)
    assert.are.equal("info", j.logs[1].level)
    assert.are.equal("step one", j.logs[1].message)
    assert.are.same({ rows = 3 }, j.logs[1].fields)
    assert.are.equal("warn", j.logs[2].level)
    assert.are.equal("step two", j.logs[2].message)
    assert.are.equal(cjson.null, j.logs[2].fields)
    assert.are.equal(3, j.progress_done)
    assert.are.equal(10, j.progress_total)
    local f = env:show(fin)
    assert.are.equal(4, f.progress_done)
    assert.are.equal(4, f.progress_total)
    assert.are.equal(1, p:count("step one"))
  end)

  -- ---- the curated environment -------------------------------------------

  describe("job code's environment", function()
    local SANDBOX = [[
local actions = {
  ["os.exit"] = function() os.exit(7) end,
  ["os.exit?"] = function() return type(os.exit) end,
  ["io.popen"] = function()
    local p = io.popen("echo popen-ok")
    local s = p:read("*a")
    p:close()
    return s
  end,
  ["os.execute"] = function() return os.execute("true") end,
  ["debug"] = function() return debug.getinfo(1, "l").currentline end,
  ["bytecode"] = function()
    return assert(load(string.dump(function() return 42 end)))()
  end,
  ["bytecode-reader"] = function()
    local code, done = string.dump(function() return 44 end), false
    return assert(load(function()
      if done then return nil end
      done = true
      return code
    end))()
  end,
  ["loadstring"] = function()
    return assert(loadstring(string.dump(function() return 43 end)))()
  end,
  ["require"] = function() return type(require("debug")) end,
  ["package"] = function() return type(package.loaded) end,
  ["setfenv"] = function() setfenv(1, {}) return "setfenv" end,
  ["getfenv"] = function() return type(getfenv(1)) end,
}
return {
  max_attempts = 1,
  run = function(job) return actions[job.payload.what]() end,
}]]

    it("has no os.exit, io.popen, os.execute, debug, package or bytecode loading", function()
      env:script("sandbox", SANDBOX)
      local want = {
        ["os.exit"] = "'exit'", ["io.popen"] = "'popen'",
        ["os.execute"] = "'execute'", debug = "'debug'",
        bytecode = "loading bytecode is not allowed in job code",
        loadstring = "loading bytecode is not allowed in job code",
        ["bytecode-reader"] = "attempt to load chunk with wrong mode",
        require = 'require "debug" is not allowed in job code',
        package = "'package'", setfenv = "'setfenv'", getfenv = "'getfenv'",
      }
      local ids = {}
      for what in pairs(want) do ids[what] = env:enqueue("sandbox", H.json { what = what }) end
      local p = env:run_idle()
      -- os.exit(7) would have ended the host with status 7.
      assert.are.equal(0, p.code, p:stderr())
      for what, text in pairs(want) do
        local j = env:show(ids[what])
        assert.are.equal("failed", j.state, what)
        assert.truthy(has(j.last_error, text), what .. ": " .. j.last_error)
      end
    end)

    it("has the full standard library with --unsafe-lua", function()
      env:script("sandbox", SANDBOX)
      local want = {
        ["os.exit?"] = "function", ["io.popen"] = "popen-ok\n",
        bytecode = 42, ["bytecode-reader"] = 44, loadstring = 43, require = "table",
        package = "table", setfenv = "setfenv", getfenv = "table",
      }
      local ids = {}
      for what in pairs(want) do ids[what] = env:enqueue("sandbox", H.json { what = what }) end
      local exec = env:enqueue("sandbox", H.json { what = "os.execute" })
      local dbg = env:enqueue("sandbox", H.json { what = "debug" })
      local p = env:run_idle("--unsafe-lua")
      assert.are.equal(0, p.code, p:stderr())
      for what, result in pairs(want) do
        local j = env:show(ids[what])
        assert.are.equal("succeeded", j.state, what .. ": " .. tostring(j.last_error))
        assert.are.equal(result, j.result, what)
      end
      local e = env:show(exec)
      assert.are.equal("succeeded", e.state, tostring(e.last_error))
      assert.truthy(e.result == 0 or e.result == true, tostring(e.result))
      local d = env:show(dbg)
      assert.are.equal("succeeded", d.state, tostring(d.last_error))
      assert.are.equal("number", type(d.result))
    end)
  end)

  -- ---- the database ------------------------------------------------------

  it("starts together with an enqueue on a new database", function()
    -- Whichever process creates the schema, the other waits for it:
    -- neither may take the half-made file for someone else's database.
    -- (Both open the database the same way; two enqueues race faster than
    -- a host and an enqueue, so more rounds fit.)
    for round = 1, 60 do
      local db = "sqlite:" .. env:path("race" .. round .. ".db")
      local a = env:spawn("--db", db, "enqueue", "ok", "--scripts", env.scripts)
      local b = env:spawn("--db", db, "enqueue", "ok", "--scripts", env.scripts)
      assert.are.equal(0, a:wait(20), a:stderr())
      assert.are.equal(0, b:wait(20), b:stderr())
    end
    env:script("ok", [[return { run = function() return 1 end }]])
    local db = "sqlite:" .. env:path("race-host.db")
    local p = env:spawn("--db", db, "run", "--scripts", env.scripts, "--until-idle")
    local r = H.run { "--db", db, "enqueue", "ok", "--scripts", env.scripts }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(0, p:wait(20), p:stderr())
  end)

  -- ---- options -----------------------------------------------------------

  describe("options", function()
    it("--queues serves only the named queues", function()
      env:script("work", [[return { run = function(job) return job.queue end }]])
      local mail = env:enqueue("work", "{}", "--queue", "mail")
      local sms = env:enqueue("work", "{}", "--queue", "sms")
      local other = env:enqueue("work", "{}", "--queue", "other")
      local default = env:enqueue("work")
      local p = env:run_idle("--queues", "mail,sms")
      assert.are.equal(0, p.code, p:stderr())
      assert.are.equal("mail", env:show(mail).result)
      assert.are.equal("sms", env:show(sms).result)
      for _, id in ipairs { other, default } do
        local j = env:show(id)
        assert.are.equal("pending", j.state)
        assert.are.equal(0, j.attempt)
        assert.are.same({}, j.attempts)
      end
    end)

    it("--log-format json writes one JSON object per line", function()
      env:script("ok", [[return { run = function() return 1 end }]])
      env:script("bad", [[
return { max_attempts = 1, run = function() error("json-visible failure") end }]])
      local ok = env:enqueue("ok")
      local bad = env:enqueue("bad")
      local p = env:run_idle("--log-format", "json")
      assert.are.equal(0, p.code, p:stderr())
      local by_msg = {}
      local lines = H.lines(p:stderr())
      assert.is_true(#lines >= 4)
      for _, l in ipairs(lines) do
        local ok_, rec = pcall(cjson.decode, l)
        assert.is_true(ok_, "not JSON: " .. l)
        assert.are.equal("table", type(rec))
        assert.truthy(rec.ts and rec.level and rec.msg, l)
        by_msg[rec.msg] = rec
      end
      assert.truthy(by_msg["host started"])
      assert.truthy(by_msg["host stopped"])
      local s = assert(by_msg["job succeeded"])
      assert.are.equal(ok, s.job)
      assert.are.equal("ok", s.type)
      assert.are.equal(1, s.attempt)
      assert.are.equal("info", s.level)
      assert.are.equal("number", type(s.duration_ms))
      assert.is_true(s.duration_ms >= 0)
      local f = assert(by_msg["job failed: dead-lettered"])
      assert.are.equal(bad, f.job)
      assert.are.equal("bad", f.type)
      assert.are.equal(1, f.attempt)
      assert.are.equal("error", f.level)
      assert.are.equal("number", type(f.duration_ms))
      assert.truthy(has(f.error, "json-visible failure"), f.error)
    end)
  end)
end)
