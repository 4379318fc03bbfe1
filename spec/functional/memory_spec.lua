-- memory_spec.lua: the heap ceiling of job code. Each job's Lua state may
-- grow by its ceiling (the script's `memory`, _defaults.lua's, else
-- `pawl run --job-memory`) above its resting size; past it the job fails
-- with "memory limit: ...", the other jobs run on (on the same worker and
-- on the others), and the worker serves the next job. After a job that
-- made much garbage the host gives the memory back. Written as an
-- attacker would: every way job code can make a big value, in run, in
-- hooks, policies, sanitizers, predicates and a script's top level. No
-- test measures time; RSS bounds are generous.
local H = require "host_helper"

local function has(s, text) return s:find(text, 1, true) ~= nil end

-- Under AddressSanitizer and ThreadSanitizer, malloc is the sanitizer's
-- allocator, which keeps freed memory (quarantine, shadow) and gives none
-- back: the RSS test cannot work there. The plain build runs it.
local sanitizer = os.getenv("PAWL_ASAN") == "1" and "AddressSanitizer"
  or os.getenv("PAWL_TSAN") == "1" and "ThreadSanitizer"
local it_rss = sanitizer and function(name)
  pending(name .. " (" .. sanitizer .. "'s allocator gives no memory back)")
end or it

-- The stderr line of process `p` that contains all of `texts`, or nil.
local function log_line(p, ...)
  local texts = { ... }
  for line in p:stderr():gmatch("[^\n]+") do
    local all = true
    for _, t in ipairs(texts) do all = all and has(line, t) end
    if all then return line end
  end
end

-- VmRSS or VmHWM of process `pid`, in KiB.
local function status_kib(pid, field)
  local f = assert(io.open("/proc/" .. pid .. "/status"))
  local s = f:read("*a")
  f:close()
  return tonumber(s:match(field .. ":%s*(%d+) kB"))
end

-- Ways job code makes a value bigger than 64 MiB, each a run body.
local HOGS = {
  -- A table that grows for ever (the loop is compiled by the JIT).
  grow = [[local t, i = {}, 0
    while true do i = i + 1; t[i] = { i, tostring(i) } end]],
  -- One huge string, made in C.
  -- (100 MiB: a string may hold 128 MB at most, a limit of its own.)
  rep = [[return #(("x"):rep(100 * 2^20))]],
  -- Doubling concatenation.
  concat = [[local s = "x"
    while true do s = s .. s end]],
  -- table.concat of many references to one string.
  tconcat = [[local s, t = ("y"):rep(2^20), {}
    for i = 1, 200 do t[i] = s end
    return #table.concat(t)]],
  -- gsub expanding every byte, in C.
  gsub = [[return #((("x"):rep(2^23)):gsub(".", "yyyyyyyyyy"))]],
  -- A chain of closures, each holding the previous one.
  closures = [[local f = function() return 0 end
    while true do local g = f; f = function() return g() + 1 end end]],
  -- JSON of a table whose text is far bigger than the table.
  json = [[local s, t = ("z"):rep(2^20), {}
    for i = 1, 100 do t[i] = s end -- 100 MB of text: under the 128 MB cap
    return #pawl.json.encode(t)]],
  -- Inside a coroutine.
  coroutine = [[local co = coroutine.wrap(function()
      local t = {}
      while true do t[#t + 1] = ("c"):rep(1000) .. #t end
    end)
    co()]],
  -- Catches the memory error and goes on allocating, then returns as if
  -- nothing happened: passing the ceiling fails the job all the same.
  pcall_keep = [[local kept = {}
    for _ = 1, 50 do
      pcall(function()
        while true do kept[#kept + 1] = ("k"):rep(4096) .. #kept end
      end)
    end
    return "survived"]],
  -- Compiled loops of every kind of allocation, each caught and started
  -- again (a memory error raised from a trace crashed LuaJIT before
  -- cmake/luajit-oom.patch).
  jit_shapes = [[local shapes = {
      function(k) local t = {} for i = 1, 1e9 do t[i] = { i, k } end end,
      function(k) local t = {} for i = 1, 1e9 do t[#t+1] = "s" .. i .. k end end,
      function(k) local t = {} for i = 1, 1e9 do t["k" .. i] = i end end,
      function(k) local s = "" for i = 1, 1e9 do s = s .. "ab" .. i end end,
      function(k) local t = {} for i = 1, 1e9 do t[i] = function() return i + k end end end,
      function(k) local t = {} for i = 1, 1e9 do t[i] = coroutine.create(function() end) end end,
      function(k) local t = {} for i = 1, 1e9 do t[i] = string.format("%d:%s", i, k) end end,
      function(k) local t = {} for i = 1, 1e9 do t[i] = setmetatable({}, { __index = t }) end end,
    }
    for round = 1, 2 do
      for _, f in ipairs(shapes) do pcall(f, round) end
    end
    return "caught them all"]],
  -- An error object that is itself huge.
  errobj = [[error(("e"):rep(2^27))]],
  -- string.format building a huge string.
  format = [[local s = ("f"):rep(2^22)
    return #string.format(("%s"):rep(40), s, s, s, s, s, s, s, s, s, s,
      s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s,
      s, s, s, s, s, s, s, s, s, s)]],
}

describe("the job heap ceiling", function()
  local env

  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  local function enqueue(jtype, payload) return env:enqueue(jtype, payload) end

  local function hog_scripts()
    for name, body in pairs(HOGS) do
      env:script("hog_" .. name, ([[
return {
  memory = "64M", max_attempts = 1,
  run = function(job, ctx)
    %s
  end,
}]]):format(body))
    end
    env:script("ok", [[
return {
  run = function(job)
    local t = {}
    for i = 1, 1000 do t[i] = ("o"):rep(100) .. i end
    return { n = #t, i = job.payload.i }
  end,
}]])
  end

  local function check_hogs(ids)
    for name, id in pairs(ids) do
      local j = env:show(id)
      assert.are.equal("failed", j.state, name .. ": " .. tostring(j.last_error))
      assert.are.equal(1, j.attempt, name)
      assert.truthy(has(j.last_error, "memory limit: the job used more than 64 MiB"),
                    name .. ": " .. tostring(j.last_error))
    end
  end

  it("fails each job past it; one worker serves every job after", function()
    hog_scripts()
    -- One worker: every hog runs in the same Lua state, each followed by
    -- an innocent job that must succeed there.
    local hogs, oks = {}, {}
    local i = 0
    for name in pairs(HOGS) do
      hogs[name] = enqueue("hog_" .. name)
      i = i + 1
      oks[i] = enqueue("ok", H.json { i = i })
    end
    local p = env:run_idle("--workers", "1")
    assert.are.equal(0, p.code, p:stderr())
    check_hogs(hogs)
    for k, id in ipairs(oks) do
      local j = env:show(id)
      assert.are.equal("succeeded", j.state, tostring(j.last_error))
      assert.are.same({ n = 1000, i = k }, j.result)
    end
  end)

  it("leaves the jobs of the other workers untouched", function()
    hog_scripts()
    local hogs, oks = {}, {}
    for name in pairs(HOGS) do hogs[name] = enqueue("hog_" .. name) end
    for k = 1, 40 do oks[k] = enqueue("ok", H.json { i = k }) end
    local p = env:run_idle("--workers", "3")
    assert.are.equal(0, p.code, p:stderr())
    check_hogs(hogs)
    for k, id in ipairs(oks) do
      local j = env:show(id)
      assert.are.equal("succeeded", j.state, tostring(j.last_error))
      assert.are.same({ n = 1000, i = k }, j.result)
    end
  end)

  it("counts what earlier jobs left reachable, and the job's payload", function()
    -- Each job keeps 40 MiB in an upvalue of the script: the first fits
    -- under 64 MiB, the second would take the state to 80 MiB.
    env:script("keeper", [[
local kept = {}
return {
  memory = "64M", max_attempts = 1,
  run = function(job)
    -- About 40 MiB of strings of this job's own (strings are interned:
    -- the same text made by another job would take no more memory).
    local mine = {}
    for i = 1, 10000 do mine[i] = ("k"):rep(4096) .. job.id .. i end
    kept[#kept + 1] = mine
    return #kept
  end,
}]])
    env:script("small", [[
return { memory = "1M", max_attempts = 1,
         run = function(job) return #job.payload.s end }]])
    local first, second = enqueue("keeper"), enqueue("keeper")
    -- 40,000 empty objects: 120 KB of JSON, about 2 MB of tables.
    local big = enqueue("small", '{"s":[' .. ("{},"):rep(40000) .. '{}]}')
    local p = env:run_idle("--workers", "1")
    assert.are.equal(0, p.code, p:stderr())
    assert.are.equal(1, env:show(first).result)
    local j = env:show(second)
    assert.are.equal("failed", j.state)
    assert.truthy(has(j.last_error, "memory limit: the job used more than 64 MiB"),
                  j.last_error)
    j = env:show(big)
    assert.are.equal("failed", j.state)
    assert.truthy(has(j.last_error, "memory limit: the job used more than 1 MiB"),
                  j.last_error)
  end)

  it("collects before it gives up: most of the ceiling can be kept live", function()
    -- 40 MiB kept under a 64 MiB ceiling while 200 MiB of garbage is made:
    -- LuaJIT alone would start a collection only at twice the live size.
    env:script("live", [[
return { memory = "64M", max_attempts = 1,
  run = function(job)
    local keep = {}
    for i = 1, 10000 do keep[i] = ("L"):rep(4000) .. job.id .. i end
    local n = 0
    for i = 1, 50000 do local g = ("g"):rep(4000) .. i; n = n + #g end
    return #keep + n
  end }]])
    local id = enqueue("live")
    local p = env:run_idle("--workers", "1")
    assert.are.equal(0, p.code, p:stderr())
    local j = env:show(id)
    assert.are.equal("succeeded", j.state, tostring(j.last_error))
    assert.are.equal(10000 + 50000 * 4000 + 238894, j.result)
  end)

  it("bounds hooks, retry policies, sanitizers, branch predicates and top levels", function()
    local grow = [[local t = {} while true do t[#t + 1] = ("g"):rep(512) .. #t end]]
    env:script("_defaults", [[return { memory = "32M" }]])
    env:script("policy", ([[
return { max_attempts = 3,
  retry = function() %s end,
  run = function() error("first failure") end }]]):format(grow))
    env:script("sanitizer", ([[
return { max_attempts = 1,
  sanitize = function(msg) %s end,
  run = function() error("secret=hunter2 failed") end }]]):format(grow))
    env:script("hook", ([[
return { on_success = function() %s end,
  run = function() return "done" end }]]):format(grow))
    env:script("branch", ([[
return { branches = { big = function() %s end, small = function() return true end },
  run = function() return "branched" end }]]):format(grow))
    env:script("toplevel", ([[
%s
return { run = function() end }]]):format(grow))
    env:script("after", [[return { run = function() return "after" end }]])
    local policy, sanitizer = enqueue("policy"), enqueue("sanitizer")
    local hook, branch = enqueue("hook"), enqueue("branch")
    local after = enqueue("after")
    local p = env:run_idle("--workers", "1", "--job-memory", "48M")
    assert.are.equal(0, p.code, p:stderr())
    local j = env:show(policy)
    assert.are.equal("failed", j.state)
    assert.are.equal(1, j.attempt)
    assert.truthy(has(j.last_error, "first failure"), j.last_error)
    assert.truthy(has(j.last_error, "retry policy failed"), j.last_error)
    j = env:show(sanitizer)
    assert.are.equal("failed", j.state)
    -- The built-in sanitizer took over: the secret is not stored.
    assert.is_falsy(has(j.last_error, "hunter2"), j.last_error)
    assert.are.equal("done", env:show(hook).result)
    assert.truthy(log_line(p, "hook failed", "type=hook",
                           "memory limit: the hook used more than 32 MiB"), p:stderr())
    j = env:show(branch)
    assert.are.equal("branched", j.result)
    assert.truthy(has(env:show_text(branch), "branch big raised"), env:show_text(branch))
    -- _defaults.lua's 32M is the jobs' ceiling; a top level loads under
    -- the host's (--job-memory).
    assert.truthy(log_line(p, "script not loaded", "script=toplevel",
                           "memory limit: its top level used more than 48 MiB"),
                  p:stderr())
    assert.are.equal("after", env:show(after).result)
  end)

  it("refuses a memory setting out of range, naming the value and the range", function()
    local bad = {
      words = [["lots"]], zero = [["0"]], tiny = [["1K"]], huge = [["100T"]],
      negative = "-5", fraction = "1.5", boolean = "true", overflow = [["99999999999999999999G"]],
      nul = [["64M\0junk"]],
    }
    for name, v in pairs(bad) do
      env:script("bad_" .. name, ([[return { memory = %s, run = function() end }]]):format(v))
    end
    env:script("good", [[return { memory = 8388608, run = function() return "good" end }]])
    env:script("good2", [[return { memory = "512KiB", run = function() end }]])
    local id = enqueue("good")
    local p = env:run_idle("--workers", "1")
    assert.are.equal(0, p.code, p:stderr())
    assert.are.equal("good", env:show(id).result)
    for name in pairs(bad) do
      local line = log_line(p, "script not loaded", "script=bad_" .. name)
      assert.truthy(line, name .. ": " .. p:stderr())
      assert.truthy(has(line, "memory must be a size between 1 MiB and 64 GiB")
                    or has(line, "field memory must be a size"), line)
    end
    -- 512 KiB is below the minimum.
    assert.truthy(log_line(p, "script=good2", "1 MiB and 64 GiB", "512KiB"), p:stderr())
    for _, v in ipairs { "lots", "0", "1K", "65G", "-1", "1.5G", "" } do
      local r = env:pawl("run", "--scripts", env.scripts, "--job-memory", v)
      assert.are.equal(2, r.code, v)
      assert.truthy(has(r.err, "--job-memory must be a size between 1 MiB and 64 GiB"),
                    v .. ": " .. r.err)
    end
  end)

  it_rss("gives the memory of a big-garbage job back to the system", function()
    -- About 400 MB of small tables, reachable until the job returns.
    env:script("garbage", [[
return { memory = "2G",
  run = function()
    local keep = {}
    for i = 1, 4e6 do keep[i] = { i } end
    return #keep
  end }]])
    local p = env:start("--workers", "2")
    local id = enqueue("garbage")
    env:wait_state(id, "succeeded")
    -- The job did make it big (the bound below is not met by default)...
    assert.is_true(status_kib(p.pid, "VmHWM") > 300 * 1024)
    -- ...and the host is small again once it is done: a generous bound,
    -- far below what the job held.
    env:wait_until("the host's RSS to drop", function()
      return status_kib(p.pid, "VmRSS") < 150 * 1024
    end)
    p:signal("TERM")
    assert.truthy(p:wait(H.HANG_S))
  end)
end)
