-- script_settings_spec.lua: a script's max_attempts applies however its
-- jobs were enqueued.
--
-- Where and when a job runs (queue, priority, run time) is decided at
-- enqueue. How it runs (max_attempts, timeout, retry) is its script's,
-- decided by the worker that runs it, unless the enqueue set it: a job
-- enqueued without the script at hand (from C, another language, another
-- machine, a CLI without --scripts) follows the script all the same.
local cjson = require "cjson"
local H = require "host_helper"

-- Under ThreadSanitizer (make test-tsan) the Lua module, built with it,
-- cannot be loaded into the uninstrumented luajit: what needs it waits for
-- the plain and AddressSanitizer runs.
local TSAN = os.getenv("PAWL_TSAN") == "1"
local pawl = not TSAN and require "pawl"
local it_module = TSAN and function(name)
  pending(name .. " (the Lua module cannot load under ThreadSanitizer)")
end or it

local function has(s, text) return s:find(text, 1, true) ~= nil end

-- A job that always fails, saying which attempt of how many it was.
local FAILING = [[
return {
  %s
  retry = pawl.retry.fixed { delay = 0 },
  run = function(job)
    error(("attempt %%d of %%d"):format(job.attempt, job.max_attempts))
  end,
}]]

describe("script settings at run time", function()
  local env

  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  -- Enqueues through the CLI without the scripts dir.
  local function enqueue_blind(jtype, ...)
    return env:enqueue(jtype, "{}", "--scripts", env:path("nowhere"), ...)
  end

  it("a job enqueued without its script follows the script's max_attempts", function()
    env:script("once", FAILING:format("max_attempts = 1,"))
    local ids = { enqueue_blind("once") }
    if pawl then
      local db = assert(pawl.open{ db = env.db, node_id = "spec" })
      ids[2] = assert(db:enqueue("once"))
      db:close()
    end
    local p = env:run_idle("--idle-wait", "0")
    assert.are.equal(0, p.code, p:stderr())
    for _, id in ipairs(ids) do
      local j = env:show(id)
      assert.are.equal("failed", j.state)
      assert.are.equal(1, j.attempt)
      assert.is_true(has(j.last_error, "attempt 1 of 1"), j.last_error)
      -- Stored as "not set": the script speaks when the job runs.
      assert.are.equal(cjson.null, j.max_attempts)
    end
    -- The views show what applies, from the scripts they can see.
    local text = env:ok("show", ids[1], "--scripts", env.scripts)
    assert.truthy(text:find("\nmax_attempts:%s+1 %(the script's%)\n"), text)
    text = env:ok("show", ids[1])
    assert.truthy(text:find("\nmax_attempts:%s+%? %(no script visible%)\n"), text)
  end)

  it("an explicit max_attempts wins; _defaults.lua speaks for scripts that say nothing", function()
    env:script("once", FAILING:format("max_attempts = 1,"))
    env:script("plain", FAILING:format(""))
    env:script("_defaults", "return { max_attempts = 2, retry = pawl.retry.fixed { delay = 0 } }")
    local explicit = enqueue_blind("once", "--max-attempts", "3")
    local plain = enqueue_blind("plain")
    local unknown = enqueue_blind("no_such_type")
    local p = env:run_idle("--idle-wait", "0")
    assert.are.equal(0, p.code, p:stderr())
    local j = env:show(explicit)
    assert.are.equal("failed", j.state)
    assert.are.equal(3, j.attempt)
    assert.are.equal(3, j.max_attempts)
    assert.is_true(has(j.last_error, "attempt 3 of 3"), j.last_error)
    j = env:show(plain)
    assert.are.equal("failed", j.state)
    assert.are.equal(2, j.attempt)
    assert.is_true(has(j.last_error, "attempt 2 of 2"), j.last_error)
    -- No script at all: _defaults.lua's max_attempts and retry policy.
    j = env:show(unknown)
    assert.are.equal("failed", j.state)
    assert.are.equal(2, j.attempt)
    assert.is_true(has(j.last_error, "no script for job type no_such_type"), j.last_error)
  end)

  it("a job enqueued by a job gets its script's max_attempts when it runs", function()
    env:script("parent", [[
return { run = function() return (pawl.enqueue("child", {})) end }]])
    env:script("child", FAILING:format("queue = 'kids', priority = 4, max_attempts = 2,"))
    local parent = env:enqueue("parent")
    local p = env:run_idle("--idle-wait", "0")
    assert.are.equal(0, p.code, p:stderr())
    local child = env:show(env:show(parent).result)
    -- Where it runs was decided at enqueue, from the child's script ...
    assert.are.equal("kids", child.queue)
    assert.are.equal(4, child.priority)
    -- ... how it runs, when it ran.
    assert.are.equal(cjson.null, child.max_attempts)
    assert.are.equal("failed", child.state)
    assert.are.equal(2, child.attempt)
    assert.is_true(has(child.last_error, "attempt 2 of 2"), child.last_error)
  end)

  it_module("does not start an attempt past the script's max_attempts", function()
    -- The job's first attempt is lost (claimed, its lease expired): the
    -- store counts it, without knowing the script's max_attempts of 1.
    env:script("once", [[
return { max_attempts = 1, run = function() error("must not run") end }]])
    local db = assert(pawl.open{ db = env.db, node_id = "lost-node" })
    local t = db:now()
    db:set_now(t)
    local id = assert(db:enqueue("once"))
    assert.are.equal(1, #assert(db:claim(1, { lease_ms = 1 })))
    db:set_now(t + 2)
    assert.are.equal(1, db:recover())
    local j = db:get(id)
    assert.are.equal("pending", j.state)
    assert.are.equal(1, j.attempt)
    db:close()
    local p = env:run_idle("--idle-wait", "0")
    assert.are.equal(0, p.code, p:stderr())
    j = env:show(id)
    assert.are.equal("failed", j.state)
    assert.are.equal(2, j.attempt)
    assert.is_false(has(j.last_error, "must not run"), j.last_error)
    assert.is_true(has(j.last_error, "no attempts left: attempt 2 of a job whose "
                                     .. "max_attempts is 1 was not started"),
                   j.last_error)
  end)
end)
