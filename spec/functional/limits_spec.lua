-- limits_spec.lua: resource and rate limits with real `pawl run`
-- nodes: a resource's limit on one SQLite node with many workers and on
-- three nodes sharing one PostgreSQL database, the permit of a dead node's
-- job freed by lease recovery, a rate limit over real windows, and the
-- CLI, Lua and script surfaces with their bad input.
--
-- Limited jobs write a witness line when their body starts and one when it
-- ends (S/E, times from pawl.time(), one append each), and wait at a gate
-- in between: the spec holds them until as many as the limit allow are
-- running at once (so "the limit is reached" is seen, not hoped for), then
-- opens the gate and checks from the witness that no moment ever had more
-- running than the limit. A witnessed run lies inside the job's claim (it
-- starts after the claim and ends before the finish is written), so the
-- overlap of the witnessed runs is never more than the overlap of the
-- permits. No sleeps and no wall-clock bounds: waits are for
-- conditions, with hang guards.
local cjson = require "cjson"
local pawl = require "pawl"
local H = require "host_helper"
local P = require "pg_helper"

local PG_SKIP = P.skip_reason()
local pg_test = PG_SKIP and function(name)
  pending(name .. " -- SKIPPED: " .. PG_SKIP)
end or it

-- A job of resource "smtp" (from its script): witness, gate, witness.
local LIMITED = H.GATE_LUA .. [[
local function note(path, line)
  local f = assert(io.open(path, "a"))
  assert(f:write(line))
  assert(f:close())
end
return {
  resource = "smtp",
  priority = 5,
  run = function(job)
    local p = job.payload
    local t0 = pawl.time()
    note(p.witness, ("S %s %.6f\n"):format(job.id, t0))
    if p.gate and (p.first_only == nil or job.attempt == 1) then
      pawl_gate(p.gate, 600)
    end
    note(p.witness, ("E %s %.6f %.6f\n"):format(job.id, t0, pawl.time()))
  end,
}
]]

-- A job under no limit.
local PLAIN = [[
return { run = function() return { ok = true } end }
]]

-- The witnessed runs: list of {id, start, finish}. A run without its end
-- line (its process was killed) ends at `killed_at`, if given.
local function read_witness(path, killed_at)
  local runs, open = {}, {}
  for line in (H.read_file(path) or ""):gmatch("[^\n]+") do
    local kind, id, t0, t1 = line:match("^([SE]) (%S+) ([%d.]+) ?([%d.]*)$")
    assert(kind, "malformed witness line: " .. line)
    if kind == "S" then
      open[id .. t0] = { id = id, start = tonumber(t0) }
    else
      local r = assert(open[id .. t0], "end without start: " .. line)
      r.finish = tonumber(t1)
      runs[#runs + 1] = r
      open[id .. t0] = nil
    end
  end
  for _, r in pairs(open) do
    r.finish = killed_at -- nil: unfinished, running to the end
    runs[#runs + 1] = r
  end
  return runs
end

-- The largest number of witnessed runs at one moment (ends before starts
-- at equal times: a permit is given back before the next job can start).
local function max_overlap(runs)
  local ev = {}
  for _, r in ipairs(runs) do
    ev[#ev + 1] = { r.start, 1 }
    ev[#ev + 1] = { r.finish or math.huge, -1 }
  end
  table.sort(ev, function(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    return a[2] < b[2]
  end)
  local cur, max = 0, 0
  for _, e in ipairs(ev) do
    cur = cur + e[2]
    if cur > max then max = cur end
  end
  return max
end

local function limit_row(env, name)
  for _, l in ipairs(H.json_lines(env:ok("limit", "list", "--json"))) do
    if l.name == name then return l end
  end
end

-- Counts of jobs by state (via the CLI), of type `jtype` if given.
local function count_state(env, state, jtype)
  local args = { "jobs", "--json", "--state", state, "--limit", "100000" }
  if jtype then args[#args + 1] = "--type" args[#args + 1] = jtype end
  return #H.json_lines(env:ok(unpack(args)))
end

describe("resource limits", function()
  local env
  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  it("one SQLite node with 8 workers runs at most 3 smtp jobs at once, and 3 do run", function()
    env = H.env()
    env:script("smtp", LIMITED)
    env:script("plain", PLAIN)
    env:ok("limit", "set", "smtp", "3")
    local g = env:gate()
    local witness = env:path("witness")
    -- The smtp jobs come first in claim order (priority 5 from the
    -- script); the plain ones behind them must not wait for their permits.
    local N = 12
    for _ = 1, N do env:enqueue("smtp", H.json { gate = g.path, witness = witness }) end
    local plain = {}
    for i = 1, 4 do plain[i] = env:enqueue("plain") end
    local node = env:start("--workers", "8", "--poll", "0.1", "--prefetch", "8")
    g:wait_reached(3)
    -- Three at the gate, the permits all taken, and the jobs behind them
    -- done meanwhile.
    for _, id in ipairs(plain) do env:wait_state(id, "succeeded") end
    local l = limit_row(env, "smtp")
    assert.are.equal(3, l.running)
    assert.are.equal(3, l.max_running)
    assert.are.equal(3, count_state(env, "running"))
    -- Nothing waiting was charged an attempt.
    for _, j in ipairs(H.json_lines(env:ok("jobs", "--json", "--state", "pending"))) do
      assert.are.equal(0, j.attempt)
    end
    g:open()
    env:wait_until("every smtp job to succeed", function()
      return count_state(env, "succeeded", "smtp") == N
    end)
    node:signal("TERM")
    assert.are.equal(0, node:wait(H.HANG_S))
    local runs = read_witness(witness)
    assert.are.equal(N, #runs)
    assert.are.equal(3, max_overlap(runs))
    assert.are.equal(0, limit_row(env, "smtp").running)
  end)

  it("a dead node's permit is freed by lease recovery", function()
    env = H.env()
    env:script("smtp", LIMITED)
    env:ok("limit", "set", "smtp", "1")
    local never = env:gate("never")
    local witness = env:path("witness")
    -- The first run of the first job holds its permit at a gate that never
    -- opens; its second run (after recovery) passes.
    local first = env:enqueue("smtp", H.json { gate = never.path, witness = witness,
                                               first_only = true })
    local second = env:enqueue("smtp", H.json { witness = witness }, "--priority", "1")
    local a = env:start("--workers", "2", "--lease", "2", "--poll", "0.1")
    never:wait_reached(1)
    a:kill() -- SIGKILL: no release, the lease runs out
    local killed_at = P.wall()
    assert.are.equal("running", env:show(first).state)
    assert.are.equal("pending", env:show(second).state) -- no permit for it
    local b = env:start("--workers", "2", "--lease", "2", "--poll", "0.1")
    env:wait_state(second, "succeeded")
    local j = env:wait_state(first, "succeeded")
    assert.is_true(j.attempt >= 2)
    assert.matches("took back jobs whose lease expired", b:stderr(), 1, true)
    b:signal("TERM")
    assert.are.equal(0, b:wait(H.HANG_S))
    assert.are.equal(1, max_overlap(read_witness(witness, killed_at)))
  end)

  -- Three nodes on one database, on each store: on SQLite three processes
  -- sharing the database file.
  for _, be in ipairs(P.backends(it, pending)) do
    be.test("3 nodes on " .. be.name .. " run at most 5 smtp jobs at once, and 5 do run", function()
      env = be.env("limits")
      env:script("smtp", LIMITED)
      env:script("plain", PLAIN)
      env:ok("migrate")
      env:ok("limit", "set", "smtp", "5")
      local g = env:gate()
      local witness = env:path("witness")
      local N = 40
      -- Through the Lua module (resource given), and two through the CLI
      -- (resource from the script).
      local h = assert(pawl.open { db = env.db, node_id = "spec-enqueuer" })
      local items = {}
      for i = 1, N - 2 do
        items[i] = { "smtp", { gate = g.path, witness = witness },
                     { resource = "smtp", priority = 5 } }
      end
      assert(h:enqueue_many(items))
      h:close()
      for _ = 1, 2 do env:enqueue("smtp", H.json { gate = g.path, witness = witness }) end
      local plain = {}
      for i = 1, 3 do plain[i] = env:enqueue("plain") end
      -- No prefetch: a node whose four workers all hold smtp jobs at the
      -- gate would otherwise claim plain jobs ahead, to wait in its own
      -- queue until the gate opens (prefetching, not limits).
      local nodes = {}
      for _, name in ipairs({ "A", "B", "C" }) do
        nodes[#nodes + 1] = env:start("--node-id", name, "--workers", "4",
                                      "--prefetch", "0", "--poll", "0.1",
                                      "--log-level", "warn")
      end
      g:wait_reached(5)
      for _, id in ipairs(plain) do env:wait_state(id, "succeeded") end
      assert.are.equal(5, limit_row(env, "smtp").running)
      assert.are.equal(5, count_state(env, "running"))
      -- Nothing waiting was charged an attempt.
      for _, j in ipairs(H.json_lines(env:ok("jobs", "--json", "--state", "pending",
                                             "--limit", "1000"))) do
        assert.are.equal(0, j.attempt)
      end
      g:open()
      env:wait_until("every smtp job to succeed", function()
        return count_state(env, "succeeded", "smtp") == N
      end, 5 * P.HANG_S)
      for _, p in ipairs(nodes) do p:signal("TERM") end
      for _, p in ipairs(nodes) do assert.are.equal(0, p:wait(P.HANG_S)) end
      local runs = read_witness(witness)
      assert.are.equal(N, #runs)
      assert.are.equal(5, max_overlap(runs))
      -- More than one node took part.
      local owners = 0
      for _ in pairs(H.tally(env:all_jobs("smtp"), "lease_owner")) do owners = owners + 1 end
      assert.is_true(owners >= 2, "one node ran every smtp job")
    end)
  end
end)

describe("rate limits", function()
  local env
  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  -- A rate counts claims, in the window of the claim; a job's started_at
  -- is its body's start, which comes after its claim, by a hand-off that
  -- a slow machine (a sanitizer build) can carry past the end of the
  -- window. So the bodies' starts are checked as what the claims allow:
  -- up to the end of each window, no more starts than `rate` for every
  -- window since the one before the first start (the first claims may
  -- fall there), and no window with more than its own claims and the
  -- previous window's. There was work: some window saw `rate` starts, and
  -- the starts span as many windows as the rate demands.
  local function check_windows(starts_ms, rate, n)
    local per, first, last = {}, math.huge, -math.huge
    for _, t in ipairs(starts_ms) do
      local w = math.floor(t / 1000)
      per[w] = (per[w] or 0) + 1
      if w < first then first = w end
      if w > last then last = w end
    end
    local cum, max = 0, 0
    for w = first, last do
      local k = per[w] or 0
      cum = cum + k
      if k > max then max = k end
      assert.is_true(k <= 2 * rate, ("window %d had %d starts"):format(w, k))
      assert.is_true(cum <= rate * (w - first + 2),
                     ("%d starts by the end of window %d, %d windows after the first start"):format(
                       cum, w, w - first))
    end
    assert.are.equal(n, cum)
    assert.is_true(max >= rate, "no window saw " .. rate .. " starts")
    assert.is_true(last - first + 2 >= n / rate,
                   ("%d starts in %d windows"):format(n, last - first + 1))
  end

  it("starts at most N per fixed window, and N when there is work", function()
    env = H.env()
    env:script("api", [[return { resource = "api", run = function() end }]])
    env:ok("limit", "set", "api", "--rate", "4/1s")
    local N = 12
    for _ = 1, N do env:enqueue("api") end
    -- A rate counts claims; `started_at` is the body's start, which a job
    -- claimed ahead may reach in the next window. Without a prefetch a
    -- claim takes only idle workers' jobs, which start at once (docs/scheduling.md
    -- "Resource and rate limits").
    local p = env:run_idle("--workers", "4", "--poll", "0.1", "--prefetch", "0")
    assert.are.equal(0, p.code, p:stderr())
    local jobs = H.json_lines(env:ok("jobs", "--json", "--state", "succeeded"))
    assert.are.equal(N, #jobs)
    local starts = {}
    for _, j in ipairs(jobs) do starts[#starts + 1] = H.ms(j.started_at) end
    check_windows(starts, 4, N)
    local l = limit_row(env, "api")
    assert.are.equal(4, l.rate)
    assert.are.equal(1000, l.rate_window_ms)
  end)
  -- The windows hold across nodes: three nodes (on SQLite, three processes
  -- on one file) count their starts together. (Which node starts what
  -- depends on the machine's speed; one may well take a whole window.)
  for _, be in ipairs(P.backends(it, pending)) do
    be.test("3 nodes on " .. be.name .. " start at most N per fixed window between them", function()
      env = be.env("rates")
      env:script("api", [[return { resource = "api", run = function() end }]])
      env:ok("migrate")
      env:ok("limit", "set", "api", "--rate", "4/1s")
      local N = 16
      for _ = 1, N do env:enqueue("api") end
      local nodes = {}
      for _, name in ipairs({ "A", "B", "C" }) do
        nodes[#nodes + 1] = env:start("--node-id", name, "--workers", "4",
                                      "--poll", "0.05", "--prefetch", "0",
                                      "--log-level", "warn")
      end
      env:wait_until("every api job to succeed", function()
        return count_state(env, "succeeded", "api") == N
      end, 5 * P.HANG_S)
      for _, p in ipairs(nodes) do p:signal("TERM") end
      for _, p in ipairs(nodes) do assert.are.equal(0, p:wait(P.HANG_S)) end
      local starts = {}
      for _, j in ipairs(env:all_jobs("api")) do starts[#starts + 1] = H.ms(j.started_at) end
      check_windows(starts, 4, N)
    end)
  end
end)

describe("limits: CLI, Lua and scripts", function()
  local env
  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  it("refuses bad limits with a clear message and changes nothing", function()
    env = H.env()
    env:ok("limit", "set", "smtp", "5")
    env:ok("limit", "set", "queue:mail", "--rate", "100/60s")
    local before = env:ok("limit", "list", "--json")
    local cases = {
      { { "limit", "set", "smtp", "0" }, 2, "MAX must be between 1 and 1000000" },
      { { "limit", "set", "smtp", "1000001" }, 2, "MAX must be between 1 and 1000000" },
      { { "limit", "set", "smtp", "five" }, 2, "MAX expects an integer" },
      { { "limit", "set", "smtp" }, 2, "needs a MAX" },
      { { "limit", "set", "smtp", "--rate", "100" }, 2, "must be N/DURATION" },
      { { "limit", "set", "smtp", "--rate", "0/1s" }, 2, "between 1 and 1000000" },
      { { "limit", "set", "smtp", "--rate", "5/2d" }, 2, "rate window must be between 1 and 86400000 ms" },
      { { "limit", "set", "smtp", "--rate", "5/0s" }, 2, "rate window must be between 1" },
      { { "limit", "set", "queue:", "3" }, 2, "names no queue" },
      { { "limit", "rm", "nope" }, 1, "no limit named \"nope\"" },
      { { "limit", "rm" }, 2, "needs a NAME" },
      { { "limit", "drop", "smtp" }, 2, "limit needs list, set or rm" },
      { { "limit", "list", "--rate", "1/1s" }, 2, "--rate goes with limit set" },
      { { "enqueue", "x", "--resource", "queue:mail" }, 2, "must not begin with \"queue:\"" },
    }
    for _, c in ipairs(cases) do
      local r = env:pawl(unpack(c[1]))
      assert.are.equal(c[2], r.code, table.concat(c[1], " ") .. ": " .. r.err)
      assert.matches(c[3], r.err, 1, true)
      assert.are.equal(1, select(2, r.err:gsub("\n", "")), "one line: " .. r.err)
    end
    assert.are.equal(before, env:ok("limit", "list", "--json"))
    assert.are.equal(0, #H.json_lines(env:ok("jobs", "--json")))
  end)

  it("sets, lists and removes limits from the CLI", function()
    env = H.env()
    assert.are.equal("no limits\n", env:ok("limit", "list"))
    local set = cjson.decode(env:ok("limit", "set", "api", "10", "--rate", "100/60s", "--json"))
    assert.are.equal("api", set.name)
    assert.are.equal(10, set.max_running)
    assert.are.equal(100, set.rate)
    assert.are.equal(60000, set.rate_window_ms)
    assert.are.equal(0, set.running)
    local text = env:ok("limit", "list")
    assert.matches("NAME%s+MAX_RUNNING%s+RUNNING%s+RATE%s+THIS_WINDOW", text)
    assert.matches("api%s+10%s+0%s+100/1m%s+0/100", text)
    env:ok("limit", "set", "api", "--rate", "5/1s") -- replaces: no max now
    local l = limit_row(env, "api")
    assert.are.equal(cjson.null, l.max_running)
    assert.are.equal(5, l.rate)
    assert.are.same({ removed = "api" }, cjson.decode(env:ok("limit", "rm", "api", "--json")))
    assert.are.equal("no limits\n", env:ok("limit", "list"))
  end)

  it("takes the resource from a script, the command line, the Lua module and job code", function()
    env = H.env()
    env:script("smtp", [[return { resource = "smtp", run = function() end }]])
    env:script("parent", [[return { run = function()
      pawl.enqueue("child", {}, { resource = "api" })
      pawl.enqueue("smtp", {})
    end }]])
    env:script("child", [[return { run = function() end }]])
    local a = env:enqueue("smtp")
    local b = env:enqueue("smtp", "{}", "--resource", "other")
    local h = assert(pawl.open { db = env.db })
    local c = assert(h:enqueue("child", {}, { resource = "lua" }))
    local limits = assert(h:limits())
    assert.are.same({}, limits)
    assert(h:limit_set("smtp", { max_running = 2 }))
    assert(h:limit_set("queue:mail", { rate = "10/1s" }))
    assert(h:limit_set("api", { rate = 3, window_ms = 500, max_running = 1 }))
    local nil_, msg = h:limit_set("smtp", { max_running = 0 })
    assert.is_nil(nil_)
    assert.matches("give a max_running", msg, 1, true)
    local ok, err = pcall(h.limit_set, h, "smtp", { max = 2 })
    assert.is_false(ok)
    assert.matches("unknown limit_set option \"max\"", err, 1, true)
    limits = assert(h:limits())
    assert.are.equal(3, #limits)
    assert.are.equal("api", limits[1].name)
    assert.are.equal(1, limits[1].max_running)
    assert.are.equal(3, limits[1].rate)
    assert.are.equal(500, limits[1].rate_window_ms)
    assert.are.equal("queue:mail", limits[2].name)
    assert.are.equal(1000, limits[2].rate_window_ms)
    assert.is_nil(limits[2].max_running)
    assert(h:limit_rm("queue:mail"))
    local gone, why = h:limit_rm("queue:mail")
    assert.is_nil(gone)
    assert.matches("no limit named", why, 1, true)
    local scripts = pawl.scripts(env.scripts)
    for _, s in ipairs(scripts) do
      if s.type == "smtp" then assert.are.equal("smtp", s.resource) end
    end
    h:close()
    env:enqueue("parent")
    env:run_idle("--workers", "2")
    if H.have_sqlite3 then
      local rows = H.sqlite3(env.db_path,
        "SELECT type || '=' || coalesce(resource, '-') FROM pawl_jobs ORDER BY seq")
      assert.are.equal(table.concat({ "smtp=smtp", "smtp=other", "child=lua",
                                      "parent=-", "child=api", "smtp=smtp" }, "\n") .. "\n",
                       rows)
    end
    assert.is_truthy(a and b and c)
  end)

  it("refuses a bad resource in a script when it loads", function()
    env = H.env()
    env:script("bad1", [[return { resource = "queue:mail", run = function() end }]])
    env:script("bad2", [[return { resource = "", run = function() end }]])
    env:script("bad3", [[return { resource = 5, run = function() end }]])
    local errs = {}
    for _, s in ipairs(pawl.scripts(env.scripts)) do errs[s.type] = s.error end
    assert.matches("not beginning with \"queue:\"", errs.bad1, 1, true)
    assert.matches("resource must be 1..200 bytes", errs.bad2, 1, true)
    assert.matches("field resource must be a string", errs.bad3, 1, true)
    local r = env:pawl("enqueue", "bad1", "--scripts", env.scripts)
    assert.are.equal(0, r.code) -- a broken script is reported, the job enqueued
    assert.matches("not beginning with", r.err, 1, true)
    env:script("_defaults", [[return { resource = "x" }]])
    local p = env:run_idle("--workers", "1")
    assert.matches("_defaults.lua cannot set a resource", p:stderr(), 1, true)
  end)
end)
