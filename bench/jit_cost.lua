-- Cost of the ways a job's timeout can be enforced, on CPU-heavy job code.
-- Run with: luajit jit_cost.lua [off|hook]
--   (no argument)  the JIT on: the route pawl takes (its LuaJIT is built
--                  with LUAJIT_ENABLE_CHECKHOOK; run this with that build
--                  and with Debian's luajit to see what the flag costs)
--   off            the JIT off, as job code would run if timeouts relied
--                  on the interpreter's hooks alone
--   hook           the JIT off plus a count hook every 1000 instructions
--                  checking a deadline (what a worker would arm itself)
local mode = arg[1]
if mode == "off" or mode == "hook" then jit.off() end
if mode == "hook" then
  local deadline = os.clock() + 1e9
  debug.sethook(function() if os.clock() > deadline then error("timeout") end end, "", 1000)
end

local function numeric(n)
  local s = 0
  for i = 1, n do s = s + (i * i) % 7 end
  return s
end

local function tables(n)
  local t = {}
  for i = 1, n do t[i] = { id = i, name = "job" .. (i % 100) } end
  local c = 0
  for _, v in ipairs(t) do if v.id % 3 == 0 then c = c + #v.name end end
  return c
end

local function strings(n)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = ("%d:%s"):format(i, ("x"):rep(i % 16)) end
  local s = table.concat(parts, ",")
  local count = 0
  for _ in s:gmatch("%d+:x+") do count = count + 1 end
  return count
end

local function time(name, f, n)
  local t0 = os.clock()
  f(n)
  io.write(("%-8s %7.3f s\n"):format(name, os.clock() - t0))
end

io.write("mode: ", mode or "jit", "\n")
time("numeric", numeric, 2e8)
time("tables", tables, 3e6)
time("strings", strings, 1e6)
