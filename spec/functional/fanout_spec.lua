-- fanout_spec.lua: what job code may write (docs/security.md, "What job
-- code may write"), attacked through the real `pawl run`:
--
--   * how many jobs one attempt may enqueue (max_children), how many one
--     pawl.batch / pawl.chain call may hold (max_batch: each call is one
--     transaction, so this bounds how long job code holds the write lock),
--     and how deep a line of jobs enqueued by jobs may go (max_depth, from
--     the depth kept on each job's row); a flooding type does not keep
--     the workers from ordinary jobs;
--   * the size caps every enqueuer and every job output meets (payload,
--     params, signal payload, result, log message, log fields), and the
--     host log's budget for one job's lines;
--   * a parent killed with SIGKILL and run again finds the batch and the
--     chain it made instead of making them again (SQLite and PostgreSQL).
--
-- Nothing here bets on the machine's speed: hosts run --until-idle or are
-- waited for with conditions (hang guards as caps); the flood test holds
-- its flooder at a gate until the ordinary jobs are enqueued.
local cjson = require "cjson"
local H = require "host_helper"
local P = require "pg_helper"

local PG_SKIP = P.skip_reason()
if PG_SKIP then
  io.stderr:write("\n*** fanout_spec: " .. PG_SKIP .. " ***\n\n")
end

-- The jobs of type `jtype` (at most 100,000), as `pawl jobs --json` lists
-- them.
local function jobs_of(env, jtype)
  local t = {}
  for line in env:ok("jobs", "--json", "--type", jtype, "--limit",
                     "100000"):gmatch("[^\n]+") do
    t[#t + 1] = cjson.decode(line)
  end
  return t
end

local function lines_of(path)
  local f = io.open(path, "r")
  if not f then return {} end
  local t = {}
  for l in f:lines() do t[#t + 1] = l end
  f:close()
  return t
end

local NOOP = "return { run = function() end }"

describe("what one job may enqueue", function()
  local env
  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  it("stops one attempt at max_children (1000 by default), naming the limit", function()
    env:script("noop", NOOP)
    -- The attack: one job enqueuing as fast as it can.
    env:script("spawner", [[
return { run = function(job)
  local made, err = 0, nil
  for i = 1, job.payload.n do
    local ok, e = pcall(pawl.enqueue, "noop", { i = i })
    if not ok then err = e break end
    made = made + 1
  end
  return { made = made, err = err }
end }]])
    local id = env:enqueue("spawner", H.json { n = 5000 })
    env:run_idle("--workers", "2")
    local j = env:show(id)
    assert.are.equal("succeeded", j.state)
    assert.are.equal(1000, j.result.made)
    assert.truthy(j.result.err:find("this attempt of job spawner enqueued 1000 jobs and asks for 1 more; max_children is 1000 for job type spawner (raise max_children in the job type's script or in _defaults.lua, at most 100000)", 1, true), j.result.err)
    assert.are.equal(1000, #jobs_of(env, "noop"))
  end)

  it("counts enqueues, chains and batches together, and takes the script's and _defaults.lua's limits", function()
    env:script("noop", NOOP)
    env:script("_defaults", "return { max_children = 7 }")
    -- Its own limit: 900 jobs in three kinds of call, then one more.
    env:script("mixed", [[
return { max_children = 900, run = function()
  local jobs = {}
  for i = 1, 600 do jobs[i] = { "noop", { i = i } } end
  pawl.batch { jobs = jobs }
  local steps = {}
  for i = 1, 299 do steps[i] = { "noop", { s = i } } end
  pawl.chain(steps)
  pawl.enqueue("noop", { last = true })
  local ok, err = pcall(pawl.enqueue, "noop", { over = true })
  return { ok = ok, err = err }
end }]])
    -- No limit of its own: _defaults.lua's 7.
    env:script("plain", [[
return { run = function()
  local made = 0
  while pcall(pawl.enqueue, "noop", { plain = true }) do made = made + 1 end
  return { made = made }
end }]])
    local mixed = env:enqueue("mixed")
    local plain = env:enqueue("plain")
    env:run_idle("--workers", "2")
    local m = env:show(mixed)
    assert.is_false(m.result.ok)
    assert.truthy(m.result.err:find("enqueued 900 jobs and asks for 1 more; max_children is 900", 1, true), m.result.err)
    assert.are.equal(7, env:show(plain).result.made)
    assert.are.equal(907, #jobs_of(env, "noop"))
  end)

  it("refuses a pawl.batch or pawl.chain over max_batch before writing anything", function()
    env:script("noop", NOOP)
    -- The attack held SQLite's write lock for seconds with a million
    -- children in one call; other processes' enqueues failed meanwhile.
    env:script("big", [[
return { run = function(job)
  local jobs = {}
  for i = 1, job.payload.n do jobs[i] = { "noop" } end
  local ok, err = pcall(pawl.batch, { jobs = jobs })
  local steps = {}
  for i = 1, 1000 do steps[i] = { "noop" } end
  local cok, cerr = pcall(pawl.chain, steps)
  return { ok = ok, err = err, cok = cok, cerr = cerr }
end }]])
    env:script("small", [[
return { max_batch = 10, run = function()
  local jobs = {}
  for i = 1, 11 do jobs[i] = { "noop" } end
  local ok, err = pcall(pawl.batch, { jobs = jobs })
  local cok, cerr = pcall(pawl.chain, jobs)
  table.remove(jobs)
  local id, ids = pawl.batch { jobs = jobs }
  return { ok = ok, err = err, cok = cok, cerr = cerr, made = #ids }
end }]])
    local big = env:enqueue("big", H.json { n = 1000000 })
    local over = env:enqueue("big", H.json { n = 1001 })
    local small = env:enqueue("small")
    env:run_idle("--workers", "2")
    local b = env:show(big).result
    assert.is_false(b.ok)
    assert.truthy(b.err:find("pawl.batch: 1000000 jobs in one pawl.batch call; max_batch is 1000 for job type big: split them into calls of at most 1000 jobs, or raise max_batch in the job type's script or in _defaults.lua (at most 10000)", 1, true), b.err)
    assert.truthy(env:show(over).result.err:find("1001 jobs in one pawl.batch call; max_batch is 1000", 1, true))
    -- A chain is one transaction too: the same limit.
    assert.is_true(b.cok, b.cerr)
    local s = env:show(small).result
    assert.truthy(s.err:find("11 jobs in one pawl.batch call; max_batch is 10 for job type small", 1, true), s.err)
    assert.is_false(s.cok)
    assert.truthy(s.cerr:find("pawl.chain: 11 jobs in one pawl.chain call; max_batch is 10 for job type small", 1, true), s.cerr)
    assert.are.equal(10, s.made)
    -- 1000 + 1000 chain steps and the 10 of "small"; nothing of the
    -- refused batches.
    assert.are.equal(2010, #jobs_of(env, "noop"))
  end)

  it("bounds the parents a call's jobs wait for, in all, as it bounds its jobs", function()
    env:script("noop", NOOP)
    -- Two children each waiting for 60,000 parents: 120,000 edges in one
    -- transaction. The ids need not exist: the count is refused first.
    env:script("edges", [[
return { run = function()
  local after = {}
  for i = 1, 60000 do after[i] = ("00000000-0000-7000-8000-%012x"):format(i) end
  local r = {}
  r.batch = select(2, pcall(pawl.batch, { jobs = {
    { "noop", {}, { after = after } }, { "noop", {}, { after = after } } } }))
  r.chain = select(2, pcall(pawl.chain, {
    { "noop", {}, { after = after } }, { "noop", {}, { after = after } } }))
  return r
end }]])
    local id = env:enqueue("edges")
    env:run_idle("--workers", "1")
    local r = env:show(id).result
    assert.truthy(r.batch:find("pawl.batch: the jobs of one pawl.batch call wait for 120000 parents in all (after); at most 100000: split the call", 1, true), r.batch)
    assert.truthy(r.chain:find("pawl.chain: the jobs of one pawl.chain call wait for 120000 parents in all (after); at most 100000", 1, true), r.chain)
    assert.are.equal(0, #jobs_of(env, "noop"))
  end)

  it("refuses limits out of their bounds when the script loads", function()
    for _, c in ipairs {
      { "max_children = 100001", "max_children must be a whole number between 0 and 100000 (got 100001)" },
      { "max_batch = 0", "max_batch must be a whole number between 1 and 10000 (got 0)" },
      { "max_batch = 10001", "max_batch must be a whole number between 1 and 10000 (got 10001)" },
      { "max_depth = -1", "max_depth must be a whole number between 0 and 10000 (got -1)" },
      { "max_depth = 2.5", "max_depth must be a whole number between 0 and 10000 (got 2.5)" },
      { "max_children = '5'", "field max_children must be a number (got string)" },
    } do
      env:script("bad", ("return { %s, run = function() end }"):format(c[1]))
      -- The enqueuer warns (the script is broken); the host refuses to
      -- load it, so its jobs never run under a limit out of bounds.
      local r = env:pawl("enqueue", "bad", "{}", "--scripts", env.scripts)
      assert.truthy(r.err:find("script " .. env.scripts .. "/bad.lua is broken: " .. env.scripts .. "/bad.lua: " .. c[2], 1, true), r.err)
    end
  end)

  it("stops a line of jobs enqueued by jobs at max_depth, counted on the rows", function()
    -- The attack: a job that enqueues itself. The payload's counter only
    -- keeps the unfixed host from running for ever.
    env:script("line", [[
return { max_depth = 4, run = function(job)
  local n = job.payload.n
  if n >= 20 then return { depth = job.depth, n = n } end
  local ok, err = pcall(pawl.enqueue, "line", { n = n + 1 })
  return { depth = job.depth, n = n, err = (not ok) and err or nil }
end }]])
    local root = env:enqueue("line", H.json { n = 0 })
    env:run_idle()
    local got = jobs_of(env, "line")
    assert.are.equal(5, #got)
    local by_n = {}
    for _, j in ipairs(got) do by_n[j.payload.n] = env:show(j.id) end
    for n = 0, 4 do
      assert.are.equal(n, by_n[n].result.depth)
      assert.are.equal("succeeded", by_n[n].state)
    end
    assert.are.equal(0, env:show(root).result.depth) -- the CLI's: depth 0
    assert.truthy(by_n[4].result.err:find("job type line runs at depth 4 of a line of jobs enqueued by jobs, and max_depth is 4: its jobs may enqueue no more (raise max_depth in the job type's script or in _defaults.lua, at most 10000)", 1, true), by_n[4].result.err)
    assert.is_nil(by_n[3].result.err)
  end)

  it("counts depth through batches, chains and hooks, and stops at the default of 100", function()
    env:script("noop", NOOP)
    env:script("deep", [[
return {
  run = function(job)
    local n = job.payload.n
    if n >= 150 then return { depth = job.depth } end
    local kind = n % 3
    local ok, err
    if kind == 0 then
      ok, err = pcall(pawl.batch, { jobs = { { "deep", { n = n + 1 } } } })
    elseif kind == 1 then
      ok, err = pcall(pawl.chain, { { "deep", { n = n + 1 } } })
    else
      ok, err = true, nil -- the hook enqueues the next one
    end
    return { depth = job.depth, err = (not ok) and err or nil }
  end,
  on_success = function(job)
    if job.payload.n % 3 == 2 and job.payload.n < 150 then
      local ok, err = pcall(pawl.enqueue, "deep", { n = job.payload.n + 1 })
      if not ok then pawl.enqueue("noop", { hook_err = err }) end
    end
  end,
}]])
    env:enqueue("deep", H.json { n = 0 })
    -- Not --until-idle: a hook's enqueue comes after its job's outcome.
    local host = env:start("--workers", "1", "--poll", "0.1")
    local got
    env:wait_until("the line to end", function()
      got = jobs_of(env, "deep")
      for _, j in ipairs(got) do
        if j.state ~= "succeeded" then return false end
      end
      return #got >= 101
    end)
    host:kill()
    assert.are.equal(101, #got) -- depths 0..100
    local deepest
    for _, j in ipairs(got) do
      assert.are.equal(j.payload.n, env:show(j.id).result.depth)
      if j.payload.n == 100 then deepest = env:show(j.id) end
    end
    -- n = 100 calls pawl.chain (100 % 3 == 1): refused.
    assert.truthy(deepest.result.err:find("runs at depth 100", 1, true), deepest.result.err)
    assert.truthy(deepest.result.err:find("max_depth is 100", 1, true))
  end)

  it("keeps ordinary jobs running while one type floods the queue", function()
    local g = env:gate()
    env:script("ordinary", "return { run = function(job) return { ran = job.payload.i } end }")
    -- The flooder enqueues itself as fast as it can until refused. Each
    -- one stops at the gate after its first child until the test opens
    -- it: the root and its first child hold both workers there, and the
    -- ordinary jobs are enqueued while the flood is running.
    env:script("flood", H.GATE_LUA .. [[
return { run = function(job)
  local made = 0
  while true do
    if not pcall(pawl.enqueue, "flood", { gate = job.payload.gate }) then break end
    made = made + 1
    if made == 1 then pawl_gate(job.payload.gate) end
  end
  return { made = made }
end }]])
    local root = env:enqueue("flood", H.json { gate = g.path })
    local host = env:start("--workers", "2", "--poll", "0.1")
    g:wait_reached(2)
    local ids = {}
    for i = 1, 20 do
      -- Each enqueue is its own process meeting the flood at the database.
      ids[i] = env:enqueue("ordinary", H.json { i = i })
    end
    g:open()
    for i = 1, 20 do
      local j = env:wait_state(ids[i], "succeeded", 2 * H.HANG_S)
      assert.are.same({ ran = i }, j.result)
    end
    host:kill()
    assert.are.same({ made = 1000 }, env:show(root).result)
  end)
end)

describe("the size caps", function()
  local env
  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  local MIB16 = 16 * 1024 * 1024

  it("hold for job code's payloads, params, signal payloads and log lines", function()
    env:script("noop", NOOP)
    env:script("writer", ([[
local BIG = ('"' .. string.rep("x", %d) .. '"')
-- Strings of 100 MiB and several of 16 MiB: past the default heap ceiling.
return { memory = "1G", run = function(job, ctx)
  local r = {}
  local function try(name, fn, ...)
    local ok, err = pcall(fn, ...)
    r[name] = ok and "accepted" or err
  end
  try("payload", pawl.enqueue, "noop", '{"a":' .. BIG .. '}')
  try("params", pawl.enqueue, "noop", {}, { params = { a = string.rep("y", %d) } })
  try("batch", pawl.batch, { jobs = { { "noop", '{"a":' .. BIG .. '}' } } })
  try("signal", pawl.signal, "nobody", "approve", '{"a":' .. BIG .. '}')
  try("log", ctx.log, ctx, "info", string.rep("m", 100 * 1024 * 1024))
  try("log_cap", ctx.log, ctx, "info", string.rep("m", %d))
  try("log_over", ctx.log, ctx, "info", string.rep("m", %d))
  -- The sanitizer cuts each text to 2000 bytes: many of them.
  local fields = {}
  for i = 1, 40 do fields["f" .. i] = string.rep("z", 1900) end
  try("fields", ctx.log, ctx, "info", "f", fields)
  try("print", print, string.rep("p", 70000))
  -- What fits is taken: exactly at the caps.
  try("payload_cap", pawl.enqueue, "noop", '"' .. string.rep("x", %d) .. '"')
  return r
end }]]):format(MIB16, MIB16, 65536, 65537, MIB16 - 2))
    local id = env:enqueue("writer")
    env:run_idle("--workers", "1")
    local j = env:show(id)
    assert.are.equal("succeeded", j.state, j.last_error)
    local r = j.result
    local function has(k, text)
      assert.truthy(type(r[k]) == "string" and r[k]:find(text, 1, true), k .. ": " .. tostring(r[k]))
    end
    has("payload", ("payload is %d bytes; at most %d (16 MiB)"):format(MIB16 + 8, MIB16))
    has("params", ("params is %d bytes; at most %d (16 MiB)"):format(MIB16 + 8, MIB16))
    has("batch", ("payload is %d bytes; at most %d"):format(MIB16 + 8, MIB16))
    has("signal", ("signal payload is %d bytes; at most %d (16 MiB)"):format(MIB16 + 8, MIB16))
    has("log", ("ctx:log: the message is %d bytes; at most 65536"):format(100 * 1024 * 1024))
    assert.are.equal("accepted", r.log_cap)
    has("log_over", "ctx:log: the message is 65537 bytes; at most 65536")
    assert.truthy(r.fields:match("ctx:log: the fields are %d+ bytes of JSON; at most 65536"), r.fields)
    has("print", "print: the text is 70000 bytes; at most 65536")
    assert.are.equal("accepted", r.payload_cap)
    local stored = jobs_of(env, "noop")
    assert.are.equal(1, #stored)
  end)

  it("fails a job whose result is over the cap, with the reason", function()
    env:script("huge", ([[
return { max_attempts = 1, run = function(job)
  return { blob = string.rep("r", %d) }
end }]]):format(MIB16))
    local id = env:enqueue("huge")
    local host = env:run_idle("--workers", "1")
    local j = env:show(id)
    assert.are.equal("failed", j.state)
    assert.truthy(j.last_error:find(("the job's result is %d bytes; at most %d (16 MiB)"):format(MIB16 + 11, MIB16), 1, true), j.last_error)
    assert.are.equal(0, host.code)
  end)

  it("keeps the host log to a budget of one job's lines, and says how many it dropped", function()
    env:script("chatty", [[
return { run = function(job, ctx)
  local t0 = pawl.time()
  for i = 1, 50000 do ctx:log("info", "chatter " .. i) end
  for i = 1, 50000 do print("printed " .. i) end
  return { took = pawl.time() - t0 }
end }]])
    local id = env:enqueue("chatty")
    local host = env:run_idle("--workers", "1")
    local j = env:show(id)
    assert.are.equal("succeeded", j.state)
    local text = host:stderr() .. host:stdout()
    local written, suppressed = 0, 0
    for line in text:gmatch("[^\n]+") do
      if line:find("chatter %d+") or line:find("printed %d+") then
        written = written + 1
      end
      local n = line:match("(%d+) lines of job " .. id:gsub("%-", "%%-") .. " suppressed")
      if n then suppressed = suppressed + tonumber(n) end
    end
    -- A burst of 200, then 20 a second: what the job's own clock allows.
    assert.is_true(written <= 200 + 20 * (j.result.took + 1), written .. " lines written")
    assert.is_true(written >= 200)
    assert.are.equal(100000, written + suppressed)
    -- The stored log keeps its own cap.
    local logs = cjson.decode(env:show_text(id)).logs
    assert.are.equal(1000, #logs)
  end)
end)

local function backends()
  local list = { { name = "SQLite", env = function() return H.env() end } }
  if not PG_SKIP then
    list[#list + 1] = { name = "PostgreSQL", env = function() return P.env() end }
  end
  return list
end

-- The parent: a batch of 100, a chain of 3, a keyed batch and a keyed
-- enqueue; on its first attempt it records what it made and waits to be
-- killed (the test kills the host with SIGKILL); on the second it returns
-- what the same calls gave back.
local PARENT = [[
local function append(path, line)
  local f = assert(io.open(path, "a"))
  assert(f:write(line .. "\n"))
  assert(f:close())
end
return { max_attempts = 3, retry = function() return 0 end, run = function(job)
  local jobs = {}
  for i = 1, 100 do jobs[i] = { "child", { i = i } } end
  local bid, ids, bst = pawl.batch { jobs = jobs }
  local steps = {}
  for i = 1, 3 do steps[i] = { "child", { step = i } } end
  local cids, cst = pawl.chain(steps)
  local kid, _, kst = pawl.batch { jobs = { { "child", { keyed = true } } }, key = "mine" }
  local eid, est = pawl.enqueue("child", { enq = true }, { key = job.id .. "/enq" })
  local plain = pawl.enqueue("child", { plain = true })
  local made = { bid = bid, first = ids[1], last = ids[100], chain = cids,
                 kid = kid, eid = eid, bst = bst, cst = cst, kst = kst, est = est }
  if job.attempt == 1 then
    append(job.payload.out, pawl.json.encode(made))
    while true do pawl.sleep(0.05) end
  end
  return made
end }]]

for _, be in ipairs(backends()) do
  describe("a parent run again after a crash on " .. be.name, function()
    local env
    before_each(function() env = be.env() end)
    after_each(function() if env then env:cleanup() end end)

    it("finds the batches and the chain it made instead of making them again", function()
      env.gated = true -- the parent writes a file: --allow-io
      env:script("child", NOOP)
      env:script("parent", PARENT)
      local out = env:path("made.json")
      local id = env:enqueue("parent", H.json { out = out })
      local node1 = env:start("--lease", "3", "--poll", "0.1")
      env:wait_until("the first attempt to have made its jobs", function()
        return #lines_of(out) > 0
      end)
      node1:signal("KILL")
      assert.are.equal(137, node1:wait(H.HANG_S))
      local first = cjson.decode(lines_of(out)[1])
      assert.are.same({ "new", "new", "new", "new" },
                      { first.bst, first.cst, first.kst, first.est })

      local node2 = env:start("--poll", "0.1")
      local job = env:wait_state(id, "succeeded", 2 * H.HANG_S)
      node2:kill()
      assert.are.equal(2, job.attempt)
      local again = job.result
      assert.are.same({ "duplicate", "duplicate", "duplicate", "duplicate" },
                      { again.bst, again.cst, again.kst, again.est })
      for _, k in ipairs { "bid", "first", "last", "kid", "eid" } do
        assert.are.equal(first[k], again[k], k)
      end
      assert.are.same(first.chain, again.chain)
      -- 100 + 3 + 1 + 1, and the plain pawl.enqueue twice (documented: a
      -- rerun enqueues again what has no key).
      local n = 0
      for line in env:ok("jobs", "--json", "--type", "child", "--limit",
                         "1000"):gmatch("[^\n]+") do
        n = n + 1
        assert.is_not_nil(cjson.decode(line))
      end
      assert.are.equal(107, n)
    end)

    it("refuses a rerun whose call asks for a different batch than the one it made", function()
      env:script("child", NOOP)
      env:script("twice", [[
return { max_attempts = 1, run = function(job)
  local a = pawl.batch { jobs = { { "child" }, { "child" } }, key = "k" }
  local b, _, st = pawl.batch { jobs = { { "child" }, { "child" } }, key = "k" }
  local ok, err = pcall(pawl.batch, { jobs = { { "child" } }, key = "k" })
  local bad = { pcall(pawl.batch, { jobs = { { "child" } }, key = "" }) }
  local long = { pcall(pawl.batch, { jobs = { { "child" } }, key = string.rep("k", 201) }) }
  return { same = a == b, st = st, err = err, bad = bad[2], long = long[2] }
end }]])
      local id = env:enqueue("twice")
      env:run_idle("--workers", "1")
      local r = env:show(id).result
      assert.is_true(r.same)
      assert.are.equal("duplicate", r.st)
      assert.truthy(r.err:find("was made under the identity \"job:" .. id .. "/key/k\" with 2 jobs; this call has 1", 1, true), r.err)
      assert.truthy(r.bad:find("pawl.batch: key must be 1..200 bytes without control characters (got 0 bytes)", 1, true), r.bad)
      assert.truthy(r.long:find("(got 201 bytes)", 1, true), r.long)
    end)
  end)
end
