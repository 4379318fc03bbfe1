-- Cost of the checks pawl's LuaJIT patches add (cmake/luajit-limits.patch,
-- cmake/luajit-interrupts.patch), on the code paths they sit on:
--   match     pattern matching that backtracks (a hook poll every 1024
--             steps of the matcher)
--   gmatch    many short matches over a long string
--   gsub_fn   string.gsub calling a Lua function per match (a C stack
--             check on each lua_call)
--   sort      table.sort in the default order (a hook-mask read per
--             comparison) and with a comparator (a C stack check per call)
--   resume    coroutine.resume/yield ping-pong (the resume depth counter
--             and C stack check)
--   pcall     pcall of a small function (the Lua stack check for the frame)
-- Run it with pawl's build and with a build without these two patches:
--   luajit limits_cost.lua [WORKLOAD]
-- (one workload, or all). No hook is armed: this is what every job pays.
local only = arg[1]

local function match(n)
  local s, p = ("a"):rep(18), ("a?"):rep(18) .. ("a"):rep(18)
  local c = 0
  for _ = 1, n do c = c + (s:find(p) or 0) end
  return c
end

local function gmatch(n)
  local parts = {}
  for i = 1, n do parts[i] = ("k%d=v%d"):format(i, i * 7) end
  local s = table.concat(parts, "&")
  local c = 0
  for _ = 1, 5 do
    for k, v in s:gmatch("(%w+)=(%w+)") do c = c + #k + #v end
  end
  return c
end

local function gsub_fn(n)
  local s = ("abcdefgh"):rep(n / 8)
  local c = 0
  for _ = 1, 5 do
    local r = s:gsub(".", function(ch) c = c + 1 return ch end)
    c = c + #r
  end
  return c
end

local function sort(n)
  local t, u = {}, {}
  local x = 1
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648
    t[i], u[i] = x, x
  end
  table.sort(t)
  table.sort(u, function(a, b) return a > b end)
  return t[1] + u[1]
end

local function resume(n)
  local co = coroutine.wrap(function()
    local i = 0
    while true do i = i + coroutine.yield(i) end
  end)
  co(0)
  local c = 0
  for i = 1, n do c = co(i) end
  return c
end

local function pcall_(n)
  local f = function(a) return a + 1 end
  local c = 0
  for i = 1, n do local _, v = pcall(f, i) c = c + v end
  return c
end

local function time(name, f, n)
  if only and only ~= name then return end
  local t0 = os.clock()
  f(n)
  io.write(("%-8s %7.3f s\n"):format(name, os.clock() - t0))
end

time("match", match, 40)
time("gmatch", gmatch, 2e5)
time("gsub_fn", gsub_fn, 4e6)
time("sort", sort, 1e6)
time("resume", resume, 1e7)
time("pcall", pcall_, 3e8)
