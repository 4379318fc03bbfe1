-- instance_module_spec.lua: job instances (docs/flows.md "Restartable
-- steps") through the Lua module: db:enqueue's `identity` option, and a
-- db:define type's `identity`, refused once the instance succeeded and
-- restarting its dead job. (Apart from steps_spec: the Lua module does
-- not load under ThreadSanitizer.)
local pawl = require "pawl"
local H = require "host_helper"

describe("job instances in the Lua module", function()
  local env, db

  before_each(function()
    env = H.env()
    db = assert(pawl.open { db = env.db })
  end)

  after_each(function()
    if db then db:close() end
    if env then env:cleanup() end
    db, env = nil, nil
  end)

  -- Steps the handle until job `id` is in `state` (a generous bound on
  -- the rounds, not on time).
  local function step_until(id, state)
    for _ = 1, 2000 do
      if db:job(id).state == state then return end
      assert(db:step(50))
    end
    error(("job %s never reached %s (it is %s)"):format(id, state, db:job(id).state))
  end

  it("the identity option: live, then refused once the instance succeeded", function()
    local a, st = assert(db:enqueue("report", { date = "2026-03-01", n = 1 },
                                    { identity = { "date" } }))
    assert.are.equal("new", st)
    local b, st2 = assert(db:enqueue("report", { date = "2026-03-01", n = 2 },
                                     { identity = { "date" } }))
    assert.are.equal(a, b)
    assert.are.equal("existing", st2)
    local c = assert(db:enqueue("report", { date = "2026-03-02" }, { identity = { "date" } }))
    assert.are_not.equal(a, c)
    assert.are.equal(2, #db:jobs { type = "report" })
    local ok, err = db:enqueue("report", { n = 3 }, { identity = { "date" } })
    assert.is_nil(ok)
    assert.matches("date", err)
    local raised, msg = pcall(db.enqueue, db, "report", {}, { identity = "date" })
    assert.is_false(raised)
    assert.matches('option "identity" must be an array of strings', msg)
    assert.are.equal(2, #db:jobs { type = "report" })
  end)

  it("a defined type's identity: its dead job restarts, its success refuses", function()
    local runs = 0
    assert(db:define("report", {
      identity = { "date" }, max_attempts = 1,
      run = function()
        runs = runs + 1
        if runs == 1 then error("the first run fails") end
        return { runs = runs }
      end,
    }))
    local a, st = assert(db:enqueue("report", { date = "2026-03-01" }))
    assert.are.equal("new", st)
    step_until(a, "failed")
    local b, st2 = assert(db:enqueue("report", { date = "2026-03-01" }))
    assert.are.equal(a, b)
    assert.are.equal("restarted", st2)
    step_until(a, "succeeded")
    local ok, err = db:enqueue("report", { date = "2026-03-01" })
    assert.is_nil(ok)
    assert.matches("already completed", err)
    assert.are.equal(1, #db:jobs { type = "report" })
    -- The options' fields win over the type's: another instance.
    local d = assert(db:enqueue("report", { date = "2026-03-01", other = 1 },
                                { identity = { "other" } }))
    assert.are_not.equal(a, d)
  end)
end)
