-- claimed_spec.lua: what pawl shows about time is what happened.
--
-- A job claimed ahead of a free worker (the node's prefetch) holds a lease
-- but is not running: pawl jobs, pawl show, pawl top and their JSON say
-- "claimed", "busy" counts workers whose job has started, and the
-- attempt's run is its body's (the wait behind the busy worker is queue
-- wait). On SQLite and on the throwaway PostgreSQL server.
--
-- Nothing waits for time to pass: the busy worker's job waits at a gate
-- the spec opens, and every check is an order between recorded times or a
-- state the database shows, never a duration measured against a bound.
local cjson = require "cjson"
local H = require "host_helper"
local PG = require "pg_helper"
local C = require "cli_helper"

local HELD = H.GATE_LUA .. [[
return { max_attempts = 1,
         run = function(job) pawl_gate(job.payload.gate) return "held" end }]]
local QUICK = 'return { max_attempts = 1, run = function() return "quick" end }'

-- A Lua pattern that matches `s` as it is.
local function lit(s) return (s:gsub("%p", "%%%0")) end

local function jobs_json(env)
  local out = {}
  for _, j in ipairs(C.json_lines(env:ok("jobs", "--json"))) do out[j.id] = j end
  return out
end

for _, backend in ipairs({ "sqlite", "postgres" }) do
  describe("jobs claimed ahead (" .. backend .. ")", function()
    local env
    before_each(function() env = PG.env_for(backend) end)
    after_each(function() if env then env:cleanup() end end)

    it("show as claimed, not running, in pawl jobs, show and top, and their wait is queue wait, not run time", function()
      if not env then pending(PG.skip_reason()) return end
      local g = env:gate()
      env:script("held", HELD)
      env:script("quick", QUICK)
      local held = env:enqueue("held", H.json { gate = g.path })
      local quick = {}
      for i = 1, 3 do quick[i] = env:enqueue("quick") end
      -- One worker: the first claim takes all four (the prefetch), and
      -- the three quick ones wait behind the held one.
      env:start("--workers", "1", "--ahead-hold", "600")
      g:wait_reached()
      env:wait_until("the quick jobs to be claimed", function()
        local js = jobs_json(env)
        for _, id in ipairs(quick) do
          if js[id].state ~= "running" then return false end
        end
        return true
      end)

      local js = jobs_json(env)
      assert.equal(false, js[held].claimed)
      for _, id in ipairs(quick) do
        assert.equal(true, js[id].claimed, id)
        assert.equal(cjson.null, js[id].started_at, id)
      end
      local text = env:ok("jobs")
      for _, id in ipairs(quick) do
        assert.truthy(text:find(lit(id) .. "%s+quick%s+default%s+claimed"), text)
      end
      assert.truthy(text:find(lit(held) .. "%s+held%s+default%s+running"), text)
      local shown = env:ok("show", quick[1])
      assert.truthy(shown:find("state:%s+claimed"), shown)
      local sj = env:show(quick[1])
      assert.equal("claimed", sj.attempts[1].outcome)
      assert.equal(cjson.null, sj.attempts[1].started_at)

      -- top: one busy worker on the node, the held job running, the quick
      -- ones claimed after it.
      local snap = cjson.decode(env:ok("top", "--once", "--json"))
      assert.equal(1, #snap.nodes)
      assert.equal(1, snap.nodes[1].running)
      assert.equal(4, #snap.running)
      assert.equal(held, snap.running[1].id)
      assert.equal(false, snap.running[1].claimed)
      for i = 2, 4 do assert.equal(true, snap.running[i].claimed) end
      local plain = env:ok("top", "--once")
      assert.truthy(plain:find(lit(quick[1]) .. "[^\n]*claimed"), plain)

      g:open()
      for _, id in ipairs(quick) do env:wait_state(id, "succeeded") end
      -- Each quick job's body started once the worker was free: after the
      -- held job's body returned, and after the quick job before it.
      local h = env:show(held).attempts[1]
      local prev_end = H.ms(h.ended_at)
      for _, id in ipairs(quick) do
        local a = env:show(id).attempts[1]
        assert.truthy(H.ms(a.started_at) >= prev_end,
                      ("%s started at %s, before the worker was free (%s)")
                      :format(id, a.started_at, h.ended_at))
        assert.truthy(a.queue_wait_ms >= prev_end - H.ms(a.scheduled_at))
        prev_end = H.ms(a.ended_at)
      end
    end)
  end)
end

-- A node whose workers are all busy on long jobs claims nothing ahead, and
-- hands back what it claimed ahead before they got stuck, so a job due
-- now runs on time on a node that is free. Node A: two workers held at a
-- gate (long jobs, as long as the spec keeps the gate shut); node B:
-- idle. A job due every second (a recurring definition) must run on B,
-- each soon after it is due, while A's workers stay busy. Before, A kept
-- claiming due jobs ahead of its busy workers and held them until a
-- worker was free (here: never, until the gate opens).
local LONG = H.GATE_LUA .. [[
return { max_attempts = 1,
         run = function(job) pawl_gate(job.payload.gate) return "long" end }]]
local TICK = [[
return { cron = "* * * * * *", misfire = "skip", max_attempts = 1,
         run = function() return "tick" end }]]

for _, backend in ipairs({ "sqlite", "postgres" }) do
  describe("a node busy on long jobs (" .. backend .. ")", function()
    local env
    before_each(function() env = PG.env_for(backend) end)
    after_each(function() if env then env:cleanup() end end)

    it("holds no due job it cannot start: an idle node runs it on time", function()
      if not env then pending(PG.skip_reason()) return end
      local g = env:gate()
      env:script("long", LONG)
      local longs = { env:enqueue("long", H.json { gate = g.path }),
                      env:enqueue("long", H.json { gate = g.path }) }
      env:start("--node-id", "A", "--workers", "2", "--poll", "0.2")
      g:wait_reached(2)
      -- Both of A's workers are busy; now the job due every second, and
      -- an idle node.
      env:script("tick", TICK)
      env:start("--node-id", "B", "--workers", "2", "--poll", "0.2")
      local done
      env:wait_until("six ticks to have run", function()
        done = {}
        for _, j in ipairs(C.json_lines(env:ok("jobs", "--json", "--type",
                                               "tick", "--limit", "1000"))) do
          if j.state == "succeeded" then done[#done + 1] = j end
        end
        return #done >= 6
      end)
      -- Every tick due more than 3 s ago has run, on B; none is held by
      -- A. (3 s: far more than B needs to claim one, far less than A
      -- would hold it: until the gate opens.)
      -- The wall clock in whole seconds (os.time()): a second early at
      -- most, which only widens the margin below.
      local now = C.now_ms()
      local ticks = C.json_lines(env:ok("jobs", "--json", "--type", "tick",
                                        "--limit", "1000"))
      for _, j in ipairs(ticks) do
        local sj = env:show(j.id)
        local due = H.ms(sj.attempts[1] and sj.attempts[1].scheduled_at or j.run_at)
        if due < now - 3000 then
          assert.equal("succeeded", j.state,
                       ("tick %s, due at %s, has not run: %s"):format(
                         j.id, tostring(j.run_at), cjson.encode(sj.attempts)))
        end
        if j.state == "succeeded" then
          -- On time: its body started within 3 s of when it was due.
          local last = sj.attempts[#sj.attempts]
          assert.truthy(H.ms(last.started_at) - due < 3000,
                        ("tick %s ran late: %s"):format(j.id, cjson.encode(sj.attempts)))
          assert.equal("B", last.node, j.id)
          for _, a in ipairs(sj.attempts) do
            -- A may have claimed it ahead before its workers were stuck,
            -- and handed it back unstarted.
            if a.node == "A" then
              assert.equal("released", a.outcome, j.id)
              assert.equal(cjson.null, a.started_at, j.id)
            end
          end
        else
          assert.truthy(j.state ~= "running" or j.lease_owner ~= "A",
                        ("tick %s is held by A: %s"):format(j.id, cjson.encode(j)))
        end
      end
      for _, id in ipairs(longs) do
        assert.equal("running", env:show(id).state)
      end
      g:open()
      for _, id in ipairs(longs) do env:wait_state(id, "succeeded") end
    end)
  end)
end
