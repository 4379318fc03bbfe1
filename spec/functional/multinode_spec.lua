-- multinode_spec.lua: several `pawl run` nodes on one PostgreSQL database
-- (and, for "every job exactly once", on one SQLite file).
--
-- Every test gets a schema of its own on the throwaway server of the ctest
-- fixture `pg` (the database-restart test starts a private server, so that
-- stopping it disturbs no other test). Real `pawl run` processes do the
-- work; each job appends to a witness file of its node process (the path
-- is in $PAWL_WITNESS, the node's label in $PAWL_WITNESS_NODE):
--
--   S <job id> <label> <attempt> <start>           when the body starts
--   E <job id> <label> <attempt> <start> <end>     when it has finished
--
-- (times from pawl.time(), the wall clock). Each line is one write(2) to a
-- file opened in append mode, so a killed node leaves whole lines only: a
-- start line without its end line is a job the node was running when it
-- died. What the witnesses say is checked against what the database says.
--
-- Nothing here bets on the machine's speed: where a test needs
-- nodes to be in the middle of jobs at some moment (a node killed, the
-- database stopped), it holds those jobs at a gate (host_helper's
-- env:gate()) until it is done with that moment; waits are for conditions,
-- with hang guards as caps.
--
-- PAWL_TEST_NO_PG=1 marks every test pending, loudly.
local cjson = require "cjson"
local pawl = require "pawl"
local P = require "pg_helper"

local SKIP = P.skip_reason()
if SKIP then
  io.stderr:write("\n*** multinode_spec: " .. SKIP .. " ***\n\n")
end
local test = SKIP and function(name)
  pending(name .. " -- SKIPPED: " .. SKIP)
end or it

-- Job states as stored.
local SUCCEEDED = 2

-- How long a whole run of thousands of jobs may take before a test calls
-- it a hang: a few seconds normally, several times that under
-- AddressSanitizer on a loaded machine.
local HANG_RUN_S = 5 * P.HANG_S

-- The job every test runs: sleeps payload.ms milliseconds between its two
-- witness lines. With payload.gate it first waits at that gate: on every
-- node, or, with payload.hold_on, only on the node of that label.
local WORK = P.GATE_LUA .. [[
local function note(line)
  local f = assert(io.open(assert(os.getenv("PAWL_WITNESS")), "a"))
  assert(f:write(line))
  assert(f:close())
end
return {
  max_attempts = 5,
  run = function(job)
    local node = os.getenv("PAWL_WITNESS_NODE")
    local t0 = pawl.time()
    note(("S %s %s %d %.6f\n"):format(job.id, node, job.attempt, t0))
    local p = job.payload
    if p.gate and (p.hold_on == nil or p.hold_on == node) then
      pawl_gate(p.gate, 600)
    end
    pawl.sleep(p.ms / 1000)
    note(("E %s %s %d %.6f %.6f\n"):format(job.id, node, job.attempt, t0,
                                           pawl.time()))
  end,
}
]]

-- ---- helpers ----------------------------------------------------------------

local function count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

local function sorted_keys(t)
  local list = {}
  for k in pairs(t) do list[#list + 1] = k end
  table.sort(list)
  return list
end

-- Raises with `title` and the first 25 problems, if there are any.
local function no_problems(title, problems, context)
  if #problems == 0 then return end
  local shown = {}
  for i = 1, math.min(#problems, 25) do shown[i] = "  " .. problems[i] end
  if #problems > 25 then shown[#shown + 1] = ("  ... and %d more"):format(#problems - 25) end
  error(("%s: %d problem(s):\n%s%s"):format(title, #problems,
                                          table.concat(shown, "\n"),
                                          context and ("\n" .. context) or ""), 2)
end

-- The warnings and errors the nodes logged (at most 40 lines), for
-- failure messages: what a node says of a job it did not run.
local function nodes_warned(nodes)
  local lines = {}
  for _, p in ipairs(nodes) do
    for line in p:stderr():gmatch("[^\n]+") do
      if #lines < 40 and (line:find(" warn ", 1, true) or line:find(" error ", 1, true)) then
        lines[#lines + 1] = ("  %s: %s"):format(p.label or "?", line)
      end
    end
  end
  return #lines > 0 and ("what the nodes logged:\n" .. table.concat(lines, "\n")) or nil
end

-- The last `n` lines of a process's stderr, for failure messages.
local function tail(p, n)
  local lines = {}
  for line in p:stderr():gmatch("[^\n]+") do lines[#lines + 1] = line end
  local from = math.max(1, #lines - (n or 15) + 1)
  return table.concat(lines, "\n", from)
end

local function procs_report(env)
  local parts = {}
  for _, p in ipairs(env.procs) do
    parts[#parts + 1] = ("-- %s [%s] (%s), stderr tail:\n%s"):format(
      p.label or "?", table.concat(p.argv, " ", 2),
      p:alive() and "running" or ("exited " .. tostring(p.code)), tail(p))
  end
  return table.concat(parts, "\n")
end

-- Enqueues `n` jobs of type "work" in one transaction through the Lua
-- module; job i sleeps ms(i) milliseconds, and has the payload fields
-- extra(i) returns (if given). Returns the set of ids and the list in
-- order.
local function enqueue_work(env, n, ms, extra)
  local h = assert(pawl.open{ db = env.db, node_id = "spec-enqueuer" })
  local items = {}
  for i = 1, n do
    local payload = { i = i, ms = ms(i) }
    for k, v in pairs(extra and extra(i) or {}) do payload[k] = v end
    items[i] = { "work", payload }
  end
  local ok, ids, statuses = pcall(h.enqueue_many, h, items)
  h:close()
  assert(ok, ids)
  assert.are.equal(n, #ids)
  local set = {}
  for i, id in ipairs(ids) do
    assert.are.equal("new", statuses[i])
    set[id] = true
  end
  return set, ids
end

-- The application_name a node's connections carry (see start_node).
local function app_name(label) return "pawl-" .. label:gsub("[^%w]", "") end

-- Starts a node: `pawl run` with node id `node_id`, witnessing into
-- witness.LABEL. On PostgreSQL its connections carry application_name
-- app_name(label), so the test can see them in pg_stat_activity. Returns the process
-- (p.label, p.witness set).
local function start_node(env, node_id, label, ...)
  local witness = env:path("witness." .. label)
  local db = env.db
  if env.sql_url then env.db = ("%s application_name=%s"):format(db, app_name(label)) end
  local ok, p = pcall(env.start_with, env,
                      { PAWL_WITNESS = witness, PAWL_WITNESS_NODE = label },
                      "--node-id", node_id, "--unsafe-lua",
                      "--log-level", "warn", ...)
  env.db = db
  if not ok then error(p, 2) end
  p.label, p.witness = label, witness
  return p
end

-- Witnessed executions of a node so far: how many started, how many ended.
local function witnessed(p)
  local started, ended = 0, 0
  for k in (P.read_file(p.witness) or ""):gmatch("([SE]) ") do
    if k == "S" then started = started + 1 else ended = ended + 1 end
  end
  return started, ended
end

-- Waits until the node table lists `node_id` with an incarnation other
-- than `not_incarnation`: its poller runs (it beats once its workers are
-- ready). Returns the incarnation.
local function wait_node(env, node_id, not_incarnation, timeout)
  return env:wait_until(("node %s to be up"):format(node_id), function()
    local rows = env:rows(("SELECT incarnation FROM pawl_nodes WHERE id = '%s'")
                          :format(node_id))
    local inc = rows[1] and rows[1][1]
    return inc and inc ~= not_incarnation and inc
  end, timeout)
end

-- Jobs by state, as "state=count ..." text.
local function state_counts(env)
  local parts = {}
  for _, r in ipairs(env:rows("SELECT state, count(*) FROM pawl_jobs GROUP BY 1 ORDER BY 1")) do
    parts[#parts + 1] = ("state %s: %s"):format(r[1], r[2])
  end
  return table.concat(parts, ", ")
end

-- Waits until no job is pending or running (at most `timeout` seconds);
-- on timeout, says what is left and what the nodes logged.
local function wait_all_terminal(env, timeout, hint)
  local deadline = P.mono() + timeout
  while true do
    local left
    if env.sql_url then
      left = env:scalar("SELECT count(*) FROM pawl_jobs WHERE state NOT IN (2, 3, 4)")
    else
      -- SQLite: the counts `pawl stats` gives.
      local c = cjson.decode(env:ok("stats", "--json")).all.counts
      left = c.pending + c.running + c.paused + c.blocked
      if left > 0 and P.mono() > deadline then
        error(("after %ds, %d jobs are still not terminal (%s)%s\n%s"):format(timeout, left,
              cjson.encode(c), hint and ("; " .. hint) or "", procs_report(env)), 2)
      end
    end
    if left == 0 then return end
    if P.mono() > deadline then
      local stuck = env:rows("SELECT id, state, attempt, lease_owner, lease_token, "
                             .. "lease_expires FROM pawl_jobs WHERE state NOT IN (2, 3, 4) "
                             .. "ORDER BY id LIMIT 10")
      local lines = {}
      for _, r in ipairs(stuck) do lines[#lines + 1] = "  " .. table.concat(r, " | ") end
      error(("after %ds, %d jobs are still not terminal (%s)%s\nsome of them "
             .. "(id | state | attempt | lease_owner | lease_token | lease_expires):\n%s\n"
             .. "database now: %s\n%s"):format(timeout, left, state_counts(env),
             hint and ("; " .. hint) or "", table.concat(lines, "\n"),
             env:psql("SELECT now()"), procs_report(env)), 2)
    end
    P.sleep(0.2)
  end
end

-- Stops the nodes with SIGTERM; each must exit 0 (within the hang guard).
local function stop_nodes(nodes)
  for _, p in ipairs(nodes) do
    if p:alive() then p:signal("TERM") end
  end
  for _, p in ipairs(nodes) do
    local code = p:wait(P.HANG_S)
    assert(code == 0, ("node %s did not exit 0 after SIGTERM (status %s); stderr tail:\n%s")
                      :format(p.label, tostring(code), tail(p, 30)))
  end
end

-- Reads the witness files of `nodes`. Returns
--   execs: job id -> list of executions {id, label, attempt, start,
--          finish (nil: never finished), lines}
--   per_label: label -> number of finished executions
-- and raises on a malformed line or an end line without its start.
local function read_witnesses(nodes)
  local execs, per_label = {}, {}
  for _, p in ipairs(nodes) do
    per_label[p.label] = 0
    local text = P.read_file(p.witness) or ""
    assert(text == "" or text:sub(-1) == "\n",
           ("witness %s ends in a partial line: %q"):format(p.witness, text:sub(-80)))
    local open = {} -- "id attempt" -> execution
    local n = 0
    for line in text:gmatch("[^\n]+") do
      n = n + 1
      local kind, id, label, attempt, t0, t1 =
        line:match("^([SE]) (%S+) (%S+) (%d+) ([%d.]+) ?([%d.]*)$")
      assert(kind and label == p.label,
             ("witness %s line %d is malformed: %q"):format(p.witness, n, line))
      local key = id .. " " .. attempt
      if kind == "S" then
        assert(not open[key], ("witness %s: job %s attempt %s started twice in one process")
                              :format(p.witness, id, attempt))
        local e = { id = id, label = label, attempt = tonumber(attempt),
                    start = tonumber(t0), lines = { line } }
        open[key] = e
        execs[id] = execs[id] or {}
        table.insert(execs[id], e)
      else
        local e = open[key]
        assert(e, ("witness %s line %d: end of job %s without its start: %q")
                  :format(p.witness, n, id, line))
        assert(tonumber(t0) == e.start, ("witness %s: start times of job %s differ")
                                        :format(p.witness, id))
        e.finish = tonumber(t1)
        e.lines[2] = line
        open[key] = nil
        per_label[label] = per_label[label] + 1
      end
    end
  end
  return execs, per_label
end

local function describe_execs(list)
  local parts = {}
  for _, e in ipairs(list) do
    parts[#parts + 1] = table.concat(e.lines, " / ") ..
                        (e.finish and "" or " / (no end line)")
  end
  return table.concat(parts, " ; ")
end

-- Problems with executions of one job overlapping in time. An unfinished
-- execution lasts until `ended[label]` (when its process was known dead).
local function overlaps(execs, ended)
  local problems = {}
  for id, list in pairs(execs) do
    if #list > 1 then
      table.sort(list, function(a, b) return a.start < b.start end)
      for i = 2, #list do
        local prev = list[i - 1]
        local prev_end = prev.finish or ended[prev.label] or math.huge
        if list[i].start < prev_end then
          problems[#problems + 1] = ("job %s: executions overlap in time: %s")
                                    :format(id, describe_execs(list))
        end
      end
    end
  end
  table.sort(problems)
  return problems
end

-- Problems with jobs that are not succeeded (all of `ids` must be), as
-- `pawl jobs` lists them (either store).
local function not_succeeded(env, ids)
  local problems = {}
  local seen = {}
  for _, j in ipairs(env:all_jobs()) do
    seen[j.id] = true
    if not ids[j.id] then
      problems[#problems + 1] = ("job %s is not one the test enqueued"):format(j.id)
    elseif j.state ~= "succeeded" then
      problems[#problems + 1] = ("job %s: state %s, attempt %s, last error %s")
                                :format(j.id, j.state, tostring(j.attempt), cjson.encode(j.last_error))
    end
  end
  for _, id in ipairs(sorted_keys(ids)) do
    if not seen[id] then problems[#problems + 1] = ("job %s is missing from the database"):format(id) end
  end
  return problems
end

-- ---- the tests --------------------------------------------------------------

-- Every job exactly once, on each store (on SQLite three processes
-- sharing the database file).
for _, be in ipairs(P.backends(it, pending)) do
  describe("several nodes on one " .. be.name .. " database", function()
    local env
    after_each(function()
      if env then env:cleanup() end
      env = nil
    end)

    be.test("3 nodes on " .. be.name .. " share the work: every job runs exactly once", function()
      env = be.env("multinode")
      env:script("work", WORK)
      env:ok("migrate")
      local N = 5000
      -- No node dies here: a lease (heartbeat every third of it) that a
      -- loaded machine cannot miss, so that exactly once is what to expect.
      local NODE_OPTS = { "--workers", "8", "--lease", "5", "--poll", "0.1" }
      local nodes = {}
      for _, name in ipairs({ "A", "B", "C" }) do
        nodes[#nodes + 1] = start_node(env, name, name, unpack(NODE_OPTS))
      end
      for _, p in ipairs(nodes) do env:wait_node(p.label) end
      -- 10 to 50 ms each.
      local ids = enqueue_work(env, N, function(i) return 10 + (i * 7) % 41 end)
      wait_all_terminal(env, HANG_RUN_S)
      stop_nodes(nodes)

      no_problems("jobs not succeeded", not_succeeded(env, ids))

      local execs, per_label = read_witnesses(nodes)
      local problems = {}
      for _, id in ipairs(sorted_keys(ids)) do
        local list = execs[id]
        if not list then
          problems[#problems + 1] = ("job %s never ran (no witness line)"):format(id)
        elseif #list ~= 1 then
          problems[#problems + 1] = ("job %s ran %d times: %s"):format(id, #list, describe_execs(list))
        elseif not list[1].finish then
          problems[#problems + 1] = ("job %s started but never finished: %s")
                                    :format(id, describe_execs(list))
        end
      end
      for id, list in pairs(execs) do
        if not ids[id] then
          problems[#problems + 1] = ("witness names job %s, never enqueued: %s"):format(id, describe_execs(list))
        end
      end
      no_problems("witness files (each job exactly once)", problems)
      no_problems("overlapping executions", overlaps(execs, {}))

      -- Nothing lost, retried or recovered on the way: one attempt each (a
      -- lost or retried attempt would have used up the first).
      local again = {}
      for _, j in ipairs(env:all_jobs()) do
        if j.attempt ~= 1 then
          again[#again + 1] = ("job %s: attempt %s"):format(j.id, tostring(j.attempt))
        end
      end
      no_problems("jobs with more than one attempt", again)

      local shares = {}
      for _, label in ipairs(sorted_keys(per_label)) do
        shares[#shares + 1] = ("%s: %d"):format(label, per_label[label])
      end
      -- Each node did a fair part. An even split is a third each; a machine
      -- that starves one node process for a while shifts that by some, while
      -- a node that never claims, or one that hoards the queue, leaves
      -- another near nothing.
      for label, n in pairs(per_label) do
        assert(n >= N * 0.1, ("node %s ran %d of %d jobs, under 10%% (%s)")
                             :format(label, n, N, table.concat(shares, ", ")))
      end
    end)
  end)
end

describe("several nodes on one PostgreSQL database", function()
  local env

  -- A fresh schema on the server of `url` (nil: the fixture's; false: a
  -- private server of the env's own), with the job script, migrated once
  -- before any node starts.
  local function setup(url)
    if url == false then
      env = P.env(false)
      env:use_server(env:private_server(), "multinode")
    else
      env = P.env(url, "multinode")
    end
    env:script("work", WORK)
    env:ok("migrate")
  end

  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  test("a killed node's jobs are recovered, also when it comes back under the same id", function()
    setup()
    local N = 5000
    -- Leases long enough for B to be back (a second or two, however loaded
    -- the machine) before those of the dead B#1 run out, short enough that
    -- its jobs come back within half a minute.
    local LEASE = 20
    local opts = { "--workers", "8", "--lease", tostring(LEASE), "--poll", "0.1" }
    -- B#1 runs the jobs of the first fifth as they come; each later one it
    -- takes stays at a gate that never opens, so when the test kills it,
    -- B#1 is in the middle of as many jobs as it has workers. Other nodes
    -- (and B#2) pass.
    local hold = env:gate("never")
    local a = start_node(env, "A", "A", unpack(opts))
    local b1 = start_node(env, "B", "B#1", unpack(opts))
    local c = start_node(env, "C", "C", unpack(opts))
    for _, p in ipairs({ a, b1, c }) do wait_node(env, p.label:sub(1, 1)) end
    local inc1 = wait_node(env, "B")
    local ids = enqueue_work(env, N, function(i) return 10 + (i * 7) % 41 end,
      function(i) return i > N / 5 and { gate = hold.path, hold_on = "B#1" } or nil end)

    -- Kill B once every one of its workers holds a job.
    env:wait_until("every worker of node B to be in a job", function()
      local started, ended = witnessed(b1)
      return started - ended >= 8
    end)
    local _, done = witnessed(b1)
    assert(done > 0, "B#1 finished no job before it was held: nothing to compare with")
    b1:signal("KILL")
    assert.are.equal(137, b1:wait(P.HANG_S))
    local killed_at = P.wall()

    -- What B held when it died, as the database has it, once the server has
    -- ended B's sessions: no commit of B's can land after that.
    env:wait_until("the server to end B#1's sessions", function()
      return env:scalar(("SELECT count(*) FROM pg_stat_activity WHERE application_name = '%s'")
                        :format(app_name("B#1"))) == 0
    end)
    local held = {}
    for _, r in ipairs(env:rows(("SELECT id, lease_token FROM pawl_jobs WHERE state = 1 "
                                 .. "AND lease_owner = 'B'"))) do
      held[r[1]] = r[2]
    end
    local nheld = count(held)
    assert(nheld > 0, "the database shows no running job of node B after the kill")
    for _, token in pairs(held) do
      assert.are.equal(inc1, token, "a job of B held under a token other than B's incarnation")
    end

    -- B again, same node id, while its old leases still run: the new
    -- process is a new incarnation with a new lease token, and must not keep
    -- the dead one's jobs alive.
    local b2 = start_node(env, "B", "B#2", unpack(opts))
    local inc2 = wait_node(env, "B", inc1)
    local up_after = P.wall() - killed_at
    local still = env:scalar(("SELECT count(*) FROM pawl_jobs WHERE state = 1 AND "
                              .. "lease_token = '%s'"):format(inc1))
    assert(still > 0, ("precondition: B#2 came up %.2f s after the kill, when no "
                       .. "job of B#1 was running any more (lease %d s): the "
                       .. "machine is too slow for this test"):format(up_after, LEASE))

    wait_all_terminal(env, HANG_RUN_S, ("%d jobs were held by the killed B#1 (token %s); "
                                .. "B#2 (token %s) came up %.2f s after the kill, "
                                .. "lease %d s: a job of B#1 whose lease_expires "
                                .. "is later than that had its lease extended by "
                                .. "someone after B#1 died")
                               :format(nheld, inc1, inc2, up_after, LEASE))
    local nodes = { a, b1, b2, c }
    stop_nodes({ a, b2, c })

    no_problems("jobs not succeeded", not_succeeded(env, ids))

    -- The witnesses: every job ran to its end once; a job ran twice only if
    -- the killed B was running it (or had finished it without its outcome
    -- stored), and then its other execution came after the kill.
    local execs = read_witnesses(nodes)
    local problems = {}
    local open_b1, twice = {}, 0
    for _, id in ipairs(sorted_keys(ids)) do
      local list = execs[id] or {}
      local finished_elsewhere, by_b1 = 0, 0
      for _, e in ipairs(list) do
        if e.label == "B#1" then
          by_b1 = by_b1 + 1
          if not e.finish then open_b1[id] = true end
        elseif e.finish then
          finished_elsewhere = finished_elsewhere + 1
        end
      end
      if #list == 0 then
        problems[#problems + 1] = ("job %s never ran (lost)"):format(id)
      elseif #list == 1 then
        if not list[1].finish then
          problems[#problems + 1] = ("job %s ran once and never finished, yet succeeded: %s")
                                    :format(id, describe_execs(list))
        end
      elseif #list == 2 and by_b1 == 1 and finished_elsewhere == 1 then
        twice = twice + 1
        local first = list[1].start <= list[2].start and list[1] or list[2]
        if not held[id] then
          problems[#problems + 1] = ("job %s ran twice, but B did not hold it when killed: %s")
                                    :format(id, describe_execs(list))
        elseif first.label ~= "B#1" then
          problems[#problems + 1] = ("job %s ran again on B#1 after it had run elsewhere: %s")
                                    :format(id, describe_execs(list))
        end
      else
        problems[#problems + 1] = ("job %s ran %d times: %s"):format(id, #list, describe_execs(list))
      end
    end
    -- A job taken back from B has run (again) since, to its end, elsewhere.
    for id in pairs(held) do
      local again = false
      for _, e in ipairs(execs[id] or {}) do
        if e.label ~= "B#1" and e.finish then again = true end
      end
      if not again then
        problems[#problems + 1] = ("job %s, held by B at the kill, never ran to its end "
                                   .. "after it: %s"):format(id, describe_execs(execs[id] or {}))
      end
    end
    for id in pairs(open_b1) do
      if not held[id] then
        problems[#problems + 1] = ("job %s: B#1 started it and never finished, but the "
                                   .. "database did not show it running on B after the kill: %s")
                                  :format(id, describe_execs(execs[id]))
      end
    end
    no_problems("witness files", problems)
    no_problems("overlapping executions", overlaps(execs, { ["B#1"] = killed_at }))
    assert(count(open_b1) > 0, "B#1 left no unfinished job behind: nothing to recover")

    -- The database: exactly the held jobs lost an attempt, each once, on B,
    -- and then succeeded.
    problems = {}
    local lost = {}
    for _, r in ipairs(env:rows("SELECT job_id, attempt, node, outcome, coalesce(error, ''), "
                                .. "floor(extract(epoch FROM started_at) * 1000) "
                                .. "FROM pawl_attempts ORDER BY seq")) do
      local id, attempt, node, outcome, why, started_ms = unpack(r)
      if not held[id] then
        problems[#problems + 1] = ("job %s, not held by B at the kill, has an attempt: %s")
                                  :format(id, table.concat(r, " | "))
      elseif lost[id] then
        problems[#problems + 1] = ("job %s lost more than one attempt: %s"):format(id, table.concat(r, " | "))
      else
        lost[id] = true
        if outcome ~= "lost" or node ~= "B" or tonumber(attempt) ~= 1
            or not why:find("recovered from node B", 1, true) then
          problems[#problems + 1] = ("job %s: want attempt 1 lost on node B, recovered from node B; got %s")
                                    :format(id, table.concat(r, " | "))
        end
        -- No start: claimed ahead of a free worker and lost unstarted.
        if tonumber(started_ms) and tonumber(started_ms) > killed_at * 1000 + 50 then
          problems[#problems + 1] = ("job %s: the lost attempt started after the kill (%s)")
                                    :format(id, table.concat(r, " | "))
        end
      end
    end
    for id in pairs(held) do
      if not lost[id] then
        problems[#problems + 1] = ("job %s was held by the killed B but has no lost attempt: %s")
                                  :format(id, describe_execs(execs[id] or {}))
      end
    end
    for _, r in ipairs(env:rows("SELECT id, attempt FROM pawl_jobs WHERE attempt <> 1")) do
      if not held[r[1]] or tonumber(r[2]) ~= 2 then
        problems[#problems + 1] = ("job %s ended at attempt %s"):format(r[1], r[2])
      end
    end
    no_problems("recovery history", problems, nodes_warned(nodes))

    -- And as `pawl show` tells it, for a few of the jobs B#1 was running.
    local shown = 0
    for _, id in ipairs(sorted_keys(open_b1)) do
      if shown == 3 then break end
      shown = shown + 1
      local j = env:show(id)
      local text = cjson.encode(j)
      assert.are.equal("succeeded", j.state, text)
      assert.are.equal(2, #j.attempts, text)
      assert.are.equal("lost", j.attempts[1].outcome, text)
      assert.are.equal("B", j.attempts[1].node, text)
      assert.are.equal("succeeded", j.attempts[2].outcome, text)
      local recovered = false
      for _, e in ipairs(j.events) do
        if e.reason ~= cjson.null and e.reason:find("recovered from node B", 1, true) then
          recovered = true
        end
      end
      assert(recovered, "no event \"recovered from node B\" in " .. text)
    end
    print(("\n  [multinode] B#1 killed holding %d jobs (%d of them started, %d ran twice); "
           .. "B#2 up %.2f s after the kill"):format(nheld, count(open_b1), twice, up_after))
  end)

  test("the database restarts mid-run: no outcome lost, nothing run twice", function()
    setup(false)

    local N = 1000
    -- A lease far over the outage (stopping, starting and reconnecting,
    -- however slow): no lease may lapse, so nothing may run twice.
    local opts = { "--workers", "4", "--lease", "120", "--poll", "0.1" }
    -- The first 200 jobs run as they come; every later one waits at the
    -- gate, which opens while the database is down: the jobs the workers
    -- hold then end, and their outcomes meet the outage.
    local gate = env:gate()
    local nodes = { start_node(env, "A", "A", unpack(opts)),
                    start_node(env, "B", "B", unpack(opts)) }
    for _, p in ipairs(nodes) do wait_node(env, p.label) end
    local ids = enqueue_work(env, N, function() return 10 end,
      function(i) return i > 200 and { gate = gate.path } or nil end)

    -- Every worker of both nodes in a job.
    gate:wait_reached(8)
    local before = env:scalar("SELECT count(*) FROM pawl_jobs WHERE state = 2")
    P.server.down(env.servers[1])
    gate:open()
    env:wait_until("a node to fail writing an outcome", function()
      for _, p in ipairs(nodes) do
        if p:count("writing outcomes failed") > 0 then return true end
      end
    end)
    P.server.up(env.servers[1])
    local t_back = P.mono()
    assert(before < N, "every job had finished before the restart: nothing was mid-run")

    wait_all_terminal(env, HANG_RUN_S, ("the database came back %.1f s ago"):format(P.mono() - t_back))
    stop_nodes(nodes)

    no_problems("jobs not succeeded", not_succeeded(env, ids))
    local execs = read_witnesses(nodes)
    local problems = {}
    for _, id in ipairs(sorted_keys(ids)) do
      local list = execs[id]
      if not list then
        problems[#problems + 1] = ("job %s never ran (no witness line)"):format(id)
      elseif #list ~= 1 or not list[1].finish then
        problems[#problems + 1] = ("job %s ran %d times: %s"):format(id, #list, describe_execs(list))
      end
    end
    no_problems("witness files (each job exactly once)", problems)
    -- No attempt lost or retried either. One exception pawl cannot avoid: a
    -- claim whose commit the server made but whose answer the restart cut
    -- off; the node never learnt of those jobs, which come back when their
    -- lease expires (a lost attempt) and then run, once (checked above).
    problems = {}
    local cut = 0
    for _, r in ipairs(env:rows("SELECT job_id, attempt, node, outcome, error, "
                                .. "started_at IS NULL FROM pawl_attempts ORDER BY seq")) do
      if r[4] == "lost" and tonumber(r[2]) == 1 then
        cut = cut + 1
      elseif r[4] == "released" and r[6] == "t" then
        -- Claimed ahead while every worker of its node was held at the
        -- gate, and handed back unstarted: not a run.
      else
        problems[#problems + 1] = table.concat(r, " | ")
      end
    end
    no_problems("attempts other than the successful one", problems)
    print(("\n  [multinode] restart: %d of %d jobs stored as succeeded before it; "
           .. "%d claims cut off by it"):format(before, N, cut))
  end)
end)
