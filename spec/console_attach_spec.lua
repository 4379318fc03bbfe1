-- console_attach_spec.lua: `pawl console --connect`, the console attached to
-- a running `pawl run`: a person at a terminal (tmux, as console_spec.lua
-- does), chunks through -e and piped input, the live host's functions
-- (workers, reload, drain, resume_claiming, stop, log_level) observed
-- through job states on both backends, and the admin socket's defences:
-- its mode, symbolic links, another user's path, a live socket, a stale
-- one, peer credentials, the TCP listener's token; and bad input: a syntax
-- error, a runaway loop, a huge result, a client killed mid-chunk.
--
-- Nothing waits for a time to pass: jobs wait at gates, and every wait is
-- for a state, a line or a screen (H.wait_until's cap is a hang guard).
local cjson = require "cjson"
local H = require "host_helper"
local PG = require "pg_helper"
local C = require "cli_helper"

local q = C.quote

-- ---- helpers ------------------------------------------------------------------

-- `pawl console --connect TARGET ARGS...` (no database named).
local function attach(target, ...)
  return C.run({ "console", "--connect", target, ... })
end

local function attach_ok(target, code, ...)
  local r = attach(target, "-e", code, ...)
  if r.code ~= 0 then
    error(("console --connect %s -e %s failed (%s):\n%s%s"):format(
      target, code, tostring(r.code), r.out, r.err), 2)
  end
  return r.out
end

-- An env whose database is SQLite or a new PostgreSQL schema (nil when
-- PostgreSQL tests are skipped), migrated.
local make_env = PG.env_for

-- Starts `pawl run` with an admin socket in the env's dir and waits until
-- it answers; returns the process and the socket's path.
local function start_host(env, ...)
  local sock = env:path("admin.sock")
  local p = env:start("--workers", "2", "--admin-socket", sock, ...)
  env:wait_until("the admin socket to answer", function()
    return attach(sock, "-e", "1").code == 0
  end)
  return p, sock
end

-- A script whose job waits at the gate named in its payload.
local function gated_script(env, name)
  env:script(name or "held", H.GATE_LUA .. [[
return { run = function(job) pawl_gate(job.payload.gate) return "done" end }]])
end

local function stat_mode(path)
  return C.capture("stat -c %a " .. q(path)):match("%d+")
end

-- Runs a shell command as `nobody` (uid 65534); returns {out, code}.
local function as_nobody(cmd)
  local out = C.capture("setpriv --reuid=65534 --regid=65534 --clear-groups "
                        .. "sh -c " .. q(cmd .. " 2>&1; echo EXIT=$?"))
  return { out = out, code = tonumber(out:match("EXIT=(%d+)")) }
end

-- ---- a person at a terminal -----------------------------------------------------

local T = require "term_helper"

-- `pawl console --connect SOCK` on a terminal.
local function term(env, target)
  local words = { "env", "HOME=" .. env.dir, "PAWL_HISTORY=" .. env:path("history"),
                  "TERM=xterm", C.bin, "console", "--connect", target }
  return T.start(env, T.command(words) .. "; echo EXITED=$?; sleep 600",
                 { cols = 140, rows = 50, scrollback = true })
end

describe("pawl console attached to a running host, on a terminal", function()
  local env, t

  before_each(function() env = make_env("sqlite") end)
  after_each(function()
    if t then t:close() end
    t = nil
    env:cleanup()
  end)

  it("shows the node, completes the host's functions, shows tables and the workers of a gated job, and stops a runaway loop on Ctrl-C", function()
    gated_script(env)
    local g = env:gate()
    local _, sock = start_host(env, "--node-id", "node-a")
    local id = env:enqueue("held", H.json { gate = g.path })
    g:wait_reached()
    t = term(env, sock)
    t:wait_text("pawl@node-a> ")
    -- Completion comes from the host's session: its own functions too.
    t:type("work")
    t:keys("Tab")
    t:wait_text("pawl@node-a> workers")
    t:line("()")
    t:wait_text("WORKER  STATE")
    local screen = t:wait_text(id)
    assert.truthy(screen:find("busy%s+" .. id:gsub("%p", "%%%0") .. "%s+held%s+1"))
    -- Tables as the direct console shows them.
    t:line("jobs{state = \"running\"}")
    t:wait_text("ID                                    TYPE")
    -- Another console, attached meanwhile, is served too.
    assert.truthy(attach_ok(sock, "workers()"):find(id, 1, true))
    -- Multi-line input continues on the host's word.
    t:line("function twice(x)")
    t:wait_text("..> ")
    t:line("return 2 * x end")
    t:line("twice(21)")
    t:wait_text("42")
    -- A runaway loop typed in: Ctrl-C stops it on the host, also when it
    -- is typed ahead, in the same write as Enter: the editor still has the
    -- terminal without ISIG then, so it is a byte waiting, not a SIGINT.
    t:type("while true do end\r\3")
    t:wait_text("error: interrupted (Ctrl-C)")
    t:line("1 + 1")
    t:wait_text("\n2\n")
    -- :trace shows the last error's traceback.
    t:line("error(\"boom\")")
    t:wait_text("error: stdin:1: boom")
    t:line(":trace")
    t:wait_text("stack traceback:")
    g:open()
    env:wait_state(id, "succeeded")
  end)
end)

-- ---- the live host's functions, on both backends ----------------------------------

for _, backend in ipairs({ "sqlite", "postgres" }) do
  describe("the attached console's host functions (" .. backend .. ")", function()
    local env

    before_each(function() env = make_env(backend) end)
    after_each(function() if env then env:cleanup() end end)

    it("workers() shows a gated job; drain() holds pending jobs until resume_claiming(); stats() and jobs() read the store", function()
      if not env then return pending(PG.skip_reason()) end
      gated_script(env)
      local g = env:gate()
      local _, sock = start_host(env, "--node-id", "node-" .. backend)
      local first = env:enqueue("held", H.json { gate = g.path })
      g:wait_reached()
      local out = attach_ok(sock, "workers()")
      assert.truthy(out:find(first, 1, true), out)
      assert.truthy(out:find("(1 busy, 1 idle", 1, true), out)
      local w = cjson.decode(C.lines(attach_ok(sock, "workers()", "--json"))[1])
      assert.are.equal(0, w.worker)
      out = attach_ok(sock, "drain()")
      assert.truthy(out:find("draining", 1, true), out)
      -- Enqueued while draining: nobody claims it.
      local second = env:enqueue("held", H.json { gate = g.path })
      g:open()
      env:wait_state(first, "succeeded")
      -- The first job's end frees a worker; the poller runs its round
      -- and claims nothing. Observed: still pending after the first's
      -- outcome is stored and the host has looked again.
      out = attach_ok(sock, "workers()")
      assert.truthy(out:find("draining: no new jobs are claimed", 1, true), out)
      assert.are.equal("pending", env:show(second).state)
      out = attach_ok(sock, "stats()")
      assert.truthy(out:find("default%s+1%s+0%s+1"), out)
      attach_ok(sock, "resume_claiming()")
      env:wait_state(second, "succeeded")
      out = attach_ok(sock, "jobs{state = \"succeeded\"}")
      assert.truthy(out:find(first, 1, true) and out:find(second, 1, true), out)
    end)

    it("reload() reports a broken script and loads a fixed one; log_level() sets the host's level; stop(grace) stops it", function()
      if not env then return pending(PG.skip_reason()) end
      env:script("ok", "return { run = function() return 1 end }")
      local p, sock = start_host(env)
      env:script("broken", "return { run = function() end,")
      local out = attach_ok(sock, "reload()")
      assert.truthy(out:find("1 serving, 1 not loading", 1, true), out)
      assert.truthy(out:find("broken%s+.*broken%.lua:%d+:"), out)
      env:script("broken", "return { run = function() return 2 end }")
      out = attach_ok(sock, "reload()")
      assert.truthy(out:find("2 serving, 0 not loading", 1, true), out)
      local id = env:enqueue("broken")
      env:wait_state(id, "succeeded")
      assert.are.equal("info\n", attach_ok(sock, "log_level(\"debug\")"))
      assert.are.equal("debug\n", attach_ok(sock, "log_level()"))
      env:wait_until("the level change in the log", function()
        return p:stderr():find("log level changed from=info to=debug", 1, true)
      end)
      local r = attach(sock, "-e", "log_level(\"loud\")")
      assert.are.equal(1, r.code)
      assert.truthy(r.err:find("expected debug, info, warn or error", 1, true), r.err)
      out = attach_ok(sock, "stop(0.5)")
      assert.truthy(out:find("stopping: running jobs get 0.5 s", 1, true), out)
      assert.truthy(p:wait(H.HANG_S), "the host did not stop")
      assert.are.equal(0, p.code)
      assert.is_false(C.exists(sock))
    end)
  end)
end

-- ---- bad input -----------------------------------------------------------------------

describe("bad input in the attached console", function()
  local env

  before_each(function() env = make_env("sqlite") end)
  after_each(function() env:cleanup() end)

  it("says what is wrong with a syntax error, a huge value and a huge result, and the host goes on", function()
    local p, sock = start_host(env)
    local r = attach(sock, "-e", "x = = 1")
    assert.are.equal(1, r.code)
    assert.truthy(r.err:find("^error: stdin:1: unexpected symbol near '='"), r.err)
    -- A huge value: the state's memory is bounded (a string holds at most
    -- 128 MB in pawl's LuaJIT, so many of them).
    r = attach(sock, "-e", "s = string.rep('x', 2^30)")
    assert.are.equal(1, r.code)
    assert.truthy(r.err:find("string length overflow (strings hold at most 128 MB)", 1, true), r.err)
    r = attach(sock, "-e", "t = {} for i = 1, 3 do t[i] = string.rep('x', 100 * 2^20) .. i end")
    assert.are.equal(1, r.code)
    assert.truthy(r.err:find("not enough memory", 1, true), r.err)
    -- A huge result: cut with a note.
    r = attach(sock, "-e", "local t = {} for i = 1, 100000 do t[i] = i end return t")
    assert.are.equal(0, r.code)
    assert.truthy(r.out:find("... (cut: ", 1, true), r.out)
    assert.is_nil(r.out:find(",,", 1, true), r.out) -- one comma an element
    -- Huge output: cut with a note, the rest dropped.
    r = attach(sock, "-e", "for i = 1, 200000 do print(('x'):rep(99)) end")
    assert.truthy(r.err:find("output cut: a chunk may write at most 8 MiB", 1, true), r.err)
    assert.truthy(#r.out <= 8 * 1024 * 1024 + 100, #r.out)
    -- Step mode on the host's own handle: refused (the host runs the jobs).
    r = attach(sock, "-e", "db:step(1)")
    assert.are.equal(1, r.code)
    assert.truthy(r.err:find("db:step: this handle is the running host's", 1, true), r.err)
    r = attach(sock, "-e", "db:define('x', function() end)")
    assert.are.equal(1, r.code)
    assert.truthy(r.err:find("db:define: this handle is the running host's", 1, true), r.err)
    -- And the host is fine.
    assert.truthy(attach_ok(sock, "stats()"):find("QUEUE", 1, true))
    assert.truthy(p:alive())
  end)

  it("stops a runaway loop at the chunk's limit, also one that catches the error, and the host goes on", function()
    local p, sock = start_host(env, "--admin-timeout", "1")
    local r = attach(sock, "-e", "while true do pcall(function() while true do end end) end")
    assert.are.equal(1, r.code)
    assert.truthy(r.err:find("the chunk ran longer than the console's limit of 1 s", 1, true), r.err)
    assert.truthy(attach_ok(sock, "1 + 1"):find("^2\n"))
    assert.truthy(p:alive())
  end)

  it("stops the chunk of a client killed mid-chunk, and serves the next one", function()
    local p, sock = start_host(env) -- a chunk may run 30 s
    local mark = env:path("in-chunk")
    local client = env:spawn("console", "--connect", sock, "-e",
      ("io.open(%q, 'w'):close() while true do end"):format(mark))
    env:wait_until("the chunk to run", function() return C.exists(mark) end)
    client:kill()
    -- The host notices the client gone within its check (20 ms), not at
    -- the chunk's limit: the next console is served long before 30 s...
    env:wait_until("the chunk to be stopped", function()
      return p:stderr():find("console detached", 1, true)
    end, 25)
    assert.truthy(attach_ok(sock, "1 + 1"):find("^2\n"))
    -- A bulk action over 100 jobs without a terminal to confirm on is
    -- refused, as in the direct console.
    attach_ok(sock, "for i = 1, 101 do enqueue('none', {}, { delay_ms = 3600000 }) end")
    local piped = C.capture("printf 'cancel{state = \"pending\"}\\n' | " .. q(C.bin)
                            .. " console --connect " .. q(sock) .. " 2>&1")
    assert.truthy(piped:find("pass force = true", 1, true), piped)
    assert.truthy(attach_ok(sock, "stats()"):find("default%s+101"))
    assert.truthy(p:alive())
  end)

end)

-- ---- the socket's defences -------------------------------------------------------------

describe("the admin socket", function()
  local env

  before_each(function() env = make_env("sqlite") end)
  after_each(function() env:cleanup() end)

  local function refused(args, pattern)
    local r = C.run(args)
    assert.are_not.equal(0, r.code, r.err)
    assert.truthy(r.err:find(pattern, 1, true), r.err)
  end

  local function run_args(sock, ...)
    local a = { "--db", env.db, "run", "--scripts", env.scripts, "--until-idle",
                "--admin-socket", sock }
    for _, x in ipairs({ ... }) do a[#a + 1] = x end
    return a
  end

  it("is made mode 0600 next to the SQLite database by default, and removed at the end", function()
    local p = env:start("--workers", "1")
    local sock = env.db_path .. ".sock"
    env:wait_until("the default socket", function()
      return attach(sock, "-e", "1").code == 0
    end)
    assert.are.equal("600", stat_mode(sock))
    assert.truthy(C.capture("stat -c %F " .. q(sock)):find("socket"))
    p:signal("TERM")
    assert.truthy(p:wait(H.HANG_S))
    assert.is_false(C.exists(sock))
  end)

  it("refuses a symbolic link, a path another user owns, and a file that is not a socket", function()
    local sock = env:path("s.sock")
    C.sh("ln -s " .. q(env:path("elsewhere")) .. " " .. q(sock))
    refused(run_args(sock), "is a symbolic link")
    os.remove(sock)
    assert.is_false(C.exists(env:path("elsewhere")))
    C.write_file(sock, "")
    refused(run_args(sock), "exists and is not a socket")
    if C.is_root then
      assert.truthy(C.sh("chown 65534 " .. q(sock)))
      refused(run_args(sock), "belongs to uid 65534, not to this user")
    end
    os.remove(sock)
    -- A directory others may write to, not sticky.
    local open = env:path("open")
    C.sh("mkdir -m 777 " .. q(open))
    refused(run_args(open .. "/s.sock"), "others may write to its directory")
  end)

  it("refuses the live socket of another host, and replaces a stale one", function()
    local p, sock = start_host(env)
    refused(run_args(sock), "is the live socket of another process")
    -- A host killed outright leaves its socket behind: stale.
    p:kill()
    assert.truthy(C.exists(sock))
    assert.are.equal(1, attach(sock, "-e", "1").code)
    local p2 = start_host(env)
    assert.truthy(p2:alive())
    assert.are.equal("600", stat_mode(sock))
  end)

  it("serves only its own user and root (peer credentials)", function()
    if not C.is_root then return pending("needs root to connect as another user") end
    local _, sock = start_host(env)
    -- Let another user reach the socket at all: the credentials decide.
    C.sh("chmod 755 " .. q(env.dir) .. " && chmod 666 " .. q(sock))
    -- A copy of the program where that user can run it (the build tree
    -- may sit below a directory only its owner can enter).
    local bin = env.dir .. "/pawl-copy"
    C.sh("cp " .. q(C.bin) .. " " .. q(bin) .. " && chmod 755 " .. q(bin))
    local r = as_nobody(q(bin) .. " console --connect " .. q(sock) .. " -e 1")
    assert.are.equal(1, r.code, r.out)
    assert.truthy(r.out:find("refused: uid 65534 may not attach", 1, true), r.out)
    assert.truthy(attach_ok(sock, "1"):find("^1\n"))
  end)

  it("with --admin-listen: needs a private, non-empty token file and checks the token", function()
    local token = env:path("token")
    refused(run_args("none", "--admin-listen", "127.0.0.1:0"), "needs --admin-token-file")
    C.write_file(token, "")
    C.sh("chmod 600 " .. q(token))
    refused(run_args("none", "--admin-listen", "127.0.0.1:0", "--admin-token-file", token),
            "is empty")
    C.write_file(token, "s3cret-token\n")
    C.sh("chmod 644 " .. q(token))
    refused(run_args("none", "--admin-listen", "127.0.0.1:0", "--admin-token-file", token),
            "may be read or written by others")
    C.sh("chmod 600 " .. q(token))
    local p = env:start("--workers", "1", "--admin-socket", "none",
                        "--admin-listen", "127.0.0.1:0", "--admin-token-file", token)
    local addr = env:wait_until("the TCP listener", function()
      return p:stderr():match("admin console listening tcp=(127%.0%.0%.1:%d+)")
    end)
    assert.truthy(attach_ok(addr, "1 + 2", "--admin-token-file", token):find("^3\n"))
    local wrong = env:path("wrong")
    C.write_file(wrong, "not-the-token\n")
    local r = attach(addr, "-e", "1", "--admin-token-file", wrong)
    assert.are.equal(1, r.code)
    assert.truthy(r.err:find("refused: wrong token", 1, true), r.err)
    r = attach(addr, "-e", "1")
    assert.are_not.equal(0, r.code)
    assert.truthy(r.err:find("needs --admin-token-file", 1, true), r.err)
    assert.is_false(C.exists(env.db_path .. ".sock"))
  end)
end)
