-- poison_spec.lua: a node that dies takes the jobs it had claimed with it;
-- only the one it was running can be the poison that killed it. A job
-- lost while running more than 3 times fails as poison;
-- the jobs claimed beside it (prefetched, queued in the host, never
-- started) must not be blamed, however often the node dies.
--
-- Each round a real `pawl run` with one worker and a prefetch claims, in
-- one claim, the poison job (highest priority: the worker runs it) and the
-- innocent ones (queued behind it); the poison job reports progress (so
-- the test knows that this attempt runs) and then blocks; the test kills
-- the node with SIGKILL. The next round's node takes the expired leases
-- back itself (a short lease) and claims them all again. Everything is
-- read with `pawl show`, so the spec needs no Lua module and also runs
-- under ThreadSanitizer.
local H = require "host_helper"

local LEASE = "5"
local INNOCENT = 4
local ROUNDS = 5

local function has(s, text) return s:find(text, 1, true) ~= nil end

describe("a node killed by a poison job", function()
  local env

  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  it("dead-letters the poison job, never the jobs queued beside it", function()
    env:script("poison", [[
return {
  run = function(job, ctx)
    ctx:progress(1, 2)    -- this attempt has started (written at once)
    pawl.sleep(3600)      -- and never ends: the node is killed
  end,
}]])
    env:script("innocent", [[return { run = function() return "ok" end }]])
    local poison = env:enqueue("poison", "{}", "--priority", "10")
    local innocent = {}
    for i = 1, INNOCENT do innocent[i] = env:enqueue("innocent", "{}") end

    local function start()
      -- --ahead-hold: the innocent jobs stay claimed behind the poison one
      -- (by default a node hands them back once its worker is stuck).
      return env:start("--workers", "1", "--prefetch", tostring(INNOCENT),
                       "--ahead-hold", "600",
                       "--lease", LEASE, "--poll", "0.2")
    end

    for round = 1, ROUNDS do
      local node = start()
      -- Attempt `round` of the poison job runs, the others are claimed
      -- behind it (by this node: from round 2 on, it first takes them
      -- back from the node killed in the round before).
      env:wait_until(("round %d: the poison job running, the others claimed")
                     :format(round), function()
        local claimed = true
        for _, id in ipairs(innocent) do
          local j = env:show(id)
          if j.state == "failed" then
            error(("round %d: innocent job %s was dead-lettered: %s")
                  :format(round, id, j.last_error))
          end
          claimed = claimed and j.state == "running" and j.attempt == round
        end
        local p = env:show(poison)
        return claimed and p.state == "running" and p.attempt == round
               and p.progress_done == 1
      end, 60)
      node:kill()
      for _, id in ipairs(innocent) do
        assert.are.equal(0, env:show(id).progress_done)
      end
    end

    -- The last node takes the leases back once more: the poison job's
    -- fifth loss, the fourth known to have been running, dead-letters it;
    -- the innocent ones run.
    local node = start()
    env:wait_until("the innocent jobs to succeed", function()
      for _, id in ipairs(innocent) do
        if env:show(id).state ~= "succeeded" then return false end
      end
      return true
    end, 60)
    node:signal("TERM")
    assert.is_truthy(node:wait(30), node:stderr())

    local p = env:show(poison)
    assert.are.equal("failed", p.state, p.last_error)
    assert.is_true(has(p.last_error, "lost while running 4 times: poison job"),
                   p.last_error)
    assert.are.equal(ROUNDS, #p.attempts)
    -- Its first loss was not known to have run: no start is recorded for a
    -- job's first run.
    assert.is_true(has(p.attempts[1].error, "not known to have started"),
                   p.attempts[1].error)
    for _, id in ipairs(innocent) do
      local j = env:show(id)
      assert.are.equal("succeeded", j.state, j.last_error)
      assert.are.equal(ROUNDS + 1, j.attempt)
      assert.are.equal(ROUNDS + 1, #j.attempts)
      -- Lost five times, never counted as a crash: the first time not
      -- known to have started, then known not to have.
      for k = 1, ROUNDS do
        local a = j.attempts[k]
        assert.are.equal("lost", a.outcome)
        assert.is_true(has(a.error, k == 1 and "not known to have started"
                                    or "before the job started"), a.error)
      end
    end
  end)
end)
