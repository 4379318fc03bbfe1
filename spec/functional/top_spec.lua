-- top_spec.lua: `pawl top`, the live view: on a terminal (tmux
-- gives it a pseudo-terminal and shows its screen: spec/support/
-- term_helper.lua), where the screen must show the numbers the database
-- holds (queue depths from `pawl queue list`, a dead job's sanitized
-- error), the keys must act (p pauses the selected queue, and a dead job;
-- i resumes a job by id) and every way out must give the terminal back;
-- without a terminal (plain prints, --once, --json) on SQLite and on the
-- throwaway PostgreSQL server; and attached to a running host (--connect).
--
-- Nothing here waits for a time to pass: every step waits until the screen
-- or the database shows what it should (H.wait_until's cap is a hang
-- guard), and jobs that must be running wait at gates.
local cjson = require "cjson"
local H = require "host_helper"
local PG = require "pg_helper"
local C = require "cli_helper"
local T = require "term_helper"

-- An env whose database is SQLite or a new PostgreSQL schema (nil when
-- PostgreSQL tests are skipped), migrated.
local make_env = PG.env_for

-- What the spec's jobs are: "ok" succeeds; "boom" dies at once with an
-- error that holds a secret (the default sanitizer redacts it) and an
-- escape sequence (which must never reach the terminal as one).
local BOOM = [[
return { max_attempts = 1,
         run = function() error("token=s3cr3t-value \27[31mred alert") end }]]

-- Two jobs succeed and one dies in queue "default", three wait in "mail"
-- (no host serves it); returns the dead job's id.
local function seed(env)
  env:script("ok", 'return { run = function() return "fine" end }')
  env:script("boom", BOOM)
  env:enqueue("ok")
  env:enqueue("ok")
  local dead = env:enqueue("boom")
  env:run_idle("--queues", "default")
  for _ = 1, 3 do env:enqueue("ok", "{}", "--queue", "mail") end
  return dead
end

-- `pawl queue list --json`, by queue name.
local function queue_list(env)
  local out = {}
  for _, q in ipairs(C.json_lines(env:ok("queue", "list", "--json"))) do
    out[q.queue] = q
  end
  return out
end

-- The screen's row of a queue, as `pawl top` draws it: name, then
-- PENDING RUNNING BLOCKED HELD FAILED, each as the database counts them.
local function queue_row(name, q)
  local c = q.counts
  return ("%s%%s+%d%%s+%d%%s+%d%%s+%d%%s+%d"):format(
    name, c.pending, c.running, c.blocked, c.paused, c.failed)
end

local function top_cmd(env, ...)
  local words = { "env", "TERM=xterm", C.bin, "--db", env.db, "top", ... }
  -- How it ended, and whether the terminal is back in canonical mode.
  return T.command(words) .. "; echo EXITED=$?; stty -a | tr ' ' '\\n' | "
         .. "grep -x -- '-*icanon' | sed 's/^/MODE=/'; sleep 600"
end

describe("pawl top on a terminal", function()
  local env, t

  before_each(function() env = make_env("sqlite") end)
  after_each(function()
    if t then t:close() end
    t = nil
    env:cleanup()
  end)

  it("shows the database's queue depths and a dead job's sanitized error, pauses with p, resumes by id, and q gives the terminal back", function()
    local dead = seed(env)
    local ql = queue_list(env)
    t = T.start(env, top_cmd(env, "--interval", "0.2"), { cols = 140, rows = 45 })
    local screen = t:wait_for(queue_row("mail", ql.mail), "the mail queue's counts")
    assert.truthy(screen:find(queue_row("default", ql.default)), screen)
    assert.equal(3, ql.mail.counts.pending)
    -- The dead job, its error sanitized: the secret redacted, the escape
    -- shown as text (the pane would hold no "\x1b" had the terminal
    -- obeyed it), the traceback cut at its first line.
    screen = t:wait_for("token=<redacted> \\x1b%[31mred alert", "the dead job's error")
    assert.truthy(screen:find(dead, 1, true), screen)
    assert.falsy(screen:find("s3cr3t", 1, true), screen)
    assert.falsy(screen:find("stack traceback", 1, true), screen)

    -- The queues are listed by name: default, then mail. Select mail, pause it.
    t:keys("Down")
    t:wait_for("> mail", "mail selected")
    t:type("p")
    t:wait_for("queue mail paused", "the pause's message")
    t:wait_for("mail%s+%d.-PAUSED by", "mail shown paused")
    env:wait_until("mail paused in the database", function()
      return queue_list(env).mail.paused == true
    end)
    -- p again resumes it.
    t:type("p")
    t:wait_for("queue mail resumed", "the resume's message")
    env:wait_until("mail resumed in the database", function()
      return queue_list(env).mail.paused == false
    end)

    -- Tab twice: the dead jobs' pane; p pauses the dead job.
    t:keys("Tab", "Tab")
    t:wait_for("%[DEAD%]", "the dead pane selected")
    t:wait_for(T.plain("> " .. dead), "the dead job selected")
    t:type("p")
    t:wait_for(T.plain("job " .. dead .. " is paused"), "the job's pause")
    assert.equal("paused", env:show(dead).state)
    -- It left the dead list; i and its id resume it (back to failed).
    t:type("i")
    t:wait_for("pause/resume job id:", "the prompt")
    t:type(dead)
    t:keys("Enter")
    t:wait_for(T.plain("job " .. dead .. " is failed"), "the job's resume")
    assert.equal("failed", env:show(dead).state)

    -- q: the alternate screen is gone, the terminal canonical again.
    t:type("q")
    screen = t:wait_for("MODE=", "pawl top to end")
    assert.truthy(screen:find("EXITED=0", 1, true), screen)
    assert.truthy(screen:find("MODE=icanon", 1, true), screen)
    assert.falsy(screen:find("QUEUES", 1, true), screen)
  end)

  it("gives the terminal back on Ctrl-C and on SIGTERM", function()
    seed(env)
    t = T.start(env, top_cmd(env), { cols = 120, rows = 40 })
    t:wait_for("QUEUES", "the first screen")
    t:keys("C-c")
    local screen = t:wait_for("MODE=", "pawl top to end on Ctrl-C")
    assert.truthy(screen:find("EXITED=0", 1, true), screen)
    assert.truthy(screen:find("MODE=icanon", 1, true), screen)
    t:close()

    -- SIGTERM from elsewhere: the shell writes its pid first.
    local pidfile = env:path("top.pid")
    local line = "sh -c " .. C.quote("echo $$ > " .. C.quote(pidfile) ..
                                     "; exec env TERM=xterm " .. C.quote(C.bin) ..
                                     " --db " .. C.quote(env.db) .. " top")
                 .. "; echo EXITED=$?; stty -a | tr ' ' '\\n' | grep -x -- '-*icanon' | "
                 .. "sed 's/^/MODE=/'; sleep 600"
    t = T.start(env, line, { cols = 120, rows = 40 })
    t:wait_for("QUEUES", "the first screen")
    local pid = C.read_file(pidfile):match("%d+")
    assert.truthy(C.sh("kill -TERM " .. pid))
    screen = t:wait_for("MODE=", "pawl top to end on SIGTERM")
    assert.truthy(screen:find("EXITED=0", 1, true), screen)
    assert.truthy(screen:find("MODE=icanon", 1, true), screen)
    assert.falsy(screen:find("QUEUES", 1, true), screen)
  end)

  it("redraws at the new size after a resize (SIGWINCH)", function()
    seed(env)
    t = T.start(env, top_cmd(env, "--interval", "3600"), { cols = 100, rows = 40 })
    t:wait_for("QUEUES", "the first screen")
    C.capture("env -u LD_PRELOAD tmux -S " .. C.quote(t.sock) ..
              " resize-window -t 0 -x 60 -y 30 2>&1")
    -- The key line is cut to the new width; at 100 columns it was whole.
    -- (The interval is an hour: only the resize can redraw.)
    t:wait_for(function(s)
      local keys = s:match("\n(tab/[^\n]*)")
      return keys ~= nil and #keys <= 60 and not keys:find("q: quit", 1, true)
    end, "the screen redrawn at 60 columns")
  end)
end)

for _, backend in ipairs({ "sqlite", "postgres" }) do
  describe("pawl top without a terminal (" .. backend .. ")", function()
    local env

    before_each(function() env = make_env(backend) end)
    after_each(function() if env then env:cleanup() end end)

    it("prints the database's numbers with --once and --json", function()
      if not env then pending(PG.skip_reason()) return end
      local dead = seed(env)
      local ql = queue_list(env)

      local out = env:ok("top", "--once")
      assert.truthy(out:find("queues:", 1, true), out)
      assert.truthy(out:find(queue_row("mail", ql.mail)), out)
      assert.truthy(out:find(queue_row("default", ql.default)), out)
      assert.truthy(out:find(dead, 1, true), out)
      assert.truthy(out:find("token=<redacted> \\x1b[31mred alert", 1, true), out)
      assert.falsy(out:find("\27", 1, true), out)
      assert.falsy(out:find("s3cr3t", 1, true), out)
      -- Once: one snapshot.
      local n = 0
      for _ in out:gmatch("pawl top ") do n = n + 1 end
      assert.equal(1, n)

      local snap = cjson.decode(env:ok("top", "--once", "--json"))
      local byname = {}
      for _, q in ipairs(snap.queues) do byname[q.name] = q end
      for name, q in pairs(ql) do
        assert.equal(q.counts.pending, byname[name].pending, name)
        assert.equal(q.counts.failed, byname[name].failed, name)
        assert.equal(q.counts.succeeded, byname[name].succeeded, name)
      end
      assert.equal(1, #snap.dead)
      assert.equal(dead, snap.dead[1].id)
      assert.truthy(snap.dead[1].error:find("token=<redacted> \27[31mred alert", 1, true))
      -- The throughput buckets count what finished: 2 succeeded, 1 failed
      -- in "default" (within the snapshot's two minutes, or the run
      -- crossed more than a minute: then the older ones are gone).
      local done = { succeeded = 0, failed = 0 }
      for _, b in ipairs(snap.throughput) do
        assert.equal("default", b.queue)
        done[b.state] = done[b.state] + b.count
      end
      assert.truthy(done.succeeded <= 2 and done.failed <= 1)
      assert.truthy(snap.at > 0)
      -- The host that ran them is a node.
      assert.truthy(#snap.nodes >= 1)
      for _, nd in ipairs(snap.nodes) do assert.equal(0, nd.running) end
    end)

    it("prints a plain snapshot every interval, with per-second figures from the second on", function()
      if not env then pending(PG.skip_reason()) return end
      seed(env)
      local p = env:spawn("--db", env.db, "top", "--interval", "0.1")
      env:wait_until("three snapshots", function()
        local n = 0
        for _ in p:stdout():gmatch("pawl top ") do n = n + 1 end
        return n >= 3
      end)
      p:signal("TERM")
      assert.equal(0, p:wait(H.HANG_S))
      local out = p:stdout()
      assert.truthy(out:find("throughput/s: - (after the next sample)", 1, true), out)
      assert.truthy(out:find("throughput/s: started [%d.]+  succeeded [%d.]+  failed [%d.]+"), out)

      local j = env:spawn("--db", env.db, "top", "--interval", "0.1", "--json")
      env:wait_until("two JSON snapshots", function()
        return #C.lines(j:stdout()) >= 2
      end)
      j:signal("INT")
      assert.equal(0, j:wait(H.HANG_S))
      for _, line in ipairs(C.lines(j:stdout())) do
        assert.truthy(cjson.decode(line).queues, line)
      end
    end)

    it("gives the same snapshot to the Lua module (db:top_snapshot) and checks its options", function()
      if not env then pending(PG.skip_reason()) return end
      local dead = seed(env)
      local r = C.run({ "--db", env.db, "console", "-e",
                        "print(db:top_snapshot{running = 0, dead = 1, minutes = 30})" })
      assert.equal(0, r.code, r.err)
      local snap = cjson.decode(r.out)
      assert.equal(dead, snap.dead[1].id)
      assert.same({}, snap.running)
      r = C.run({ "--db", env.db, "console", "-e", "db:top_snapshot{minutes = 31}" })
      assert.equal(1, r.code)
      assert.truthy(r.err:find("1 to 30", 1, true) or r.err:find("31", 1, true), r.err)
      r = C.run({ "--db", env.db, "console", "-e", "db:top_snapshot{bogus = 1}" })
      assert.equal(1, r.code)
      assert.truthy(r.err:find("bogus", 1, true), r.err)
    end)

    it("refuses a bad interval and unknown options, naming the range", function()
      if not env then pending(PG.skip_reason()) return end
      local r = C.run({ "--db", env.db, "top", "--interval", "0.05" })
      assert.equal(2, r.code)
      assert.truthy(r.err:find("--interval must be a number of seconds from 0.1 to 3600 (got \"0.05\")", 1, true), r.err)
      r = C.run({ "--db", env.db, "top", "--interval", "abc" })
      assert.equal(2, r.code)
      r = C.run({ "--db", env.db, "top", "--bogus" })
      assert.equal(2, r.code)
      assert.truthy(r.err:find("unknown option \"--bogus\"", 1, true), r.err)
    end)
  end)

  describe("pawl top --connect (" .. backend .. ")", function()
    local env, t

    before_each(function() env = make_env(backend) end)
    after_each(function()
      if t then t:close() end
      t = nil
      if env then env:cleanup() end
    end)

    it("reads a running host's snapshot: its node, a running job, the queues", function()
      if not env then pending(PG.skip_reason()) return end
      env:script("held", H.GATE_LUA .. [[
return { run = function(job) pawl_gate(job.payload.gate) return "done" end }]])
      env.gated = true
      local g = env:gate()
      local id = env:enqueue("held", H.json { gate = g.path })
      for _ = 1, 2 do env:enqueue("ok", "{}", "--queue", "mail") end
      local sock = env:path("admin.sock")
      env:start("--workers", "2", "--queues", "default", "--admin-socket", sock,
                "--node-id", "top-node")
      g:wait_reached()

      local r = C.run({ "top", "--connect", sock, "--once", "--json" })
      assert.equal(0, r.code, r.err)
      local snap = cjson.decode(r.out)
      assert.equal("top-node", snap.nodes[1].id)
      assert.equal(1, snap.nodes[1].running)
      assert.equal(1, #snap.running)
      assert.equal(id, snap.running[1].id)
      assert.equal("top-node", snap.running[1].node)
      local byname = {}
      for _, q in ipairs(snap.queues) do byname[q.name] = q end
      assert.equal(2, byname.mail.pending)
      assert.equal(1, byname.default.running)

      r = C.run({ "top", "--connect", sock, "--once" })
      assert.equal(0, r.code, r.err)
      assert.truthy(r.out:find(id, 1, true), r.out)
      assert.truthy(r.out:find("top-node", 1, true), r.out)

      -- On a terminal, over the socket: p pauses the selected queue on the
      -- host's connection.
      t = T.start(env, T.command({ "env", "TERM=xterm", C.bin, "top", "--connect", sock })
                  .. "; echo EXITED=$?; sleep 600", { cols = 140, rows = 45 })
      t:wait_for("host top%-node", "the host's name in the title")
      t:wait_for(T.plain(id), "the running job")
      t:type("p") -- default is selected first
      t:wait_for("queue default paused", "the pause over the socket")
      assert.equal(true, queue_list(env).default.paused)
      t:type("q")
      t:wait_for("EXITED=0", "pawl top to end")
      g:open()
    end)

    it("says why when there is no host", function()
      if not env then pending(PG.skip_reason()) return end
      local r = C.run({ "top", "--connect", env:path("nothing.sock"), "--once" })
      assert.equal(1, r.code)
      assert.truthy(r.err:find("cannot attach to", 1, true), r.err)
    end)
  end)
end

describe("pawl top when the database goes away (postgres)", function()
  local env

  after_each(function() if env then env:cleanup() end env = nil end)

  it("says so, keeps its terminal-less prints going, and reads again once the server is back", function()
    if PG.skip_reason() then pending(PG.skip_reason()) return end
    env = PG.env(false)
    env:use_server(env:private_server("pgtop"), "top")
    env:ok("migrate")
    env:ok("enqueue", "x", "{}")
    local p = env:spawn("--db", env.db, "top", "--interval", "0.1")
    local function snapshots()
      local n = 0
      for _ in p:stdout():gmatch("pawl top ") do n = n + 1 end
      return n
    end
    env:wait_until("a snapshot", function() return snapshots() >= 1 end)
    PG.server.down(env:path("pgtop"))
    env:wait_until("pawl top to say the database is away", function()
      return p:stderr():find("(reading again)", 1, true) ~= nil
    end)
    assert.truthy(p:alive())
    local before = snapshots()
    PG.server.up(env:path("pgtop"))
    env:wait_until("a snapshot once the server is back", function()
      return snapshots() > before
    end)
    p:signal("TERM")
    assert.equal(0, p:wait(H.HANG_S))
  end)
end)
