-- authority_spec.lua: what job code may do to other jobs, and to the
-- host's own locks (docs/security.md, "Authority over other jobs"), with
-- real `pawl run` nodes, written as an attacker would.
--
-- By default a job acts only on the jobs it enqueued (enqueued_by
-- "job:<its id>"): signalling, replacing or restarting any other job is
-- refused with a message naming the grant, and nothing changes. The
-- operator widens it per capability (pawl run --allow-signal, -replace,
-- -restart, or _defaults.lua's allow), and what a job does is recorded as
-- done by "job:<id> (<type>)", not by the OS user. The `job` table is
-- read-only. Lock names beginning with "pawl." are the host's: a job that
-- takes the recovery lock and whose node is killed must not stop the
-- other nodes from recovering its lease. Nothing waits on time: the tests
-- wait for states, with hang guards as caps, and gates hold running jobs.
local H = require "host_helper"

-- Waits at a gate (a file the test writes), stopping when canceled; the
-- payload's v is its result.
local VICTIM = [[
return {
  run = function(job, ctx)
    local path = job.payload.gate
    local mark = assert(io.open(path .. ".reached", "a"))
    mark:write("reached\n")
    mark:close()
    local deadline = pawl.time() + 600
    while pawl.time() < deadline do
      if ctx:canceled() then return { stopped = true, amount = job.payload.amount } end
      local f = io.open(path, "r")
      if f then f:close() return { amount = job.payload.amount } end
      pawl.sleep(0.01)
    end
    error("gate never opened")
  end,
}
]]

-- A human gate: waits for a signal (enqueued with --signal), then reports
-- the decision it read.
local ORDER = [[
return {
  run = function(job)
    local s = job.signal
    return { decision = s and s.decision, by = s and s.by }
  end,
}
]]

-- The attacker: does what its payload asks and reports each outcome
-- ({ok = true, value} or {ok = false, err}) instead of failing.
local ATTACKER = [[
local function try(f, ...)
  local ok, a, b = pcall(f, ...)
  if ok then return { ok = true, value = a, status = b } end
  return { ok = false, err = tostring(a) }
end
return {
  %s
  run = function(job)
    local p = job.payload
    local out = { me = job.id }
    if p.signal then out.signal = try(pawl.signal, p.signal, "approve", { note = "by the attacker" }) end
    if p.replace then
      out.replace = try(pawl.replace, p.replace,
                        { payload = { gate = p.gate, amount = 1e9 }, reason = "mine now" })
    end
    if p.restart then out.restart = try(pawl.enqueue, "inst", p.restart) end
    return out
  end,
}
]]

local function attacker(allow)
  return ATTACKER:format(allow and ("allow = { %q },"):format(allow) or "")
end

-- A job instance (identity = date) that fails at once: a dead job to
-- restart.
local INST = [[
return {
  identity = { "date" },
  max_attempts = 1,
  run = function(job) error("always fails") end,
}
]]

local function result(env, id) return env:show(id).result end

-- Runs a host (with extra args) until `id` is in `state`, then stops it.
local function run_until(env, id, state, ...)
  local node = env:start("--workers", "2", "--poll", "0.05", "--log-level", "warn", ...)
  local ok, err = pcall(env.wait_state, env, id, state)
  node:signal("TERM")
  node:wait(H.HANG_S)
  if not ok then error(err, 2) end
end

local function has(s, part) return s ~= nil and s:find(part, 1, true) ~= nil end

-- The last event of `id`'s history whose reason contains `part`.
local function event(env, id, part)
  local found
  for _, e in ipairs(env:show(id).events) do
    if has(e.reason, part) then found = e end
  end
  return found
end

describe("authority of job code over other jobs", function()
  local env

  before_each(function()
    env = H.env()
    env.gated = true -- VICTIM opens files: --allow-io
    env:script("victim", VICTIM)
    env:script("order", ORDER)
    env:script("inst", INST)
    env:ok("migrate")
  end)

  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  it("a job cannot signal a job it did not enqueue: refused naming the grant, the gate still waits", function()
    env:script("attacker", attacker(nil))
    local order = env:enqueue("order", "{}", "--signal", "approve-1")
    -- A job another job enqueued is not this one's either.
    env:script("parent", [[return { run = function()
      return { id = pawl.enqueue("order", {}, { signal = "approve-2" }) } end }]])
    local parent = env:enqueue("parent", "{}")
    run_until(env, parent, "succeeded")
    local sibling = result(env, parent).id
    for _, key in ipairs { "approve-1", "approve-2" } do
      local a = env:enqueue("attacker", H.json { signal = key })
      run_until(env, a, "succeeded")
      local r = result(env, a).signal
      assert.is_false(r.ok)
      assert.truthy(has(r.err, "pawl.signal: job "), r.err)
      assert.truthy(has(r.err, "not by job:" .. a), r.err)
      assert.truthy(has(r.err, 'needs the grant "signal"'), r.err)
      assert.truthy(has(r.err, "pawl run --allow-signal"), r.err)
    end
    for _, id in ipairs { order, sibling } do
      local j = env:show(id)
      assert.are.equal("blocked", j.state)
      assert.are.equal("waiting", j.signal.state)
    end
  end)

  it("with the grant a job may signal any job, recorded as done by the job", function()
    -- Granted on the command line, asked for by the script.
    env:script("attacker", attacker("signal"))
    local order = env:enqueue("order", "{}", "--signal", "approve-1")
    local a = env:enqueue("attacker", H.json { signal = "approve-1" })
    run_until(env, order, "succeeded", "--allow-signal")
    local r = result(env, a).signal
    assert.is_true(r.ok, r.err)
    assert.are.equal(order, r.value)
    local by = "job:" .. a .. " (attacker)"
    local j = env:show(order)
    assert.are.equal(by, j.signal.by)
    assert.are.equal(by, j.result.by)
    assert.are.equal(by, event(env, order, "signal approve-1: approve").actor)

    -- A script asking for a grant the operator did not give does not load.
    local order2 = env:enqueue("order", "{}", "--signal", "approve-2")
    local node = env:start("--workers", "1", "--poll", "0.05")
    env:wait_until("the script refused", function()
      return has(node:stderr(), "allow asks for signal")
    end)
    node:signal("TERM")
    node:wait(H.HANG_S)
    assert.are.equal("blocked", env:show(order2).state)

    -- Granted by _defaults.lua, to a script that asks for nothing.
    env:script("_defaults", [[return { allow = { "signal" } }]])
    env:script("attacker", attacker(nil))
    local a2 = env:enqueue("attacker", H.json { signal = "approve-2" })
    run_until(env, order2, "succeeded")
    assert.are.equal("job:" .. a2 .. " (attacker)", env:show(order2).signal.by)
  end)

  it("a job may signal and replace its own children without a grant", function()
    env:script("parent", [[return { run = function(job)
      local child = pawl.enqueue("order", {}, { signal = "mine-" .. job.id })
      local id, status = pawl.signal("mine-" .. job.id, "approve")
      local gated = pawl.enqueue("victim", { gate = job.payload.gate, amount = 10 },
                                 { delay = 3600 })
      local new = pawl.replace(gated, { payload = { gate = job.payload.gate, amount = 11 } })
      -- The replacement is the job's own too.
      local newer = pawl.replace(new, { payload = { gate = job.payload.gate, amount = 12 } })
      return { child = child, signalled = id, status = status, gated = gated,
               new = new, newer = newer }
    end }]])
    local g = env:gate("victim")
    local p = env:enqueue("parent", H.json { gate = g.path })
    run_until(env, p, "succeeded")
    local r = result(env, p)
    assert.are.equal(r.child, r.signalled)
    assert.are.equal("delivered", r.status)
    local by = "job:" .. p .. " (parent)"
    assert.are.equal(by, env:show(r.child).signal.by)
    assert.are.equal("canceled", env:show(r.gated).state)
    assert.are.equal(by, event(env, r.gated, "replaced by " .. r.new).actor)
    local newer = env:show(r.newer)
    assert.are.equal(12, newer.payload.amount)
    assert.are.equal("job:" .. p, newer.enqueued_by)
  end)

  it("a job cannot replace a running job of another type; with the grant it can, as itself", function()
    env:script("attacker", attacker(nil))
    local g = env:gate("victim")
    local victim = env:enqueue("victim", H.json { gate = g.path, amount = 10 })
    local node = env:start("--workers", "2", "--poll", "0.05", "--log-level", "warn")
    g:wait_reached(1)
    local a = env:enqueue("attacker", H.json { replace = victim, gate = g.path })
    env:wait_state(a, "succeeded")
    local r = result(env, a).replace
    assert.is_false(r.ok)
    assert.truthy(has(r.err, "pawl.replace: job " .. victim .. " (victim) was enqueued by "), r.err)
    assert.truthy(has(r.err, 'needs the grant "replace"'), r.err)
    local v = env:show(victim)
    assert.are.equal("running", v.state)
    assert.are.equal(10, v.payload.amount)
    assert.is_nil(v.superseded_by)
    node:signal("TERM")
    g:open()
    node:wait(H.HANG_S)
    assert.are.equal("succeeded", env:show(victim).state)
    assert.are.equal(10, result(env, victim).amount)

    -- Granted (in _defaults.lua): replaced, the cancel and the link
    -- recorded as the attacker's.
    env:script("_defaults", [[return { allow = { "replace" } }]])
    local g2 = env:gate("victim2")
    local victim2 = env:enqueue("victim", H.json { gate = g2.path, amount = 10 })
    node = env:start("--workers", "2", "--poll", "0.05", "--log-level", "warn")
    g2:wait_reached(1)
    local a2 = env:enqueue("attacker", H.json { replace = victim2, gate = g2.path })
    env:wait_state(a2, "succeeded")
    r = result(env, a2).replace
    assert.is_true(r.ok, r.err)
    env:wait_state(victim2, "canceled")
    assert.are.equal("job:" .. a2 .. " (attacker)",
                     event(env, victim2, "replaced by " .. r.value .. ": mine now").actor)
    g2:open()
    node:signal("TERM")
    node:wait(H.HANG_S)
  end)

  it("a job cannot restart a dead instance it did not enqueue; with the grant it can, as itself", function()
    env:script("attacker", attacker(nil))
    local dead = env:enqueue("inst", H.json { date = "2026-01-01" })
    run_until(env, dead, "failed")
    local a = env:enqueue("attacker", H.json { restart = { date = "2026-01-01" } })
    run_until(env, a, "succeeded")
    local r = result(env, a).restart
    assert.is_false(r.ok)
    assert.truthy(has(r.err, "pawl.enqueue: job " .. dead .. " (inst) was enqueued by "), r.err)
    assert.truthy(has(r.err, 'needs the grant "restart"'), r.err)
    local j = env:show(dead)
    assert.are.equal("failed", j.state)
    assert.are.equal(1, j.attempt)

    local a2 = env:enqueue("attacker", H.json { restart = { date = "2026-01-01" } })
    run_until(env, a2, "succeeded", "--allow-restart")
    r = result(env, a2).restart
    assert.is_true(r.ok, r.err)
    assert.are.equal(dead, r.value)
    assert.are.equal("restarted", r.status)
    assert.are.equal("job:" .. a2 .. " (attacker)", event(env, dead, "restarted: instance").actor)
  end)

  it("a job may restart its own dead instance without a grant", function()
    env:script("parent", [[return { run = function(job)
      local first, status = pawl.enqueue("inst", { date = job.id })
      local deadline = pawl.time() + 60
      while status ~= "restarted" and pawl.time() < deadline do
        pawl.sleep(0.02)
        local again
        again, status = pawl.enqueue("inst", { date = job.id })
        assert(again == first)
      end
      return { id = first, status = status }
    end }]])
    local p = env:enqueue("parent", "{}")
    run_until(env, p, "succeeded")
    local r = result(env, p)
    assert.are.equal("restarted", r.status)
    assert.are.equal("job:" .. p .. " (parent)", event(env, r.id, "restarted: instance").actor)
  end)

  it("the job table is read-only: job.id, job.type and rawset are refused, job.signal is the job's own", function()
    local order = env:enqueue("order", "{}", "--signal", "approve-1")
    env:ok("signal", "approve-1", "approve", '{"secret":"s3cr3t"}')
    run_until(env, order, "succeeded")
    env:script("peek", [[return { run = function(job)
      local out = { mine = job.id, type = job.type }
      out.id = select(2, pcall(function() job.id = job.payload.victim end))
      out.type_set = select(2, pcall(function() job.type = "order" end))
      out.new_field = select(2, pcall(function() job.signal = { decision = "approve" } end))
      out.raw = select(2, pcall(rawset, job, "id", job.payload.victim))
      out.meta = select(2, pcall(setmetatable, job, nil))
      out.id_after, out.type_after = job.id, job.type
      out.signal = job.signal == nil
      local n = 0
      for k in pairs(job) do n = n + 1 end
      out.fields = n
      return out
    end }]])
    local peek = env:enqueue("peek", H.json { victim = order })
    run_until(env, peek, "succeeded")
    local r = result(env, peek)
    assert.truthy(has(r.id, "job.id is read-only in job code"), r.id)
    assert.truthy(has(r.type_set, "job.type is read-only in job code"), r.type_set)
    assert.truthy(has(r.new_field, "job.signal is read-only in job code"), r.new_field)
    assert.truthy(has(r.raw, "read-only"), r.raw)
    assert.truthy(has(r.meta, "protected metatable"), r.meta)
    assert.are.equal(peek, r.id_after)
    assert.are.equal("peek", r.type_after)
    assert.is_true(r.signal) -- its own: it has none
    assert.is_true(r.fields > 5) -- pairs still reads the fields
  end)
end)

describe("the host's locks", function()
  local env

  before_each(function()
    env = H.env()
    env.gated = true
    env:ok("migrate")
  end)

  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  -- Every spelling of the host's lock names job code might try; each is
  -- refused (or, for names that are not the host's, held as the job's own).
  local SPELLINGS = {
    "pawl.recover", "PAWL.RECOVER", "Pawl.Recover", " pawl.recover",
    "   pawl.recover", "pawl.recover\0x", "pawl.recover\n", "\tpawl.recover",
    "pawl.recurring", "pawl.retention", "PAWL.retention", "pawl.",
    "pawl.recover" .. ("x"):rep(300),
  }

  it("job code cannot take them by any spelling", function()
    local list = {}
    for i, s in ipairs(SPELLINGS) do list[i] = ("%q"):format(s) end
    env:script("grab", ([[
local NAMES = { %s }
return { run = function(job)
  local out = {}
  for i, name in ipairs(NAMES) do
    local ok, err = pcall(pawl.lock, name, 86400, function() return "taken" end)
    out[i] = ok and "taken" or tostring(err)
  end
  return out
end }
]]):format(table.concat(list, ", ")))
    local id = env:enqueue("grab", "{}")
    env:run_idle("--log-level", "warn")
    local r = env:show(id).result
    for i, s in ipairs(SPELLINGS) do
      assert.are_not.equal("taken", r[i], ("lock %q was taken by job code"):format(s))
      assert.truthy(has(r[i], "pawl.lock: "), r[i])
    end
    assert.truthy(has(r[1], 'lock name "pawl.recover" is reserved: names beginning '
                  .. 'with "pawl." are the host\'s own locks'), r[1])
    assert.truthy(has(r[2], 'lock name "PAWL.RECOVER" is reserved'), r[2])
    assert.truthy(has(r[6], "name contains a NUL byte"), r[6])
    assert.truthy(has(r[7], "lock name contains a control character"), r[7])
    assert.truthy(has(r[13], "lock name is longer than 200 bytes"), r[13])
  end)

  it("a node killed while its job holds a lock for a day does not stop the others recovering its lease", function()
    env:script("grab", [[
return { run = function(job)
  local function hold()
    local m = assert(io.open(job.payload.gate .. ".reached", "a"))
    m:write("reached\n")
    m:close()
    local deadline = pawl.time() + 600
    while pawl.time() < deadline do
      local g = io.open(job.payload.gate, "r")
      if g then g:close() return end
      pawl.sleep(0.01)
    end
  end
  -- The host's recovery lock if it can have it, else one of its own.
  local ok, err = pcall(pawl.lock, "pawl.recover", 86400, hold)
  if not ok then pawl.lock("mine", 86400, hold) end
  return { attempt = job.attempt, refused = not ok and tostring(err) or nil }
end }
]])
    local g = env:gate("grab")
    local id = env:enqueue("grab", H.json { gate = g.path })
    local a = env:start("--workers", "1", "--poll", "0.05", "--lease", "2",
                        "--log-level", "warn")
    g:wait_reached(1)
    -- kill -9 while the job holds its lock: another node recovers the
    -- job's lease, runs it again, and --until-idle ends.
    a:kill()
    a:wait(H.HANG_S)
    assert.are.equal("running", env:show(id).state)
    g:open()
    local b = env:run_idle("--workers", "1", "--poll", "0.05", "--lease", "2",
                           "--log-level", "warn")
    assert.are.equal(0, b.code, b:stderr())
    local j = env:show(id)
    assert.are.equal("succeeded", j.state)
    assert.are.equal(2, j.result.attempt)
    assert.truthy(has(j.result.refused, "is reserved"), j.result.refused)
  end)
end)

describe("strings job code hands to the store", function()
  local env

  before_each(function()
    env = H.env()
    env:ok("migrate")
  end)

  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  it("are bounded and checked as the CLI's are, with the same messages", function()
    env:script("noop", [[return { run = function() end }]])
    env:script("probe", [[
local function try(f, ...)
  local ok, err = pcall(f, ...)
  return ok and "ok" or tostring(err)
end
local long = ("c"):rep(201)
return { run = function(job)
  local E = function(opts) return try(pawl.enqueue, "noop", {}, opts) end
  return {
    corr = E { correlation_id = long },
    corr_ok = E { correlation_id = ("c"):rep(200) },
    key = E { key = ("k"):rep(201) },
    key_ctl = E { key = "a\nb" },
    key_nul = E { key = "a\0b" },
    bkey = E { business_key = ("b"):rep(201) },
    queue = E { queue = "q\0x" },
    okey = E { ordering_key = "o\1" },
    tag = E { tags = { "t\0x" } },
    tag_long = E { tags = { ("t"):rep(201) } },
    signal = E { signal = "s\0x" },
    type = try(pawl.enqueue, "noop\0x", {}),
    sig_key = try(pawl.signal, "s\0x", "approve"),
    lock_a = try(pawl.lock, "a\0b", 10, function() return "held" end),
    reason = try(pawl.replace, job.id, { reason = ("r"):rep(1001) }),
    batch = try(pawl.batch, { jobs = { { "noop", {}, { correlation_id = long } } } }),
    chain = try(pawl.chain, { { "noop", {}, { key = "k\0" } } }),
  }
end }]])
    local id = env:enqueue("probe", "{}")
    env:run_idle()
    local r = env:show(id).result
    assert.truthy(has(r.corr, "correlation id is longer than 200 bytes (got 201)"), r.corr)
    assert.are.equal("ok", r.corr_ok)
    assert.truthy(has(r.key, "idempotency key is longer than 200 bytes (got 201)"), r.key)
    assert.truthy(has(r.key_ctl, "idempotency key contains a control character"), r.key_ctl)
    assert.truthy(has(r.key_nul, "key contains a NUL byte"), r.key_nul)
    assert.truthy(has(r.bkey, "business key is longer than 200 bytes"), r.bkey)
    assert.truthy(has(r.queue, "queue contains a NUL byte"), r.queue)
    assert.truthy(has(r.okey, "ordering key contains a control character"), r.okey)
    assert.truthy(has(r.tag, "NUL byte"), r.tag) -- the JSON encoder refuses it first
    assert.truthy(has(r.tag_long, "tag is longer than 200 bytes"), r.tag_long)
    assert.truthy(has(r.signal, "signal contains a NUL byte"), r.signal)
    assert.truthy(has(r.type, "job type contains a NUL byte"), r.type)
    assert.truthy(has(r.sig_key, "key contains a NUL byte"), r.sig_key)
    assert.truthy(has(r.lock_a, "name contains a NUL byte"), r.lock_a)
    assert.truthy(has(r.reason, "reason is longer than 1000 bytes (got 1001)"), r.reason)
    assert.truthy(has(r.batch, "correlation id is longer than 200 bytes"), r.batch)
    assert.truthy(has(r.chain, "key contains a NUL byte"), r.chain)
    -- Nothing but the probe and corr_ok's job was enqueued.
    assert.are.equal(2, env:count_state("succeeded"))
    assert.are.equal(0, env:count_state("pending"))

    -- The CLI says the same of the same input.
    local c = env:pawl("enqueue", "noop", "{}", "--correlation-id", ("c"):rep(201))
    assert.are_not.equal(0, c.code)
    assert.truthy(has(c.err, "correlation id is longer than 200 bytes (got 201)"), c.err)
    c = env:pawl("enqueue", "noop", "{}", "--key", "a\tb")
    assert.are_not.equal(0, c.code)
    assert.truthy(has(c.err, "idempotency key contains a control character"), c.err)
  end)
end)
