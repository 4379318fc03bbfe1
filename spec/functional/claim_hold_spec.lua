-- claim_hold_spec.lua: `pawl run --until-idle` ends while jobs of an
-- ordering key wait behind a head that cannot run now (paused, blocked,
-- waiting for its retry): a job no claim can take is not due, so the node
-- has nothing left to do. Before, next_due counted such jobs as due now,
-- and the node polled for ever (burning a core) instead of ending.
-- Each run is capped by run_idle's hang guard only; nothing waits on time.
local H = require "host_helper"

describe("a node with nothing it can run", function()
  local env

  before_each(function()
    env = H.env()
    env:script("work", "return { run = function() end }")
    env:script("flaky", [[
return {
  max_attempts = 3,
  retry = function() return 3600 end,
  run = function() error("not now") end,
}]])
  end)
  after_each(function() env:cleanup() end)

  -- n jobs of `jtype` with key `key`, after `first` (which comes first in
  -- line when given); returns their ids.
  local function keyed(jtype, key, n, ...)
    local ids = {}
    for i = 1, n do
      ids[i] = env:enqueue(jtype, "{}", "--ordering-key", key,
                           unpack(i == 1 and { ... } or {}))
    end
    return ids
  end

  -- Runs an --until-idle node (all queues, or --queues default) and checks
  -- that it ended by itself, 0, with the free jobs done and the keyed
  -- ones behind the head still pending.
  local function ends(free, behind, ...)
    local p = env:run_idle("--workers", "2", "--idle-wait", "0", ...)
    assert.are.equal(0, p.code, p:stderr())
    for _, id in ipairs(free) do
      assert.are.equal("succeeded", env:show(id).state, p:stderr())
    end
    for _, id in ipairs(behind) do
      assert.are.equal("pending", env:show(id).state, p:stderr())
    end
  end

  for _, queues in ipairs({ {}, { "--queues", "default" } }) do
    local where = #queues == 0 and "every queue" or "one queue"

    it("ends when the head of a key is paused (" .. where .. ")", function()
      local ids = keyed("work", "acct:1", 3)
      assert(env:ok("pause", ids[1]))
      local free = { env:enqueue("work"), env:enqueue("work") }
      ends(free, { ids[2], ids[3] }, unpack(queues))
      assert.are.equal("paused", env:show(ids[1]).state)
    end)

    it("ends when the head of a key is blocked on a later parent (" .. where .. ")", function()
      local parent = env:enqueue("work", "{}", "--delay", "3600")
      local ids = keyed("work", "acct:2", 3, "--after", parent)
      assert.are.equal("blocked", env:show(ids[1]).state)
      local free = { env:enqueue("work") }
      ends(free, { ids[2], ids[3] }, unpack(queues))
      assert.are.equal("blocked", env:show(ids[1]).state)
      assert.are.equal("pending", env:show(parent).state)
    end)

    it("ends when the head of a key waits an hour for its retry (" .. where .. ")", function()
      local head = keyed("flaky", "acct:3", 1)[1]
      local behind = keyed("work", "acct:3", 2)
      local free = { env:enqueue("work") }
      ends(free, behind, unpack(queues))
      local j = env:show(head)
      assert.are.equal("pending", j.state)
      assert.are.equal(1, j.attempt)
    end)
  end
end)
