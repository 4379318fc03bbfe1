-- poison_spec.lua: a node that dies takes the jobs it had claimed with it;
-- only the one it was running can be the poison that killed it (issue 10,
-- item 3). A job lost while running more than 3 times fails as poison;
-- the jobs claimed beside it (prefetched, queued in the host, never
-- started) must not be blamed, however often the node dies.
--
-- Each round starts a real `pawl run` with one worker and a prefetch, so
-- that one claim takes the poison job (highest priority: the worker runs
-- it) and the innocent ones (queued behind it); the poison job reports
-- progress (so the test knows this attempt runs) and then blocks; the test
-- kills the node with SIGKILL, and takes the leases back itself (the Lua
-- module's pawl_recover()) once they have expired.
local pawl = require "pawl"
local H = require "host_helper"

local LEASE_S = 5
local INNOCENT = 4

local function has(s, text) return s:find(text, 1, true) ~= nil end

describe("a node killed by a poison job", function()
  local env, db

  before_each(function()
    env = H.env()
    db = nil
  end)
  after_each(function()
    if db then db:close() end
    env:cleanup()
  end)

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
    db = assert(pawl.open{ db = env.db, node_id = "sweeper" })

    for round = 1, 5 do
      local node = env:start("--workers", "1", "--prefetch", tostring(INNOCENT),
                             "--lease", tostring(LEASE_S))
      -- The poison job runs, the innocent ones are claimed behind it.
      env:wait_until(("round %d: the poison job running, the others claimed")
                     :format(round), function()
        if db:get(poison).progress_done ~= 1 then return false end
        for _, id in ipairs(innocent) do
          if db:get(id).state ~= "running" then return false end
        end
        return true
      end, 60)
      node:kill()
      for _, id in ipairs(innocent) do
        assert.are.equal(0, db:get(id).progress_done)
      end
      -- Once the leases have expired, they are taken back.
      local recovered = env:wait_until("the leases to expire", function()
        local n = assert(db:recover())
        return n > 0 and n
      end, 10 * LEASE_S)
      assert.are.equal(INNOCENT + 1, recovered)
      for _, id in ipairs(innocent) do
        local j = db:get(id)
        assert.are.equal("pending", j.state, j.last_error)
        assert.are.equal(round, j.recoveries)
        assert.are.equal(round, j.attempt)
        -- Never started: not counted as a crash.
        assert.is_true(has(j.last_error, round == 1 and "not known to have started"
                                          or "before the job started"), j.last_error)
      end
      local p = db:get(poison)
      if round < 5 then
        assert.are.equal("pending", p.state, p.last_error)
      else
        -- Its first loss was not known to have run; the next four were.
        assert.are.equal("failed", p.state)
        assert.is_true(has(p.last_error, "lost while running 4 times: poison job"),
                       p.last_error)
      end
    end

    -- The innocent jobs then run.
    local node = env:run_idle("--idle-wait", "0")
    assert.are.equal(0, node.code, node:stderr())
    for _, id in ipairs(innocent) do
      local j = db:get(id)
      assert.are.equal("succeeded", j.state, j.last_error)
      assert.are.equal(6, j.attempt)
    end
    assert.are.equal("failed", db:get(poison).state)
  end)
end)
