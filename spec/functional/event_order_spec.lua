-- event_order_spec.lua: a job's history is in the order things happened.
--
-- Every transition reads its time once it holds what orders it (SQLite's
-- write lock; PostgreSQL's row locks), so no job's history lists an event
-- before one that happened earlier: a job released by its parents starts
-- after its unblock, and each event's time is at or after the one before.
-- A fan-in of 100 parents into one join, each parent also releasing a
-- child of its own, run by four workers, gives the claim, the finish and
-- the release every chance to meet. On SQLite and on PostgreSQL. (A
-- transaction's order, not the machine's speed, decides what is checked:
-- every check is an order between recorded times.)
local cjson = require "cjson"
local pawl = require "pawl"
local H = require "host_helper"
local PG = require "pg_helper"

local N = 100

for _, backend in ipairs({ "sqlite", "postgres" }) do
  describe("event order (" .. backend .. ")", function()
    local env
    before_each(function() env = PG.env_for(backend) end)
    after_each(function() if env then env:cleanup() end end)

    it("a fan-in of " .. N .. " parents: every job's events in time order, each start after its unblock", function()
      if not env then pending(PG.skip_reason()) return end
      env:script("leaf", 'return { run = function() return 1 end }')
      -- Through the Lua module: one handle, no process per job.
      local db = assert(pawl.open{ db = env.db })
      local parents, all = {}, {}
      for i = 1, N do
        parents[i] = assert(db:enqueue("leaf", nil))
        all[#all + 1] = parents[i]
      end
      for i = 1, N do
        all[#all + 1] = assert(db:enqueue("leaf", nil, { after = { parents[i] } }))
      end
      local join = assert(db:enqueue("leaf", nil, { after = parents }))
      all[#all + 1] = join
      local p = env:run_idle("--workers", "4")
      assert.are.equal(0, p.code, p:stderr())

      local nunblocked = 0
      for _, id in ipairs(all) do
        assert.are.equal("succeeded", db:get(id).state, id)
        local h = db:history(id)
        local prev, unblocked
        for k, e in ipairs(h.events) do
          if prev then
            assert.truthy(e.at >= prev, ("job %s: event %d (%s) at %d is before the one before it: %s")
                          :format(id, k, tostring(e.reason), e.at, cjson.encode(h.events)))
          end
          prev = e.at
          if e.from == "blocked" and e.to == "pending" then unblocked = e.at end
        end
        if h.events[1].to == "blocked" then
          assert.truthy(unblocked, ("job %s was never unblocked: %s"):format(id, cjson.encode(h.events)))
          nunblocked = nunblocked + 1
          local a = h.attempts[#h.attempts]
          assert.truthy(a.started_at >= unblocked,
                        ("job %s started at %d, before its unblock at %d: %s")
                        :format(id, a.started_at, unblocked, cjson.encode(h.events)))
        end
      end
      assert.are.equal(N + 1, nunblocked) -- the children and the join
      db:close()
    end)
  end)
end
