-- host_spec.lua: functional specs for the worker host, `pawl run`. Each test
-- writes its job scripts into a temp scripts dir, enqueues with the real
-- binary, runs a real `pawl run` process on a temp database and checks what
-- was stored (`pawl show --json`), what the host logged (its stderr) and,
-- for secrets, the raw bytes of the database files.
--
-- Nothing here depends on the machine's speed: a job that must
-- be running at some moment is held there by a gate the test opens
-- (H.GATE_LUA, env:gate()), never by a busy-wait or a sleep; tests assert
-- order and outcome, and time only where it is the point, as bounds that a
-- slow machine cannot break (a retry's run_at lies between the failed
-- attempt's stored start and end plus the delay). Upper bounds on elapsed
-- time are hang guards (H.HANG_S), there to end a test that would
-- otherwise wait forever. Exact delays are checked with an injected clock
-- by the C unit tests host_clock_* (spec/unit/test_host_clock.c).
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

-- A retry's or a snooze's run_at is computed by the worker, on the store's
-- clock, when the attempt ends: after the attempt's stored start (the
-- claim) and before its stored end (written later, by the completer). So
--   started_at + delay <= run_at <= ended_at + delay
-- however slow the machine. The window is as wide as the attempt took;
-- a wrong delay (another policy's, the wrong unit or attempt number) falls
-- outside it unless the attempt lasted about as long as the error. `a` is
-- the attempt, `run_at` ms, `want` the delay in ms.
local function assert_delay(what, a, run_at, want)
  local lo, hi = ms(a.started_at) + want, ms(a.ended_at) + want
  assert.is_true(run_at >= lo and run_at <= hi,
                 ("%s: run_at %d ms after the attempt's start and %d ms after its "
                  .. "end, want %d ms after the moment it failed, in between")
                 :format(what, run_at - ms(a.started_at), run_at - ms(a.ended_at), want))
end

-- The event that stored a retry or a snooze says "retry in N ms" or
-- "snoozed for N ms", counted from when it was recorded: its time plus N
-- is the stored run_at, and N is at most the delay (the delay counts from
-- the failure, a moment earlier).
local function assert_reason(e, run_at, want)
  local n = tonumber(e.reason:match("(%d+) ms$"))
  assert.truthy(n, e.reason)
  assert.are.equal(run_at, ms(e.at) + n, e.reason)
  assert.is_true(n <= want, e.reason)
end

local function outcomes(j)
  local list = {}
  for i, a in ipairs(j.attempts) do list[i] = a.outcome end
  return list
end

-- The first event whose reason matches `pattern` (and, if given, of
-- attempt `attempt`).
local function find_event(j, pattern, attempt)
  for _, e in ipairs(j.events) do
    if e.reason ~= cjson.null and e.reason:find(pattern)
       and (attempt == nil or e.attempt == attempt) then
      return e
    end
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
        -- time) is the policy's delay for this attempt after the failure
        -- (0.4 s after the second: the policy saw attempt 2)...
        local run_at = ms(nxt.scheduled_at)
        assert_delay(("attempt %d"):format(i), a, run_at, want)
        assert_reason(assert(find_event(j, "^retry in %d+ ms$", i)), run_at, want)
        -- ...and the next attempt never starts before it. (That it starts
        -- soon after is the poller's job, and --until-idle waiting for it.)
        assert.is_true(ms(nxt.started_at) >= run_at,
                       ("attempt %d started %d ms before its run_at")
                       :format(i + 1, run_at - ms(nxt.started_at)))
      end
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
        local nxt = j.attempts[i + 1]
        assert_delay(("attempt %d"):format(i), j.attempts[i], ms(nxt.scheduled_at), 100)
        assert.is_true(ms(nxt.started_at) >= ms(nxt.scheduled_at))
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
      local p = env:run_idle("--poll", "0.05", "--allow-io")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(id)
      assert.are.equal("succeeded", j.state)
      assert.are.same({ attempt = 1 }, j.result)
      assert.are.equal(1, j.attempt)
      assert.are.same({ "snoozed", "succeeded" }, outcomes(j))
      assert.are.equal(1, j.attempts[1].attempt)
      assert.are.equal(1, j.attempts[2].attempt)
      assert.are.equal(cjson.null, j.attempts[1].error)
      local run_at = ms(j.attempts[2].scheduled_at)
      assert_delay("the snooze", j.attempts[1], run_at, 300)
      assert_reason(assert(find_event(j, "^snoozed for %d+ ms$")), run_at, 300)
      assert.is_true(ms(j.attempts[2].started_at) >= run_at)
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
      -- The defaults' 0.2 s, not the built-in policy's 2 s.
      assert_delay("attempt 1", j.attempts[1], ms(j.attempts[2].scheduled_at), 200)
    end)

    it("retries a job whose type has no script with the default policy", function()
      -- The built-in policy: about 2 s (+-10% jitter) after the first failure.
      local p = env:start("--poll", "0.05")
      local id = env:enqueue("ghost")
      -- Whenever this looks, however late: the second attempt (running,
      -- or done) keeps the retry's run_at as its scheduled time.
      local j = env:wait_until("the first attempt", function()
        local j = env:show(id)
        return #j.attempts >= 1 and j.attempts[1].outcome ~= "running" and j
      end)
      local a = j.attempts[1]
      assert.are.equal("retry", a.outcome)
      assert.are.equal("no script for job type ghost", a.error)
      local run_at = ms(j.attempts[2] and j.attempts[2].scheduled_at or j.run_at)
      -- 2 s +-10%: between 1.8 s after the attempt's start and 2.2 s after
      -- its end (see assert_delay).
      assert.is_true(run_at >= ms(a.started_at) + 1800 and run_at <= ms(a.ended_at) + 2200,
                     ("run_at %d ms after the start, %d after the end")
                     :format(run_at - ms(a.started_at), run_at - ms(a.ended_at)))
      p:signal("TERM")
      assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
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

  -- A stopped job's duration is at least its timeout (the timeout never
  -- fires early). Its upper bound is a hang guard: each job below would run
  -- for minutes (or for ever) if its timeout did not stop it, and what stops
  -- it, and why, is in its outcome and error.
  local function assert_stopped_after(d, timeout_ms)
    assert.is_true(d >= timeout_ms - 50 and d < H.HANG_S * 1000,
                   ("duration %s ms, want at least the %d ms timeout"):format(tostring(d), timeout_ms))
  end

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
      -- jit.attach is for trusted code only (LuaJIT runs its handlers with
      -- hooks off): the observation runs with --unsafe-lua.
      local p = env:run_idle("--workers", "2", "--unsafe-lua")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(spin)
      assert.are.equal("failed", j.state)
      assert.are.equal(1, j.attempt)
      assert.truthy(has(j.last_error, "job timed out after 0.5 s"), j.last_error)
      local a = j.attempts[1]
      assert.are.equal("failed", a.outcome)
      assert_stopped_after(a.duration_ms, 500)
      local traced = false
      for _, l in ipairs(j.logs) do traced = traced or l.message == "trace recorded" end
      assert.is_true(traced, "no trace was recorded: " .. cjson.encode(j.logs))
      -- The loop stopped, and nothing else suffered from it. (That the
      -- other worker runs jobs while one spins is the next test's, which
      -- holds the busy job with a gate rather than race its timeout.)
      for i, id in ipairs(quick) do
        local q = env:show(id)
        assert.are.equal("succeeded", q.state)
        assert.are.same({ n = i }, q.result)
      end
    end)

    it("runs other jobs on the other workers while one is busy in Lua", function()
      -- `busy` keeps its worker in Lua code, never in a call that yields,
      -- until the test has seen every quick job succeed on the other one.
      local gate = env:gate()
      env:script("busy", [[
return {
  run = function(job)
    local n = 0
    while true do
      for i = 1, 100000 do n = n + i end
      local f = io.open(job.payload.gate, "r")
      if f then f:close() return "released" end
    end
  end,
}]])
      env:script("quick", [[
return { run = function(job) return { n = job.payload.n } end }]])
      local p = env:start("--workers", "2", "--poll", "0.05")
      local busy = env:enqueue("busy", H.json { gate = gate.path })
      env:wait_state(busy, "running")
      local quick = {}
      for i = 1, 10 do quick[i] = env:enqueue("quick", H.json { n = i }) end
      for i, id in ipairs(quick) do
        assert.are.same({ n = i }, env:wait_state(id, "succeeded").result)
      end
      assert.are.equal("running", env:show(busy).state)
      gate:open()
      assert.are.equal("released", env:wait_state(busy, "succeeded").result)
      p:signal("TERM")
      assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
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
        -- The last attempt: the one before, if any, was claimed ahead
        -- behind the other runaway and handed back unstarted.
        assert_stopped_after(j.attempts[#j.attempts].duration_ms, 500)
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
      -- The long nap would take ten minutes: the hang guard on its
      -- duration shows that the timeout cut it short.
      local short = env:enqueue("nap", H.json { s = 0.05 })
      local long = env:enqueue("nap", H.json { s = 600 })
      local p = env:run_idle("--workers", "2")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(short)
      assert.are.equal("succeeded", j.state, tostring(j.last_error))
      assert.is_true(j.result.slept >= 0.049, tostring(j.result.slept))
      j = env:show(long)
      assert.are.equal("failed", j.state)
      assert.truthy(has(j.last_error, "job timed out after 0.3 s"), j.last_error)
      assert_stopped_after(j.attempts[1].duration_ms, 300)
    end)

    it_interrupts("times out a job blocked in a C call once it is back in Lua", function()
      -- The C call is not cut short (the job took its whole second), and
      -- the job did not get to return once back in Lua.
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
      assert_stopped_after(j.attempts[1].duration_ms, 1000)
    end)
  end)

  -- ---- scripts -----------------------------------------------------------

  describe("scripts", function()
    it("fail the jobs of a script that did not load with its load error", function()
      -- Four ways a script does not load: each job's error names the
      -- file and says why, not "no script for job type".
      local paths = {
        syntax = env:script("syntax", "return { run = function() end"),
        raises = env:script("raises", [[error("top level says no")]]),
        norun = env:script("norun", "return { queue = 'x' }"),
      }
      -- A top level that never returns is cut short by the interrupt
      -- signal, which cannot land under ThreadSanitizer (it_interrupts).
      if not TSAN then paths.slow = env:script("slow", "while true do end") end
      local ids = {}
      for name in pairs(paths) do
        ids[name] = env:enqueue(name, "{}", "--max-attempts", "1")
      end
      local ghost = env:enqueue("ghost", "{}", "--max-attempts", "1")
      local p = env:run_idle("--poll", "0.05", "--load-timeout", "0.5")
      assert.are.equal(0, p.code, p:stderr())
      local why = { syntax = "'}' expected", raises = "top level says no",
                    norun = "run", slow = "longer than 0.5 s" }
      for name, id in pairs(ids) do
        local j = env:show(id)
        assert.are.equal("failed", j.state, name)
        local e = j.attempts[1].error
        assert.falsy(has(e, "no script for job type"), name .. ": " .. e)
        assert.truthy(has(e, "did not load"), name .. ": " .. e)
        assert.truthy(has(e, paths[name]), name .. ": " .. e)
        assert.truthy(has(e, why[name]), name .. ": " .. e)
      end
      -- A type that has no file at all still says so.
      assert.are.equal("no script for job type ghost", env:show(ghost).attempts[1].error)
    end)

    it("are reloaded when they change; a broken one keeps the old version", function()
      env:script("A", [[return { run = function() return "v1" end }]])
      -- B runs until the test opens its gate.
      local gate = env:gate()
      env:script("B", H.GATE_LUA .. [[
return {
  run = function(job)
    pawl_gate(job.payload.gate)
    return "b-old"
  end,
}]])
      local p = env:start("--poll", "0.05", "--workers", "1", "--allow-io")
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
      local b = env:enqueue("B", H.json { gate = gate.path })
      gate:wait_reached()
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
      gate:open()
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
      assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
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
      -- The retry's run_at: the second attempt's scheduled time once there
      -- is one (however late we look), else the pending job's.
      local function retry_at(j)
        return ms(j.attempts[2] and j.attempts[2].scheduled_at or j.run_at)
      end
      local a = first_failure(env:enqueue("ghost"))
      assert_delay("with _defaults.lua", a.attempts[1], retry_at(a), 200)
      -- ...and, once the file is gone, the built-in one (about 2 s) again.
      local loads = p:count("scripts loaded")
      assert(os.remove(env.scripts .. "/_defaults.lua"))
      env:wait_until("the reload", function() return p:count("scripts loaded") > loads end)
      local b = first_failure(env:enqueue("ghost"))
      local b1, run_at = b.attempts[1], retry_at(b)
      assert.is_true(run_at >= ms(b1.started_at) + 1800 and run_at <= ms(b1.ended_at) + 2200,
                     ("without _defaults.lua: run_at %d ms after the start, %d after the end")
                     :format(run_at - ms(b1.started_at), run_at - ms(b1.ended_at)))
      p:signal("TERM")
      assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
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
    -- Runs until the host stops it: its gate is never opened (and would
    -- give up only after ten minutes, long after every hang guard here).
    local HELD = H.GATE_LUA .. [[
return {
  run = function(job)
    pawl_gate(job.payload.gate, 600)
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

    -- Waits until the host has taken a graceful stop (it logs it as it
    -- sets the flag): from then on no worker starts another job.
    local function wait_stopping(p)
      env:wait_until("the host to begin stopping", function()
        return p:count("stopping: no new jobs") > 0
      end)
    end

    -- `pawl run 2>&1 | READER` in a shell: the host's pid, its exit status
    -- and a mark that the reader has gone go to files of the env.
    -- READER reads `nbytes` (0: none) and exits, often mid-line.
    local function run_into_pipe(nbytes, ...)
      local q = H.quote
      local words = { q(H.bin), "--db", q(env.db), "--create", "run",
                      "--scripts", q(env.scripts), "--poll", "0.05" }
      for _, a in ipairs({ ... }) do words[#words + 1] = q(a) end
      local reader = nbytes > 0 and ("head -c %d >/dev/null"):format(nbytes) or "true"
      local files = { pid = env:path("host.pid"), code = env:path("host.code"),
                      gone = env:path("reader.gone") }
      for _, path in pairs(files) do os.remove(path) end
      local cmd = ("{ %s 2>&1 & echo $! >%s; wait $!; echo $? >%s; } | "
                   .. "{ %s; echo gone >%s; }")
                  :format(table.concat(words, " "), q(files.pid), q(files.code),
                          reader, q(files.gone))
      env:spawn_program({ "/bin/sh", "-c", cmd })
      env:wait_until("the reader to go", function() return H.exists(files.gone) end)
      files.host = tonumber(env:wait_until("the host's pid", function()
        return (H.read_file(files.pid) or ""):match("^(%d+)\n") end))
      return files
    end

    local function host_code(files)
      return tonumber(env:wait_until("the host to exit", function()
        return (H.read_file(files.code) or ""):match("^(%d+)\n") end, 2 * H.HANG_S))
    end

    it("stops cleanly and removes its socket when the pipe it logs to is gone", function()
      local sock = env.db_path .. ".sock"
      -- A signal: the stop's log lines go to a pipe nobody reads.
      for _, nbytes in ipairs({ 1, 0, 7 }) do
        local f = run_into_pipe(nbytes)
        env:wait_until("the socket", function() return H.exists(sock) end)
        os.execute("kill -INT " .. f.host)
        local code = host_code(f)
        assert.are_not.equal(141, code, "killed by SIGPIPE")
        assert.are.equal(0, code)
        assert.is_false(H.exists(sock), "the admin socket was left behind")
      end
      -- --until-idle: a job, held until the reader has gone, logs as it
      -- ends and the host stops by itself.
      local gate = env:gate()
      env:script("held", H.GATE_LUA .. [[
return { run = function(job) pawl_gate(job.payload.gate) return "ok" end }]])
      local id = env:enqueue("held", H.json { gate = gate.path })
      local f = run_into_pipe(1, "--until-idle", "--allow-io")
      gate:wait_reached()
      gate:open()
      local code = host_code(f)
      assert.are_not.equal(141, code, "killed by SIGPIPE")
      assert.are.equal(0, code)
      assert.are.equal("succeeded", env:show(id).state)
      assert.is_false(H.exists(sock), "the admin socket was left behind")
      -- An error stop (its database file deleted), into the same pipe.
      f = run_into_pipe(3)
      env:wait_until("the socket", function() return H.exists(sock) end)
      os.remove(env.db_path)
      code = host_code(f)
      assert.are.equal(1, code)
      assert.is_false(H.exists(sock), "the admin socket was left behind")
    end)

    it("SIGTERM hands the running and the queued jobs back", function()
      local gate = env:gate()
      env:script("long", HELD)
      env:script("quick", [[return { run = function() return true end }]])
      -- --prefetch: the queued jobs are claimed while the long one runs
      -- (--ahead-hold: and stay claimed).
      local p = env:start("--workers", "1", "--grace", "0.5", "--poll", "0.05",
                          "--prefetch", "4", "--ahead-hold", "600")
      local long = env:enqueue("long", H.json { gate = gate.path })
      gate:wait_reached()
      local queued = {}
      for i = 1, 3 do queued[i] = env:enqueue("quick") end
      -- Claimed into the worker's queue behind the long job.
      for _, id in ipairs(queued) do env:wait_state(id, "running") end
      local t0 = H.mono()
      p:signal("TERM")
      assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
      -- Not before the long job had its grace period (a lower bound: the
      -- host counts the 0.5 s from after the signal).
      local took = H.mono() - t0
      assert.is_true(took >= 0.45, tostring(took))
      -- Handed back, not run to an end: it could not end by itself.
      assert_released(long)
      for _, id in ipairs(queued) do assert_released(id) end
      -- Nothing was left running or done behind our back.
      local r = env:ok("jobs", "--state", "running")
      assert.are.equal(1, #H.lines(r))
    end)

    it("SIGTERM lets a running job finish within the grace period", function()
      -- The job runs until the test opens its gate, which it does only once
      -- the host has taken the stop: the job ends inside the grace period
      -- however long each step took. (A 0.5 s busy-wait here used to end
      -- before the quick jobs were even enqueued under AddressSanitizer.)
      local gate = env:gate()
      env:script("short", H.GATE_LUA .. [[
return {
  run = function(job)
    pawl_gate(job.payload.gate)
    return "finished in time"
  end,
}]])
      env:script("quick", [[return { run = function() return true end }]])
      local p = env:start("--workers", "1", "--grace", "600", "--poll", "0.05",
                          "--prefetch", "4", "--ahead-hold", "600")
      local short = env:enqueue("short", H.json { gate = gate.path })
      gate:wait_reached()
      local queued = {}
      for i = 1, 2 do queued[i] = env:enqueue("quick") end
      for _, id in ipairs(queued) do env:wait_state(id, "running") end
      p:signal("TERM")
      wait_stopping(p)
      gate:open()
      -- The host ends once the job has, long before the grace period would.
      assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
      local j = env:show(short)
      assert.are.equal("succeeded", j.state)
      assert.are.equal("finished in time", j.result)
      -- The queued ones never started: handed back, not run.
      for _, id in ipairs(queued) do assert_released(id) end
    end)

    it("does not hang on a worker stuck in a C call", function()
      -- The C call would last ten minutes: the host gives up on the worker
      -- after the grace period and two more seconds, and a host that
      -- waited for the call would meet the hang guard first.
      env:script("stuck", [[
return {
  run = function(job)
    assert(io.open(job.payload.marker, "w")):close()
    os.execute("sleep 600")
    return "woke"
  end,
}]])
      local p = env:start("--workers", "1", "--grace", "0.3", "--poll", "0.05",
                          "--unsafe-lua")
      local marker = env:path("marker")
      local stuck = env:enqueue("stuck", H.json { marker = marker })
      env:wait_until("the job to block", function() return H.exists(marker) end)
      p:signal("TERM")
      assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
      assert_released(stuck)
      assert.are.equal(1, p:count("workers stuck in blocking C calls were left behind"))
    end)

    it("a job stuck past its deadline at a stop has used its attempt", function()
      -- The job blocks in a C call that outlives its 1 s timeout: the
      -- watchdog's interrupt cannot land, and the stop leaves the worker
      -- behind. The job timed out before the stop, so it is not handed back
      -- unused (else a job that never returns takes a worker on every
      -- restart and never reaches the dead-letter set): its attempt counts,
      -- and with max_attempts = 1 the next host fails it without running it.
      env:script("stuck", [[
return {
  timeout = 1, max_attempts = 1,
  run = function(job)
    local f = assert(io.open(job.payload.marker, "a"))
    f:write("started\n")
    f:close()
    os.execute("sleep 600")
    return "woke"
  end,
}]])
      local p = env:start("--workers", "1", "--grace", "0.3", "--poll", "0.05",
                          "--unsafe-lua")
      local marker = env:path("marker")
      local stuck = env:enqueue("stuck", H.json { marker = marker })
      env:wait_until("the job to block", function() return H.exists(marker) end)
      -- Past its deadline (1 s after it started, with a second to spare
      -- for os.time's resolution) before the stop begins.
      local t0 = os.time()
      env:wait_until("the job's deadline to pass", function()
        return os.time() >= t0 + 3
      end)
      p:signal("TERM")
      assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
      assert.are.equal(1, p:count("workers stuck in blocking C calls were left behind"))
      local j = env:show(stuck)
      assert.are.equal("pending", j.state)
      assert.are.equal(1, j.attempt)
      assert.are.same({ "retry" }, outcomes(j))
      assert.truthy(tostring(j.last_error):find("past its deadline", 1, true),
                    tostring(j.last_error))
      -- The next host does not run it again: that was its only attempt.
      local r = env:run_idle("--unsafe-lua")
      assert.are.equal(0, r:poll(), r:stderr())
      j = env:show(stuck)
      assert.are.equal("failed", j.state)
      local f = assert(io.open(marker))
      assert.are.equal("started\n", f:read("*a"))
      f:close()
    end)

    it("a second SIGINT during the grace period stops at once", function()
      local gate = env:gate()
      env:script("long", HELD)
      -- Ten minutes of grace: only the second signal can end the host
      -- within the hang guard.
      local p = env:start("--workers", "1", "--grace", "600", "--poll", "0.05")
      local long = env:enqueue("long", H.json { gate = gate.path })
      gate:wait_reached()
      p:signal("INT")
      wait_stopping(p)
      assert.is_true(p:alive(), "the first SIGINT waits for running jobs")
      p:signal("INT")
      assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
      -- The second signal was taken while the host still waited.
      assert.are.equal(1, p:count("stopping now: unfinished jobs are handed back"))
      assert_released(long)
    end)
  end)

  -- ---- waking ------------------------------------------------------------

  it("pawl.lock lets one job at a time into its section, on every node", function()
    -- Two jobs on two workers ask for the lock. Whichever gets it holds it
    -- at a gate; the other asks while it is held and is refused. The gate
    -- opens only once the refused one has finished, so neither their order
    -- nor the machine's speed matters. (The TTL outlasts every wait.)
    local gate = env:gate()
    env:script("locked", H.GATE_LUA .. [[
return {
  max_attempts = 1,
  run = function(job)
    if job.payload.fail then
      local ok, err = pcall(pawl.lock, "report", 600, function() error("inside") end)
      return { raised = tostring(err), again = (pawl.lock("report", 600, function() end)) }
    end
    local got, a, b = pawl.lock("report", 600, function()
      pawl_gate(job.payload.gate)
      return "done", 42
    end)
    return { got = got, a = a, b = b }
  end,
}]])
    local p = env:start("--workers", "2", "--poll", "0.05")
    local x = env:enqueue("locked", H.json { gate = gate.path })
    local y = env:enqueue("locked", H.json { gate = gate.path })
    local loser = env:wait_until("one of the two to finish", function()
      for _, id in ipairs { x, y } do
        local j = env:show(id)
        if j.state ~= "pending" and j.state ~= "running" then return j end
      end
    end)
    assert.are.equal("succeeded", loser.state, tostring(loser.last_error))
    assert.are.same({ got = false }, loser.result)
    -- Only the winner came to the gate, inside the lock.
    assert.are.equal(1, gate:arrivals())
    gate:open()
    local winner = env:wait_state(loser.id == x and y or x, "succeeded")
    assert.are.same({ got = true, a = "done", b = 42 }, winner.result)
    -- Released at the end (also when fn raises): later jobs get it again.
    local z = env:enqueue("locked", H.json { fail = true })
    local rz = env:wait_state(z, "succeeded").result
    assert.truthy(has(rz.raised, "inside"), rz.raised)
    assert.is_true(rz.again)
    p:signal("TERM")
    assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
  end)

  it("a job's pawl.enqueue starts the child while the parent still runs", function()
    -- The parent enqueues three children one at a time and waits for each
    -- to have run (the child creates the file the parent's gate waits for)
    -- before it enqueues the next: every child must be claimed and run
    -- while its parent is still running. That the wakeup does it at once,
    -- not the poller's timers, is the unit test host_wakeup_from_job's (it
    -- can set every timer to ten minutes; `pawl run` checks scripts every
    -- second).
    env:script("parent", H.GATE_LUA .. [[
return {
  run = function(job)
    local ids = {}
    for i = 1, 3 do
      local ran = ("%s-child%d"):format(job.payload.gate, i)
      ids[i] = pawl.enqueue("child", { n = i, ran = ran })
      pawl_gate(ran)
    end
    return ids
  end,
}]])
    env:script("child", [[
return {
  queue = "kids", priority = 5, max_attempts = 3,
  run = function(job)
    assert(io.open(job.payload.ran, "w")):close()
    return job.payload.n
  end,
}]])
    local gate = env:gate()
    local parent = env:enqueue("parent", H.json { gate = gate.path })
    local p = env:run_idle("--poll", "60", "--workers", "2")
    assert.are.equal(0, p.code, p:stderr())
    local j = env:show(parent)
    assert.are.equal("succeeded", j.state, tostring(j.last_error))
    assert.are.equal(3, #j.result)
    for i, id in ipairs(j.result) do
      local c = env:show(id)
      assert.are.equal("succeeded", c.state)
      assert.are.equal(i, c.result)
      assert.are.equal("job:" .. parent, c.enqueued_by)
      assert.are.equal(parent, c.correlation_id)
      -- The child's script says where it runs (queue, priority: decided at
      -- enqueue); how it runs (max_attempts) is left to the worker.
      assert.are.equal("kids", c.queue)
      assert.are.equal(5, c.priority)
      assert.are.equal(cjson.null, c.max_attempts)
      assert.is_true(ms(c.started_at) <= ms(j.finished_at))
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
      -- Its retry is an hour away: its on_failure hook must see it pending,
      -- whenever the hook gets to look.
      env:script("hooked_later", HOOKS .. [[
hooks.max_attempts = 2
hooks.retry = pawl.retry.fixed { delay = 3600 }
hooks.run = function(job) error("bad thing " .. job.attempt) end
return hooks]])
      env:script("hooked_bad", HOOKS .. [[
hooks.max_attempts = 2
hooks.retry = pawl.retry.fixed { delay = 0.05 }
hooks.run = function(job) error("bad thing " .. job.attempt) end
return hooks]])
      env:script("hooked_fatal", HOOKS .. [[
hooks.run = function(job) pawl.fatal("bad thing 9") end
return hooks]])
      local out = env:path("hooks.txt")
      local payload = H.json { bin = H.bin, db = env.db, out = out }
      local ok = env:enqueue("hooked_ok", payload)
      local later = env:enqueue("hooked_later", payload)
      local bad = env:enqueue("hooked_bad", payload)
      local fatal = env:enqueue("hooked_fatal", payload)
      local p = env:run_idle("--unsafe-lua", "--poll", "0.05")
      assert.are.equal(0, p.code, p:stderr())
      assert.are.equal(0, p:count("hook failed"), p:stderr())
      local lines = {}
      for _, l in ipairs(H.lines(H.read_file(out) or "")) do lines[l] = (lines[l] or 0) + 1 end
      -- hooked_bad's first on_failure hook runs once attempt 1's outcome is
      -- stored; by the time its `pawl show` looks, the retry may be waiting,
      -- running or done. Any of those, never "running 1".
      local first
      for _, seen in ipairs { "pending 1", "running 2", "failed 2" } do
        local l = ("on_failure %s %s bad thing 1"):format(bad, seen)
        if lines[l] then
          assert.is_nil(first, "two first on_failure lines")
          first = l
        end
      end
      assert.truthy(first, "hooked_bad's first on_failure: " .. cjson.encode(lines))
      local want = {
        [("on_success %s succeeded 1 table"):format(ok)] = 1,
        [("on_failure %s pending 1 bad thing 1"):format(later)] = 1,
        [first] = 1,
        [("on_failure %s failed 2 bad thing 2"):format(bad)] = 1,
        [("on_dead %s failed 2 bad thing 2"):format(bad)] = 1,
        [("on_failure %s failed 1 bad thing 9"):format(fatal)] = 1,
        [("on_dead %s failed 1 bad thing 9"):format(fatal)] = 1,
      }
      assert.are.same(want, lines)
      assert.are.equal("pending", env:show(later).state)
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
      local a = env:spawn("--db", db, "--create", "enqueue", "ok", "--scripts", env.scripts)
      local b = env:spawn("--db", db, "--create", "enqueue", "ok", "--scripts", env.scripts)
      assert.are.equal(0, a:wait(H.HANG_S), a:stderr())
      assert.are.equal(0, b:wait(H.HANG_S), b:stderr())
    end
    env:script("ok", [[return { run = function() return 1 end }]])
    local db = "sqlite:" .. env:path("race-host.db")
    local p = env:spawn("--db", db, "--create", "run", "--scripts", env.scripts, "--until-idle")
    local r = H.run { "--db", db, "--create", "enqueue", "ok", "--scripts", env.scripts }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(0, p:wait(H.HANG_S), p:stderr())
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
