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
    local client = env:spawn("console", "--connect", sock, "-e",
      "print('in-chunk') while true do end")
    env:wait_until("the chunk to run", function()
      return client:stdout():find("in-chunk", 1, true)
    end)
    -- start_host's probe attached and detached already: wait for the
    -- killed client's own detach, logged once its chunk has ended.
    local detached = p:count("console detached")
    client:kill()
    -- The host notices the client gone within its check (20 ms), not at
    -- the chunk's limit: the next console is served long before 30 s...
    env:wait_until("the chunk to be stopped", function()
      return p:count("console detached") > detached
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
            "is mode 0644: its group or others may read or write it")
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

-- ---- an attacker at the console --------------------------------------------------------
--
-- Whoever holds the socket (or the TCP token) runs Lua in the host's
-- process: these are the ways out of the chunk's limits that the console's
-- curated environment must refuse, the waits one console must not impose on
-- the others, and the listener's slots before authentication.

-- `pawl console --connect TARGET ARGS...` in the background, waited for
-- with a hang guard (an unfixed host never answers some of these): the
-- same {out, err, code} as attach().
local function attach_within(env, secs, target, ...)
  local p = env:spawn("console", "--connect", target, ...)
  if not p:wait(secs) then
    p:kill()
    error(("console --connect %s %s did not end within %g s"):format(
      target, table.concat({ ... }, " "), secs), 2)
  end
  return { out = p:stdout(), err = p:stderr(), code = p.code }
end

-- Each chunk tries one way out; each is refused with an error that names
-- what it tried.
local ESCAPES = {
  { "debug.sethook()", "debug.sethook is not available in the attached console" },
  { "debug.sethook(nil, '', 0) while true do end", "debug.sethook is not available" },
  { "debug.getlocal(1, 1)", "debug.getlocal is not available" },
  { "debug.setlocal(2, 1, nil)", "debug.setlocal is not available" },
  { "debug.setupvalue(jobs, 1, nil)", "debug.setupvalue is not available" },
  { "debug.getregistry()", "debug.getregistry is not available" },
  { "os.exit(0, true)", "os.exit is not available in the attached console" },
  { "os.execute('sleep 8')", "os.execute is not available" },
  { "os.getenv('HOME')", "os.getenv is not available" },
  { "os.remove('/tmp/x')", "os.remove is not available" },
  { "io.popen('true')", "io.popen is not available" },
  { "io.read()", "io.read is not available" },
  { "io.stdin:read()", "io.stdin is not available" },
  { "io.open('/etc/hostname')", "io.open is not available" },
  { "jit.attach(function() while true do end end, 'trace')", "jit.attach is not available" },
  { "jit.off()", "jit.off is not available" },
  { "require('ffi')", 'require "ffi" is not available in the attached console' },
  { "require('jit.util')", 'require "jit.util" is not available' },
  { "require('debug')", 'require "debug" is not available' },
  { "package.loadlib('libc.so.6', 'exit')", "package.loadlib is not available" },
  { "loadfile('/etc/hostname')", "loadfile is not available" },
  { "dofile('/etc/hostname')", "dofile is not available" },
  { "string.dump(function() end)", "string.dump is not available" },
  { "assert(load(string.char(27) .. 'LJ\\2'))", "loading bytecode is not allowed in the attached console" },
  { "assert(loadstring('\\27LJ\\2'))", "loading bytecode is not allowed" },
  { "local once = false assert(load(function() if not once then once = true return '\\27LJ' end end))",
    "loading bytecode is not allowed" },
  { "getfenv(jobs)", "getfenv is not available" },
  { "setfenv(1, {})", "setfenv is not available" },
  { "newproxy(true)", "newproxy is not available" },
  { "collectgarbage('stop')", 'collectgarbage("stop") is not available' },
  { "collectgarbage('setpause', 1000)", 'collectgarbage("setpause") is not available' },
  -- The tables every session (and the console's own code) shares.
  { "string.format = nil", "string.format is read-only in the attached console" },
  { "rawset(string, 'rep', print)", "rawset: the table is read-only" },
  { "table.insert(table, 1)", "table.insert: the table is read-only" },
  { "setmetatable(string, nil)", "cannot change a protected metatable" },
  { "pawl.json.encode = nil", "pawl.json.encode is read-only" },
  { "json.decode = nil", "json.decode is read-only" },
  { "getmetatable('').__index.rep = nil", "attempt to index a boolean value" },
  { "getmetatable(db).__index.enqueue = nil", "attempt to index a boolean value" },
  { "math.random = nil", "math.random is read-only" },
  { "setmetatable(_G, { __index = function() while true do end end })", "cannot change a protected metatable" },
  { "getmetatable(_G).__index.os = nil", "attempt to index a boolean value" },
  { "coroutine.wrap(function() debug.sethook() end)()", "debug.sethook is not available" },
}

describe("an attacker at the attached console", function()
  local env

  before_each(function() env = make_env("sqlite") end)
  after_each(function() env:cleanup() end)

  it("is refused every way out of the chunk's limits, and the host serves the next console and stops on one SIGTERM", function()
    local p, sock = start_host(env, "--admin-timeout", "2")
    for _, e in ipairs(ESCAPES) do
      local r = attach_within(env, H.HANG_S, sock, "-e", e[1])
      assert.are.equal(1, r.code, e[1] .. ": " .. r.out .. r.err)
      assert.truthy(r.err:find(e[2], 1, true), e[1] .. ": " .. r.err)
      assert.truthy(p:alive(), e[1])
    end
    -- Errors caught and the loop run anyway: the limit still holds.
    for _, code in ipairs{
      "pcall(function() debug.sethook() end) while true do end",
      "pcall(function() jit.attach(function() end, 'trace') end) while true do end",
      "pcall(function() collectgarbage('stop') end) while true do end",
      "local co = coroutine.wrap(function() while true do coroutine.yield() end end) while true do co() end",
      "while true do pcall(error) end",
      "xpcall(error, function() while true do end end)",
      "error(setmetatable({}, { __tostring = function() while true do end end }))",
      "local s = string.rep('a', 30000) while true do s:find(('.-'):rep(20) .. 'b') end",
      "table.sort({ 3, 2, 1 }, function(a, b) while true do end end)",
    } do
      local r = attach_within(env, H.HANG_S, sock, "-e", code)
      assert.are.equal(1, r.code, code)
      assert.truthy(r.err:find("the chunk ran longer than the console's limit of 2 s", 1, true),
                    code .. ": " .. r.err)
    end
    -- The shared tables are intact for the next console.
    local out = attach_ok(sock, "print(('%d-%s'):format(7, string.rep('a', 2)), json.encode{1}, math.floor(2.5))")
    assert.truthy(out:find("7-aa\t[1]\t2", 1, true), out)
    -- What the operator needs is still there.
    out = attach_ok(sock, "print(type(os.time()), os.date('!%Y', 0), debug.traceback('tb'):match('^tb'), type(pcall), select('#', 1, 2))")
    assert.truthy(out:find("number\t1970\ttb\tfunction\t2", 1, true), out)
    out = attach_ok(sock, "local f = assert(load('return 1 + x', 'c', 't', { x = 2 })) return f()")
    assert.truthy(out:find("^3\n"), out)
    out = attach_ok(sock, "print(require('pawl').json.encode{a = 1})")
    assert.truthy(out:find('{"a":1}', 1, true), out)
    p:signal("TERM")
    assert.are.equal(0, p:wait(H.HANG_S))
  end)

  it("a second console is told busy at once while a chunk runs, the question of a bulk action times out like a chunk, and top --connect never hangs", function()
    local p, sock = start_host(env, "--admin-timeout", "30")
    local first = env:spawn("console", "--connect", sock, "-e",
      "print('in-chunk') while true do end")
    env:wait_until("the first chunk to run", function()
      return first:stdout():find("in-chunk", 1, true)
    end)
    -- 30 s of chunk left: an answer within a few seconds is "at once".
    for _, args in ipairs{ { "-e", "1" }, { "-e", "stats()" } } do
      local t0 = H.mono()
      local r = attach_within(env, 10, sock, unpack(args))
      assert.are.equal(1, r.code, r.out .. r.err)
      assert.truthy(r.err:match("busy: another console's chunk is running %(%d+ s left%)"), r.err)
      assert.truthy(H.mono() - t0 < 10)
    end
    local r = env:spawn("top", "--connect", sock, "--once")
    assert.truthy(r:wait(10), "top --connect hung")
    assert.truthy(r:stderr():find("busy: another console's chunk is running", 1, true), r:stderr())
    first:kill()
    env:wait_until("the first chunk to be stopped", function()
      return attach(sock, "-e", "1").code == 0
    end, 25)
    -- A bulk action's question on a terminal nobody answers: it waits
    -- as long as a chunk may run, not ten minutes, and others hear busy.
    p:signal("TERM")
    assert.truthy(p:wait(H.HANG_S))
    p, sock = start_host(env, "--admin-timeout", "3")
    attach_ok(sock, "for i = 1, 101 do enqueue('none', {}, { delay_ms = 3600000 }) end")
    local T = require "term_helper"
    local t = T.start(env, T.command({ "env", "HOME=" .. env.dir, "TERM=xterm", C.bin,
                                       "console", "--connect", sock }),
                      { cols = 140, rows = 50 })
    local ok, err = pcall(function()
      t:wait_text("> ")
      t:line("cancel{state = \"pending\"}")
      t:wait_text("[y/N]")
      local busy = attach_within(env, 10, sock, "-e", "1")
      assert.truthy(busy.err:find("busy: another console's chunk is running", 1, true), busy.err)
      -- Nobody answers: the host is free again once the chunk's 3 s are
      -- up (not after ten minutes), and an answer typed later is too late.
      env:wait_until("the question to time out", function()
        return attach(sock, "-e", "1").code == 0
      end)
      t:line("y")
      t:wait_text("no answer within the console's limit of 3 s: nothing was changed")
    end)
    t:close()
    assert(ok, err)
    assert.truthy(attach_ok(sock, "stats()"):find("default%s+101"))
    assert.truthy(p:alive())
  end)

  it("a chunk stuck in a blocking C call is left behind at stop, long before the admin timeout", function()
    -- A script whose top level blocks on a FIFO once a flag file exists
    -- (--unsafe-lua gives scripts io): the console's reload() then waits
    -- in C for a loader that never answers.
    local flag, fifo = env:path("block"), env:path("fifo")
    assert.truthy(C.sh("mkfifo " .. q(fifo)))
    local src = ([[
local f = io.open(%q)
if f then f:close() io.open(%q):read("*l") end
return { run = function() return 1 end }
]]):format(flag, fifo)
    env:script("blocker", src)
    local p, sock = start_host(env, "--unsafe-lua", "--admin-timeout", "60")
    C.write_file(flag, "1")
    env:script("blocker", src .. "-- changed\n")
    local stuck = env:spawn("console", "--connect", sock, "-e", "print('reloading') reload()")
    env:wait_until("the reload to start", function()
      return stuck:stdout():find("reloading", 1, true)
    end)
    -- Meanwhile the others hear busy, at once.
    local r = attach_within(env, 10, sock, "-e", "1")
    assert.truthy(r.err:find("busy: another console's chunk is running", 1, true), r.err)
    local t0 = H.mono()
    p:signal("TERM")
    -- The admin timeout is 60 s and reload() waits 60 s: the host ends
    -- long before either.
    assert.truthy(p:wait(25), "the host waited for the stuck console")
    assert.truthy(H.mono() - t0 < 25)
    assert.truthy(p:stderr():find("left behind", 1, true), p:stderr())
  end)
end)

describe("the admin TCP listener before authentication", function()
  local env

  before_each(function() env = make_env("sqlite") end)
  after_each(function() env:cleanup() end)

  it("17 and more silent TCP connections do not lock out the unix socket's consoles or top, and are closed after about 2 s", function()
    local token = env:path("token")
    C.write_file(token, "s3cret-token\n")
    C.sh("chmod 600 " .. q(token))
    local p, sock = start_host(env, "--admin-listen", "127.0.0.1:0", "--admin-token-file", token)
    local addr = env:wait_until("the TCP listener", function()
      return p:stderr():match("admin console listening.* tcp=(127%.0%.0%.1:%d+)")
             or p:stderr():match("admin console listening tcp=(127%.0%.0%.1:%d+)")
    end)
    local host, port = addr:match("^(.*):(%d+)$")
    -- 40 connections that never say hello, held open by a child that
    -- reads what the host sends each until it closes it, then prints
    -- that and how long after its connect it ended (at most: the reads
    -- go one connection after the other).
    local holder = env:spawn_program({ os.getenv("PAWL_LUAJIT"), "-e", ([=[
      local ffi = require "ffi"
      ffi.cdef[[
        int socket(int, int, int);
        struct sa { unsigned short fam; unsigned short port; unsigned int addr; char z[8]; };
        int connect(int, const struct sa *, unsigned int);
        long read(int, void *, unsigned long);
        unsigned short htons(unsigned short);
        int inet_pton(int, const char *, void *);
        struct ts { long s; long ns; };
        int clock_gettime(int, struct ts *);
      ]]
      local function mono()
        local t = ffi.new("struct ts")
        ffi.C.clock_gettime(1, t)
        return tonumber(t.s) + tonumber(t.ns) / 1e9
      end
      local fds, opened = {}, {}
      for i = 1, 40 do
        local fd = ffi.C.socket(2, 1, 0)
        local sa = ffi.new("struct sa")
        sa.fam = 2
        sa.port = ffi.C.htons(%d)
        ffi.C.inet_pton(2, %q, ffi.cast("void *", ffi.cast("char *", sa) + 4))
        assert(ffi.C.connect(fd, sa, 16) == 0)
        fds[i], opened[i] = fd, mono()
      end
      io.write("connected\n") io.flush()
      local buf = ffi.new("char[4096]")
      for i = 1, 40 do
        local got = {}
        while true do
          local n = tonumber(ffi.C.read(fds[i], buf, 4096))
          if n <= 0 then break end
          got[#got + 1] = ffi.string(buf, n):gsub("%%c", "")
        end
        io.write(("conn %%d closed after %%.2f s: %%s\n"):format(i, mono() - opened[i], table.concat(got)))
      end
      io.write("all closed\n") io.flush()
    ]=]):format(tonumber(port), host) })
    env:wait_until("the silent connections", function()
      return holder:stdout():find("connected", 1, true)
    end)
    -- The owner's console and top attach at once.
    assert.truthy(attach_within(env, 10, sock, "-e", "1 + 1").out:find("^2\n"))
    local top = env:spawn("top", "--connect", sock, "--once", "--json")
    assert.are.equal(0, top:wait(10), top:stderr())
    env:wait_until("the silent connections to be closed", function()
      return holder:stdout():find("all closed", 1, true)
    end)
    -- Strangers held the 16 waiting slots (not the consoles'); those
    -- beyond were told so at once; the others were closed after their
    -- short deadline, well before the 10 s a console on the unix socket
    -- has. (How many of each depends on how fast the host accepts: the
    -- listen backlog makes the later connects wait for it.)
    local out = holder:stdout()
    local waited, refused, latest = 0, 0, 0
    for secs, said in out:gmatch("closed after ([%d.]+) s: ([^\n]*)") do
      latest = math.max(latest, tonumber(secs))
      if said:find("refused: no hello in time", 1, true) then waited = waited + 1 end
      if said:find("refused: 16 connections are waiting to authenticate already", 1, true) then
        refused = refused + 1
      end
    end
    assert.truthy(waited >= 16, out)
    assert.truthy(refused >= 1, out)
    assert.are.equal(40, waited + refused, out)
    assert.truthy(latest < 9, out)
    -- Then a console with the token attaches over TCP.
    local r = attach_within(env, 10, addr, "-e", "2 + 2", "--admin-token-file", token)
    assert.truthy(r.out:find("^4\n"), r.out .. r.err)
    assert.truthy(p:alive())
  end)

  it("a hello frame larger than a hello is refused before authentication", function()
    local token = env:path("token")
    C.write_file(token, "s3cret-token\n")
    C.sh("chmod 600 " .. q(token))
    local p = env:start("--workers", "1", "--admin-socket", "none",
                        "--admin-listen", "127.0.0.1:0", "--admin-token-file", token)
    local addr = env:wait_until("the TCP listener", function()
      return p:stderr():match("admin console listening tcp=(127%.0%.0%.1:%d+)")
    end)
    local host, port = addr:match("^(.*):(%d+)$")
    -- Announces a 1 MiB frame and sends 64 KiB of it: refused at once.
    local out = C.capture(("%s -e %s 2>&1"):format(q(os.getenv("PAWL_LUAJIT")), q(([=[
      local ffi = require "ffi"
      ffi.cdef[[
        int socket(int, int, int);
        struct sa { unsigned short fam; unsigned short port; unsigned int addr; char z[8]; };
        int connect(int, const struct sa *, unsigned int);
        long read(int, void *, unsigned long);
        long write(int, const void *, unsigned long);
        unsigned short htons(unsigned short);
        int inet_pton(int, const char *, void *);
      ]]
      local fd = ffi.C.socket(2, 1, 0)
      local sa = ffi.new("struct sa")
      sa.fam = 2
      sa.port = ffi.C.htons(%d)
      ffi.C.inet_pton(2, %q, ffi.cast("void *", ffi.cast("char *", sa) + 4))
      assert(ffi.C.connect(fd, sa, 16) == 0)
      local hdr = "\0\16\0\0H"
      ffi.C.write(fd, hdr, #hdr)
      local body = ("x"):rep(65536)
      ffi.C.write(fd, body, #body)
      local buf = ffi.new("char[4096]")
      local got = {}
      while true do
        local n = tonumber(ffi.C.read(fd, buf, 4096))
        if n <= 0 then break end
        got[#got + 1] = ffi.string(buf, n)
      end
      print(table.concat(got))
    ]=]):format(tonumber(port), host))))
    assert.truthy(out:find("refused: protocol error: a hello is at most", 1, true), out)
    assert.truthy(p:alive())
  end)
end)

describe("token files", function()
  local env

  before_each(function() env = make_env("sqlite") end)
  after_each(function() env:cleanup() end)

  it("are refused when group or others may read or write them, for the admin and the metrics token alike", function()
    local token = env:path("token")
    C.write_file(token, "s3cret-token\n")
    for _, mode in ipairs{ "640", "604", "620", "602", "660", "644", "606" } do
      C.sh("chmod " .. mode .. " " .. q(token))
      for _, args in ipairs{
        { "--admin-socket", "none", "--admin-listen", "127.0.0.1:0", "--admin-token-file", token },
        { "--metrics", "127.0.0.1:0", "--metrics-token-file", token },
      } do
        local a = { "--db", env.db, "run", "--scripts", env.scripts, "--until-idle" }
        for _, x in ipairs(args) do a[#a + 1] = x end
        local r = C.run(a)
        assert.are_not.equal(0, r.code, mode .. " " .. args[#args - 1] .. ": " .. r.err)
        assert.truthy(r.err:find(token, 1, true), r.err)
        assert.truthy(r.err:find("mode 0" .. mode, 1, true), mode .. ": " .. r.err)
        assert.truthy(r.err:find("chmod 600", 1, true), r.err)
      end
    end
    C.sh("chmod 400 " .. q(token))
    local r = C.run({ "--db", env.db, "run", "--scripts", env.scripts, "--until-idle",
                      "--admin-socket", "none", "--admin-listen", "127.0.0.1:0",
                      "--admin-token-file", token })
    assert.are.equal(0, r.code, r.err)
  end)
end)
