-- steps_spec.lua: restartable steps, checkpoints and job instances
-- with real `pawl run` nodes, on SQLite and on PostgreSQL.
--
-- The three-step job ("etl") appends what it does to an output file, one
-- line per write(2):
--
--   extract <attempt>          step 1 ran
--   start <i> <attempt>        step 2 (transform) started at item i
--   item <i>                   step 2 processed item i
--   load <attempt>             step 3 ran
--
-- Step 2 processes items 1..1000 and saves a checkpoint (the next item)
-- after every 50th. On its first attempt, at item 620, it writes a marker
-- file and waits (the "kill point"); the test waits for the marker (not for
-- a time) and kills the node with SIGKILL. The last checkpoint then says
-- 601: items 601..620 were processed after it (the uncommitted chunk). A
-- second node recovers the job once the dead node's lease runs out and
-- runs attempt 2. What must hold, precisely:
--   * "extract" once (step 1 is not run again), "load" once;
--   * attempt 2 starts step 2 at item 601 ("start 601 2"), the item after
--     the last checkpoint;
--   * every item 1..1000 appears; items 601..620 exactly twice, every
--     other item exactly once (nothing of a committed chunk is redone);
--   * the step executions recorded: extract completed (attempt 1),
--     transform failed (attempt 1: its node died) with the counters of its
--     last checkpoint, transform completed (attempt 2) with its exit code,
--     load completed (attempt 2); `pawl show` prints them as a table.
local cjson = require "cjson"
local H = require "host_helper"
local P = require "pg_helper"

local PG_SKIP = P.skip_reason()
if PG_SKIP then
  io.stderr:write("\n*** steps_spec: " .. PG_SKIP .. " ***\n\n")
end

local APPEND = [[
local function append(path, line)
  local f = assert(io.open(path, "a"))
  assert(f:write(line .. "\n"))
  assert(f:close())
end
]]

local ETL = APPEND .. [[
return {
  max_attempts = 5,
  retry = function() return 0 end,
  steps = {
    { name = "extract", run = function(job, ctx)
        append(job.payload.out, "extract " .. job.attempt)
        ctx:count("read", 1000)
      end },
    { name = "transform", run = function(job, ctx)
        local p = job.payload
        local from = ctx.checkpoint and ctx.checkpoint.next or 1
        append(p.out, ("start %d %d"):format(from, job.attempt))
        for i = from, 1000 do
          append(p.out, "item " .. i)
          ctx:count("read")
          ctx:count("written")
          if i % 50 == 0 then
            ctx:count("commits")
            ctx:checkpoint { next = i + 1 }
          end
          if i == p.kill_at and job.attempt == 1 then
            append(p.marker, "at " .. i)
            while true do pawl.sleep(0.05) end -- the test kills the node here
          end
        end
        ctx:exit("COMPLETED_ALL", "1000 items")
      end },
    { name = "load", run = function(job, ctx)
        append(job.payload.out, "load " .. job.attempt)
        return { loaded = true }
      end },
  },
}
]]

local function lines_of(path)
  local f = io.open(path, "r")
  if not f then return {} end
  local t = {}
  for l in f:lines() do t[#t + 1] = l end
  f:close()
  return t
end

local function backends()
  local list = { { name = "SQLite", env = function() return H.env() end } }
  if not PG_SKIP then
    list[#list + 1] = { name = "PostgreSQL", env = function() return P.env() end }
  end
  return list
end

for _, be in ipairs(backends()) do
  describe("restartable steps on " .. be.name, function()
    local env
    before_each(function() env = be.env() end)
    after_each(function() if env then env:cleanup() end end)

    test("a three-step job killed in its second step resumes at its last checkpoint", function()
      env.gated = true -- the scripts write files: --allow-io
      env:script("etl", ETL)
      local out, marker = env:path("out.txt"), env:path("marker")
      local id = env:enqueue("etl", H.json { out = out, marker = marker, kill_at = 620 })
      -- A lease short enough that the job comes back soon after the kill.
      local node1 = env:start("--lease", "5", "--poll", "0.1")
      env:wait_until("the job to reach item 620", function()
        return #lines_of(marker) > 0
      end)
      node1:signal("KILL")
      assert.are.equal(137, node1:wait(H.HANG_S))
      local before = lines_of(out)
      assert.are.equal("item 620", before[#before])

      local node2 = env:start("--poll", "0.1")
      local job = env:wait_state(id, "succeeded", 2 * H.HANG_S)
      node2:kill()
      assert.are.same({ loaded = true }, job.result)

      local got = lines_of(out)
      local count, seen = {}, {}
      local extract, load, starts = 0, 0, {}
      for _, l in ipairs(got) do
        local i = l:match("^item (%d+)$")
        if i then
          i = tonumber(i)
          count[i] = (count[i] or 0) + 1
        elseif l:match("^extract ") then
          extract = extract + 1
        elseif l:match("^load ") then
          load = load + 1
          assert.are.equal("load 2", l)
        elseif l:match("^start ") then
          starts[#starts + 1] = l
        end
        seen[#seen + 1] = l
      end
      assert.are.equal(1, extract, "step 1 ran again")
      assert.are.equal(1, load)
      assert.are.same({ "start 1 1", "start 601 2" }, starts)
      for i = 1, 1000 do
        local want = (i >= 601 and i <= 620) and 2 or 1
        assert.are.equal(want, count[i], ("item %d processed %s times"):format(i, tostring(count[i])))
      end

      -- The step executions, as pawl show --json has them.
      local steps = job.steps
      assert.are.equal(4, #steps, cjson.encode(steps))
      local function row(k, attempt, name, status)
        local s = steps[k]
        assert.are.equal(attempt, s.attempt)
        assert.are.equal(name, s.name)
        assert.are.equal(status, s.status)
        return s
      end
      local ex = row(1, 1, "extract", "completed")
      assert.are.equal(1000, ex.read)
      local t1 = row(2, 1, "transform", "failed")
      assert.truthy(t1.exit_message:find("without ending this step", 1, true))
      -- The counters of its last checkpoint, item 600.
      assert.are.equal(600, t1.read)
      assert.are.equal(600, t1.written)
      assert.are.equal(12, t1.commits)
      assert.are.same({ next = 601 }, t1.checkpoint)
      local t2 = row(3, 2, "transform", "completed")
      assert.are.equal("COMPLETED_ALL", t2.exit_code)
      assert.are.equal("1000 items", t2.exit_message)
      assert.are.equal(400, t2.read)
      assert.are.equal(8, t2.commits)
      assert.are.same({ next = 1001 }, t2.checkpoint)
      row(4, 2, "load", "completed")
      assert.are.equal("COMPLETED_ALL", job.exit_code)

      -- And as a table.
      local text = env:ok("show", id)
      assert.truthy(text:find("\nsteps:\n", 1, true), text)
      assert.truthy(text:find("exit: COMPLETED_ALL 1000 items", 1, true), text)
      local rows = 0
      for line in text:gmatch("[^\n]+") do
        if line:match("^  %d+%s+%d+ %a+%s+%a+") then rows = rows + 1 end
      end
      assert.are.equal(4, rows, text)
      assert.truthy(text:find("2 transform%s+completed"), text)
    end)

    test("a step that raises is retried from its checkpoint; ctx misuse is refused", function()
      env.gated = true
      env:script("flaky", APPEND .. [[
return {
  max_attempts = 3,
  retry = function() return 0 end,
  steps = {
    { name = "one", run = function(job, ctx) append(job.payload.out, "one") end },
    { name = "two", run = function(job, ctx)
        local from = ctx.checkpoint and ctx.checkpoint.at or 0
        append(job.payload.out, "two from " .. from)
        ctx:checkpoint { at = 5 }
        if job.attempt == 1 then error("token=secret123 broke") end
        -- bounds: a checkpoint over 1 MB, an unknown counter
        local ok, err = pcall(ctx.checkpoint, ctx, { big = string.rep("x", 1024 * 1024) })
        append(job.payload.out, "big " .. tostring(ok) .. " " .. tostring(err))
        ok, err = pcall(ctx.count, ctx, "bogus")
        append(job.payload.out, "count " .. tostring(ok) .. " " .. tostring(err))
        return "ok"
      end },
  },
}
]])
      local out = env:path("out.txt")
      local id = env:enqueue("flaky", H.json { out = out })
      env:run_idle()
      local job = env:wait_state(id, "succeeded")
      local got = lines_of(out)
      assert.are.equal("one", got[1])
      assert.are.equal("two from 0", got[2])
      assert.are.equal("two from 5", got[3])
      assert.truthy(got[4]:find("^big false .*more than the limit of 1048576"), got[4])
      assert.truthy(got[5]:find("^count false .*counter must be read, written"), got[5])
      assert.are.equal(5, #got)
      local s = job.steps
      assert.are.equal(3, #s)
      assert.are.equal("failed", s[2].status)
      -- The step's message is the sanitized error.
      assert.truthy(s[2].exit_message:find("broke", 1, true))
      assert.falsy(s[2].exit_message:find("secret123", 1, true))
      assert.are.equal("completed", s[3].status)
      assert.are.equal(2, s[3].attempt)
    end)

    test("a script with bad steps does not load", function()
      env:script("bad", [[return { steps = { { name = "a", run = function() end },
                                             { name = "a", run = function() end } } }]])
      local p = env:run_idle()
      assert.truthy(p:stderr():find("two steps are named a", 1, true), p:stderr())
      env:script("bad", [[return { run = function() end, steps = { { name = "a", run = function() end } } }]])
      p = env:run_idle()
      assert.truthy(p:stderr():find("run or steps, not both", 1, true), p:stderr())
    end)

    test("job instances: a completed one is refused, a dead one restarted", function()
      env.gated = true
      env:script("report", APPEND .. [[
return {
  identity = { "date" },
  max_attempts = 1,
  steps = {
    { name = "gather", run = function(job) append(job.payload.out, "gather " .. job.payload.date) end },
    { name = "publish", run = function(job)
        local f = io.open(job.payload.fix, "r")
        if not f then error("not fixed yet") end
        f:close()
        append(job.payload.out, "publish " .. job.payload.date)
      end },
  },
}
]])
      local out, fix = env:path("out.txt"), env:path("fix")
      local pay = H.json { date = "2026-03-01", out = out, fix = fix }
      local id = env:enqueue("report", pay)
      -- Live: the same job.
      local r = env:pawl("enqueue", "report", pay, "--scripts", env.scripts)
      assert.are.equal(0, r.code, r.err)
      assert.are.equal(id, (r.out:gsub("%s+$", "")))
      assert.truthy(r.err:find("existing", 1, true), r.err)

      env:run_idle()
      env:wait_state(id, "failed")
      -- Dead: restarted, the same id; the step that completed is skipped.
      io.open(fix, "w"):close()
      r = env:pawl("enqueue", "report", pay, "--scripts", env.scripts)
      assert.are.equal(0, r.code, r.err)
      assert.are.equal(id, (r.out:gsub("%s+$", "")))
      assert.truthy(r.err:find("restarted", 1, true), r.err)
      env:run_idle()
      local job = env:wait_state(id, "succeeded")
      assert.are.same({ "gather 2026-03-01", "publish 2026-03-01" }, lines_of(out))
      assert.are.same({ date = "2026-03-01" }, job.instance)

      -- Completed: refused, nothing enqueued.
      r = env:pawl("enqueue", "report", pay, "--scripts", env.scripts)
      assert.are_not.equal(0, r.code)
      assert.truthy(r.err:find("already completed", 1, true), r.err)
      local jobs = env:ok("jobs", "--json")
      local n = 0
      for _ in jobs:gmatch("\"type\":\"report\"") do n = n + 1 end
      assert.are.equal(1, n)

      -- Another date is another instance.
      local other = env:enqueue("report", H.json { date = "2026-03-02", out = out, fix = fix })
      assert.are_not.equal(id, other)
      -- Without the field: refused.
      r = env:pawl("enqueue", "report", H.json { out = out }, "--scripts", env.scripts)
      assert.are_not.equal(0, r.code)
      assert.truthy(r.err:find("identity field date is not in the payload", 1, true), r.err)
    end)
  end)
end
