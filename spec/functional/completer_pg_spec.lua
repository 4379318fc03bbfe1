-- completer_pg_spec.lua: completer_spec's refusals on PostgreSQL, which
-- refuses what SQLite keeps: invalid UTF-8 and NUL in text, U+0000 in
-- jsonb. A job whose outcome PostgreSQL cannot take fails alone, with a
-- clear error; the host never loops on it. Real `pawl run` processes on a
-- schema of their own on the throwaway server of the ctest fixture `pg`.
--
-- PAWL_TEST_NO_PG=1 marks every test pending, loudly.
local ffi = require "ffi"
local P = require "pg_helper"

ffi.cdef [[
  int pawl_cps_setenv(const char *name, const char *value, int overwrite)
      __asm__("setenv");
  int pawl_cps_unsetenv(const char *name) __asm__("unsetenv");
]]

local SKIP = P.skip_reason()
if SKIP then
  io.stderr:write("\n*** completer_pg_spec: " .. SKIP .. " ***\n\n")
end
local test = SKIP and function(name)
  pending(name .. " -- SKIPPED: " .. SKIP)
end or it

local function has(s, text) return s:find(text, 1, true) ~= nil end

local function ended(p)
  local code = p:wait(60)
  if not code then
    p:kill()
    error("the host did not end by itself; stderr:\n" .. p:stderr(), 2)
  end
  return code
end

local GOOD = [[return { run = function() return { ok = true } end }]]

describe("pawl run on PostgreSQL with outcomes it refuses", function()
  local env

  before_each(function()
    if SKIP then return end
    env = P.env()
    env:script("good", GOOD)
  end)
  after_each(function() if env then env:cleanup() end end)

  test("fails or stores each job alone, never looping on a refusal", function()
    env:script("nulres", [[return { run = function() return { s = "a\0b" } end }]])
    env:script("badres", [[return { run = function() return { s = "caf\233" } end }]])
    env:script("badutf8", [[return { run = function() error("caf\233", 0) end }]])
    env:script("nulerr", [[return { run = function() error("a\0b", 0) end }]])
    env:script("nullog", [[
return { run = function(job, ctx)
  ctx:log("info", "x\0y", { s = "a\0b", t = "caf\233" })
  return { ok = true }
end }]])
    local ids, good = {}, {}
    for _, t in ipairs({ "nulres", "badres", "badutf8", "nulerr", "nullog" }) do
      ids[t] = env:enqueue(t, "{}", "--max-attempts", "1")
      good[#good + 1] = env:enqueue("good")
    end
    local p = env:start("--until-idle", "--workers", "1")
    assert.are.equal(0, ended(p), p:stderr())
    for _, id in ipairs(good) do
      assert.are.equal("succeeded", env:show(id).state, p:stderr())
    end
    local j = env:show(ids.nulres)
    assert.are.equal("failed", j.state, p:stderr())
    assert.is_truthy(has(j.last_error, "cannot be stored as JSON: pawl.json.encode: "
                         .. "a string holds a NUL byte at .s"), j.last_error)
    j = env:show(ids.badres)
    assert.are.equal("failed", j.state)
    assert.is_truthy(has(j.last_error, "not valid UTF-8"), j.last_error)
    j = env:show(ids.badutf8)
    assert.are.equal("failed", j.state)
    assert.are.equal("caf\239\191\189", j.last_error:sub(1, 6))
    j = env:show(ids.nulerr)
    assert.are.equal("failed", j.state)
    assert.are.equal("a", j.last_error:sub(1, 1))
    j = env:show(ids.nullog)
    assert.are.equal("succeeded", j.state, p:stderr())
    assert.are.equal(1, #j.logs)
    assert.are.equal("x\239\191\189y", j.logs[1].message)
    assert.are.same({ s = "a\239\191\189b", t = "caf\239\191\189" }, j.logs[1].fields)
    assert.are.equal(0, p:count("writing outcomes failed"), p:stderr())
  end)

  test("fails the one outcome refused through the fault seam", function()
    local ids = {}
    for i = 1, 4 do ids[i] = env:enqueue("good") end
    ffi.C.pawl_cps_setenv("PAWL_TEST_FAULTS", "finish:3:permanent", 1)
    local ok, p = pcall(env.start, env, "--until-idle", "--workers", "1")
    ffi.C.pawl_cps_unsetenv("PAWL_TEST_FAULTS")
    assert(ok, p)
    assert.are.equal(0, ended(p), p:stderr())
    local failed = 0
    for _, id in ipairs(ids) do
      local j = env:show(id)
      if j.state == "failed" then
        failed = failed + 1
        assert.is_truthy(has(j.last_error, "could not be stored"), j.last_error)
      else
        assert.are.equal("succeeded", j.state)
      end
    end
    assert.are.equal(1, failed, p:stderr())
  end)
end)
