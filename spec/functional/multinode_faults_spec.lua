-- multinode_faults_spec.lua: what an operator does to several `pawl run`
-- nodes sharing one database, checked against per-key ordering and
-- resource limits, on both stores (on SQLite the nodes are processes
-- sharing the database file): a node killed with SIGKILL while it holds
-- keyed and limited jobs; a node killed again and again wherever it is; a
-- node started with another scripts directory; and, on SQLite,
-- another process holding the write lock for longer than the busy
-- timeout.
--
-- Every execution of a job appends to one witness file (one write(2) per
-- line, in append mode, so the lines of the nodes interleave whole):
--
--   S <job> <key> <i> <attempt> <node> <time>     when the body starts
--   E <job> <key> <i> <attempt> <node> <time>     when it has ended
--
-- (<key> is the ordering key, or the resource for a limited job; times
-- from pawl.time(), one machine, one clock). A killed node leaves start
-- lines without their end: those executions are taken to last until the
-- kill. Nothing waits on time: jobs are held at gates, and waits are for
-- conditions, with hang guards as caps.
local cjson = require "cjson"
local pawl = require "pawl"
local H = require "host_helper"
local P = require "pg_helper"

local SKIP = P.skip_reason()
if SKIP then
  io.stderr:write("\n*** multinode_faults_spec: " .. SKIP .. " ***\n\n")
end

local NOTE = H.GATE_LUA .. [[
local function note(kind, job, key)
  local f = assert(io.open(assert(os.getenv("PAWL_WITNESS")), "a"))
  assert(f:write(("%s %s %s %d %d %s %.6f\n"):format(kind, job.id, key,
    job.payload.i, job.attempt, assert(os.getenv("PAWL_WITNESS_NODE")), pawl.time())))
  assert(f:close())
end
-- The body: witnessed, held at payload.gate on the node payload.hold_on
-- names (every node when it names none), and payload.ms long.
local function body(job, key)
  note("S", job, key)
  local p = job.payload
  if p.gate and (p.hold_on == nil or p.hold_on == os.getenv("PAWL_WITNESS_NODE")) then
    pawl_gate(p.gate, 600)
  end
  if p.ms then pawl.sleep(p.ms / 1000) end
  note("E", job, key)
end
]]

-- A job of an ordering key (the payload's), strict ordering.
local KEYED = NOTE .. [[
return {
  ordering_key = function(payload) return payload.key end,
  run = function(job) body(job, job.payload.key) end,
}
]]

-- A job holding a permit of resource "smtp".
local LIMITED = NOTE .. [[
return { resource = "smtp", run = function(job) body(job, "smtp") end }
]]

local PLAIN = NOTE .. [[
return { run = function(job) body(job, "plain") end }
]]

-- The witnessed executions: list of {kind, id, key, i, attempt, node, t}
-- in file order.
local function read_witness(path)
  local text = P.read_file(path) or ""
  assert(text == "" or text:sub(-1) == "\n", "the witness ends in a partial line")
  local list = {}
  for line in text:gmatch("[^\n]+") do
    local kind, id, key, i, attempt, node, t =
      line:match("^([SE]) (%S+) (%S+) (%d+) (%d+) (%S+) ([%d.]+)$")
    assert(kind, "malformed witness line: " .. line)
    list[#list + 1] = { kind = kind, id = id, key = key, i = tonumber(i),
                        attempt = tonumber(attempt), node = node,
                        t = tonumber(t), line = line }
  end
  return list
end

-- Executions (a start with its end, if any) grouped by key: key -> list of
-- {id, i, attempt, node, start, finish}, by start. An execution without
-- its end finishes when its node was killed (`kills[node]`: the times
-- its processes were killed, in order; the first at or after its start),
-- and is marked open.
local function executions(lines, kills)
  local open, by_key = {}, {}
  for _, e in ipairs(lines) do
    local k = e.id .. " " .. e.attempt .. " " .. e.node
    if e.kind == "S" then
      assert(not open[k], "two starts of one execution: " .. e.line)
      open[k] = { id = e.id, key = e.key, i = e.i, attempt = e.attempt,
                  node = e.node, start = e.t }
    else
      local x = assert(open[k], "an end without its start: " .. e.line)
      x.finish = e.t
      open[k] = nil
      by_key[x.key] = by_key[x.key] or {}
      table.insert(by_key[x.key], x)
    end
  end
  for _, x in pairs(open) do
    for _, t in ipairs(kills[x.node] or {}) do
      if t >= x.start then
        x.finish = t
        break
      end
    end
    assert(x.finish, ("node %s left job %s unfinished, but was not killed after it started")
                     :format(x.node, x.id))
    x.open = true
    by_key[x.key] = by_key[x.key] or {}
    table.insert(by_key[x.key], x)
  end
  for _, list in pairs(by_key) do
    table.sort(list, function(a, b) return a.start < b.start end)
  end
  return by_key
end

local function describe_runs(list)
  local out = {}
  for _, x in ipairs(list) do
    out[#out + 1] = ("  job %d attempt %d on %s: %.3f .. %.3f%s"):format(x.i, x.attempt,
      x.node, x.start, x.finish, x.open and " (killed)" or "")
  end
  return table.concat(out, "\n")
end

-- The most executions of `list` running at one moment (an end before a
-- start at one time).
local function max_overlap(list)
  local ev = {}
  for _, x in ipairs(list) do
    ev[#ev + 1] = { x.start, 1 }
    ev[#ev + 1] = { x.finish, -1 }
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

-- A key's executions never overlap, and run its jobs in enqueue order:
-- 1..n, each to its end before the next starts. A job runs again (a later
-- attempt, before the next job) only after an execution on a node that
-- was killed (`kills`: node -> kill times), cut short or ended with its
-- outcome not yet stored; its last execution ran to its end.
local function check_key(key, list, n, kills)
  local got = {}
  for idx, x in ipairs(list) do
    local prev = list[idx - 1]
    if prev then
      assert(prev.finish <= x.start,
             ("key %s: two executions overlap:\n%s"):format(key, describe_runs(list)))
    end
    if prev and prev.i == x.i then
      assert(kills[prev.node] and x.attempt > prev.attempt,
             ("key %s: job %d ran again, not after a killed node's attempt:\n%s")
               :format(key, x.i, describe_runs(list)))
    else
      got[#got + 1] = x.i
    end
    local next_ = list[idx + 1]
    if not next_ or next_.i ~= x.i then
      assert(not x.open, ("key %s: job %d never ran to its end after a kill:\n%s")
                           :format(key, x.i, describe_runs(list)))
    end
  end
  local want = {}
  for i = 1, n do want[i] = i end
  assert.are.same(want, got, ("key %s: not each job to its end, in enqueue order:\n%s")
                             :format(key, describe_runs(list)))
end

local function stop(nodes)
  for _, p in ipairs(nodes) do p:signal("TERM") end
  for _, p in ipairs(nodes) do
    assert(p:wait(H.HANG_S) == 0, "a node did not exit 0: " .. p:stderr())
  end
end

local function start_node(env, label, witness, ...)
  return env:start_with({ PAWL_WITNESS = witness, PAWL_WITNESS_NODE = label },
                        "--node-id", label, "--prefetch", "0", "--poll", "0.1",
                        "--unsafe-lua", "--log-level", "info", ...)
end

local KEYS, PER_KEY, NSMTP, MAX = { "k1", "k2" }, 4, 4, 2

-- Enqueues PER_KEY jobs of each key (round by round) and NSMTP smtp jobs,
-- every one held at `gate` on node `hold_on`; returns the ids.
local function enqueue_all(env, gate, hold_on)
  local ids = {}
  for i = 1, PER_KEY do
    for _, key in ipairs(KEYS) do
      ids[#ids + 1] = env:enqueue("keyed", H.json { key = key, i = i, gate = gate,
                                                    hold_on = hold_on },
                                  "--ordering-key", key)
    end
  end
  for i = 1, NSMTP do
    ids[#ids + 1] = env:enqueue("smtp", H.json { i = i, gate = gate, hold_on = hold_on })
  end
  return ids
end

-- Flows: a fan-in's parents, its child, a batch's children and its
-- callback, each witnessed under its type.
local FLOW = NOTE .. [[
return { run = function(job) body(job, job.payload.kind) end }
]]

for _, be in ipairs(P.backends(it, pending)) do
  describe("several nodes on " .. be.name .. ", a node killed", function()
    local env
    after_each(function()
      if env then env:cleanup() end
      env = nil
    end)

    be.test("mid keyed and limited jobs: the other node takes them back in order, within the limit", function()
      env = be.env("faults")
      env:script("keyed", KEYED)
      env:script("smtp", LIMITED)
      env:script("plain", PLAIN)
      env:ok("migrate")
      env:ok("limit", "set", "smtp", tostring(MAX))
      local witness = env:path("witness")
      -- B's jobs wait at a gate that never opens: it holds them when it dies.
      local never = env:gate("never")
      local ids = enqueue_all(env, never.path, "B")
      -- B alone first: with 4 workers it takes the first job of each key
      -- and both smtp permits, and holds them.
      local LEASE = 3
      local b = start_node(env, "B", witness, "--workers", "4", "--lease", tostring(LEASE))
      never:wait_reached(#KEYS + MAX)
      local held = {}
      for _, e in ipairs(read_witness(witness)) do held[e.key] = (held[e.key] or 0) + 1 end
      assert.are.same({ k1 = 1, k2 = 1, smtp = MAX }, held)
      -- A comes up while B lives: it may run nothing of a held key, nor of
      -- the used-up resource. A plain job, which only A can take (B's
      -- workers are all held and it claims none ahead), shows A has
      -- claimed since.
      local a = start_node(env, "A", witness, "--workers", "4", "--lease", tostring(LEASE))
      env:wait_node("A")
      local probe = env:enqueue("plain", H.json { i = 1 })
      env:wait_state(probe, "succeeded")
      for _, e in ipairs(read_witness(witness)) do
        assert(e.node == "B" or e.key == "plain", "A ran a held key's or resource's job while B "
               .. "lived: " .. e.line)
      end
      b:signal("KILL")
      assert.are.equal(137, b:wait(H.HANG_S))
      local killed_at = P.wall()

      env:wait_until("every job to succeed", function()
        for _, id in ipairs(ids) do
          if env:show(id).state ~= "succeeded" then return false end
        end
        return true
      end, 5 * H.HANG_S)
      stop({ a })
      assert.matches("took back jobs whose lease expired", a:stderr(), 1, true)

      local by_key = executions(read_witness(witness), { B = { killed_at } })
      for _, key in ipairs(KEYS) do check_key(key, by_key[key], PER_KEY, { B = { killed_at } }) end
      -- The limit held, counting B's held jobs to the kill; and it was
      -- reached again after it.
      local smtp = by_key.smtp
      assert(max_overlap(smtp) <= MAX, "more than " .. MAX .. " smtp jobs at once:\n"
             .. describe_runs(smtp))
      local done = {}
      for _, x in ipairs(smtp) do
        if not x.open then
          assert(not done[x.i], "smtp job " .. x.i .. " ran to its end twice")
          done[x.i] = true
        end
      end
      for i = 1, NSMTP do assert(done[i], "smtp job " .. i .. " never ran to its end") end
      -- What B held was run again after the kill, by A, under a new
      -- attempt; B's attempts are recorded as lost.
      for _, list in pairs(by_key) do
        for _, x in ipairs(list) do
          if x.open then
            local j = env:show(x.id)
            assert.are.equal(2, j.attempt, cjson.encode(j))
            assert.are.equal("lost", j.attempts[1].outcome, cjson.encode(j))
            assert.are.equal("B", j.attempts[1].node, cjson.encode(j))
          elseif x.node == "A" and x.attempt == 2 then
            assert(x.start >= killed_at, "a job of B ran again before B was killed")
          end
        end
      end
    end)

    be.test("holding a fan-in's parents and a batch's children: the child and the callback run once", function()
      env = be.env("flows")
      for _, t in ipairs({ "parent", "join", "child", "cb" }) do env:script(t, FLOW) end
      env:ok("migrate")
      local witness = env:path("witness")
      local never = env:gate("never")
      local N = 8
      -- Two parents and two children come first in claim order (priority
      -- 1): those are the ones B takes.
      local parents = {}
      for i = 1, N do
        parents[i] = env:enqueue("parent", H.json { kind = "parent", i = i, gate = never.path,
                                                    hold_on = "B" },
                                 "--priority", i <= 2 and "1" or "0")
      end
      local join = env:enqueue("join", H.json { kind = "join", i = 1 }, "--after",
                               table.concat(parents, ","))
      local h = assert(pawl.open { db = env.db, node_id = "spec-enqueuer" })
      local jobs = {}
      for i = 1, N do
        jobs[i] = { "child", { kind = "child", i = i, gate = never.path, hold_on = "B" },
                    { priority = i <= 2 and 1 or 0 } }
      end
      local bid = assert(h:batch { jobs = jobs,
                                   on_complete = { "cb", { kind = "cb", i = 1 } } })
      -- B first, alone: its 4 workers hold two parents and two children.
      local b = start_node(env, "B", witness, "--workers", "4", "--lease", "3")
      never:wait_reached(4)
      local held = {}
      for _, e in ipairs(read_witness(witness)) do held[e.key] = (held[e.key] or 0) + 1 end
      assert.are.same({ parent = 2, child = 2 }, held)
      -- A runs everything else (it passes the gate) while B holds its 4.
      local a = start_node(env, "A", witness, "--workers", "4", "--lease", "30")
      env:wait_until("A to end every parent and child B does not hold", function()
        local ended = 0
        for _, e in ipairs(read_witness(witness)) do
          if e.node == "A" and e.kind == "E" then ended = ended + 1 end
        end
        return ended == 2 * N - 4
      end, 5 * H.HANG_S)
      assert.are.same({}, env:all_jobs("cb"))
      assert.are.equal("blocked", env:show(join).state)
      b:signal("KILL")
      assert.are.equal(137, b:wait(H.HANG_S))
      local killed_at = P.wall()
      env:wait_state(join, "succeeded", 5 * H.HANG_S)
      local b_ = env:wait_until("the batch's callback to be enqueued and succeed", function()
        local got = h:batch_get(bid)
        local cbs = env:all_jobs("cb")
        return #cbs > 0 and cbs[1].state == "succeeded" and got
      end, 5 * H.HANG_S)
      h:close()
      stop({ a })

      assert.are.same({ N, N, 0, 0 }, { b_.total, b_.succeeded, b_.failed, b_.canceled })
      assert.are.equal(1, #env:all_jobs("cb"))
      local by_key = executions(read_witness(witness), { B = { killed_at } })
      -- The child and the callback ran once each, after every parent
      -- (child) or child (callback) had run to its end.
      for _, pair in ipairs({ { "join", "parent" }, { "cb", "child" } }) do
        local kind, before = pair[1], pair[2]
        local runs = by_key[kind]
        assert.are.equal(1, #runs, describe_runs(runs or {}))
        assert.is_nil(runs[1].open)
        local last, count = 0, {}
        for _, x in ipairs(by_key[before]) do
          if not x.open then
            last = math.max(last, x.finish)
            count[x.i] = (count[x.i] or 0) + 1
          end
        end
        for i = 1, N do
          assert.are.equal(1, count[i], ("%s %d ran to its end %s times:\n%s")
                           :format(before, i, tostring(count[i]), describe_runs(by_key[before])))
        end
        assert(runs[1].start >= last, ("%s started before the last %s ended:\n%s\n%s")
               :format(kind, before, describe_runs(runs), describe_runs(by_key[before])))
      end
    end)

    be.test("again and again, at whatever it is doing: keys stay in order, the limit holds, nothing is lost", function()
      env = be.env("kills")
      env.gated = true -- the jobs write the witness: --allow-io
      env:script("keyed", KEYED)
      env:script("smtp", LIMITED)
      env:ok("migrate")
      local LIMIT = 3
      env:ok("limit", "set", "smtp", tostring(LIMIT))
      local witness = env:path("witness")
      -- 20 keys of 50 jobs and 50 smtp jobs, 20 ms each, enqueued round by
      -- round.
      local NK, PK = 20, 50
      local h = assert(pawl.open { db = env.db, node_id = "spec-enqueuer" })
      local items = {}
      for i = 1, PK do
        for k = 1, NK do
          items[#items + 1] = { "keyed", { key = "k" .. k, i = i, ms = 20 },
                                { ordering_key = "k" .. k } }
        end
        items[#items + 1] = { "smtp", { i = i, ms = 20 }, { resource = "smtp" } }
      end
      local ids = assert(h:enqueue_many(items))
      h:close()
      local a = start_node(env, "A", witness, "--workers", "3", "--lease", "2")
      -- B, under one node id, killed each time it has started 30 more
      -- bodies (wherever in a claim, a body or an outcome write that
      -- finds it), then started again: 8 times.
      local function b_starts()
        local n = 0
        for _, e in ipairs(read_witness(witness)) do
          if e.node == "B" and e.kind == "S" then n = n + 1 end
        end
        return n
      end
      local kills = {}
      for round = 1, 8 do
        local before = b_starts()
        local b = start_node(env, "B", witness, "--workers", "4", "--lease", "2")
        env:wait_until(("B#%d to start 30 bodies"):format(round), function()
          return b_starts() >= before + 30 or not b:alive()
        end, 5 * H.HANG_S)
        assert(b:alive(), "B ended by itself: " .. b:stderr())
        b:signal("KILL")
        assert.are.equal(137, b:wait(H.HANG_S))
        kills[#kills + 1] = P.wall()
      end
      env:wait_until("every job to succeed", function()
        return env:count_state("succeeded") == 1000 and
               #H.json_lines(env:ok("jobs", "--json", "--state", "succeeded",
                                    "--limit", "100000")) == #ids
      end, 5 * H.HANG_S)
      stop({ a })

      local by_key = executions(read_witness(witness), { B = kills })
      for k = 1, NK do check_key("k" .. k, by_key["k" .. k], PK, { B = kills }) end
      assert(max_overlap(by_key.smtp) <= LIMIT, "more than " .. LIMIT .. " smtp jobs at once:\n"
             .. describe_runs(by_key.smtp))
      local done = {}
      for _, x in ipairs(by_key.smtp) do
        if not x.open then done[x.i] = (done[x.i] or 0) + 1 end
      end
      for i = 1, PK do assert(done[i], "smtp job " .. i .. " never ran to its end") end
      if be.key == "sqlite" then
        assert.are.equal("ok\n", H.sqlite3(env.db_path, "PRAGMA integrity_check"))
      end
    end)
  end)
end

-- Another process (the sqlite3 shell) holds SQLite's write lock for
-- longer than the nodes' busy timeout (5 s), while their jobs end: claims,
-- heartbeats and outcome writes fail with "database is locked" until it
-- lets go. The nodes must keep the outcomes and write them afterwards,
-- without crashing, running anything twice or breaking ordering or limits.
local SQLITE3 = H.have_sqlite3 and H.capture("command -v sqlite3"):match("(%S+)")
describe("several nodes on SQLite, the write lock held elsewhere", function()
  local env
  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  local test = SQLITE3 and it or function(name) pending(name .. " -- no sqlite3 shell") end
  test("past the busy timeout: outcomes wait and are stored once, in order, within the limit", function()
    env = P.env(false)
    env:script("keyed", KEYED)
    env:script("smtp", LIMITED)
    env:ok("migrate")
    env:ok("limit", "set", "smtp", tostring(MAX))
    local witness = env:path("witness")
    local gate = env:gate("jobs")
    local ids = enqueue_all(env, gate.path, nil)
    -- A lease far over the hold: no lease may lapse, so nothing may run
    -- twice.
    local nodes = {
      start_node(env, "A", witness, "--workers", "2", "--lease", "120"),
      start_node(env, "B", witness, "--workers", "2", "--lease", "120"),
    }
    -- Both nodes' workers all hold a job: the first of each key and the
    -- two smtp jobs.
    gate:wait_reached(#KEYS + MAX)
    local locked, release = env:path("locked"), env:path("release")
    local holder = env:spawn_program({ SQLITE3, env.db_path, ".timeout 60000",
      "BEGIN IMMEDIATE;", "INSERT INTO pawl_limits (name, max_running, updated_at) VALUES ('held', 1, 0);",
      ".shell touch " .. H.quote(locked),
      ".shell while [ ! -e " .. H.quote(release) .. " ]; do sleep 0.02; done",
      "COMMIT;" })
    env:wait_until("the sqlite3 shell to hold the write lock", function()
      return H.exists(locked) or not holder:alive()
    end)
    assert(holder:alive(), "the sqlite3 shell ended: " .. holder:stderr() .. holder:stdout())
    -- The held jobs end now: their outcomes meet the lock.
    gate:open()
    env:wait_until("both nodes to fail a claim and one an outcome write", function()
      local outcomes = 0
      for _, p in ipairs(nodes) do
        if p:count("claim failed") == 0 then return false end
        outcomes = outcomes + p:count("writing outcomes failed")
      end
      return outcomes > 0
    end, 5 * H.HANG_S)
    for _, p in ipairs(nodes) do
      assert(p:alive(), "a node ended while the database was locked: " .. p:stderr())
      assert.matches("database is locked", p:stderr(), 1, true)
    end
    H.write_file(release, "")
    assert.are.equal(0, holder:wait(H.HANG_S), holder:stderr())

    env:wait_until("every job to succeed", function()
      for _, id in ipairs(ids) do
        if env:show(id).state ~= "succeeded" then return false end
      end
      return true
    end, 5 * H.HANG_S)
    stop(nodes)
    -- The holder's write landed whole.
    assert.matches("held", env:ok("limit", "list"), 1, true)

    -- Each job ran once (its first attempt, no attempt lost), each key in
    -- order, never more than MAX smtp jobs at once.
    local by_key = executions(read_witness(witness), {})
    for _, key in ipairs(KEYS) do check_key(key, by_key[key], PER_KEY, {}) end
    assert(max_overlap(by_key.smtp) <= MAX, "more than " .. MAX .. " smtp jobs at once:\n"
           .. describe_runs(by_key.smtp))
    assert.are.equal(NSMTP, #by_key.smtp, describe_runs(by_key.smtp))
    for _, id in ipairs(ids) do
      local j = env:show(id)
      assert.are.equal(1, j.attempt, cjson.encode(j))
      assert.are.equal(1, #j.attempts, cjson.encode(j))
    end
  end)
  -- A node (re)started while the lock is held: it waits for the lock as a
  -- running node does, instead of exiting because opening the database
  -- met the busy timeout.
  test("a node started while another process holds the lock past the busy timeout waits, then runs", function()
    env = P.env(false)
    env:script("keyed", KEYED)
    env:ok("migrate")
    local witness = env:path("witness")
    local id = env:enqueue("keyed", H.json { key = "k1", i = 1 }, "--ordering-key", "k1")
    local locked, release = env:path("locked"), env:path("release")
    local holder = env:spawn_program({ SQLITE3, env.db_path, ".timeout 60000",
      "BEGIN IMMEDIATE;", "INSERT INTO pawl_limits (name, max_running, updated_at) VALUES ('held', 1, 0);",
      ".shell touch " .. H.quote(locked),
      ".shell while [ ! -e " .. H.quote(release) .. " ]; do sleep 0.02; done",
      "COMMIT;" })
    env:wait_until("the sqlite3 shell to hold the write lock", function()
      return H.exists(locked) or not holder:alive()
    end)
    assert(holder:alive(), "the sqlite3 shell ended: " .. holder:stderr() .. holder:stdout())
    local node = start_node(env, "A", witness, "--workers", "1", "--until-idle",
                            "--idle-wait", "0")
    -- It met the busy timeout (5 s), said so, and waits.
    env:wait_until("the node to report the locked database", function()
      return node:count("database is locked") > 0 or not node:alive()
    end)
    assert(node:alive(), ("the node exited (status %s) while the database was locked:\n%s")
                         :format(tostring(node.code), node:stderr()))
    H.write_file(release, "")
    assert.are.equal(0, holder:wait(H.HANG_S), holder:stderr())
    assert.are.equal(0, node:wait(2 * H.HANG_S), node:stderr())
    assert.are.equal("succeeded", env:show(id).state)
    assert.matches("waiting for it", node:stderr(), 1, true)
  end)

  test("... and with --until-idle gives up after --give-up seconds, saying why", function()
    env = P.env(false)
    env:script("keyed", KEYED)
    env:ok("migrate")
    local locked, release = env:path("locked"), env:path("release")
    local holder = env:spawn_program({ SQLITE3, env.db_path, ".timeout 60000",
      "BEGIN IMMEDIATE;", "INSERT INTO pawl_limits (name, max_running, updated_at) VALUES ('held', 1, 0);",
      ".shell touch " .. H.quote(locked),
      ".shell while [ ! -e " .. H.quote(release) .. " ]; do sleep 0.02; done",
      "COMMIT;" })
    env:wait_until("the sqlite3 shell to hold the write lock", function()
      return H.exists(locked) or not holder:alive()
    end)
    assert(holder:alive(), "the sqlite3 shell ended: " .. holder:stderr() .. holder:stdout())
    local node = start_node(env, "A", env:path("witness"), "--until-idle", "--give-up", "1")
    assert.are.equal(1, node:wait(2 * H.HANG_S), node:stderr())
    assert.matches("gave up: opening the database has failed for [%d.]+ s: .*database is locked",
                   node:stderr())
    H.write_file(release, "")
    assert.are.equal(0, holder:wait(H.HANG_S), holder:stderr())
  end)
end)

-- A node started with another scripts directory (a wrong --scripts) on a
-- database whose other node has the scripts. Its claims fail those jobs
-- ("no script for job type X") under its _defaults.lua's retry policy;
-- the jobs then run where the script is, each key still in enqueue order
-- (a failed job waits for its retry before the next of its key) and the
-- limit held.
for _, be in ipairs(P.backends(it, pending)) do
  describe("several nodes on " .. be.name .. ", one without the scripts", function()
    local env
    after_each(function()
      if env then env:cleanup() end
      env = nil
    end)

    be.test("its failures are retried where the scripts are, in key order, within the limit", function()
      env = be.env("scripts")
      env:script("keyed", KEYED)
      env:script("smtp", LIMITED)
      env:ok("migrate")
      env:ok("limit", "set", "smtp", tostring(MAX))
      local witness = env:path("witness")
      local ids = enqueue_all(env, nil, nil)
      -- C first, alone, with a scripts directory of its own that has none
      -- of these scripts, only a _defaults.lua, whose settings the jobs it
      -- cannot run follow: retried at once, so that they come back while
      -- both nodes run (not backing off for minutes), and never given up
      -- (C wins many of the races for them).
      local scripts, other = env.scripts, env:path("other-scripts")
      assert(H.sh("mkdir " .. H.quote(other)))
      H.write_file(other .. "/_defaults.lua",
                   "return { max_attempts = 1000, retry = function() return 0.2 end }")
      env.scripts = other
      local c = start_node(env, "C", witness, "--workers", "2", "--lease", "30")
      env.scripts = scripts
      local function failed_on_c()
        local n = 0
        for _, id in ipairs(ids) do
          for _, at in ipairs(env:show(id).attempts) do
            -- (An attempt of C's may be in progress when this looks.)
            if at.node == "C" and at.outcome ~= "running" then
              assert.are.equal("retry", at.outcome, cjson.encode(at))
              assert.matches("no script for job type", at.error, 1, true)
              n = n + 1
            end
          end
        end
        return n
      end
      -- The first job of each key and the smtp jobs it could take failed
      -- on C before A comes up.
      env:wait_until("C to fail the first jobs", function() return failed_on_c() >= #KEYS + MAX end)
      local a = start_node(env, "A", witness, "--workers", "4", "--lease", "30")
      env:wait_until("every job to succeed", function()
        for _, id in ipairs(ids) do
          if env:show(id).state ~= "succeeded" then return false end
        end
        return true
      end, 5 * H.HANG_S)
      stop({ a, c })
      local n_c = failed_on_c()

      local lines = read_witness(witness)
      for _, e in ipairs(lines) do
        assert.are.equal("A", e.node, "a body ran on the node without the scripts: " .. e.line)
      end
      local by_key = executions(lines, {})
      for _, key in ipairs(KEYS) do check_key(key, by_key[key], PER_KEY, {}) end
      assert(max_overlap(by_key.smtp) <= MAX, "more than " .. MAX .. " smtp jobs at once:\n"
             .. describe_runs(by_key.smtp))
      assert.are.equal(NSMTP, #by_key.smtp, describe_runs(by_key.smtp))
      -- Each job's last attempt is its one success, on A.
      for _, id in ipairs(ids) do
        local j = env:show(id)
        local last = j.attempts[#j.attempts]
        assert.are.same({ "succeeded", "A" }, { last.outcome, last.node }, cjson.encode(j))
      end
      io.stderr:write(("\nmultinode_faults_spec (%s): %d attempts failed on the node "
                       .. "without the scripts\n"):format(be.name, n_c))
    end)
  end)
end
