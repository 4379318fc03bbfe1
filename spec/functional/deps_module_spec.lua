-- deps_module_spec.lua: dependencies through the Lua module:
-- db:enqueue's after and when, db:chain, and what is refused. (Apart from
-- deps_spec: the Lua module does not load under ThreadSanitizer.)
local pawl = require "pawl"
local H = require "host_helper"

describe("dependencies in the Lua module", function()
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

  it("after (an id or a list) and when; a chain; a cancel cascades", function()
    local a = assert(db:enqueue("t", {}))
    local b = assert(db:enqueue("t", {}, { after = a }))
    local c = assert(db:enqueue("t", {}, { after = { a, b }, when = "done" }))
    assert.are.equal("blocked", db:job(b).state)
    assert.are.equal("blocked", db:job(c).state)
    assert(db:cancel(a))
    assert.are.equal("canceled", db:job(b).state)
    assert.are.equal("pending", db:job(c).state)
    local ids = assert(db:chain { { "s", { n = 1 } }, { "s", { n = 2 } }, { "s", {} } })
    assert.are.equal(3, #ids)
    assert.are.equal("pending", db:job(ids[1]).state)
    assert.are.equal("blocked", db:job(ids[2]).state)
    assert(db:cancel(ids[2]))
    assert.are.equal("canceled", db:job(ids[3]).state)
  end)

  it("refuses an unknown parent, a bad when and a bad id, enqueuing nothing", function()
    local a = assert(db:enqueue("t", {}))
    local ghost = "01890a5d-ac96-774b-bcce-b302099a8057"
    local id, err = db:enqueue("t", {}, { after = { a, ghost } })
    assert.is_nil(id)
    assert.matches("unknown parent job " .. ghost, err, 1, true)
    id, err = db:enqueue("t", {}, { after = a, when = "later" })
    assert.is_nil(id)
    assert.matches("when must be success, failure, done or branch:NAME", err, 1, true)
    local ok, e = pcall(db.enqueue, db, "t", {}, { after = { 42 } })
    assert.is_false(ok)
    assert.matches('option "after": number is not a job id', tostring(e), 1, true)
    local ids, cerr = db:chain { { "s", {} }, { "s", {}, { after = ghost } } }
    assert.is_nil(ids)
    assert.matches("unknown parent job", cerr, 1, true)
    assert.are.equal(1, #assert(db:jobs {}))
  end)
end)
