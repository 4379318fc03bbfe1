-- flow_mix_spec.lua: signals, replace, batches, dependencies
-- and steps together, from job code with a
-- real `pawl run` node (found at their merge; the store's side is in
-- spec/contract/store_contract_deps_mix.c and store_contract_steps_mix.c): a
-- batch's child that waits for a parent (pawl.batch's `after` reaches
-- host.batch), the refusal of a job that would wait for parents and a
-- signal, and of a batch's child whose type has identity. Nothing waits
-- on time: the node runs until idle. Only the CLI reads the
-- database (no Lua module).
local H = require "host_helper"

local NOOP = "return { run = function() end }"

local ROOT = [[
return {
  run = function(job)
    local p = pawl.enqueue("leaf", {})
    local batch, kids = pawl.batch {
      jobs = { { "kid", {}, { after = p } }, { "kid", {} } },
      on_complete = { "done" },
    }
    local ok1, e1 = pcall(pawl.enqueue, "leaf", {},
                          { after = p, signal = "approve-1" })
    local ok2, e2 = pcall(pawl.batch, { jobs = { { "inst", { date = "d1" } } } })
    return { p = p, batch = batch, kids = kids, ok1 = ok1, e1 = tostring(e1),
             ok2 = ok2, e2 = tostring(e2) }
  end,
}
]]

describe("flows together", function()
  local env

  after_each(function()
    if env then env:cleanup() end
    env = nil
  end)

  it("job code: a batch's child after a parent; after with a signal and identity in a batch are refused", function()
    env = H.env()
    env:script("root", ROOT)
    env:script("leaf", NOOP)
    env:script("kid", NOOP)
    env:script("done", NOOP)
    env:script("inst", [[return { identity = { "date" },
      run = function() end }]])
    local id = env:enqueue("root", "{}")
    env:run_idle()
    local root = env:show(id)
    assert.are.equal("succeeded", root.state)
    local r = root.result
    assert.is_false(r.ok1)
    assert.matches("a job may not wait both for parents (after) and for a "
                   .. 'signal ("approve-1")', r.e1, 1, true)
    assert.is_false(r.ok2)
    assert.matches("job type inst has identity fields", r.e2, 1, true)
    -- The child that waited ran after its parent, and counted in the
    -- batch, whose callback fired once.
    local kid = env:show(r.kids[1])
    assert.are.equal("succeeded", kid.state)
    assert.are.equal(1, #kid.parents)
    assert.are.equal(r.p, kid.parents[1].id)
    local leaf = env:show(r.p)
    assert.is_true(kid.started_at >= leaf.finished_at)
    local b = require("cjson").decode(env:ok("batch", "show", r.batch,
                                             "--json"))
    assert.are.equal(2, b.succeeded)
    assert.is_truthy(b.finished_at)
  end)
end)
