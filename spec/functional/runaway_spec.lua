-- runaway_spec.lua: job code and scripts that try to take the host down or
-- to run forever: recursion through C,
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
      -- The reported example: string.gsub calling back into Lua.
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

  -- Each of these ran in one C call with no check: a plain find is
  -- O(len(s) * len(p)); rep, concat and the lexer are linear in what they
  -- make or read, which had no bound below 2 GB.
  it("lets an armed count hook stop plain find, rep, concat and the lexer", function()
    local function stopped(count, fn, ...)
      local args = { n = select("#", ...), ... }
      debug.sethook(function() error("stopped by the hook", 0) end, "", count)
      local r = { pcall(fn, unpack(args, 1, args.n)) }
      debug.sethook()
      r[2] = type(r[2]) == "string" and r[2]:sub(1, 40) or type(r[2])
      return { r[1], r[2] }
    end
    local STOPPED = { false, "stopped by the hook" }
    -- 16 MB searched for 4 KB that is never there: 2^36 byte comparisons.
    local hay, needle = ("a"):rep(2^24), ("a"):rep(2^12) .. "b"
    assert.are.same(STOPPED, stopped(1000, string.find, hay, needle, 1, true))
    -- No magic characters: LuaJIT takes the plain path without being asked.
    assert.are.same(STOPPED, stopped(1000, function() return hay:find(needle) end))
    assert.are.same(STOPPED, stopped(1000, function() return hay:find(needle, 2^20) end))
    -- The same search from a compiled loop (the JIT calls the search from
    -- machine code, and the recorder runs it once more).
    assert.are.same(STOPPED, stopped(100000, function()
      local small = ("a"):rep(100)
      for i = 1, 300 do
        local h = i < 200 and small or hay
        assert(h:find(needle, 1, true) == nil)
      end
    end))
    -- Making 128 MB (the most a string holds) in one call.
    assert.are.same(STOPPED, stopped(1000, string.rep, "a", 2^27 - 1))
    assert.are.same(STOPPED, stopped(1000, string.rep, "ab", 2^26))
    assert.are.same(STOPPED, stopped(1000, string.rep, "a", 2^26, "b"))
    local t, n = {}, {}
    for i = 1, 2^20 do t[i] = ("x"):rep(64) n[i] = i end
    assert.are.same(STOPPED, stopped(1000, table.concat, t))
    assert.are.same(STOPPED, stopped(1000, table.concat, n, ","))
    assert.are.same(STOPPED, stopped(100000, function()
      for i = 1, 300 do
        local _ = (i < 200 and "x" or "yz"):rep(i < 200 and 10 or 2^26)
        _ = table.concat(i < 200 and { "a", "b" } or t)
      end
    end))
    -- load() of a huge chunk: the parser's error is load's result.
    local big = ("x=1 "):rep(2^24)
    local ok, f, err = pcall(function()
      debug.sethook(function() error("stopped by the hook", 0) end, "", 1000)
      local f, err = load(big)
      debug.sethook()
      return f, err
    end)
    debug.sethook()
    assert.is_true(ok)
    assert.is_nil(f)
    assert.truthy(has(err, "stopped by the hook"), err)
    -- A hook's error caught by load() (in its reader here) left every hook
    -- off for good: the loop after it was never stopped.
    assert.are.same(STOPPED, stopped(1000, function()
      local f, err = load(function() while true do end end)
      assert(f == nil and err:find("stopped by the hook", 1, true), err)
      while true do end
    end))
    -- Without a hook, all of them work as before.
    assert.are.equal(2^24 - 2^12 + 1, (hay .. "b"):find(needle, 1, true))
    assert.are.equal(3, ("xxab"):find("ab"))
    assert.are.equal(nil, ("abc"):find("abd", 1, true))
    assert.are.equal(1, ("abc"):find("", 1, true))
    assert.are.equal("ab,ab,ab", ("ab"):rep(3, ","))
    assert.are.equal(2^26, #("ab"):rep(2^25))
    assert.are.equal("1,2.5,x", table.concat({ 1, 2.5, "x" }, ","))
    assert.are.equal(64 * 2^20, #table.concat(t))
    local ok2, e2 = pcall(table.concat, { 1, {}, 3 })
    assert.is_false(ok2)
    assert.truthy(has(e2, "invalid value (table) at index 2"), e2)
    assert.are.equal(1, load(big .. "return x")())
  end)

  -- A count hook that returns (a profiler, the console's clock) runs, and
  -- rep and concat still end: they do not start over for ever.
  it("ends rep and concat under a count hook that returns", function()
    local t = {}
    for i = 1, 2^20 do t[i] = ("x"):rep(64) end
    local calls = 0
    debug.sethook(function() calls = calls + 1 end, "", 1000)
    local r = #("ab"):rep(2^25) + #("a"):rep(2^26) + #("a"):rep(2^25, "b")
              + #table.concat(t) + #table.concat(t, ",")
    debug.sethook()
    assert.are.equal(2^26 + 2^26 + 2^26 - 1 + 2^26 + 2^26 + 2^20 - 1, r)
    assert.is_true(calls > 0)
  end)

  it("refuses strings longer than 128 MB, naming the bound", function()
    local WHY = "string length overflow (strings hold at most 128 MB)"
    local s = ("a"):rep(2^26)
    local cases = {
      rep = function() return ("a"):rep(2^27) end,
      rep_sep = function() return ("a"):rep(2^26, "bc") end,
      concat_op = function() return s .. s .. "x" end,
      concat = function() return table.concat({ s, s, "x" }) end,
      gsub = function() return (s:gsub("a", "aa")) end,
      format = function() return ("%s%s%s"):format(s, s, "x") end,
    }
    for name, fn in pairs(cases) do
      local ok, err = pcall(fn)
      assert.is_false(ok, name)
      assert.truthy(has(tostring(err), WHY), name .. ": " .. tostring(err))
    end
    assert.are.equal(2^27 - 1, #(s .. s:sub(2)))
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

    -- Each of these ran in one C call no interrupt could stop: a plain
    -- find for minutes, a 1 GB string.rep or a 600 MB table.concat for
    -- 12-14 s past a 2 s timeout, a load() whose reader took the interrupt
    -- for ever (hooks stayed off). The JIT compiles some of them: a loop
    -- repeats each. Every job ends within its timeout and 3 s.
    local SLOW = {
      -- The report's example, and an innocent s:find(t) (no magic
      -- characters: the plain path).
      find = [[return ("a"):rep(8 * 2^20):find(("a"):rep(4 * 2^20) .. "b", 1, true)]],
      find_method = [[local s, t = ("a"):rep(2^23), ("a"):rep(2^22) .. "b" return s:find(t)]],
      find_loop = [[local s, t = ("a"):rep(2^23), ("a"):rep(2^22) .. "b"
    for i = 1, 1e9 do local h = i < 200 and "aab" or s assert(not h:find(t, 1, true)) end]],
      rep_loop = [[while true do local _ = ("ab"):rep(2^25) end]],
      concat_loop = [[local t = {} for i = 1, 2^18 do t[i] = ("x"):rep(255) end
    while true do local _ = table.concat(t, ",") end]],
      load_loop = [[local src = ("x=1 "):rep(2^23) while true do load(src) end]],
      load_reader = [[load(function() while true do end end) while true do end]],
      load_reader_pcall = [[while true do pcall(load, function() while true do end end) end]],
    }
    -- Past 128 MB a string is refused at once. JSON of a table reached
    -- 2^40 times ran in C for ever; it is stopped like the rest, and a
    -- return value like it under the host's 10 s deadline for storing it
    -- (it is encoded after run returns).
    local BIG = {
      rep_1gb = { [[return #("ab"):rep(2^29)]], "strings hold at most 128 MB", 5000 },
      concat_600mb = { [[local t, s = {}, ("x"):rep(2^20) for i = 1, 600 do t[i] = s end
    return #table.concat(t)]], "strings hold at most 128 MB", 5000 },
      json_big = { [[local s = ("x"):rep(2^26) return #pawl.json.encode({ s, s })]],
                   "pawl.json.encode: the text would be longer than 128 MB", 5000 },
      json_dag = { [[local t = {} for i = 1, 40 do t = { t, t } end return #pawl.json.encode(t)]],
                   "job timed out after 2 s", 5000 },
      -- (Which of the two ends it first depends on the machine's speed.)
      json_result = { [[local t = {} for i = 1, 40 do t = { t, t } end return t]],
                      { "job timed out after 10 s", "the text would be longer than 128 MB" },
                      13000 },
    }

    -- How long the body of the job of type `name` ran, from the host's
    -- log line of its failure (the stored attempt counts from its claim,
    -- and with two workers a job may wait for one).
    local function body_ms(p, name)
      local line = log_line(p, "job failed", "type=" .. name .. " ")
      return line and tonumber(line:match("duration_ms=([%d.]+)"))
    end

    it_interrupts("stop plain find, rep, concat and load in time; refuse strings past 128 MB", function()
      local ids = {}
      for name, body in pairs(SLOW) do
        env:script(name, ("return { timeout = 2, max_attempts = 1, run = function()\n    %s\n  end }")
                         :format(body))
        ids[name] = enqueue(name)
      end
      for name, b in pairs(BIG) do
        env:script(name, ("return { timeout = 2, max_attempts = 1, run = function()\n    %s\n  end }")
                         :format(b[1]))
        ids[name] = enqueue(name)
      end
      env:script("quick", [[return { run = function() return "quick" end }]])
      local quick = enqueue("quick")
      local p = env:run_idle("--workers", "2")
      assert.are.equal(0, p.code, p:stderr())
      for name in pairs(SLOW) do
        local j = env:show(ids[name])
        assert.are.equal("failed", j.state, name)
        assert.truthy(has(j.last_error, "job timed out after 2 s"), name .. ": " .. j.last_error)
        local d = body_ms(p, name)
        assert.is_true(d and d >= 1950 and d <= 5000,
                       ("%s took %s ms:\n%s"):format(name, tostring(d), p:stderr()))
      end
      for name, b in pairs(BIG) do
        local j = env:show(ids[name])
        assert.are.equal("failed", j.state, name)
        local whys = type(b[2]) == "table" and b[2] or { b[2] }
        assert.truthy(has(j.last_error, whys[1]) or (whys[2] and has(j.last_error, whys[2])),
                      name .. ": " .. j.last_error)
        local d = body_ms(p, name)
        assert.is_true(d and d <= b[3], ("%s took %s ms:\n%s"):format(name, tostring(d), p:stderr()))
      end
      assert.are.equal("quick", env:show(quick).result)
    end)

    it_interrupts("stop a slow C path in a script's top level: pawl run serves the rest", function()
      env:script("ok", [[return { run = function() return "served" end }]])
      env:script("topfind", [[
local _ = ("a"):rep(8 * 2^20):find(("a"):rep(4 * 2^20) .. "b", 1, true)
return { run = function() end }]])
      env:script("topload", [[
load(function() while true do end end)
while true do end
return { run = function() end }]])
      local id = enqueue("ok")
      local p = env:run_idle("--load-timeout", "2")
      assert.are.equal(0, p.code, p:stderr())
      assert.are.equal("served", env:show(id).result)
      for _, name in ipairs { "topfind", "topload" } do
        local line = log_line(p, "script not loaded", "script=" .. name)
        assert.truthy(line and has(line, "loading took longer than 2 s"), p:stderr())
      end
    end)

    it_interrupts("stop a slow C path in a script's top level: pawl enqueue --scripts ends", function()
      env:script("topfind", [[
local _ = ("a"):rep(8 * 2^20):find(("a"):rep(4 * 2^20) .. "b", 1, true)
return { run = function() end }]])
      local t0 = H.mono()
      local p = enqueue_with_scripts("topfind")
      assert.are.equal(0, p.code, p:stderr())
      assert.truthy(has(p:stderr(), "script topfind: loading took longer than 10 s"), p:stderr())
      -- Its deadline is 10 s: it ended on it, not when the search did.
      assert.is_true(H.mono() - t0 < 10 + 20, "pawl enqueue took " .. (H.mono() - t0) .. " s")
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
