-- console_spec.lua: `pawl console` driven as a person drives it, through a
-- terminal (tmux gives the console a pseudo-terminal and shows its screen),
-- and without one (-e, FILE, piped input, --json); the admin functions on
-- SQLite and on the throwaway PostgreSQL server; the CLI's admin verbs.
--
-- Nothing here waits for a time to pass: every step waits until the screen
-- shows what it should (H.wait_until, whose cap is only a hang guard).
local pawl = require "pawl"
local cjson = require "cjson"
local H = require "host_helper"
local PG = require "pg_helper"
local C = require "cli_helper"

local q = C.quote

-- ---- a terminal ------------------------------------------------------------

local T = require "term_helper"

-- Starts `pawl --db DB console ARGS` on a terminal of `cols` columns.
local function term(env, opts)
  opts = opts or {}
  local words = { "env", "HOME=" .. env.dir, "PAWL_HISTORY=" .. (opts.history or env:path("history")),
                  "TERM=xterm", C.bin, "--db", opts.db or env.db, "console" }
  for _, a in ipairs(opts.args or {}) do words[#words + 1] = a end
  local self = T.start(env, T.command(words) .. "; echo EXITED=$?; sleep 600",
                       { cols = opts.cols, rows = opts.rows, scrollback = true })
  self:wait_text("pawl:", "the prompt")
  return self
end

-- ---- databases -------------------------------------------------------------

-- An env (temp dir, scripts dir) whose database is SQLite or a fresh
-- PostgreSQL schema; nil when PostgreSQL tests are skipped.
local make_env = PG.env_for

local function console(env, ...)
  return C.run({ "--db", env.db, "console", ... })
end

-- The console's -e, insisting on success; returns stdout.
local function eval_ok(env, code, ...)
  local r = console(env, "-e", code, ...)
  if r.code ~= 0 then
    error(("console -e %s failed (%s): %s"):format(code, tostring(r.code), r.err), 2)
  end
  return r.out
end

-- ---- through a terminal ------------------------------------------------------

describe("pawl console on a terminal", function()
  local env, t

  before_each(function()
    env = H.env()
    C.run({ "--db", env.db, "migrate" })
  end)

  after_each(function()
    if t then t:close() end
    t = nil
    env:cleanup()
  end)

  it("shows the database in the prompt and completes names, fields, values and ids", function()
    local id = env:enqueue("mail", '{"to":"a"}')
    t = term(env)
    t:wait_text("pawl:sqlite:" .. env.db_path .. "> ")
    -- A field of a console function's filter.
    t:type("jobs{st")
    t:keys("Tab")
    t:wait_text("jobs{state=")
    -- A state for that field.
    t:type('"pe')
    t:keys("Tab")
    t:wait_text('jobs{state="pending"')
    t:line("}")
    t:wait_text(id)
    -- A global.
    t:type("stat")
    t:keys("Tab")
    t:wait_text("> stats")
    t:line("()")
    t:wait_text("QUEUE    PENDING")
    -- A method of the handle: the common part, then both listed.
    t:type("db:jo")
    t:keys("Tab")
    t:wait_text("> db:job")
    t:keys("Tab")
    t:wait_text("jobs", "the candidates listed", 1)
    t:keys("C-u")
    -- An id shown a moment ago.
    t:type('job("' .. id:sub(1, 6))
    t:keys("Tab")
    t:wait_text('job("' .. id .. '"')
    t:line(")")
    t:wait_text("events:")
    t:wait_text("enqueued -> pending")
  end)

  it("continues an incomplete chunk on the next line", function()
    t = term(env)
    t:line("function f()")
    t:wait_text("..> ")
    t:line("return 6 * 7")
    t:line("end")
    t:line("f()")
    t:wait_text("\n42\n")
    -- A long string left open continues too.
    t:line("s = [[a")
    t:line("b]]")
    t:line("#s")
    t:wait_text("\n3\n")
  end)

  it("keeps a bounded history across restarts, readable by its owner only", function()
    t = term(env)
    t:line("1234 + 1")
    t:wait_text("1235")
    t:keys("C-d")
    t:wait_text("EXITED=0")
    t:close()
    local hist = env:path("history")
    assert.are.equal("-rw-------", C.capture("stat -c %A " .. q(hist)):match("%S+"))
    t = term(env)
    t:keys("Up")
    t:wait_text("> 1234 + 1")
    t:keys("Enter")
    t:wait_text("1235", "the recalled chunk's result")
    t:keys("C-d")
    t:wait_text("EXITED=0")
    -- At most 1000 entries, whatever the file held.
    local lines = { "_HiStOrY_V2_" }
    for i = 1, 1500 do lines[#lines + 1] = "x" .. i end
    C.write_file(hist, table.concat(lines, "\n") .. "\n")
    t:close()
    t = term(env)
    t:line("1 + 1")
    t:wait_text("\n2\n")
    t:keys("C-d")
    t:wait_text("EXITED=0")
    local kept = select(2, C.read_file(hist):gsub("\n", "\n")) - 1
    assert.is_true(kept <= 1000, "history holds " .. kept .. " entries")
    -- libedit's format: one entry a line, blanks as \040.
    assert.matches("\n1\\0401\n", (C.read_file(hist):gsub("\\040%+\\040", "\\040")))
  end)

  it("prints jobs as a table cut to the terminal's width, and a job as a record", function()
    local db = assert(pawl.open{ db = env.db })
    local id = assert(db:enqueue("report", { n = 1 }, { queue = "slow" }))
    local j = assert(db:claim(1))[1]
    assert(db:finish{ { id = id, attempt = j.attempt, kind = "failed",
                        error = ("very long error "):rep(20) } })
    db:close()
    t = term(env, { cols = 80 })
    t:line("jobs{}")
    local screen = t:wait_text("ATTEMPT")
    assert.matches("ID%s+TYPE%s+QUEUE%s+STATE%s+ATTEMPT%s+RUN_AT", screen)
    -- 1/?: no script for "report" here tells its max_attempts.
    assert.matches(id:gsub("%p", "%%%0") .. "%s+report%s+slow%s+failed%s+1/%?", screen)
    assert.matches("%(N/%?: no script visible for the type in %./scripts%)", screen)
    for line in screen:gmatch("[^\n]+") do
      assert.is_true(#line <= 80 * 3 and select(2, line:gsub("[^\128-\191]", "")) <= 80,
                     "line wider than the terminal: " .. line)
    end
    t:line('job("' .. id .. '")')
    screen = t:wait_text("last_error:")
    assert.matches("state:%s+failed", screen)
    assert.matches("attempts:", screen)
    -- Other values: readable nested Lua.
    t:line('{ a = 1, list = { "x", "y" }, nested = { deep = { 1 } } }')
    t:wait_text('list = { "x", "y" }')
  end)

  it("discards a chunk on Ctrl-C, stops a runaway loop, and leaves on Ctrl-D", function()
    t = term(env)
    t:line("function g()")
    t:wait_text("..> ")
    t:keys("C-c")
    t:wait_text("^C")
    t:line("g == nil")
    t:wait_text("\ntrue\n")
    -- The loop runs once "spinning" is shown: then Ctrl-C is a signal.
    t:line('print("spinning") while true do end')
    t:wait_text("spinning\n", "the loop", 1)
    t:keys("C-c")
    t:wait_text("error: interrupted (Ctrl-C)")
    -- Typed ahead in the same write as Enter, before the chunk runs: a
    -- byte waiting in the terminal, not a SIGINT; it stops the chunk too,
    -- and the keys typed after it reach the next prompt.
    t:type('while true do end\r\3print("after")\r')
    t:wait_text("error: interrupted (Ctrl-C)", nil, 2)
    t:wait_text("\nafter\n", "the typed-ahead line")
    t:line("40 + 2")
    t:wait_text("\n42\n")
    t:keys("C-d")
    t:wait_text("EXITED=0")
  end)

  it("reports errors on one line, keeps running, and shows the traceback on :trace", function()
    t = term(env)
    t:line('error("boom")')
    t:wait_text("error: stdin:1: boom")
    t:line(":trace")
    t:wait_text("stack traceback:")
    t:line("1 +* 2")
    t:wait_text("error: stdin:1: unexpected symbol")
    t:line("frobnicate()")
    t:wait_text("there is no function frobnicate")
    t:line('jobs{state = "bogus"}')
    t:wait_text("jobs: unknown state bogus")
    t:line('jobs{older_than = "soon"}')
    t:wait_text("not a duration")
    t:line('job("nope")')
    t:wait_text('invalid job id "nope"')
    t:line("1 + 1")
    t:wait_text("\n2\n")
  end)

  it("asks before a bulk action moves more than 100 jobs", function()
    local db = assert(pawl.open{ db = env.db })
    local items = {}
    for i = 1, 150 do items[i] = { "t", nil, { queue = "bulk" } } end
    assert(db:enqueue_many(items))
    t = term(env)
    t:line('pause{queue = "bulk"}')
    t:wait_text("pause 150 jobs? [y/N]")
    t:line("n")
    t:wait_text("not confirmed: nothing changed")
    assert.are.equal(0, #assert(db:jobs{ state = "paused" }))
    t:line('pause{queue = "bulk"}')
    t:wait_text("pause 150 jobs? [y/N]", "the second question", 2)
    t:line("y")
    t:wait_text("\n150\n")
    assert.are.equal(150, #assert(db:jobs{ state = "paused", limit = 1000 }))
    -- force skips the question; 100 or fewer never ask.
    t:line('resume{queue = "bulk", force = true}')
    t:wait_text("\n150\n", "the forced resume", 2)
    t:line('cancel{queue = "bulk", limit = 100}')
    t:wait_text("\n100\n")
    db:close()
  end)
end)

-- ---- without a terminal, on both backends ----------------------------------------

for _, backend in ipairs({ "sqlite", "postgres" }) do
  describe("pawl console -e, FILE and --json on " .. backend, function()
    local env

    before_each(function() env = make_env(backend) end)
    after_each(function() if env then env:cleanup() end env = nil end)

    local function skip()
      if env then return false end
      pending(PG.skip_reason() or "no database")
      return true
    end

    it("runs every admin function", function()
      if skip() then return end
      local id = eval_ok(env, 'enqueue("mail", { to = "a" }, { queue = "q", tags = { "vip" } })')
      id = id:match("%S+")
      assert.matches("^%x+%-", id)
      eval_ok(env, 'enqueue("sms", nil, { queue = "q" })')
      local out = eval_ok(env, "jobs{}")
      assert.is_truthy(out:find(id, 1, true))
      assert.matches("%(2 jobs%)", out)
      assert.is_truthy(eval_ok(env, 'jobs{tag = "vip"}'):find(id, 1, true))
      assert.matches("no jobs", eval_ok(env, 'jobs{older_than = "1h"}'))
      assert.matches("enqueued %-> pending", eval_ok(env, ('job(%q)'):format(id)))
      assert.matches("paused", eval_ok(env, ('pause(%q)'):format(id)))
      assert.matches("pending", eval_ok(env, ('resume(%q)'):format(id)))
      assert.are.equal("2\n", eval_ok(env, 'pause{queue = "q"}'))
      assert.are.equal("2\n", eval_ok(env, 'resume{state = "paused"}'))
      assert.are.equal("1\n", eval_ok(env, 'cancel{tag = "vip"}'))
      assert.are.equal("0\n", eval_ok(env, 'retry{state = "failed"}'))
      local st = eval_ok(env, "stats()")
      assert.matches("q%s+1%s+0%s+0%s+0%s+1", st)
      assert.matches("%(no nodes%)", eval_ok(env, "nodes()"))
      assert.matches("%(no locks%)", eval_ok(env, "locks()"))
      C.write_file(env.scripts .. "/mail.lua", 'return { queue = "mail", run = function() end }')
      assert.matches("mail%s+mail", eval_ok(env, "scripts()", "--scripts", env.scripts))
      assert.matches("retry%(id | filter%)", eval_ok(env, "help()"))
      assert.matches("^stats ", eval_ok(env, "help(stats)"))
      assert.matches("cancel", eval_ok(env, "help'cancel'"))
    end)

    it("needs force for more than 100 jobs without a terminal", function()
      if skip() then return end
      local db = assert(pawl.open{ db = env.db })
      local items = {}
      for i = 1, 101 do items[i] = { "t" } end
      assert(db:enqueue_many(items))
      db:close()
      local r = console(env, "-e", 'cancel{state = "pending"}')
      assert.are.equal(1, r.code)
      assert.matches("101 jobs match: pass force = true", r.err)
      assert.are.equal("101\n", eval_ok(env, 'cancel{state = "pending", force = true}'))
    end)

    it("exits 1 with one line on stderr when the chunk fails", function()
      if skip() then return end
      local r = console(env, "-e", "error('nope')")
      assert.are.equal(1, r.code)
      assert.are.equal("error: (command line):1: nope\n", r.err)
      r = console(env, "-e", "retry{}")
      assert.are.equal(1, r.code)
      assert.matches("a filter needs at least one of", r.err)
      r = console(env, "-e", "x(")
      assert.are.equal(1, r.code)
      assert.matches("error: %(command line%):1:", r.err)
    end)

    it("runs a script file and prints what it returns", function()
      if skip() then return end
      local file = env:path("report.lua")
      C.write_file(file, "#!/usr/bin/env pawl\nenqueue('a')\nenqueue('b')\n"
                         .. "local n = #jobs{}\nprint('jobs:', n)\nreturn n * 10\n")
      local r = console(env, file)
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("jobs:\t2\n20\n", r.out)
      C.write_file(file, "local x = nil\nreturn x.y\n")
      r = console(env, file)
      assert.are.equal(1, r.code)
      assert.matches("report.lua:2: attempt to index", r.err)
      r = console(env, env:path("missing.lua"))
      assert.are.equal(2, r.code)
      assert.matches("cannot open", r.err)
    end)

    it("prints results as JSON Lines with --json", function()
      if skip() then return end
      eval_ok(env, 'enqueue("a", { n = 1 })')
      eval_ok(env, 'enqueue("b", { n = 2 })')
      local lines = C.json_lines(eval_ok(env, "jobs{}", "--json"))
      assert.are.equal(2, #lines)
      assert.are.equal("b", lines[1].type)
      assert.are.equal(2, lines[1].payload.n)
      assert.is_nil(lines[1].payload_json)
      local s = C.json_lines(eval_ok(env, "stats()", "--json"))
      assert.are.equal(1, #s)
      assert.are.equal(2, s[1].counts.pending)
      assert.are.same({ 1, "x" }, cjson.decode(eval_ok(env, '{ 1, "x" }', "--json")))
      local r = console(env, "-e", "error('bad')", "--json")
      assert.are.equal(1, r.code)
      assert.matches("bad", cjson.decode(r.out).error)
    end)

    it("reads chunks from piped input", function()
      if skip() then return end
      local cmd = ("printf 'x = 20\\nfunction f()\\n  return x + 1\\nend\\n=f()\\nbogus()\\n=1\\n' | "
                   .. "env -u PAWL_DB %s --db %s console; echo \"rc=$?\"")
                  :format(q(C.bin), q(env.db))
      local out = C.capture("{ " .. cmd .. "; } 2>&1")
      assert.matches("21\n", out)
      assert.matches("there is no function bogus", out)
      assert.matches("\n1\n", out)
      assert.matches("rc=1", out)
    end)

    it("cuts a huge result with a note, and refuses a missing database", function()
      if skip() then return end
      local out = eval_ok(env, "local t = {} for i = 1, 5000 do t[i] = { i } end return t")
      assert.matches("%.%.%. %(cut: %d+ more lines", out)
      local r = C.run({ "--db", "sqlite:" .. env:path("nope.db"), "console", "-e", "1" })
      assert.are.equal(1, r.code)
      assert.matches("no database at sqlite:.*%(or pass %-%-create%)", r.err)
    end)
  end)

  describe("pawl stats, nodes, locks and bulk verbs on " .. backend, function()
    local env

    before_each(function() env = make_env(backend) end)
    after_each(function() if env then env:cleanup() end env = nil end)

    local function run(...)
      local args = { "--db", env.db }
      for _, a in ipairs({ ... }) do args[#args + 1] = a end
      return C.run(args)
    end

    it("show the counts, nodes and locks as text and JSON", function()
      if backend == "postgres" and not env then pending(PG.skip_reason()) return end
      run("enqueue", "mail", "--queue", "q1")
      run("enqueue", "mail", "--queue", "q2", "--tag", "vip")
      local r = run("stats")
      assert.are.equal(0, r.code, r.err)
      assert.matches("QUEUE%s+PENDING", r.out)
      assert.matches("q1%s+1", r.out)
      assert.matches("%(all%)%s+2", r.out)
      local s = cjson.decode(run("stats", "--json").out)
      assert.are.equal(2, s.all.counts.pending)
      assert.are.equal("q1", s.queues[1].queue)
      assert.are.equal("no nodes\n", run("nodes").out)
      assert.are.equal("", run("nodes", "--json").out)
      assert.are.equal("no locks\n", run("locks").out)
      local p = env:spawn("--db", env.db, "run", "--scripts", env.scripts,
                          "--until-idle", "--idle-wait", "0", "--node-id", "n1")
      assert.is_truthy(p:wait(2 * H.HANG_S))
      local nodes = C.json_lines(run("nodes", "--json").out)
      assert.are.equal("n1", nodes[1].id)
      assert.matches("n1%s+stopped [%d%-T:.]+Z%s+" .. pawl.VERSION:gsub("%p", "%%%0"),
                     run("nodes").out)
    end)

    it("keep an attempt's traceback apart from its error, sanitized, in every view", function()
      if backend == "postgres" and not env then pending(PG.skip_reason()) return end
      -- boom: its first attempt fails deep in a chunk whose name holds a
      -- secret (so the traceback does), its second succeeds. doom: fails
      -- for good. forged: its message holds its own "stack traceback:".
      -- huge: a message of a megabyte, a traceback of hundreds of frames.
      env:script("boom", [[
return { max_attempts = 2, retry = function() return 0 end, run = function(job)
  local function inner() error("boom password=tr-secret") end
  if job.attempt == 1 then load("local t = ... ; t()", "=token=tr-chunk")(inner) end
  return { ok = true }
end }]])
      env:script("doom", [[return { max_attempts = 1, run = function() error("fatal thing") end }]])
      env:script("forged", [[return { max_attempts = 1, run = function()
  error("real\nstack traceback:\n\t\27[2Jfake frame") end }]])
      env:script("huge", [[return { max_attempts = 1, run = function()
  local function f(n) if n == 0 then error(("m"):rep(1000000)) end return 1 + f(n - 1) end
  return f(500) end }]])
      local boom, doom = env:enqueue("boom"), env:enqueue("doom")
      local forged, huge = env:enqueue("forged"), env:enqueue("huge")
      local p = env:spawn("--db", env.db, "run", "--scripts", env.scripts, "--until-idle")
      assert.is_truthy(p:wait(2 * H.HANG_S))
      local function shown(id, ...) return run("show", id, ...).out end
      local j = cjson.decode(shown(boom, "--json"))
      assert.are.equal("succeeded", j.state)
      -- A succeeded job has no last error, whatever its attempts said.
      assert.are.equal(cjson.null, j.last_error)
      local a = j.attempts[1]
      assert.are.equal("retry", a.outcome)
      assert.matches("boom password=<redacted>$", a.error)
      assert.falsy(a.error:find("traceback", 1, true), a.error)
      assert.matches("^stack traceback:\n", a.trace)
      assert.truthy(a.trace:find("in function", 1, true), a.trace)
      assert.truthy(a.trace:find("token=<redacted>", 1, true), a.trace)
      assert.are.equal(cjson.null, j.attempts[2].trace)
      local d = cjson.decode(shown(doom, "--json"))
      assert.matches("fatal thing$", d.last_error)
      assert.matches("fatal thing$", d.attempts[1].error)
      assert.matches("^stack traceback:\n", d.attempts[1].trace)
      -- Every view: the secrets nowhere, the traceback only where asked.
      local views = {
        show = shown(boom), show_trace = shown(boom, "--trace"),
        json = shown(boom, "--json"), jobs = run("jobs", "--json").out,
        raw = shown(boom, "--json", "--raw"), doom = shown(doom),
        console = eval_ok(env, ("job(%q)"):format(boom)),
        console_json = eval_ok(env, ("job(%q)"):format(boom), "--json"),
      }
      for name, text in pairs(views) do
        assert.falsy(text:find("tr-secret", 1, true), name .. ": " .. text)
        assert.falsy(text:find("tr-chunk", 1, true), name .. ": " .. text)
      end
      assert.falsy(views.show:find("stack traceback", 1, true), views.show)
      assert.truthy(views.show:find("pawl show ID --trace", 1, true), views.show)
      assert.falsy(views.doom:find("stack traceback", 1, true), views.doom)
      -- --trace: the frames a line each, nothing escaped into one line.
      assert.matches("\ntraceback of attempt 1:\n  stack traceback:\n   ", views.show_trace)
      assert.falsy(views.show_trace:find("\\n", 1, true), views.show_trace)
      assert.truthy(views.console:find("(tracebacks of its attempts: :trace)", 1, true), views.console)
      -- The console's :trace, after the job was shown.
      local f = env:path("console.in")
      C.write_file(f, ("job(%q)\n:trace\n"):format(doom))
      local out = C.capture(("%s --db %s console <%s 2>&1"):format(q(C.bin), q(env.db), q(f)))
      assert.matches("traceback of attempt 1:\n  stack traceback:\n   ", out)
      assert.truthy(out:find("doom.lua:1: in function", 1, true), out)
      -- A message that forges the mark: still one error, one traceback.
      local fj = cjson.decode(shown(forged, "--json"))
      assert.matches("real$", fj.attempts[1].error)
      assert.truthy(fj.attempts[1].trace:find("fake frame", 1, true))
      -- Its escape sequence reaches no terminal: --trace and :trace escape it.
      local ft = shown(forged, "--trace")
      assert.falsy(ft:find("\27", 1, true), ft)
      assert.truthy(ft:find("\\x1b[2Jfake frame", 1, true), ft)
      C.write_file(f, ("job(%q)\n:trace\n"):format(forged))
      out = C.capture(("%s --db %s console <%s 2>&1"):format(q(C.bin), q(env.db), q(f)))
      assert.falsy(out:find("\27", 1, true), out)
      assert.truthy(out:find("\\x1b[2Jfake frame", 1, true), out)
      -- A huge message and a deep stack: both cut to the error's bound.
      local hj = cjson.decode(shown(huge, "--json"))
      assert.is_true(#hj.attempts[1].error <= 2000, #hj.attempts[1].error)
      assert.is_true(#hj.attempts[1].trace <= 2000, #hj.attempts[1].trace)
      assert.matches("^stack traceback:", hj.attempts[1].trace)
    end)

    it("mark a node that stopped at once, and one that died when its beat lapses", function()
      if backend == "postgres" and not env then pending(PG.skip_reason()) return end
      local function node(id)
        for _, n in ipairs(C.json_lines(run("nodes", "--json").out)) do
          if n.id == id then return n end
        end
      end
      local function top_node(id)
        local r = run("top", "--once", "--json")
        assert.are.equal(0, r.code, r.err)
        for _, n in ipairs(cjson.decode(r.out).nodes) do
          if n.id == id then return n end
        end
      end
      -- A running node, then stopped by a signal: "stopped" with the time
      -- in the very next listing, not after its beat has grown old.
      local p = env:spawn("--db", env.db, "run", "--scripts", env.scripts,
                          "--node-id", "sig")
      env:wait_until("node sig to beat", function() return node("sig") end)
      assert.are.equal("running", node("sig").state)
      assert.are.equal(cjson.null, node("sig").stopped_at)
      p:signal("TERM")
      assert.is_truthy(p:wait(2 * H.HANG_S))
      local before = C.now_ms() + 1000
      local n = node("sig")
      assert.are.equal("stopped", n.state)
      assert.is_true(C.iso_ms(n.stopped_at) >= C.iso_ms(n.started_at))
      assert.is_true(C.iso_ms(n.stopped_at) <= before)
      assert.matches("sig%s+stopped " .. n.stopped_at:gsub("%p", "%%%0"), run("nodes").out)
      -- --until-idle stops it as well.
      p = env:spawn("--db", env.db, "run", "--scripts", env.scripts,
                    "--until-idle", "--idle-wait", "0", "--node-id", "idle")
      assert.is_truthy(p:wait(2 * H.HANG_S))
      assert.are.equal("stopped", node("idle").state)
      -- Started again under the same id: running, the mark gone.
      p = env:spawn("--db", env.db, "run", "--scripts", env.scripts,
                    "--node-id", "sig")
      env:wait_until("node sig to run again", function()
        local m = node("sig")
        return m and m.state == "running"
      end)
      assert.are.equal(cjson.null, node("sig").stopped_at)
      -- Killed: no stop is recorded; it stays "running" while its beat is
      -- fresh, and is "dead" once its beat is older than a lease (30 s;
      -- the row's beat is moved back instead of waiting for it).
      p:signal("KILL")
      p:wait(H.HANG_S)
      assert.are.equal("running", node("sig").state)
      if backend == "postgres" then
        PG.psql(env.sql_url, "UPDATE pawl_nodes SET last_beat = last_beat - "
                .. "interval '31 seconds' WHERE id = 'sig'")
      else
        C.sqlite3(env.db_path, "UPDATE pawl_nodes SET last_beat = last_beat - "
                  .. "31000 WHERE id = 'sig'")
      end
      assert.are.equal("dead", node("sig").state)
      assert.matches("sig%s+dead%s", run("nodes").out)
      assert.are.equal("stopped", node("idle").state)
      -- top says the same, in its snapshot and its plain table.
      assert.are.equal("dead", top_node("sig").state)
      assert.are.equal("stopped", top_node("idle").state)
      local out = run("top", "--once").out
      assert.matches("sig%s+dead%s", out)
      assert.matches("idle%s+stopped %S+ ago%s", out)
    end)

    it("move every matching job, asking for --yes above 100 without a terminal", function()
      if backend == "postgres" and not env then pending(PG.skip_reason()) return end
      local db = assert(pawl.open{ db = env.db })
      local items = {}
      for i = 1, 120 do items[i] = { "t", nil, { queue = i <= 110 and "big" or "small" } } end
      assert(db:enqueue_many(items))
      local r = run("pause", "--queue", "small")
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("pause: 10 jobs\n", r.out)
      r = run("pause", "--queue", "big")
      assert.are.equal(1, r.code)
      assert.matches("110 jobs match: pass %-%-yes", r.err)
      assert.are.equal(0, #assert(db:jobs{ state = "paused", queue = "big" }))
      r = run("pause", "--queue", "big", "--yes", "--json")
      assert.are.equal(0, r.code, r.err)
      assert.are.same({ action = "pause", matched = 110, changed = 110, skipped = 0,
                        refused = 0 }, cjson.decode(r.out))
      r = run("resume", "--state", "paused", "--limit", "5", "--reason", "try")
      assert.are.equal("resume: 5 jobs\n", r.out)
      r = run("cancel", "--older-than", "1h")
      assert.are.equal("cancel: 0 jobs\n", r.out)
      -- Bad input: a usage error, nothing changed.
      r = run("retry")
      assert.are.equal(2, r.code)
      assert.matches("retry needs a job ID, or a filter", r.err)
      r = run("retry", "--state", "pending")
      assert.are.equal(2, r.code)
      assert.matches("retry moves failed jobs: state pending never matches", r.err)
      r = run("cancel", "--older-than", "soon")
      assert.are.equal(2, r.code)
      assert.matches("%-%-older%-than: \"soon\" is not a duration", r.err)
      r = run("cancel", "--older-than", "3651d")
      assert.are.equal(2, r.code)
      r = run("cancel", "01900000-0000-7000-8000-000000000000", "--state", "pending")
      assert.are.equal(2, r.code)
      assert.matches("not both", r.err)
      assert.are.equal(5, #assert(db:jobs{ state = "pending", limit = 1000 }))
      -- jobs takes the new filters too.
      r = run("jobs", "--tag", "none", "--older-than", "1s")
      assert.are.equal(0, r.code, r.err)
      db:close()
    end)
  end)
end
