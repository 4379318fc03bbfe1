-- What the sandbox costs: the default sanitizer on typical text,
-- the Lua side of one no-op job, and reading globals through a script's
-- locked environment. Run from the repository root with pawl's LuaJIT:
--
--   build-release/luajit/src/luajit bench/sandbox_cost.lua [LUA_DIR]
--
-- LUA_DIR (default lua) holds pawl/worker.lua, pawl/retry.lua and
-- pawl/sanitize.lua: point it at an older checkout's lua/ to compare. The
-- worker module runs against a stub of the host's C functions.
local dir = arg[1] or "lua"
package.path = dir .. "/?.lua;" .. package.path
package.preload["pawl.host"] = function()
  return setmetatable({}, { __index = function() return function() return 12345 end end })
end

-- Best of 5 rounds of at least 0.3 s CPU each, in ns per call.
local function measure(fn)
  local best = math.huge
  for _ = 1, 5 do
    local n, t0 = 0, os.clock()
    repeat
      for _ = 1, 100 do fn() end
      n = n + 100
    until os.clock() - t0 > 0.3
    best = math.min(best, (os.clock() - t0) / n * 1e9)
  end
  return best
end

-- ---- the default sanitizer ----------------------------------------------

local S = require "pawl.sanitize"
local texts = {}
texts[1] = { "log line", "sending welcome mail to ada@example.com (attempt 2 of 5)" }
texts[2] = { "secrets", "login failed: password=hunter2 at postgres://u:p@h/db "
             .. "with Authorization: Bearer abcdefghijkl" }
texts[3] = { "error", [[/srv/scripts/send_mail.lua:42: smtp server said 451 temporary failure
stack traceback:
	[C]: in function 'error'
	/srv/scripts/send_mail.lua:42: in function 'deliver'
	/srv/scripts/send_mail.lua:88: in function </srv/scripts/send_mail.lua:80>
	[C]: in function 'pcall'
	[string "pawl.worker"]:512: in function <[string "pawl.worker"]:505>]] }
local parts = {}
for i = 1, 40 do parts[#parts + 1] = ('"field_%d":"value number %d, ok",'):format(i, i) end
texts[4] = { "JSON", "{" .. table.concat(parts)
             .. '"url":"postgres://app:s3cr3t@db/jobs","token":"abc"}' }
for _, t in ipairs(texts) do
  local name, s = t[1], t[2]
  print(("sanitize %-9s %5d bytes: %8.2f us"):format(name, #s,
        measure(function() S.default(s) end) / 1000))
end

-- ---- one no-op job, as host/worker.c drives it ----------------------------

local W = require "pawl.worker"
local tmp = os.tmpname()
local f = assert(io.open(tmp, "w"))
f:write("return { run = function() end }\n")
f:close()
W.load({ noop = tmp }, {})
os.remove(tmp)
local seq = 0
print(("one no-op job (prepare, run):       %8.0f ns"):format(measure(function()
  seq = seq + 1
  local job = { id = "x", type = "noop", queue = "default", attempt = 1,
                max_attempts = 25, priority = 0, timeout_s = 0, created_at = 1,
                run_at = 1, tags = {} }
  SINK = job -- as in the host, where C builds the job table: it escapes
  local run, ctx = W.prepare(job, seq)
  run(job, ctx)
end)))

-- ---- globals through a locked environment --------------------------------

local src = [[
return function(job)
  local t = {}
  for k, v in pairs(job) do t[#t + 1] = tostring(k) .. tostring(v) end
  return string.format("%d %s", #t, type(t)), math.floor(1.5)
end]]
local function make(env)
  local fn = loadstring(src)
  setfenv(fn, env)
  return fn()
end
local g = { pairs = pairs, tostring = tostring, string = string, type = type, math = math }
local plain = make(g)
local locked = make(setmetatable({}, { __index = g, __newindex = error,
                                       __metatable = false }))
local job = { id = "x", type = "t", attempt = 1 }
for _, on in ipairs { false, true } do
  if on then jit.on() else jit.off() end
  print(("6 global reads, JIT %-3s: plain %6.0f ns, locked %6.0f ns"):format(
    on and "on" or "off", measure(function() plain(job) end),
    measure(function() locked(job) end)))
end
