-- love_spec.lua: examples/love, a LÖVE 11 game (Debian's `love`) whose
-- love.update calls db:step(2), run headless (its conf.lua turns the
-- window and graphics off; DISPLAY is unset to prove it) with the Lua
-- module INSTALLED as make install puts it (cmake --install into a
-- temporary prefix, as spec/examples/install_check.sh does; LUA_CPATH names only
-- the prefix). Then the database says what the game did: every job it
-- enqueued ended as the game expected, and the game saw their effect (the
-- score it printed is the one the jobs stored). And the process held one
-- LuaJIT, LÖVE's: /proc/self/maps of the game, and nm of every object
-- mapped there. No sleeps: the game quits by itself once its jobs ended;
-- the wait for it is a hang guard only.
local H = require "host_helper"
local cjson = require "cjson"

local build = assert(os.getenv("PAWL_BUILD_DIR"), "PAWL_BUILD_DIR")
local src = assert(os.getenv("PAWL_SOURCE_DIR"), "PAWL_SOURCE_DIR")

-- ThreadSanitizer: love cannot load a TSan-built pawl.so (the runtime's
-- static TLS), and with the runtime preloaded the game's runaway job is
-- never stopped: TSan holds the timeout signal back until the thread
-- enters libc, which a Lua loop never does (see PAWL_TSAN in CMakeLists).
local skip = os.getenv("PAWL_TSAN") and
  "love_spec: skipped under ThreadSanitizer (love cannot load a TSan-built pawl.so)"

local function sh_ok(cmd)
  local out = H.capture(cmd .. " 2>&1; echo \"rc=$?\"")
  local body, rc = out:match("^(.-)rc=(%d+)\n?$")
  assert(rc == "0", cmd .. ":\n" .. tostring(out))
  return body
end

describe("examples/love (LÖVE 11, the installed Lua module)", function()
  local env
  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  it("steps the game's jobs in love.update; they change its tables", function()
    if skip then print(skip) return end
    local love = H.capture("command -v love"):match("^(%S+)")
    assert(love, "love (LÖVE 11) is not installed: make deps installs it")

    local prefix = env:path("prefix")
    sh_ok("cmake --install " .. H.quote(build) .. " --prefix " .. H.quote(prefix))
    local module = prefix .. "/lib/lua/5.1/pawl.so"
    assert.is_true(H.exists(module))

    local maps = env:path("maps")
    local p = env:spawn_program{ "/usr/bin/env", "-u", "DISPLAY",
      "-u", "WAYLAND_DISPLAY", "XDG_DATA_HOME=" .. env:path("xdg"),
      "LUA_CPATH=" .. prefix .. "/lib/lua/5.1/?.so",
      love, src .. "/examples/love", env.db_path, maps }
    local code = p:wait(2 * H.HANG_S)
    if not code then
      p:kill()
      error("the game did not quit by itself; stderr:\n" .. p:stderr())
    end
    local out = p:stdout()
    assert.equal(0, code, out .. p:stderr())

    -- What the game printed: its frames, the jobs, the HUD.
    local frames, njobs, nok = out:match(
      "^frames (%d+), jobs (%d+), (%d+) ended as expected %(runaway: timed out%)\n")
    assert(frames, out)
    assert.is_true(tonumber(frames) >= 300)
    assert.equal(njobs, nok)
    local score, coins, saved, tries = out:match(
      "\nscore (%d+), coins (%d+), high score saved (%d+) after (%d+) tries\n")
    assert(score, out)
    assert.equal("2", tries)
    assert.matches("\nLua API from /%S+/libluajit%-5%.1%.so%.2; pawl%.so from " ..
                   prefix:gsub("%p", "%%%0") .. "/lib/lua/5%.1/pawl%.so\n", out)

    -- The database: every job the game enqueued, as it expected.
    local jobs, by_type, points, top = {}, {}, 0, 0
    for line in env:ok("jobs", "--json", "--limit", "1000"):gmatch("[^\n]+") do
      local j = cjson.decode(line)
      jobs[#jobs + 1] = j
      by_type[j.type] = (by_type[j.type] or 0) + 1
      if j.type == "runaway" then
        assert.equal("failed", j.state)
        assert.matches("timed out", j.last_error)
      else
        assert.equal("succeeded", j.state, line)
      end
      if j.type == "award" then
        points = points + j.payload.points
        top = math.max(top, j.result.score)
      elseif j.type == "spawn_coins" then
        assert.equal(tonumber(coins), j.result.coins)
      elseif j.type == "save_score" then
        assert.equal(2, j.attempt)
        assert.equal(tonumber(saved), j.result.saved)
      end
    end
    assert.equal(tonumber(njobs), #jobs)
    assert.same({ award = 13, spawn_coins = 1, save_score = 1, runaway = 1 },
                by_type)
    -- The score the game shows is what the jobs added, in its own table.
    assert.equal(points, tonumber(score))
    assert.equal(points, top)

    -- One LuaJIT in the process: the game's maps name LÖVE's libluajit,
    -- the installed pawl.so and no libpawl.so; of every object mapped,
    -- only libluajit defines the Lua API. pawl.so defines none of it.
    local files, seen = {}, {}
    for path in (H.read_file(maps) or ""):gmatch("[^\n]-%s(/%S+)\n") do
      if not seen[path] and not path:match("^/dev/") and
         not path:match("^/memfd:") then
        seen[path] = true
        files[#files + 1] = path
      end
    end
    assert.is_true(seen[module], "pawl.so is not mapped from the prefix")
    local lua_api = {}
    for _, f in ipairs(files) do
      assert.not_matches("libpawl", f)
      local defs = H.capture("nm -D --defined-only " .. H.quote(f) ..
                             " 2>/dev/null | awk '$3 == \"lua_newstate\"'")
      if defs:match("lua_newstate") then lua_api[#lua_api + 1] = f end
    end
    assert.equal(1, #lua_api, table.concat(lua_api, " "))
    assert.matches("/libluajit%-5%.1%.so", lua_api[1])
    local own = sh_ok("nm -D --defined-only " .. H.quote(module) ..
                      " | awk '{ print $3 }' | grep -E '^(lua|luaL|luaJIT)_' || true")
    assert.equal("", own)
    assert.matches("\n%s+U lua_pcall\n", "\n" .. sh_ok("nm -D " .. H.quote(module)))
  end)
end)
