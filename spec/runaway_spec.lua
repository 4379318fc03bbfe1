-- runaway_spec.lua: job code that tries to take the host down or to run
-- forever (issue 10): recursion through C, timeouts dodged in an error
-- handler or in the string library.
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
