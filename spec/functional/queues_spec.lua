-- queues_spec.lua: queues with real `pawl run` nodes, on SQLite
-- and PostgreSQL: a node's concurrency per queue (`--queues mail=1,
-- default=2`: mail's jobs held at a gate never starve default's, and no
-- queue runs more jobs at once than its number, as the jobs' own start
-- and end lines show), a queue paused across two nodes (running jobs
-- finish, nothing more is claimed, resume brings it back), `pawl queue`
-- and the Lua module's queue methods, and bad input refused with nothing
-- changed.
--
-- Nothing here bets on the machine's speed: jobs that must be
-- running at some moment wait at gates the test opens; every wait is for a
-- condition, with a hang guard as its cap.
local cjson = require "cjson"
-- Under ThreadSanitizer (PAWL_TSAN=1) the Lua module cannot be loaded into
-- the test's LuaJIT (TSan's runtime needs static TLS a dlopen'ed library
-- cannot get); the nodes are what TSan checks there.
local TSAN = os.getenv("PAWL_TSAN") == "1"
local pawl = not TSAN and require "pawl"
local H = require "host_helper"
local P = require "pg_helper"

local PG_SKIP = P.skip_reason()
if PG_SKIP then
  io.stderr:write("\n*** queues_spec (PostgreSQL part): " .. PG_SKIP .. " ***\n\n")
end

-- A job of queue Q: notes its start and end (S/E, pawl.time()) in the
-- witness file the payload names, waiting at payload.gate in between when
-- there is one.
local function job_script(queue)
  return H.GATE_LUA .. ([[
local function note(path, line)
  local f = assert(io.open(path, "a"))
  assert(f:write(line))
  assert(f:close())
end
return {
  queue = %q,
  run = function(job)
    local p = job.payload
    note(p.witness, ("S %%s %%.6f\n"):format(job.id, pawl.time()))
    if p.gate then pawl_gate(p.gate, 300) end
    note(p.witness, ("E %%s %%.6f\n"):format(job.id, pawl.time()))
    return true
  end,
}
]]):format(queue)
end

-- The most jobs of one witness file that ran at once, from their start and
-- end lines (an end at the same instant as a start counts first).
local function most_at_once(path)
  local ev = {}
  for kind, t in (H.read_file(path) or ""):gmatch("([SE]) %S+ ([%d.]+)\n") do
    ev[#ev + 1] = { t = tonumber(t), d = kind == "S" and 1 or -1 }
  end
  table.sort(ev, function(a, b)
    if a.t ~= b.t then return a.t < b.t end
    return a.d < b.d
  end)
  local now, most = 0, 0
  for _, e in ipairs(ev) do
    now = now + e.d
    if now > most then most = now end
  end
  return most, #ev
end

local function queue_rows(env)
  local out = env:ok("queue", "list", "--json")
  local rows = {}
  for line in out:gmatch("[^\n]+") do
    local q = cjson.decode(line)
    rows[q.queue] = q
  end
  return rows
end

local function states(env, ids)
  local n = {}
  for _, id in ipairs(ids) do
    local s = env:show(id).state
    n[s] = (n[s] or 0) + 1
  end
  return n
end

local function enqueue_n(env, jtype, n, payload)
  local ids = {}
  for i = 1, n do ids[i] = env:enqueue(jtype, H.json(payload)) end
  return ids
end

local function wait_states(env, ids, state)
  for _, id in ipairs(ids) do env:wait_state(id, state) end
end

local function stop(p)
  p:signal("TERM")
  local code = p:wait(H.HANG_S)
  assert(code == 0, "pawl run did not exit 0 after SIGTERM: " .. p:stderr())
end

-- ---- the scenarios, for either backend ------------------------------------

local function concurrency_per_queue(env)
  env:script("mailjob", job_script("mail"))
  env:script("defjob", job_script("default"))
  local mg, dg = env:gate("mail"), env:gate("default")
  local mw, dw = env:path("witness.mail"), env:path("witness.default")
  -- The mail jobs first: a claim in order would take them all.
  local mail = enqueue_n(env, "mailjob", 6, { witness = mw, gate = mg.path })
  local def = enqueue_n(env, "defjob", 6, { witness = dw, gate = dg.path })
  local node = env:start("--queues", "mail=1,default=2", "--log-level", "warn")
  -- Two default jobs at once, while one mail job holds mail's worker.
  dg:wait_reached(2)
  mg:wait_reached(1)
  dg:open()
  wait_states(env, def, "succeeded")
  -- All the while mail ran that one job only.
  assert.are.equal(1, mg:arrivals())
  local n = states(env, mail)
  assert.are.same({ running = 1, pending = 5 }, n)
  mg:open()
  wait_states(env, mail, "succeeded")
  stop(node)
  local most_mail, ev_mail = most_at_once(mw)
  local most_def, ev_def = most_at_once(dw)
  assert.are.equal(12, ev_mail)
  assert.are.equal(12, ev_def)
  assert.are.equal(1, most_mail)
  assert.are.equal(2, most_def)
  -- The node table shows each queue's own number.
  assert.matches("mail=1,default=2", env:ok("nodes", "--json"), 1, true)
end

local function pause_across_nodes(env)
  env:script("mailjob", job_script("mail"))
  env:script("defjob", job_script("default"))
  local g = env:gate("held")
  local mw, dw = env:path("witness.mail"), env:path("witness.default")
  local a = env:start("--queues", "mail,default", "--workers", "2",
                      "--node-id", "node-a", "--log-level", "warn")
  local b = env:start("--queues", "mail,default", "--workers", "2",
                      "--node-id", "node-b", "--log-level", "warn")
  -- A mail job is running (held at the gate) when mail is paused.
  local held = env:enqueue("mailjob", H.json { witness = mw, gate = g.path })
  g:wait_reached(1)
  local out = env:ok("queue", "pause", "mail", "--reason", "smtp down")
  assert.matches("queue mail: paused", out, 1, true)
  -- Mail jobs enqueued now are claimed by neither node; default jobs
  -- enqueued after them run, on both nodes' polls.
  local mail = enqueue_n(env, "mailjob", 4, { witness = mw })
  local def = enqueue_n(env, "defjob", 6, { witness = dw })
  wait_states(env, def, "succeeded")
  assert.are.same({ pending = 4 }, states(env, mail))
  -- The running one finishes.
  g:open()
  env:wait_state(held, "succeeded")
  local more = enqueue_n(env, "defjob", 2, { witness = dw })
  wait_states(env, more, "succeeded")
  assert.are.same({ pending = 4 }, states(env, mail))
  local rows = queue_rows(env)
  assert.is_true(rows.mail.paused)
  assert.are.equal("smtp down", rows.mail.reason)
  assert.are.equal(4, rows.mail.counts.pending)
  assert.is_false(rows.default.paused)
  -- Resumed: both nodes claim it again.
  env:ok("queue", "resume", "mail")
  wait_states(env, mail, "succeeded")
  assert.is_false(queue_rows(env).mail.paused)
  stop(a)
  stop(b)
end

local function cli_and_bad_input(env)
  env:enqueue("mailjob", "{}", "--queue", "mail")
  local function refused(code, pattern, ...)
    local r = env:pawl(...)
    assert.are.equal(code, r.code, table.concat({ ... }, " ") .. ": " .. r.err)
    assert.matches(pattern, r.err)
  end
  refused(2, "queue needs list", "queue")
  refused(2, "queue needs list.*frob", "queue", "frob")
  refused(2, "queue pause needs a queue name", "queue", "pause")
  refused(2, "queue name must not be empty", "queue", "pause", "")
  refused(2, "control character", "queue", "pause", "ma\nil")
  refused(2, "queue set needs %-%-age%-boost", "queue", "set", "mail")
  refused(2, "age%-boost", "queue", "set", "mail", "--age-boost", "-5")
  refused(2, "between 0 and 2592000000", "queue", "set", "mail", "--age-boost", "31d")
  refused(2, "%-%-reason goes with queue pause", "queue", "resume", "mail", "--reason", "x")
  refused(2, "%-%-age%-boost goes with queue set", "queue", "pause", "mail", "--age-boost", "1s")
  refused(2, "unexpected argument", "queue", "list", "mail")
  refused(2, "concurrency of queue mail must be a whole number between 1 and 1024 %(got \"0\"%)",
          "run", "--queues", "mail=0")
  refused(2, "got \"x\"", "run", "--queues", "mail=x")
  refused(2, "got \"1.5\"", "run", "--queues", "mail=1.5")
  refused(2, "got \"2000\"", "run", "--queues", "mail=2000")
  refused(2, "a queue name is empty", "run", "--queues", "=3")
  refused(2, "workers %(3%) has no queue to serve", "run", "--queues",
          "mail=1,default=2", "--workers", "3", "--until-idle")
  -- Resuming a queue that is not paused says so (exit 1).
  refused(1, "queue \"mail\" is not paused", "queue", "resume", "mail")
  -- Nothing was changed by any of it.
  local rows = queue_rows(env)
  assert.are.same({ "mail" }, (function()
    local k = {}
    for name in pairs(rows) do k[#k + 1] = name end
    return k
  end)())
  assert.is_false(rows.mail.paused)
  assert.are.equal(cjson.null, rows.mail.age_boost_ms)
  -- What works: pause (twice), set, list, resume; --json.
  assert.matches("queue mail: paused", env:ok("queue", "pause", "mail"), 1, true)
  assert.matches("already paused", env:ok("queue", "pause", "mail"), 1, true)
  assert.are.same({ action = "pause", queue = "reports", changed = true },
                  cjson.decode(env:ok("queue", "pause", "reports", "--json")))
  env:ok("queue", "set", "mail", "--age-boost", "90s")
  rows = queue_rows(env)
  assert.are.equal(90000, rows.mail.age_boost_ms)
  assert.are.equal(90000, rows.mail.effective_age_boost_ms)
  assert.is_true(rows.reports.paused)
  assert.are.equal(0, rows.reports.counts.pending)
  env:ok("queue", "set", "mail", "--age-boost", "database")
  assert.are.equal(cjson.null, queue_rows(env).mail.age_boost_ms)
  local text = env:ok("queue", "list")
  assert.matches("QUEUE%s+PAUSED%s+PENDING", text)
  assert.matches("\npaused: mail since [%d%-T:.Z]+ by ", text)
  assert.are.same({ action = "resume", queue = "mail", changed = true },
                  cjson.decode(env:ok("queue", "resume", "mail", "--json")))
end

local function lua_module(env)
  env:enqueue("mailjob", "{}", "--queue", "mail")
  local db = assert(pawl.open { db = env.db, create = false })
  assert.is_true(db:queue_pause("mail", "maintenance"))
  assert.is_false(db:queue_pause("mail"))
  local list = assert(db:queues())
  assert.are.equal(1, #list)
  assert.are.equal("mail", list[1].queue)
  assert.is_true(list[1].paused)
  assert.are.equal("maintenance", list[1].reason)
  assert.are.equal(1, list[1].counts.pending)
  assert.is_nil(list[1].age_boost_ms)
  -- Nothing of a paused queue is claimed through the module either.
  local jobs = assert(db:claim(10))
  assert.are.equal(0, #jobs)
  assert.is_true(db:queue_set("mail", { age_boost = "2m" }))
  assert.are.equal(120000, db:queues()[1].age_boost_ms)
  assert.is_true(db:queue_set("mail", { age_boost = 0 }))
  assert.are.equal(0, db:queues()[1].effective_age_boost_ms)
  assert.is_true(db:queue_set("mail", { age_boost = "database" }))
  assert.is_nil(db:queues()[1].age_boost_ms)
  local ok, msg, code = db:queue_set("mail", { age_boost = 1.5 })
  assert.is_nil(ok)
  assert.matches("whole number", msg)
  assert.are.equal("PAWL_EINVAL", code)
  ok, msg = db:queue_pause("")
  assert.is_nil(ok)
  assert.matches("queue name must not be empty", msg)
  assert.has_error(function() db:queue_set("mail", { boost = 1 }) end)
  assert.has_error(function() db:queue_set("mail", { age_boost = true }) end)
  assert.is_true(db:queue_resume("mail"))
  assert.is_false(db:queue_resume("mail"))
  jobs = assert(db:claim(10))
  assert.are.equal(1, #jobs)
  db:close()
end

-- ---- both backends --------------------------------------------------------

local backends = {
  { name = "SQLite", env = function() return H.env() end },
  { name = "PostgreSQL", env = function() return P.env() end, skip = PG_SKIP },
}

for _, be in ipairs(backends) do
  describe("queues on " .. be.name, function()
    local env
    before_each(function()
      if be.skip then return end
      env = be.env()
      env:ok("migrate")
    end)
    after_each(function()
      if env then env:cleanup() end
      env = nil
    end)
    local test = be.skip and function(name)
      pending(name .. " -- SKIPPED: " .. be.skip)
    end or it

    test("a queue's own concurrency: a busy queue starves no other, none runs more than its number",
         function() concurrency_per_queue(env) end)
    test("a paused queue is claimed by no node; running jobs finish; resume brings it back",
         function() pause_across_nodes(env) end)
    test("pawl queue, and bad input refused with nothing changed",
         function() cli_and_bad_input(env) end)
    if TSAN then
      pending("the Lua module's queue methods -- not under ThreadSanitizer")
    else
      test("the Lua module's queue methods", function() lua_module(env) end)
    end
  end)
end
