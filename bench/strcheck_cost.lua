-- Cost of the interrupt checks cmake/luajit-interrupts.patch puts in
-- string.find (plain), string.rep, table.concat and the lexer, on the
-- paths they sit on, with no hook armed (what every job pays):
--   find_short  s:find(p, 1, true) of 8 bytes in 1 KB, in a compiled loop
--               (the trace's call gains the state and a flag, and a guard)
--   find_long   a 64-byte needle that almost matches at every position of
--               64 KB (the search counts what it compares)
--   rep_small   ("ab"):rep(40 to 59) in a compiled loop (a guard on the
--               result)
--   rep_big     ("x"):rep(2^20) and ("xy"):rep(2^19) (a check per MB)
--   concat      table.concat of 20 short strings, compiled, and of 2^16
--               elements (a work counter per element)
--   load        load() of 1 MB of source (a check point every 64 KB)
-- Run it with pawl's build and with a build without the change:
--   luajit strcheck_cost.lua [WORKLOAD [SCALE]]
-- (one workload, or "all" or none; SCALE divides the iterations, for
-- callgrind).
local only, scale = arg[1], tonumber(arg[2]) or 1
if only == "all" then only = nil end

local function find_short(n)
  local s = ("abcdefgh"):rep(128) .. "needle!!"
  local c = 0
  for i = 1, n do c = c + s:find("needle!!", i % 64 + 1, true) end
  return c
end

local function find_long(n)
  local s = ("a"):rep(2^16)
  local p = ("a"):rep(63) .. "b"
  local c = 0
  for i = 1, n do c = c + (s:find(p, i % 64 + 1, true) or 1) end
  return c
end

local function rep_small(n)
  local c = 0
  for i = 1, n do c = c + #("ab"):rep(40 + i % 20) end
  return c
end

local function rep_big(n)
  local c = 0
  for i = 1, n do c = c + #("x"):rep(2^20 + i % 3) + #("xy"):rep(2^19 + i % 3) end
  return c
end

local function concat(n)
  local t = {}
  for i = 1, 20 do t[i] = "item" .. i end
  local big = {}
  for i = 1, 2^16 do big[i] = i % 7 == 0 and i or "abcdef" end
  local c = 0
  for _ = 1, n do c = c + #table.concat(t, ",") end
  for _ = 1, n / 1000 do c = c + #table.concat(big, ",") end
  return c
end

local function load_(n)
  local parts = {}
  for i = 1, 2^14 do parts[i] = ("t[%d] = %d + y * 3 -- comment\n"):format(i % 100, i) end
  local src = "local y, t = 1, {}\n" .. table.concat(parts)
  assert(#src > 2^19)
  local c = 0
  for _ = 1, n do c = c + (assert(load(src)) and 1 or 0) end
  return c
end

local WORK = {
  { "find_short", find_short, 2e7 }, { "find_long", find_long, 2000 },
  { "rep_small", rep_small, 2e6 }, { "rep_big", rep_big, 500 },
  { "concat", concat, 5e5 }, { "load", load_, 20 },
}

for _, w in ipairs(WORK) do
  if not only or only == w[1] then
    local t0 = os.clock()
    local r = w[2](math.max(1, math.floor(w[3] / scale)))
    io.write(("%-10s %.3f s  (%d)\n"):format(w[1], os.clock() - t0, r))
  end
end
