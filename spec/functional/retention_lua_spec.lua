-- retention_lua_spec.lua: db:cleanup{...} (retention) through
-- `require "pawl"` on a handle with an injected clock (db:advance): what
-- it removes and reports, a dry run, archive, and bad options. Loads the
-- Lua module, so it stays out of the ThreadSanitizer specs.
local pawl = require "pawl"
local C = require "cli_helper"

local T0 = 1800000000000
local DAY = 24 * 3600 * 1000

describe("db:cleanup", function()
  local env, db

  before_each(function()
    env = C.env()
    db = assert(pawl.open{ db = env.db, node_id = "n1", now = T0 })
  end)

  after_each(function()
    db:close()
    env:cleanup()
  end)

  -- A job of `type_` in `queue` that ended now as `kind`.
  local function ended(type_, queue, kind)
    local id = assert(db:enqueue(type_, nil, { queue = queue, max_attempts = 1 }))
    local j = db:claim(1)[1]
    assert.are.equal(id, j.id)
    assert.are.same({ true }, db:finish{
      { id = j.id, attempt = j.attempt, kind = kind, error = "boom" } })
    return id
  end

  it("removes what the policy lets go and says what", function()
    local s = ended("mail", "q", "succeeded")
    local f = ended("mail", "q", "failed")
    local live = assert(db:enqueue("mail", nil, { run_at = T0 + 3650 * DAY }))
    db:advance(2 * DAY)
    local r = assert(db:cleanup{ dry_run = true })
    assert.are.same({ removed = 1, scanned = 3, archived = false,
                      dry_run = true,
                      by = { { state = "succeeded", queue = "q",
                               type = "mail", count = 1 } } }, r)
    assert.is_table(db:get(s))
    r = assert(db:cleanup())
    assert.are.equal(1, r.removed)
    assert.is_nil(db:get(s))
    assert.is_table(db:get(f))
    r = assert(db:cleanup{ older_than = "1d", state = "failed",
                           retain = "archive" })
    assert.are.equal(1, r.removed)
    assert.is_true(r.archived)
    assert.is_nil(db:get(f))
    assert.are.equal("pending", db:get(live).state)
    r = assert(db:cleanup{ older_than = 0 })
    assert.are.equal(0, r.removed)
  end)

  it("raises on bad options", function()
    local cases = {
      { { state = "nope" }, "unknown state \"nope\"" },
      { { retain = "failed=1y" }, "not a duration" },
      { { retain = "batch=0" }, "from 1 to 100000" },
      { { older_than = "7x" }, "older_than" },
      { { older_than = -1 }, "older_than" },
      { { older_than = 0.5 }, "older_than" },
      { { dry_run = "yes" }, "dry_run" },
      { { bogus = 1 }, "bogus" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(db.cleanup, db, c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
    -- A state that is not a finished one: refused by the library.
    local r, msg, code = db:cleanup{ state = "running" }
    assert.is_nil(r)
    assert.matches("not a finished state", msg, 1, true)
    assert.are.equal("PAWL_EINVAL", code)
  end)

  it("is the console's cleanup{...}", function()
    -- The console's clock is the real one: a job made there, not at T0.
    db:close()
    local id = env:enqueue("mail")
    env:ok("cancel", id)
    local r = C.run{ "--db", env.db, "console", "-e",
                     "cleanup{older_than = 0, dry_run = true}" }
    assert.are.equal(0, r.code, r.err)
    assert.matches("removed = 1", r.out, 1, true)
    assert.matches("dry_run = true", r.out, 1, true)
    r = C.run{ "--db", env.db, "console", "-e", "cleanup{state = \"running\"}" }
    assert.are.equal(1, r.code)
    assert.matches("not a finished state", r.err, 1, true)
    r = C.run{ "--db", env.db, "console", "-e", "cleanup{older_than = 0}" }
    assert.are.equal(0, r.code, r.err)
    assert.matches("removed = 1", r.out, 1, true)
    db = assert(pawl.open{ db = env.db, node_id = "n1", now = T0 })
    assert.is_nil(db:get(id))
  end)
end)
