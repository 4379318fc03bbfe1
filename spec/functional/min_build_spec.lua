-- min_build_spec.lua: a pawl built without its optional libraries
-- (cmake -DPAWL_WITH_POSTGRES=OFF -DPAWL_WITH_HTTP=OFF -DPAWL_WITH_CURL=OFF,
-- `make test-min`; registered in that build only) refuses each missing
-- feature when asked for it, naming what is missing and the option that
-- brings it back: never a crash, never a silent ignore. (That it needs none
-- of the libraries is the test min_build.check's:
-- spec/functional/min_build_check.sh.)
local H = require "cli_helper"

local q = H.quote

describe("a pawl built without PostgreSQL, HTTP and curl", function()
  local env

  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  it("refuses a PostgreSQL URL, naming the option, without repeating the URL", function()
    local urls = {
      "postgres://alice:pg-secret@localhost:5432/jobs",
      "postgresql://alice@localhost/jobs?password=pg-secret",
      "postgres:host=/run/postgresql dbname=jobs password=pg-secret",
    }
    for _, url in ipairs(urls) do
      for _, cmd in ipairs({ { "migrate" }, { "jobs" }, { "enqueue", "t", "{}" },
                             { "run", "--until-idle" } }) do
        local args = { "--db", url }
        for _, a in ipairs(cmd) do args[#args + 1] = a end
        local r = H.run(args)
        local what = url .. " " .. table.concat(cmd, " ")
        assert.are_not.equal(0, r.code, what)
        assert.truthy(r.err:find("this pawl was built without PostgreSQL", 1, true), what .. ": " .. r.err)
        assert.truthy(r.err:find("cmake -DPAWL_WITH_POSTGRES=ON", 1, true), what .. ": " .. r.err)
        assert.falsy(r.err:find("pg-secret", 1, true), what .. ": " .. r.err)
      end
    end
    -- The Lua module says the same.
    local pawl = require "pawl"
    for _, url in ipairs(urls) do
      local db, err = pawl.open { db = url }
      assert.is_nil(db, url)
      assert.truthy(tostring(err):find("built without PostgreSQL", 1, true), err)
      assert.truthy(tostring(err):find("cmake -DPAWL_WITH_POSTGRES=ON", 1, true), err)
      assert.falsy(tostring(err):find("pg-secret", 1, true), err)
    end
    -- SQLite still works.
    env:ok("migrate")
    assert(pawl.open { db = env.db }):close()
  end)

  it("refuses --metrics, naming the option, and starts no host", function()
    local scripts = env:path("scripts")
    assert.is_true(H.sh("mkdir " .. q(scripts)))
    H.write_file(scripts .. "/t.lua", "return { run = function() return {} end }\n")
    local id = env:enqueue("t", "{}")
    for _, addr in ipairs({ "127.0.0.1:0", "[::1]:0", "0.0.0.0:9" }) do
      local r = env:pawl("run", "--scripts", scripts, "--until-idle", "--metrics", addr)
      assert.are_not.equal(0, r.code, addr)
      assert.truthy(r.err:find("--metrics " .. addr .. ": this pawl was built without HTTP", 1, true),
                    addr .. ": " .. r.err)
      assert.truthy(r.err:find("cmake -DPAWL_WITH_HTTP=ON", 1, true), r.err)
    end
    -- Nothing ran: the job is still pending, and runs without --metrics.
    assert.are.equal("pending", env:show_json(id).state)
    local r = env:pawl("run", "--scripts", scripts, "--until-idle")
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("succeeded", env:show_json(id).state)
  end)

  it("refuses a webhook post in the log, and the rest of the host goes on", function()
    local scripts = env:path("scripts")
    assert.is_true(H.sh("mkdir " .. q(scripts)))
    -- A type's on_dead runs on its worker once the death is stored.
    H.write_file(scripts .. "/_defaults.lua", 'return { allow_webhook = { "127.0.0.1:9" } }\n')
    H.write_file(scripts .. "/doomed.lua", [[
return { max_attempts = 1, run = function() error("no luck") end,
         on_dead = pawl.alert.webhook{ url = "http://127.0.0.1:9/hook", attempts = 1 } }
]])
    H.write_file(scripts .. "/fine.lua", "return { run = function() return {} end }\n")
    local doomed = env:enqueue("doomed", "{}")
    local fine = env:enqueue("fine", "{}")
    local r = env:pawl("run", "--scripts", scripts, "--until-idle", "--log-level", "debug")
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("failed", env:show_json(doomed).state)
    assert.are.equal("succeeded", env:show_json(fine).state)
    assert.truthy(r.err:find("this pawl was built without libcurl", 1, true), r.err)
    assert.truthy(r.err:find("cmake -DPAWL_WITH_CURL=ON", 1, true), r.err)
  end)
end)
