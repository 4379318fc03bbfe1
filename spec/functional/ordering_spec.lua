-- ordering_spec.lua: per-key ordering with real `pawl run`
-- nodes: three on one database (PostgreSQL, and SQLite: three processes
-- on one file), and one with several workers on SQLite.
--
-- A "fanout" job enqueues the work from job code (pawl.enqueue), so the
-- "work" script's ordering_key function computes each job's key from its
-- payload. Every execution of a "work" job appends to a witness file of
-- its node process ($PAWL_WITNESS, the node's label in $PAWL_WITNESS_NODE),
-- one write(2) per line:
--
--   S <key> <i> <attempt> <label> <time>     when the body starts
--   E <key> <i> <attempt> <label> <time>     when it ends (also by raising)
--
-- (times from pawl.time(): every node runs on this machine, one clock).
-- Job i of a key is its i-th in enqueue order. The checks: the executions
-- of one key never overlap and run in enqueue order (a job that fails
-- once and is retried, under the strict default, runs again before the
-- next one starts); the first job of every key waits at one gate, which
-- the test opens only once all of them are in their bodies at the same
-- time, so jobs of different keys did run at once; and under
-- ordering = "skip_failed" the jobs after one waiting for its retry pass
-- it. Nothing waits on time: gates, and waits for conditions
-- with hang guards as caps. The nodes claim no jobs ahead (--prefetch 0):
-- a job claimed ahead holds its key from its claim, and one queued behind
-- a worker held at the gate would keep its key (and the gate) waiting.
local cjson = require "cjson"
local pawl = require "pawl"
local H = require "host_helper"
local P = require "pg_helper"

local PG_SKIP = P.skip_reason()
if PG_SKIP then
  io.stderr:write("\n*** ordering_spec: " .. PG_SKIP .. " ***\n\n")
end

local KEYS = { "account:1", "account:2", "account:3", "account:4" }
local PER_KEY = 6
local KEYLESS = 4

local NOTE = [[
local function note(kind, job)
  local p = job.payload
  local f = assert(io.open(assert(os.getenv("PAWL_WITNESS")), "a"))
  assert(f:write(("%s %s %d %d %s %.6f\n"):format(kind, p.key or "-", p.i,
    job.attempt, os.getenv("PAWL_WITNESS_NODE") or "-", pawl.time())))
  assert(f:close())
end
]]

-- The strict type: its key from the payload; job payload.fail_once fails
-- its first attempt and is retried at once.
local WORK = H.GATE_LUA .. NOTE .. [[
return {
  ordering_key = function(payload) return payload.key end,
  max_attempts = 3,
  retry = function() return 0 end,
  run = function(job)
    note("S", job)
    if job.payload.gate then pawl_gate(job.payload.gate, 600) end
    if job.payload.fail_once and job.attempt == 1 then
      note("E", job)
      error("fails once")
    end
    note("E", job)
  end,
}
]]

-- The skip_failed type: job payload.fail_later fails its first attempt and
-- is retried in an hour, so the jobs after it can only have run by
-- passing it.
local SKIPPY = NOTE .. [[
return {
  ordering_key = "skippy",
  ordering = "skip_failed",
  max_attempts = 3,
  retry = function() return 3600 end,
  run = function(job)
    note("S", job)
    note("E", job)
    if job.payload.fail_later and job.attempt == 1 then error("later") end
  end,
}
]]

-- Enqueues, from job code, PER_KEY jobs of each key (round by round: job
-- i of every key, then i + 1), the first of each held at payload.gate;
-- KEYLESS jobs without a key; and 4 of type skippy, the second failing.
local FANOUT = [[
return {
  run = function(job)
    local keys = job.payload.keys
    for i = 1, job.payload.per_key do
      for k, key in ipairs(keys) do
        pawl.enqueue("work", { key = key, i = i,
                               gate = i == 1 and job.payload.gate or nil,
                               fail_once = k == 1 and i == 3 or nil })
      end
    end
    for i = 1, job.payload.keyless do pawl.enqueue("work", { i = i }) end
    for i = 1, 4 do pawl.enqueue("skippy", { key = "skippy", i = i,
                                             fail_later = i == 2 or nil }) end
  end,
}
]]

-- The executions in the witness files: list of {kind, key, i, attempt,
-- label, time}, by key and in time order.
local function read_witness(paths)
  local by_key = {}
  for _, path in ipairs(paths) do
    local text = P.read_file(path) or ""
    assert(text == "" or text:sub(-1) == "\n", "witness ends in a partial line")
    for line in text:gmatch("[^\n]+") do
      local kind, key, i, attempt, label, t =
        line:match("^([SE]) (%S+) (%d+) (%d+) (%S+) ([%d.]+)$")
      assert(kind, ("witness %s: malformed line %q"):format(path, line))
      by_key[key] = by_key[key] or {}
      table.insert(by_key[key], { kind = kind, i = tonumber(i),
                                  attempt = tonumber(attempt), label = label,
                                  t = tonumber(t), line = line })
    end
  end
  for _, list in pairs(by_key) do
    -- Time order; at one time, an end before a start (never a start of
    -- one job before the end of the one it follows).
    table.sort(list, function(a, b)
      if a.t ~= b.t then return a.t < b.t end
      return a.kind == "E" and b.kind == "S"
    end)
  end
  return by_key
end

local function lines_of(list)
  local out = {}
  for _, e in ipairs(list) do out[#out + 1] = "  " .. e.line end
  return table.concat(out, "\n")
end

-- The executions of `key`: alternate start, end (never two at once), and
-- the (i, attempt) of each execution, in the order they ran.
local function runs_of(by_key, key)
  local list = assert(by_key[key], "no witness line for key " .. key)
  local runs = {}
  for n, e in ipairs(list) do
    local want = n % 2 == 1 and "S" or "E"
    assert(e.kind == want,
           ("key %s: executions overlap (line %d is %s, wanted %s):\n%s")
             :format(key, n, e.kind, want, lines_of(list)))
    if e.kind == "E" then
      local s = list[n - 1]
      assert(s.i == e.i and s.attempt == e.attempt,
             ("key %s: job %d ended while job %d ran:\n%s")
               :format(key, e.i, s.i, lines_of(list)))
      runs[#runs + 1] = ("%d/%d"):format(e.i, e.attempt)
    end
  end
  return runs
end

-- Runs the whole scenario on `env` with the nodes `start_nodes` starts;
-- `witnesses` lists their witness files.
local function scenario(env, start_nodes, witnesses, stop)
  local gate = env:gate("first")
  env:script("work", WORK)
  env:script("skippy", SKIPPY)
  env:script("fanout", FANOUT)
  env:ok("migrate")
  start_nodes()
  env:enqueue("fanout", cjson.encode { keys = KEYS, per_key = PER_KEY,
                                       keyless = KEYLESS, gate = gate.path })
  -- Every key's first job is in its body at once: keys run in parallel.
  gate:wait_reached(#KEYS)
  gate:open()

  local db = assert(pawl.open { db = env.db, node_id = "spec-reader" })
  local total = 1 + #KEYS * PER_KEY + KEYLESS + 4
  local jobs
  env:wait_until("every job but skippy 2 to be done", function()
    jobs = assert(db:jobs { limit = 1000 })
    if #jobs ~= total then return false end
    for _, j in ipairs(jobs) do
      local waiting = j.type == "skippy" and j.payload.i == 2
      if waiting then
        if j.state ~= "pending" then return false end
      elseif j.state ~= "succeeded" then
        return false
      end
    end
    return true
  end, 5 * H.HANG_S)
  stop()

  -- The keys are stored as the script computed them.
  for _, j in ipairs(jobs) do
    if j.type == "work" then
      assert.are.equal(j.payload.key, j.ordering_key)
    end
  end

  local by_key = read_witness(witnesses)
  for k, key in ipairs(KEYS) do
    local want = {}
    for i = 1, PER_KEY do
      if k == 1 and i == 3 then want[#want + 1] = "3/1" end
      want[#want + 1] = ("%d/%d"):format(i, (k == 1 and i == 3) and 2 or 1)
    end
    assert.are.same(want, runs_of(by_key, key),
                    "key " .. key .. " ran out of order:\n" .. lines_of(by_key[key]))
  end
  -- skip_failed: 3 and 4 passed 2, which waits for its retry (an hour).
  assert.are.same({ "1/1", "2/1", "3/1", "4/1" }, runs_of(by_key, "skippy"))
  -- Jobs without a key all ran.
  local keyless = 0
  for _, e in ipairs(by_key["-"] or {}) do
    if e.kind == "E" then keyless = keyless + 1 end
  end
  assert.are.equal(KEYLESS, keyless)
  db:close()
end

describe("per-key ordering", function()
  local env

  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  -- Three nodes on one database, on each store: on SQLite three processes
  -- sharing the database file (WAL, a claim under BEGIN IMMEDIATE).
  for _, be in ipairs(P.backends(it, pending)) do
    be.test("3 nodes on " .. be.name .. ": one job of a key at a time, in enqueue order", function()
      env = be.env("ordering")
      local nodes, witnesses = {}, {}
      scenario(env, function()
        for _, label in ipairs({ "A", "B", "C" }) do
          local w = env:path("witness." .. label)
          witnesses[#witnesses + 1] = w
          nodes[#nodes + 1] = env:start_with(
            { PAWL_WITNESS = w, PAWL_WITNESS_NODE = label },
            "--node-id", label, "--workers", "2", "--prefetch", "0", "--poll", "0.1",
            "--unsafe-lua", "--log-level", "warn")
        end
        for _, label in ipairs({ "A", "B", "C" }) do env:wait_node(label) end
      end, witnesses, function()
        for _, p in ipairs(nodes) do p:signal("TERM") end
        for _, p in ipairs(nodes) do
          assert(p:wait(H.HANG_S) == 0, "a node did not exit 0: " .. p:stderr())
        end
      end)
      -- The keys' jobs were shared: more than one node ran some.
      local ran = 0
      for _, w in ipairs(witnesses) do
        if ("\n" .. (P.read_file(w) or "")):find("\nE ", 1, true) then
          ran = ran + 1
        end
      end
      assert(ran >= 2, "only one node ran jobs")
    end)
  end

  it("one SQLite node with several workers: one job of a key at a time, in enqueue order", function()
    env = P.env(false) -- no server: the SQLite database of the env
    local w = env:path("witness.S")
    local node
    scenario(env, function()
      node = env:start_with({ PAWL_WITNESS = w, PAWL_WITNESS_NODE = "S" },
                            "--workers", "6", "--prefetch", "0", "--poll", "0.1",
                            "--unsafe-lua",
                            "--log-level", "warn")
    end, { w }, function()
      node:signal("TERM")
      assert(node:wait(H.HANG_S) == 0, "the node did not exit 0: " .. node:stderr())
    end)
  end)
end)

-- Where a job's key comes from: the script (a string, or a function of the
-- payload), the enqueue's own option, and what is refused.
describe("ordering keys at enqueue", function()
  local env

  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  local RUN = "run = function() end"

  it("a script's key string applies to CLI enqueues; --ordering-key wins", function()
    env = H.env()
    env:script("fixed", ("return { ordering_key = \"acct:7\", %s }"):format(RUN))
    local id = env:enqueue("fixed", "{}")
    assert.are.equal("acct:7", env:show(id).ordering_key)
    id = env:enqueue("fixed", "{}", "--ordering-key", "acct:8")
    assert.are.equal("acct:8", env:show(id).ordering_key)
    env:script("plain", ("return { %s }"):format(RUN))
    id = env:enqueue("plain", "{}")
    assert.are.equal(cjson.null, env:show(id).ordering_key)
  end)

  it("the CLI refuses a type whose key is computed from the payload, unless given", function()
    env = H.env()
    env:script("computed", ("return { ordering_key = function(p) return p.a end, %s }")
                           :format(RUN))
    local r = env:pawl("enqueue", "computed", "{\"a\":\"x\"}", "--scripts", env.scripts)
    assert.are.equal(2, r.code)
    assert.matches("computes ordering_key from the payload", r.err, 1, true)
    assert.matches("--ordering-key", r.err, 1, true)
    assert.are.equal("", (env:ok("jobs"):gsub("^ID[^\n]*\n", "")))
    local id = env:enqueue("computed", "{\"a\":\"x\"}", "--ordering-key", "x")
    assert.are.equal("x", env:show(id).ordering_key)
  end)

  it("a bad key is refused, naming it, and nothing is stored", function()
    env = H.env()
    local r = env:pawl("enqueue", "t", "{}", "--ordering-key", "")
    assert.are_not.equal(0, r.code)
    assert.matches("ordering key must not be empty", r.err, 1, true)
    assert.are.equal("", (env:ok("jobs"):gsub("^ID[^\n]*\n", "")))
  end)

  it("a script with a bad ordering setting does not load, saying why", function()
    env = H.env()
    env:script("badmode", ("return { ordering = \"fifo\", %s }"):format(RUN))
    env:script("badkey", ("return { ordering_key = \"\", %s }"):format(RUN))
    env:script("badtype", ("return { ordering_key = 42, %s }"):format(RUN))
    env:script("good", ("return { ordering = \"skip_failed\", %s }"):format(RUN))
    local function info()
      local t = {}
      for _, s in ipairs(assert(pawl.scripts(env.scripts))) do t[s.type] = s end
      return t
    end
    local t = info()
    assert.matches("ordering must be \"strict\" or \"skip_failed\" (got \"fifo\")",
                   t.badmode.error, 1, true)
    assert.matches("ordering_key must not be empty", t.badkey.error, 1, true)
    assert.matches("field ordering_key must be a function (got number)",
                   t.badtype.error, 1, true)
    assert.is_nil(t.good.error)
    -- A key for every type at once is not a default.
    env:script("_defaults", "return { ordering_key = \"k\" }")
    assert.matches("ordering_key belongs to a job type's script, not _defaults.lua",
                   info().good.error, 1, true)
  end)

  it("the Lua module applies a defined type's key; its option wins", function()
    env = H.env()
    local db = assert(pawl.open { db = env.db })
    db:define("acct", { run = function() end,
                        ordering_key = function(p) return "acct:" .. p.a end })
    db:define("none", { run = function() end,
                        ordering_key = function() return nil end })
    db:define("bad", { run = function() end,
                       ordering_key = function() return 42 end })
    local id = assert(db:enqueue("acct", { a = 1 }))
    assert.are.equal("acct:1", db:job(id).ordering_key)
    id = assert(db:enqueue("acct", "{\"a\":2}"))
    assert.are.equal("acct:2", db:job(id).ordering_key)
    id = assert(db:enqueue("acct", { a = 3 }, { ordering_key = "mine" }))
    assert.are.equal("mine", db:job(id).ordering_key)
    id = assert(db:enqueue("none", {}))
    assert.is_nil(db:job(id).ordering_key)
    local ids = assert(db:enqueue_many { { "acct", { a = 4 } }, { "none", {} } })
    assert.are.equal("acct:4", db:job(ids[1]).ordering_key)
    local ok, err = pcall(db.enqueue, db, "bad", {})
    assert.is_false(ok)
    assert.matches("ordering_key of type bad must be a string or nil (got number)",
                   tostring(err), 1, true)
    db:close()
  end)

  it("pawl.enqueue in job code computes the key from the target's script", function()
    env = H.env()
    env:script("target", ("return { ordering_key = function(p) return p.k end, %s }")
                         :format(RUN))
    env:script("badkey", ("return { ordering_key = function() return 42 end, %s }")
                         :format(RUN))
    env:script("source", [[return { run = function()
      pawl.enqueue("target", { k = "from-payload" })
      pawl.enqueue("target", { k = "ignored" }, { ordering_key = "from-opts" })
      pawl.enqueue("target", {})
      local ok, err = pcall(pawl.enqueue, "badkey", {})
      return { ok = ok, err = tostring(err) }
    end }]])
    local source = env:enqueue("source", "{}")
    env:run_idle()
    local result = env:show(source).result
    assert.is_false(result.ok)
    assert.matches("ordering_key of badkey returned a key that must be a string (got number)",
                   result.err, 1, true)
    local db = assert(pawl.open { db = env.db })
    local keys = {}
    for _, j in ipairs(assert(db:jobs { type = "target" })) do
      keys[#keys + 1] = j.ordering_key or "none"
    end
    table.sort(keys)
    assert.are.same({ "from-opts", "from-payload", "none" }, keys)
    db:close()
  end)
end)

-- A job waiting behind its key's head is not due while the head cannot
-- run (blocked on a dependency or a signal, or paused): `pawl run
-- --until-idle` ends instead of polling for it forever, and it runs, in
-- order, once the head is free. Each case starts from a fresh database.
describe("--until-idle with a key's head held", function()
  local env

  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  local pg_test = PG_SKIP and function(name)
    pending(name .. " -- SKIPPED: " .. PG_SKIP)
  end or it

  -- Enqueues the head as `hold` makes it, then `behind` jobs of the same
  -- key and one without a key; runs --until-idle; checks what ran.
  local function held_head(hold, behind)
    env = P.env(nil, "idlehold")
    env:script("w", "return { run = function() end }")
    local head = hold(env)
    local ids = {}
    for i = 1, behind do
      ids[i] = env:enqueue("w", "{}", "--ordering-key", "k")
    end
    local free = env:enqueue("w", "{}")
    local p = env:run_idle("--poll", "0.05")
    assert.are.equal(0, p.code, p:stderr())
    assert.are.equal("succeeded", env:show(free).state)
    for _, id in ipairs(ids) do
      assert.are.equal("pending", env:show(id).state)
    end
    return head, ids
  end

  pg_test("the head blocked by --blocked", function()
    local head, ids = held_head(function(e)
      return e:enqueue("w", "{}", "--ordering-key", "k", "--blocked")
    end, 3)
    assert.are.equal("blocked", env:show(head).state)
    assert.are.equal(3, #ids)
  end)

  pg_test("the head blocked on a parent that never ends", function()
    held_head(function(e)
      local parent = e:enqueue("w", "{}", "--blocked")
      return e:enqueue("w", "{}", "--ordering-key", "k", "--after", parent)
    end, 2)
  end)

  pg_test("the head paused; resumed, everything runs in order", function()
    local head, ids = held_head(function(e)
      local id = e:enqueue("w", "{}", "--ordering-key", "k")
      e:ok("pause", id)
      return id
    end, 2)
    env:ok("resume", head)
    local p = env:run_idle("--poll", "0.05")
    assert.are.equal(0, p.code, p:stderr())
    local last = env:show(head)
    assert.are.equal("succeeded", last.state)
    for _, id in ipairs(ids) do
      local j = env:show(id)
      assert.are.equal("succeeded", j.state)
      assert.is_true(H.ms(j.started_at) >= H.ms(last.finished_at),
                     "a job of the key started before the one ahead ended")
      last = j
    end
  end)
end)
