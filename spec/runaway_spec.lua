-- runaway_spec.lua: job code and scripts that try to take the host down or
-- to run forever (issue 10, items 3, 4, 5 and 10): recursion through C,
-- timeouts dodged in an error handler or in the string library, hooks,
-- scripts whose top level never returns, and locks left behind by a job
-- that was stopped. Each test asserts that the job (or the load) ended and
-- why. Waits are for events (a state, a log line, a marker file) with
-- generous hang guards; no test measures how long something took.
local cjson = require "cjson"
local ffi = require "ffi"
local H = require "host_helper"

-- Under ThreadSanitizer a signal reaches a thread only when it next enters
-- libc, which a Lua loop never does: tests that need the watchdog's signal
-- to stop Lua code are left out there (as in host_spec.lua).
local TSAN = os.getenv("PAWL_TSAN") == "1"
local it_interrupts = TSAN and function(name)
  pending(name .. " (the interrupt signal cannot land under ThreadSanitizer)")
end or it

ffi.cdef [[
  int pawl_runaway_open(const char *path, int flags, int mode) __asm__("open");
  int pawl_runaway_close(int fd) __asm__("close");
]]
local O_WRONLY, O_NONBLOCK = 1, 2048

local function has(s, text) return s:find(text, 1, true) ~= nil end

-- The stderr line of process `p` that contains all of `texts`, or nil.
local function log_line(p, ...)
  local texts = { ... }
  for line in p:stderr():gmatch("[^\n]+") do
    local all = true
    for _, t in ipairs(texts) do all = all and has(line, t) end
    if all then return line end
  end
end

-- ---- the LuaJIT build ---------------------------------------------------

-- These run in the busted process itself: it is the LuaJIT pawl builds,
-- with cmake/luajit-limits.patch and cmake/luajit-interrupts.patch.
describe("pawl's LuaJIT", function()
  it("raises an error instead of overflowing the C stack", function()
    local cases = {
      -- The issue's example: string.gsub calling back into Lua.
      gsub = function()
        local function f(s) return (s:gsub(".", f)) end
        return f("ab")
      end,
      sort = function()
        local function f()
          table.sort({ 3, 2, 1 }, function(a, b) f() return a < b end)
        end
        f()
      end,
      tostring = function()
        local mt = {}
        mt.__tostring = function(x) return string.format("%s", x) end
        return tostring(setmetatable({}, mt))
      end,
      -- __index reached from C (lua_gettable) while C calls Lua.
      index = function()
        local t
        t = setmetatable({}, { __index = function(_, k)
          return (("x"):gsub(".", function() return t[k] end))
        end })
        return t.a
      end,
      wrap = function()
        local function f() coroutine.wrap(f)() end
        f()
      end,
      resume = function()
        local function f()
          local ok, err = coroutine.resume(coroutine.create(f))
          if not ok then error(err, 0) end
        end
        f()
      end,
    }
    for name, fn in pairs(cases) do
      local ok, err = pcall(fn)
      assert.is_false(ok, name)
      -- The message of a nested coroutine.wrap gains a position per level.
      assert.truthy(tostring(err):sub(-40):find("stack overflow", 1, true),
                    name .. ": " .. tostring(err):sub(-200))
    end
    -- pcall as __call nests frames no function header checked: it wrote
    -- past the Lua stack. Now it ends (the innermost pcall catches the
    -- stack overflow).
    assert.is_true((pcall(setmetatable({}, { __call = pcall }))))
    -- cjson bounds its own nesting.
    local deep, cur = {}, nil
    cur = deep
    for _ = 1, 5000 do cur[1] = {} cur = cur[1] end
    local ok, err = pcall(cjson.encode, deep)
    assert.is_false(ok)
    assert.truthy(has(err, "nesting"), err)
    ok, err = pcall(cjson.decode, ("["):rep(5000))
    assert.is_false(ok)
    assert.truthy(has(err, "nested"), err)
    -- Ordinary nesting still works.
    local function depth(n) if n == 0 then return 0 end
      return 1 + select(2, pcall(depth, n - 1)) end
    assert.are.equal(150, depth(150))
    local function co(n) if n == 0 then return 0 end
      return 1 + coroutine.wrap(co)(n - 1) end
    assert.are.equal(150, co(150))
  end)

  -- The host stops a job by arming a count hook; these arm one directly.
  it("lets an armed count hook stop pattern matching, sorting and xpcall handlers", function()
    local function stopped(count, fn, ...)
      debug.sethook(function() error("stopped by the hook", 0) end, "", count)
      local r = { pcall(fn, ...) }
      debug.sethook()
      return r
    end
    -- Backtracking: 2^22 ways to fail, all in C.
    local r = stopped(1000, string.find, ("a"):rep(22), ("a?"):rep(22) .. ("a"):rep(22))
    assert.are.same({ false, "stopped by the hook" }, r)
    r = stopped(1000, string.gsub, ("a"):rep(22), ("a?"):rep(22) .. ("a"):rep(22), "")
    assert.are.same({ false, "stopped by the hook" }, r)
    r = stopped(1000, function()
      for _ in (("a"):rep(22)):gmatch(("a?"):rep(22) .. ("a"):rep(22)) do end
    end)
    assert.are.same({ false, "stopped by the hook" }, r)
    -- Sorting in the default order runs no bytecode at all.
    local t = {}
    for i = 1, 100000 do t[i] = (i * 7919) % 100003 end
    r = stopped(1000, table.sort, t)
    assert.are.same({ false, "stopped by the hook" }, r)
    -- An xpcall handler runs with hooks on, even when the hook raised the
    -- error it handles: its loop is stopped too, and xpcall reports it.
    r = stopped(100000, function()
      return xpcall(function() while true do end end, function()
        local n = 0
        for i = 1, 1e8 do n = n + i end
        return "the handler ran to its end"
      end)
    end)
    assert.are.same({ true, false, "error in error handling" }, r)
    -- Without a hook, all of them work as before.
    assert.are.equal(1, (("a"):rep(10)):find(("a?"):rep(10) .. ("a"):rep(10)))
    table.sort(t)
    for i = 2, #t do assert(t[i - 1] <= t[i]) end
    assert.are.same({ false, "handled" },
                    { xpcall(error, function() return "handled" end) })
  end)
end)

-- ---- the host -------------------------------------------------------------

describe("pawl run with runaway code", function()
  local env

  before_each(function()
    env = H.env()
    env:ok("migrate")
  end)
  after_each(function() env:cleanup() end)

  -- Enqueues without loading the scripts (the loading is what some tests
  -- are about), with one attempt; returns the id.
  local function enqueue(jtype, payload, ...)
    return (env:ok("enqueue", jtype, payload or "{}", "--max-attempts", "1", ...)
            :gsub("%s+$", ""))
  end

  -- Runs `pawl enqueue ... --scripts DIR` in the background and waits for
  -- it (hang guard: 60 s); returns the finished process.
  local function enqueue_with_scripts(jtype)
    local p = env:spawn("--db", env.db, "enqueue", jtype, "{}", "--scripts",
                        env.scripts)
    if not p:wait(60) then
      p:kill()
      error("pawl enqueue did not end; stderr:\n" .. p:stderr(), 2)
    end
    return p
  end

  describe("recursion through C", function()
    it("fails the job with an error; the host and the worker's state survive", function()
      env:script("gsub", [[
return {
  max_attempts = 1,
  run = function() local function f(s) return (s:gsub(".", f)) end return f("ab") end,
}]])
      -- Each of these catches its error and returns the end of it.
      local CASES = {
        sort = [[local function f() table.sort({ 3, 2, 1 }, function(a, b) f() return a < b end) end f()]],
        tostring = [[local mt = {}
  mt.__tostring = function(x) return string.format("%s", x) end
  return tostring(setmetatable({}, mt))]],
        wrap = [[local function f() coroutine.wrap(f)() end f()]],
        resume = [[local function f()
    local ok, err = coroutine.resume(coroutine.create(f))
    if not ok then error(err, 0) end
  end
  f()]],
        pcall_call = [[return pcall(setmetatable({}, { __call = pcall }))]],
        cjson = [[local t, c = {}, nil c = t
  for _ = 1, 5000 do c[1] = {} c = c[1] end
  -- The encoder names the path of the value (long here): keep the reason.
  local _, e = pcall(pawl.json.encode, t)
  error(tostring(e):match("nested deeper than %d+") or tostring(e), 0)]],
      }
      for name, body in pairs(CASES) do
        env:script(name, ([[
return {
  max_attempts = 1,
  run = function()
    local ok, err = pcall(function()
  %s
    end)
    return { ok = ok, tail = tostring(err):sub(-60) }
  end,
}]]):format(body))
      end
      env:script("after", [[return { run = function() return { fine = true } end }]])
      local gsub = enqueue("gsub")
      local ids = {}
      for name in pairs(CASES) do ids[name] = enqueue(name) end
      local after = enqueue("after")
      -- One worker: every case runs in the same Lua state, "after" last.
      local p = env:run_idle("--workers", "1")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(gsub)
      assert.are.equal("failed", j.state)
      assert.truthy(has(j.last_error, "C stack overflow"), j.last_error)
      local expect = { sort = "stack overflow", tostring = "stack overflow",
                       wrap = "C stack overflow", resume = "C stack overflow",
                       cjson = "nested deeper than 512" }
      for name, id in pairs(ids) do
        j = env:show(id)
        assert.are.equal("succeeded", j.state, name .. ": " .. tostring(j.last_error))
        if name == "pcall_call" then
          assert.is_true(j.result.ok, name)
        else
          assert.is_false(j.result.ok, name)
          assert.truthy(has(j.result.tail, expect[name]), name .. ": " .. j.result.tail)
        end
      end
      assert.are.same({ fine = true }, env:show(after).result)
    end)

    it("in a script's top level makes it broken; pawl run serves the rest", function()
      env:script("ok", [[return { run = function() return "served" end }]])
      env:script("topcrash", [[
local function f(s) return (s:gsub(".", f)) end
f("ab")
return { run = function() end }]])
      -- Functions that need the database are refused at the top level
      -- (the loader's state has no connection: this crashed too).
      env:script("topenqueue", [[
pawl.enqueue("ok")
return { run = function() end }]])
      local id = enqueue("ok")
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      assert.are.equal("served", env:show(id).result)
      local line = log_line(p, "script not loaded", "script=topcrash")
      assert.truthy(line and has(line, "C stack overflow"), p:stderr())
      line = log_line(p, "script not loaded", "script=topenqueue")
      assert.truthy(line and has(line, "pawl.enqueue cannot be used while scripts load"),
                    p:stderr())
    end)

    it("in a script's top level: pawl enqueue --scripts warns and enqueues", function()
      env:script("topcrash", [[
local function f(s) return (s:gsub(".", f)) end
f("ab")
return { run = function() end }]])
      env:script("topenqueue", [[
pawl.enqueue("topenqueue")
return { run = function() end }]])
      for name, why in pairs { topcrash = "C stack overflow",
                               topenqueue = "cannot be used while scripts load" } do
        local p = enqueue_with_scripts(name)
        assert.are.equal(0, p.code, name .. ": " .. p:stderr())
        assert.truthy(has(p:stderr(), "is broken"), p:stderr())
        assert.truthy(has(p:stderr(), why), p:stderr())
        local id = p:stdout():gsub("%s+$", "")
        assert.are.equal("pending", env:show(id).state)
      end
    end)
  end)

  describe("timeouts", function()
    it_interrupts("stop an xpcall handler that loops and the string library", function()
      env:script("handler", [[
return {
  timeout = 2, max_attempts = 1,
  run = function()
    xpcall(function() while true do end end, function() while true do end end)
  end,
}]])
      env:script("backtrack", [[
return {
  timeout = 2, max_attempts = 1,
  run = function()
    return ("a"):rep(40):find(("a?"):rep(40) .. ("a"):rep(40))
  end,
}]])
      -- Every start position scans to the end: quadratic in 16 MB.
      env:script("hugegsub", [[
return {
  timeout = 2, max_attempts = 1,
  run = function()
    return (("x"):rep(2^24):gsub("(x-)y", "%1"))
  end,
}]])
      env:script("quick", [[return { run = function() return "quick" end }]])
      local runaway = { enqueue("handler"), enqueue("backtrack"), enqueue("hugegsub") }
      local quick = enqueue("quick")
      local p = env:run_idle("--workers", "4")
      assert.are.equal(0, p.code, p:stderr())
      for _, id in ipairs(runaway) do
        local j = env:show(id)
        assert.are.equal("failed", j.state, j.type)
        assert.are.equal(1, j.attempt)
        assert.truthy(has(j.last_error, "job timed out after 2 s"), j.last_error)
      end
      assert.are.equal("quick", env:show(quick).result)
    end)

    it_interrupts("count the attempt of a job past its deadline when the host stops", function()
      -- The job blocks in a C call (opening a FIFO) past its deadline: the
      -- watchdog's interrupt can only land once it is back in Lua, and the
      -- test lets it back only after the host's stop has interrupted it too.
      local fifo = env:path("fifo")
      assert(H.sh("mkfifo " .. H.quote(fifo)))
      env:script("blocked", [[
return {
  timeout = 1,
  run = function(job)
    local f = io.open(job.payload.fifo, "r")
    if f then f:close() end
    return "unblocked"
  end,
}]])
      local id = enqueue("blocked", H.json { fifo = fifo })
      local p = env:start("--workers", "1", "--unsafe-lua", "--poll", "0.05",
                          "--grace", "0.1")
      env:wait_state(id, "running")
      -- Its deadline is a second after it started: past, 1.5 s later.
      H.sleep(1.5)
      p:signal("TERM")
      env:wait_until("the stop's interrupt", function()
        return p:count("interrupting the jobs still running") > 0
      end, 20)
      local fd = ffi.C.pawl_runaway_open(fifo, O_WRONLY + O_NONBLOCK, 0)
      assert.is_true(fd >= 0, "the job is not waiting on the FIFO any more")
      ffi.C.pawl_runaway_close(fd)
      assert.are.equal(0, p:wait(20), p:stderr())
      local j = env:show(id)
      -- A timeout: the attempt counts (before, it was handed back unused,
      -- and took a worker again on every restart).
      assert.are.equal("failed", j.state)
      assert.are.equal(1, j.attempt)
      assert.are.same({ "failed" }, { j.attempts[1].outcome })
      assert.truthy(has(j.last_error, "job timed out after 1 s"), j.last_error)
    end)

    it_interrupts("of hooks are their script's", function()
      env:script("hooked", [[
return {
  timeout = 1,
  run = function() return "done" end,
  on_success = function() while true do end end,
}]])
      local id = enqueue("hooked")
      local p = env:run_idle("--workers", "1")
      assert.are.equal(0, p.code, p:stderr())
      assert.are.equal("succeeded", env:show(id).state)
      local line = log_line(p, "hook failed", "hook=on_success")
      assert.truthy(line and has(line, "hook timed out after 1 s"), p:stderr())
    end)
  end)

  describe("a script whose top level never returns", function()
    local LOOP = [[
local f = io.open(%q, "w") f:close()
while true do end
return { run = function() return "loaded after all" end }]]

    it_interrupts("is reported broken at start-up; the rest serve", function()
      env:script("ok", [[return { run = function() return "served" end }]])
      env:script("loop", LOOP:format(env:path("loop-marker")))
      local id = enqueue("ok")
      local p = env:run_idle("--load-timeout", "1", "--unsafe-lua")
      assert.are.equal(0, p.code, p:stderr())
      assert.are.equal("served", env:show(id).result)
      local line = log_line(p, "script not loaded", "script=loop")
      assert.truthy(line and has(line, "script loop: loading took longer than 1 s"),
                    p:stderr())
      -- Reported by the loader alone: the workers never ran it.
      assert.are.equal(1, p:count("script not loaded"))
    end)

    it_interrupts("does not keep pawl run from stopping at start-up", function()
      local marker = env:path("loop-marker")
      env:script("loop", LOOP:format(marker))
      local p = env:start("--load-timeout", "600", "--unsafe-lua")
      env:wait_until("the script's top level", function() return H.exists(marker) end, 20)
      p:signal("TERM")
      assert.are.equal(0, p:wait(20), p:stderr())
      assert.truthy(has(p:stderr(), "host stopped"), p:stderr())
    end)

    it_interrupts("dropped in while the host runs: other jobs keep running, the previous version serves", function()
      env:script("A", [[return { run = function() return "v1" end }]])
      env:script("B", [[return { run = function() return "b" end }]])
      local p = env:start("--load-timeout", "2", "--unsafe-lua", "--poll", "0.05",
                          "--workers", "2")
      local a1 = enqueue("A")
      assert.are.equal("v1", env:wait_state(a1, "succeeded", 20).result)
      local marker = env:path("loop-marker")
      env:script("A", LOOP:format(marker))
      env:wait_until("the new A's top level", function() return H.exists(marker) end, 20)
      -- The loader is stuck in it; jobs are still claimed and run.
      local b = enqueue("B")
      assert.are.equal("b", env:wait_state(b, "succeeded", 20).result)
      local a2 = enqueue("A")
      assert.are.equal("v1", env:wait_state(a2, "succeeded", 20).result)
      env:wait_until("the report", function()
        return log_line(p, "script A: loading took longer than 2 s")
      end, 30)
      local a3 = enqueue("A")
      assert.are.equal("v1", env:wait_state(a3, "succeeded", 20).result)
      p:signal("TERM")
      assert.are.equal(0, p:wait(20), p:stderr())
    end)

    it_interrupts("is reported by pawl enqueue --scripts, which enqueues anyway", function()
      env:script("loop", [[
while true do end
return { run = function() end }]])
      local p = enqueue_with_scripts("loop")
      assert.are.equal(0, p.code, p:stderr())
      assert.truthy(has(p:stderr(), "script loop: loading took longer than 10 s"),
                    p:stderr())
      local id = p:stdout():gsub("%s+$", "")
      assert.are.equal("pending", env:show(id).state)
    end)
  end)

  describe("pawl.lock", function()
    local TAKER = [[
return {
  queue = "other",
  run = function(job)
    return { got = pawl.lock(job.payload.name, 10, function() return true end) }
  end,
}]]

    it_interrupts("is released when the job times out", function()
      env:script("holder", [[
return {
  timeout = 1, max_attempts = 1,
  run = function()
    pawl.lock("L", 600, function() while true do end end)
  end,
}]])
      env:script("taker", TAKER)
      local holder = enqueue("holder")
      local p = env:run_idle("--workers", "1", "--queues", "default")
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show(holder)
      assert.are.equal("failed", j.state)
      assert.truthy(has(j.last_error, "job timed out after 1 s"), j.last_error)
      -- Another job can take the lock at once (not after its 600 s TTL).
      local taker = enqueue("taker", H.json { name = "L" }, "--queue", "other")
      p = env:run_idle("--workers", "1", "--queues", "other")
      assert.are.equal(0, p.code, p:stderr())
      assert.are.same({ got = true }, env:show(taker).result)
    end)

    it_interrupts("is released when the host stops the job", function()
      env:script("holder", [[
return {
  run = function(job, ctx)
    pawl.lock("L2", 600, function()
      ctx:log("info", "holding the lock")
      while true do end
    end)
  end,
}]])
      env:script("taker", TAKER)
      local holder = enqueue("holder")
      local p = env:start("--workers", "1", "--queues", "default", "--grace", "0.1",
                          "--poll", "0.05")
      env:wait_until("the lock", function() return p:count("holding the lock") > 0 end, 20)
      p:signal("TERM")
      assert.are.equal(0, p:wait(20), p:stderr())
      local j = env:show(holder)
      assert.are.equal("pending", j.state) -- handed back
      local taker = enqueue("taker", H.json { name = "L2" }, "--queue", "other")
      p = env:run_idle("--workers", "1", "--queues", "other")
      assert.are.equal(0, p.code, p:stderr())
      assert.are.same({ got = true }, env:show(taker).result)
    end)
  end)
end)
