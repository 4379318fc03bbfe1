-- examples_spec.lua: the embedding examples, run as their
-- users run them. examples/uv_server.c: real HTTP connections (curl) to a
-- libuv server that enqueues a job per request and runs pawl attached to
-- its own loop; every job runs, and requests are answered while a job is
-- held at a gate file. No sleeps: every wait ends on what the test sees.
local H = require "host_helper"

local build = assert(os.getenv("PAWL_BUILD_DIR"), "PAWL_BUILD_DIR")

-- One GET to the server; the body's line (nil when the request failed).
-- curl runs without the sanitizer runtime the AddressSanitizer suite
-- preloads for luajit: preloaded into curl, it hangs curl's resolver.
local function get(port, path)
  local out = H.capture("env -u LD_PRELOAD curl -s -S --max-time " .. H.HANG_S ..
                        " 'http://127.0.0.1:" .. port .. path .. "' 2>&1")
  return out:match("^(.-)\n?$")
end

local function stats(port)
  local line = get(port, "/stats")
  local t = {}
  for k, v in line:gmatch("(%a+) (%d+)") do t[k] = tonumber(v) end
  assert(t.succeeded, "stats: " .. line)
  return t
end

local function start_server(env, mode)
  local portf, gate = env:path("port"), env:path("gate")
  local argv = { build .. "/uv_server", env.db_path, portf, gate }
  if mode then argv[#argv + 1] = mode end
  local p = env:spawn_program(argv)
  local port = env:wait_until("the server's port", function()
    assert(p:alive(), "uv_server ended: " .. p:stderr())
    local s = H.read_file(portf)
    return s and s:match("^(%d+)\n$")
  end)
  return p, port, gate
end

describe("examples/uv_server.c", function()
  local env
  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  it("answers requests while a job is held, and runs every job (threads)", function()
    local p, port, gate = start_server(env)
    assert.matches("^queued %x+%-", get(port, "/hold"))
    env:wait_until("the held job to start", function()
      return stats(port).holding == 1
    end)
    -- The gate is shut: the held job cannot end, and every request below
    -- is answered while it runs.
    for i = 1, 10 do
      assert.matches("^queued ", get(port, "/enqueue?name=p" .. i))
    end
    assert.matches("^error name", get(port, "/enqueue?name=a%20b"))
    env:wait_until("the other jobs, beside the held one", function()
      return stats(port).succeeded == 10
    end)
    local s = stats(port)
    assert.equal(1, s.holding)
    assert.equal(11, s.enqueued)
    assert.equal(11, s.started)
    H.write_file(gate, "open\n")
    env:wait_until("the held job", function()
      return stats(port).succeeded == 11
    end)
    assert.equal("bye", get(port, "/quit"))
    assert.equal(0, p:wait(H.HANG_S), p:stderr())
    assert.matches("mode threads, jobs enqueued 11, started 11, " ..
                   "succeeded 11, failed 0", p:stdout(), 1, true)
    assert.equal(11, env:count_state("succeeded"))
    assert.equal(0, env:count_state("pending"))
  end)

  it("runs every job on the loop thread between requests (loop)", function()
    local p, port = start_server(env, "loop")
    for i = 1, 20 do
      assert.matches("^queued ", get(port, "/enqueue?name=l" .. i))
    end
    env:wait_until("every job", function()
      return stats(port).succeeded == 20
    end)
    assert.equal("bye", get(port, "/quit"))
    assert.equal(0, p:wait(H.HANG_S), p:stderr())
    assert.matches("mode loop, jobs enqueued 20, started 20, " ..
                   "succeeded 20, failed 0", p:stdout(), 1, true)
    assert.equal(20, env:count_state("succeeded"))
  end)
end)
