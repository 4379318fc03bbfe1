-- cli_spec.lua: functional specs for the `pawl` command-line tool. Each test
-- runs the real binary ($PAWL_BIN) against a database in its own temp dir.
local cjson = require "cjson"
local H = require "cli_helper"

local unpack = table.unpack or unpack

local UUID7 = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-7%x%x%x%-[89ab]%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"

-- The error contract: a non-zero status and exactly one "pawl: ..." line
-- on stderr that contains every one of `wants` (plain text).
local function assert_error(r, wants, code)
  assert.is_not.equal(0, r.code)
  if code then assert.are.equal(code, r.code) end
  local _, nl = r.err:gsub("\n", "")
  assert.are.equal(1, nl, "expected one line on stderr, got: " .. r.err)
  assert.truthy(r.err:match("^pawl: "), "stderr: " .. r.err)
  for _, w in ipairs(type(wants) == "table" and wants or { wants }) do
    assert.truthy(r.err:find(w, 1, true),
                  ("stderr %q lacks %q"):format(r.err, w))
  end
end

-- Decodes `pawl show ID --json` output, checking it is one line.
local function decode_one(out)
  assert.are.equal(1, #H.lines(out))
  return cjson.decode(out)
end

describe("pawl CLI", function()
  local env

  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  describe("migrate", function()
    it("creates a new database and reports its schema version", function()
      assert.is_false(H.exists(env.db_path))
      local r = env:pawl("migrate")
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("", r.err)
      local v = r.out:match("^schema at version (%d+) %((.-)%)\n$")
      assert.truthy(v, r.out)
      assert.is_true(tonumber(v) >= 1)
      assert.truthy(r.out:find("(" .. env.db .. ")", 1, true))
      assert.is_true(H.exists(env.db_path))
      -- Again: nothing to apply, same answer.
      assert.are.equal(r.out, env:ok("migrate"))
    end)

    it("defaults to $PAWL_DB, then to sqlite:./pawl.db", function()
      local other = env:path("other.db")
      local r = H.run({ "migrate" }, { env = { PAWL_DB = "sqlite:" .. other } })
      assert.are.equal(0, r.code, r.err)
      assert.truthy(r.out:find("(sqlite:" .. other .. ")", 1, true))
      assert.is_true(H.exists(other))
      r = H.run({ "migrate" }, { cwd = env.dir })
      assert.are.equal(0, r.code, r.err)
      assert.truthy(r.out:find("(sqlite:./pawl.db)", 1, true))
      assert.is_true(H.exists(env.db_path))
    end)

    it("takes global options anywhere on the line", function()
      local r = H.run({ "migrate", "--sync-full", "--db", env.db })
      assert.are.equal(0, r.code, r.err)
      r = H.run({ "--db=" .. env.db, "jobs" })
      assert.are.equal(0, r.code, r.err)
    end)
  end)

  describe("enqueue", function()
    it("prints a new UUIDv7 id on one line", function()
      -- No scripts directory: nothing to warn about on stderr.
      local r = env:pawl("enqueue", "email", '{"to":"a@example.com"}', "--scripts",
                         env:path("absent"))
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("", r.err)
      assert.are.equal(1, #H.lines(r.out))
      local id = r.out:gsub("\n$", "")
      assert.truthy(id:match(UUID7), id)
      local id2 = env:enqueue("email")
      assert.truthy(id2:match(UUID7), id2)
      assert.is_true(id2 > id, "ids are time-ordered")
    end)

    it("round-trips every option through show --json", function()
      local id = env:enqueue("email", '{"to":"a@example.com","n":[1,2]}',
        "--queue", "mail", "--priority", "-7", "--tag", "welcome",
        "--tag", "eu", "--params", '{"template":"w1"}', "--max-attempts", "3",
        "--timeout", "45", "--key", "idem-1", "--business-key", "user:42",
        "--correlation-id", "req-9",
        "--run-at", "2030-01-02T03:04:05.678+01:00")
      local j = env:show_json(id)
      assert.are.equal(id, j.id)
      assert.are.equal("email", j.type)
      assert.are.equal("mail", j.queue)
      assert.are.equal("pending", j.state)
      assert.are.equal(-7, j.priority)
      assert.are.same({ to = "a@example.com", n = { 1, 2 } }, j.payload)
      assert.are.same({ template = "w1" }, j.params)
      assert.are.same({ "welcome", "eu" }, j.tags)
      assert.are.equal(0, j.attempt)
      assert.are.equal(3, j.max_attempts)
      assert.are.equal(45, j.timeout_s)
      assert.are.equal("idem-1", j.idempotency_key)
      assert.are.equal("user:42", j.business_key)
      assert.are.equal("req-9", j.correlation_id)
      assert.are.equal("2030-01-02T02:04:05.678Z", j.run_at)
      assert.are.equal(H.user, j.enqueued_by)
      assert.are.equal(cjson.null, j.result)
      assert.are.equal(cjson.null, j.last_error)
      assert.are.equal(cjson.null, j.started_at)
      assert.are.equal(cjson.null, j.finished_at)
      assert.are.equal(cjson.null, j.lease_owner)
      assert.are.equal(0, j.recoveries)
      assert.are.equal(1, j.version)
      assert.is_nil(j.paused_from)
      assert.are.equal(j.created_at, j.updated_at)
      assert.is_true(math.abs(H.iso_ms(j.created_at) - H.now_ms()) < 60000)
      -- History: nothing ran yet; one enqueue event by the OS user.
      assert.are.same({}, j.attempts)
      assert.are.equal(1, #j.events)
      assert.are.equal(cjson.null, j.events[1].from)
      assert.are.equal("pending", j.events[1].to)
      assert.are.equal(H.user, j.events[1].actor)

      -- The text form: one aligned "field: value" line per field.
      local text = env:ok("show", id)
      local fields, col = {}, nil
      for _, line in ipairs(H.lines(text)) do
        if line:match("^attempts:") then break end -- history tables follow
        local name, pad, value = line:match("^([%w_]+):(%s+)(%S.*)$")
        if name then
          fields[name] = value
          local c = #name + 1 + #pad
          col = col or c
          assert.are.equal(col, c, "misaligned: " .. line)
        end
      end
      assert.are.equal(id, fields.id)
      assert.are.equal("email", fields.type)
      assert.are.equal("mail", fields.queue)
      assert.are.equal("pending", fields.state)
      assert.are.equal("-7", fields.priority)
      assert.are.equal("3", fields.max_attempts)
      assert.are.equal("45", fields.timeout_s)
      assert.are.equal('["welcome","eu"]', fields.tags)
      assert.are.equal('{"template":"w1"}', fields.params)
      assert.are.equal("idem-1", fields.idempotency_key)
      assert.are.equal("user:42", fields.business_key)
      assert.are.equal("req-9", fields.correlation_id)
      assert.are.equal("2030-01-02T02:04:05.678Z", fields.run_at)
      assert.are.equal(H.user, fields.enqueued_by)
      assert.are.equal("1", fields.version)
      assert.truthy(text:find("\nattempts:", 1, true))
      assert.truthy(text:find("\nevents:\n", 1, true))
      assert.truthy(text:find("(new) -> pending", 1, true))
    end)

    it("applies the defaults", function()
      local j = env:show_json(env:enqueue("noop"))
      assert.are.equal("default", j.queue)
      assert.are.equal(0, j.priority)
      assert.are.same({}, j.payload)
      assert.are.equal(cjson.null, j.params)
      assert.are.same({}, j.tags)
      -- Not set: the script's applies when the job runs, and no script
      -- here (./scripts of the source tree has no "noop") can tell it.
      assert.are.equal(cjson.null, j.max_attempts)
      assert.are.equal("no script visible", j.max_attempts_from)
      assert.are.equal(cjson.null, j.timeout_s)
      assert.are.equal("no script visible", j.timeout_from)
      assert.are.equal(cjson.null, j.idempotency_key)
      assert.are.equal(cjson.null, j.business_key)
      assert.are.equal(cjson.null, j.correlation_id)
      assert.is_true(H.iso_ms(j.run_at) <= H.iso_ms(j.created_at))
    end)

    it("takes queue and priority from the job's script, not max_attempts", function()
      local dir = env:path("scripts")
      os.execute("mkdir -p '" .. dir .. "'")
      assert.is_true(H.exists(dir))
      H.write_file(dir .. "/mailer.lua", 'return { queue = "mail", priority = 3, '
        .. 'max_attempts = 4, timeout = 2.5, run = function() end }')
      local j = env:show_json(env:enqueue("mailer", "--scripts", dir))
      assert.are.equal("mail", j.queue)
      assert.are.equal(3, j.priority)
      -- max_attempts and the timeout are left to the worker, which applies
      -- the script's own when the job runs: not stored, so a viewer
      -- without the script cannot tell them (see "shows the limits").
      assert.are.equal(cjson.null, j.max_attempts)
      assert.are.equal(cjson.null, j.timeout_s)
      -- What the command line says wins.
      j = env:show_json(env:enqueue("mailer", "--scripts", dir, "--queue", "bulk",
                                    "--priority", "0", "--max-attempts", "9"))
      assert.are.equal("bulk", j.queue)
      assert.are.equal(0, j.priority)
      assert.are.equal(9, j.max_attempts)
      -- _defaults.lua speaks for scripts that say nothing.
      H.write_file(dir .. "/_defaults.lua", "return { max_attempts = 7 }")
      H.write_file(dir .. "/plain.lua", "return { run = function() end }")
      j = env:show_json(env:enqueue("plain", "--scripts", dir))
      assert.are.equal(cjson.null, j.max_attempts)
      assert.are.equal("default", j.queue)
      -- A broken script: a warning, and the job is enqueued as asked.
      H.write_file(dir .. "/broken.lua", "return { run = ")
      local r = env:pawl("enqueue", "broken", "--scripts", dir)
      assert.are.equal(0, r.code, r.err)
      assert.truthy(r.out:match("^%x+%-"))
      assert.truthy(r.err:find("warning", 1, true), r.err)
      assert.truthy(r.err:find("broken.lua", 1, true), r.err)
      -- No script for the type: the plain defaults (the workers will fail
      -- it with "no script for job type" and the default retry policy).
      j = env:show_json(env:enqueue("unknown_type", "--scripts", dir))
      assert.are.equal("default", j.queue)
      assert.are.equal(cjson.null, j.max_attempts)
    end)

    it("warns when the scripts directory it sees has no script for the type", function()
      local dir = env:path("scripts")
      os.execute("mkdir -p '" .. dir .. "'")
      H.write_file(dir .. "/mailer.lua", "return { run = function() end }")
      -- A misspelt type: stored (another node may have the script), with a
      -- warning naming the type and the directory --scripts gave.
      local r = env:pawl("enqueue", "mailr", "--scripts", dir)
      assert.are.equal(0, r.code, r.err)
      local id = r.out:match("^(%x+%-[%x%-]+)")
      assert.truthy(id, r.out)
      assert.are.equal("mailr", env:show_json(id).type)
      assert.truthy(r.err:find("warning", 1, true), r.err)
      assert.truthy(r.err:find("no script for job type mailr", 1, true), r.err)
      assert.truthy(r.err:find(dir, 1, true), r.err)
      assert.truthy(r.err:find("--scripts DIR", 1, true), r.err)
      -- The type it has: no warning.
      r = env:pawl("enqueue", "mailer", "--scripts", dir)
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("", r.err)
      -- The default directory, ./scripts of the working directory.
      r = H.run({ "--db", env.db, "enqueue", "nosuch_type" }, { cwd = env.dir })
      assert.are.equal(0, r.code, r.err)
      assert.truthy(r.err:find("no script for job type nosuch_type in ./scripts", 1, true), r.err)
      assert.truthy(r.err:find("--scripts DIR", 1, true), r.err)
      -- A type the enqueue refuses: its error, and no warning before it.
      r = env:pawl("enqueue", "x\27[2Jy", "--scripts", dir)
      assert.are.equal(2, r.code, r.err)
      assert.falsy(r.err:find("warning", 1, true), r.err)
      assert.falsy(r.err:find("\27", 1, true), r.err)
      -- A type naming a path is no script of the directory either.
      r = env:pawl("enqueue", "../mailer", "--scripts", dir)
      assert.are.equal(0, r.code, r.err)
      assert.truthy(r.err:find("no script for job type ../mailer", 1, true), r.err)
      -- No scripts directory here: this machine only enqueues; silence.
      r = env:pawl("enqueue", "mailr", "--scripts", env:path("absent"))
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("", r.err)
      r = H.run({ "--db", env.db, "enqueue", "nosuch_type" }, { cwd = env:path("scripts") })
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("", r.err)
    end)

    it("shows the limits that apply, the same in every view", function()
      local dir = env:path("scripts")
      os.execute("mkdir -p '" .. dir .. "'")
      H.write_file(dir .. "/mailer.lua",
                   "return { max_attempts = 4, timeout = 2.5, run = function() end }")
      H.write_file(dir .. "/plain.lua", "return { run = function() end }")
      H.write_file(dir .. "/broken.lua", "return { run = ")
      local ids = {
        mailer = env:enqueue("mailer", "--scripts", dir),
        set = env:enqueue("mailer", "--scripts", dir, "--max-attempts", "9",
                          "--timeout", "7"),
        plain = env:enqueue("plain", "--scripts", dir),
        broken = env:enqueue("broken", "--scripts", dir),
        ghost = env:enqueue("ghost", "--scripts", dir),
      }
      -- { max_attempts, timeout, where from } as each view must say it.
      local want = {
        mailer = { 4, 3, "script" }, set = { 9, 7, "enqueue" },
        plain = { 25, 300, "script" },
        broken = { nil, nil, "its script does not load" },
        ghost = { nil, nil, "no script visible" },
      }
      local function check(label, with_dir, defaults_ma)
        local extra = with_dir and { "--scripts", dir } or {}
        local function ok(...)
          local args = { ... }
          for _, a in ipairs(extra) do args[#args + 1] = a end
          return env:ok(unpack(args))
        end
        local listed = {}
        for _, line in ipairs(H.lines(ok("jobs", "--json"))) do
          local j = cjson.decode(line)
          listed[j.id] = j
        end
        local table_text = ok("jobs")
        for name, id in pairs(ids) do
          local w = want[name]
          if not with_dir and w[3] ~= "enqueue" then w = { nil, nil, "no script visible" } end
          local ma = w[1]
          if name == "plain" and ma and defaults_ma then ma = defaults_ma end
          local what = label .. " " .. name
          for view, j in pairs({ show = cjson.decode(ok("show", id, "--json")),
                                 jobs = listed[id] }) do
            assert.are.equal(ma or cjson.null, j.max_attempts, what .. " " .. view)
            assert.are.equal(w[2] or cjson.null, j.timeout_s, what .. " " .. view)
            assert.are.equal(w[3], j.max_attempts_from, what .. " " .. view)
            assert.are.equal(w[3], j.timeout_from, what .. " " .. view)
          end
          local text = ok("show", id)
          local function field(k) return text:match("\n" .. k .. ":%s+([^\n]+)") end
          if w[3] == "enqueue" then
            assert.are.equal(tostring(ma), field("max_attempts"), what)
            assert.are.equal(tostring(w[2]), field("timeout_s"), what)
          elseif w[3] == "script" then
            assert.are.equal(ma .. " (the script's)", field("max_attempts"), what)
            assert.are.equal(w[2] .. " (the script's)", field("timeout_s"), what)
          else
            assert.are.equal("? (" .. w[3] .. ")", field("max_attempts"), what)
            assert.are.equal("? (" .. w[3] .. ")", field("timeout_s"), what)
          end
          local row = table_text:match(id:gsub("%-", "%%-") .. "[^\n]+")
          assert.truthy(row:find(" 0/" .. (ma or "?") .. " ", 1, true), what .. ": " .. row)
          -- The console, as text and as JSON.
          local con = H.run({ "--db", env.db, "console", "--scripts",
                              with_dir and dir or "./scripts", "-e", ("job(%q)"):format(id) })
          assert.are.equal(0, con.code, con.err)
          local ctext = con.out
          local cf = ctext:match("\nmax_attempts:%s+([^\n]+)")
          assert.are.equal(field("max_attempts"), cf, what .. " console")
          assert.are.equal(field("timeout_s"), ctext:match("\ntimeout_s:%s+([^\n]+)"),
                           what .. " console")
          con = H.run({ "--db", env.db, "console", "--json", "--scripts",
                        with_dir and dir or "./scripts", "-e", ("job(%q)"):format(id) })
          local cj = cjson.decode(con.out)
          assert.are.equal(ma or nil, cj.max_attempts, what .. " console --json")
          assert.are.equal(w[2] or nil, cj.timeout_s, what .. " console --json")
          assert.are.equal(w[3], cj.max_attempts_from, what .. " console --json")
        end
        if with_dir then
          assert.truthy(table_text:find("no script visible", 1, true), table_text)
        end
      end
      check("with --scripts", true)
      check("without a script here", false)
      -- _defaults.lua's max_attempts speaks for the script that sets none.
      H.write_file(dir .. "/_defaults.lua", "return { max_attempts = 7 }")
      check("with _defaults.lua", true, 7)
    end)

    it("runs a delayed job at now + delay", function()
      -- run_at is the delay after the moment `pawl enqueue` read the clock,
      -- which lies between the whole seconds read before and after it
      -- (whatever the command took), and no later than the created_at it
      -- stamped afterwards.
      local function check(delay_ms, ...)
        local delay_arg = table.concat({ ... }, " ")
        local before = H.now_ms()
        local id = env:enqueue("later", ...)
        local after = H.now_ms() + 1000
        local j = env:show_json(id)
        local run_at, created = H.iso_ms(j.run_at), H.iso_ms(j.created_at)
        assert.is_true(run_at >= before + delay_ms and run_at <= after + delay_ms,
                       ("%s: run_at %d ms after the second the command began in")
                       :format(delay_arg, run_at - before))
        assert.is_true(run_at - created <= delay_ms and created <= after,
                       ("%s: run_at - created_at = %d ms"):format(delay_arg, run_at - created))
      end
      check(2500, "--delay", "2.5")
      check(3600000, "--delay=3600")
    end)

    it("accepts the ISO 8601 forms for --run-at", function()
      local cases = {
        { "2031-05-06", "2031-05-06T00:00:00.000Z" },
        { "2031-05-06 07:08:09Z", "2031-05-06T07:08:09.000Z" },
        { "2031-05-06T07:08:09.123456789-02:30", "2031-05-06T09:38:09.123Z" },
      }
      for _, c in ipairs(cases) do
        local j = env:show_json(env:enqueue("t", "--run-at", c[1]))
        assert.are.equal(c[2], j.run_at)
      end
    end)

    it("can start a job blocked", function()
      local j = env:show_json(env:enqueue("t", "--blocked"))
      assert.are.equal("blocked", j.state)
    end)

    it("prints the same id for a repeated idempotency key", function()
      local id = env:enqueue("charge", '{"amount":5}', "--key", "order-7")
      local before = env:ok("jobs", "--json")
      local r = env:pawl("enqueue", "charge", '{"amount":6}', "--key", "order-7",
                         "--scripts", env:path("absent"))
      assert.are.equal(0, r.code)
      assert.are.equal(id .. "\n", r.out)
      assert.are.equal("duplicate: job already enqueued with key order-7\n", r.err)
      assert.are.equal(before, env:ok("jobs", "--json"))
      -- Forever, even after the first job ended.
      env:ok("cancel", id)
      r = env:pawl("enqueue", "charge", "--key", "order-7")
      assert.are.equal(id .. "\n", r.out)
    end)

    it("refuses a business key held by a live job, or returns the holder",
       function()
      local holder = env:enqueue("sync", "--business-key", "user:42")
      local before = env:ok("jobs", "--json")
      local r = env:pawl("enqueue", "sync", "--business-key", "user:42")
      assert_error(r, { "user:42", holder }, 1)
      assert.are.equal("", r.out)
      assert.are.equal(before, env:ok("jobs", "--json"))

      r = env:pawl("enqueue", "sync", "--business-key", "user:42", "--existing")
      assert.are.equal(0, r.code, r.err)
      assert.are.equal(holder .. "\n", r.out)
      assert.truthy(r.err:find(holder, 1, true))
      assert.are.equal(before, env:ok("jobs", "--json"))

      -- Once the holder has ended, the key is free again.
      env:ok("cancel", holder)
      local id = env:enqueue("sync", "--business-key", "user:42")
      assert.are_not.equal(holder, id)
    end)
  end)

  describe("jobs", function()
    local a, b, c

    before_each(function()
      a = env:enqueue("resize", "--queue", "media")
      b = env:enqueue("email", "--queue", "media")
      c = env:enqueue("resize", "--queue", "mail", "--priority", "3")
      env:ok("cancel", b)
    end)

    local function ids(out)
      local list = {}
      for _, j in ipairs(H.json_lines(out)) do list[#list + 1] = j.id end
      return list
    end

    it("lists newest first, as JSON Lines with every field", function()
      local out = env:ok("jobs", "--json")
      assert.are.equal(3, #H.lines(out))
      assert.are.same({ c, b, a }, ids(out))
      local required = { "id", "type", "queue", "state", "priority", "attempt",
        "max_attempts", "run_at", "payload", "result", "last_error",
        "created_at", "updated_at", "params", "tags", "timeout_s",
        "idempotency_key", "business_key", "correlation_id", "enqueued_by",
        "started_at", "finished_at", "lease_owner", "lease_expires",
        "recoveries", "progress_done", "progress_total", "version" }
      for _, j in ipairs(H.json_lines(out)) do
        for _, k in ipairs(required) do
          assert.is_not_nil(j[k], "missing field " .. k)
        end
      end
    end)

    it("filters by state, queue and type, and limits", function()
      assert.are.same({ b }, ids(env:ok("jobs", "--state", "canceled", "--json")))
      assert.are.same({ c, a }, ids(env:ok("jobs", "--state=pending", "--json")))
      assert.are.same({ b, a }, ids(env:ok("jobs", "--queue", "media", "--json")))
      assert.are.same({ c, a }, ids(env:ok("jobs", "--type", "resize", "--json")))
      assert.are.same({ a }, ids(env:ok("jobs", "--type", "resize", "--queue",
                                       "media", "--json")))
      assert.are.same({ c, b }, ids(env:ok("jobs", "--limit", "2", "--json")))
      assert.are.same({}, ids(env:ok("jobs", "--state", "failed", "--json")))
    end)

    it("prints a table", function()
      local lines = H.lines(env:ok("jobs"))
      assert.are.equal(5, #lines)
      -- No script here for "resize" or "mail": N/?, and a note says why.
      assert.are.equal("(N/?: no script visible for the type in ./scripts)", lines[5])
      assert.truthy(lines[1]:match("^ID%s+TYPE%s+QUEUE%s+STATE%s+PRIORITY%s+ATTEMPT%s+RUN_AT$"),
                    lines[1])
      local f = {}
      for w in lines[2]:gmatch("%S+") do f[#f + 1] = w end
      assert.are.equal(c, f[1])
      assert.are.same({ "resize", "mail", "pending", "3", "0/?" },
                      { f[2], f[3], f[4], f[5], f[6] })
      assert.truthy(f[7]:match("^%d%d%d%d%-%d%d%-%d%dT.*Z$"))
      assert.truthy(lines[3]:find(b, 1, true) and lines[3]:find("canceled", 1, true))
      -- Columns line up: each row's state starts where the header's does.
      local col = lines[1]:find("STATE", 1, true)
      assert.are.equal(col, lines[3]:find("canceled", 1, true))
    end)

    it("keeps each JSON line on one line whatever the payload's layout", function()
      local id = env:enqueue("t", '{\n  "text": "two\\nlines",\n  "n": 1\n}')
      local out = env:ok("jobs", "--json", "--limit", "1")
      assert.are.equal(1, #H.lines(out))
      local j = cjson.decode(out)
      assert.are.equal(id, j.id)
      assert.are.same({ text = "two\nlines", n = 1 }, j.payload)
      -- The text form escapes it instead of breaking the layout.
      local text = env:ok("show", id)
      assert.truthy(text:find('\npayload:%s+{\\n  "text"'), text)
    end)
  end)

  -- No command runs a job, so attempts with progress and log lines are made
  -- through the Lua module (require "pawl", built beside the binary) on the
  -- same database, as a worker would.
  describe("show with progress and logs", function()
    local have_module, pawl = pcall(require, "pawl")
    local test = have_module and it or pending

    -- Runs job `id` once: progress, then a retry carrying log lines; then
    -- claims it again and reports progress of the second attempt.
    local function run_twice(id, progress2)
      local db = assert(pawl.open{ db = env.db, node_id = "worker-1" })
      local j = assert(db:claim(1))[1]
      assert.are.equal(id, j.id)
      assert(db:progress(id, 1, 1, 4))
      assert.are.same({ true }, db:finish{ { id = id, attempt = 1, kind = "retry",
        error = "smtp down", run_at = db:now(), logs = {
          { at = 1800000000000, level = "info", message = "sending\nnow",
            fields = { to = "a@example.com", n = { 1, 2 } } },
          { at = 1800000000500, level = "error", message = "smtp down" },
        } } })
      local again = assert(db:claim(1))[1]
      assert.are.equal(2, again.attempt)
      if progress2 then assert(db:progress(id, 2, progress2[1], progress2[2])) end
      db:close()
    end

    test("includes progress and every log line in --json", function()
      local id = env:enqueue("email")
      local j = env:show_json(id)
      assert.are.equal(0, j.progress_done)
      assert.are.equal(0, j.progress_total)
      assert.are.same({}, j.logs)
      run_twice(id, { 2.5, 10 })
      j = env:show_json(id)
      assert.are.equal(2.5, j.progress_done)
      assert.are.equal(10, j.progress_total)
      assert.are.equal(2, #j.logs)
      assert.are.same({ attempt = 1, at = "2027-01-15T08:00:00.000Z", level = "info",
        message = "sending\nnow", fields = { to = "a@example.com", n = { 1, 2 } } }, j.logs[1])
      assert.are.same({ attempt = 1, at = "2027-01-15T08:00:00.500Z", level = "error",
        message = "smtp down", fields = cjson.null }, j.logs[2])
      -- Listings carry progress too.
      local listed = H.json_lines(env:ok("jobs", "--json"))[1]
      assert.are.equal(2.5, listed.progress_done)
      assert.is_nil(listed.logs)
    end)

    test("prints progress when set and a logs section", function()
      local id = env:enqueue("email")
      local text = env:ok("show", id)
      assert.is_nil(text:find("\nprogress:", 1, true))
      assert.truthy(text:find("\nlogs: none\n", 1, true), text)
      run_twice(id, { 1, 3 })
      text = env:ok("show", id)
      local value = text:match("\nprogress:%s+([^\n]*)\n")
      assert.are.equal("1/3 (33%)", value)
      -- Aligned with the other fields.
      local col_state = text:match("\n(state:%s+)")
      local col_progress = text:match("\n(progress:%s+)")
      assert.are.equal(#col_state, #col_progress)
      local logs = text:match("\nlogs:\n(.*)$")
      assert.truthy(logs, text)
      local rows = H.lines(logs)
      assert.are.equal(3, #rows)
      assert.truthy(rows[1]:match("^  attempt%s+at%s+level%s+message%s+fields$"), rows[1])
      -- One line per log line: the newline in the message is escaped.
      assert.truthy(rows[2]:match("^  1%s+2027%-01%-15T08:00:00%.000Z%s+info%s+sending\\nnow%s+{"), rows[2])
      assert.truthy(rows[2]:find('"to":"a@example.com"', 1, true), rows[2])
      assert.truthy(rows[3]:match("^  1%s+2027%-01%-15T08:00:00%.500Z%s+error%s+smtp down%s+%-$"), rows[3])
    end)

    test("shows progress without a total as a bare number", function()
      local id = env:enqueue("email")
      run_twice(id, { 7, 0 })
      local text = env:ok("show", id)
      assert.are.equal("7", text:match("\nprogress:%s+([^\n]*)\n"))
      -- A new attempt that has not reported yet shows none.
      id = env:enqueue("email")
      run_twice(id, nil)
      assert.is_nil(env:ok("show", id):find("\nprogress:", 1, true))
    end)
  end)

  describe("operator actions", function()
    it("pause, resume and cancel move the job and print ID: STATE", function()
      local id = env:enqueue("t")
      assert.are.equal(id .. ": paused\n", env:ok("pause", id, "--reason", "deploy"))
      local j = env:show_json(id)
      assert.are.equal("paused", j.state)
      assert.are.equal("pending", j.paused_from)
      assert.are.equal("deploy", j.events[#j.events].reason)
      assert.are.equal("pending", j.events[#j.events].from)
      assert.are.equal("paused", j.events[#j.events].to)
      assert.are.equal(id .. ": pending\n", env:ok("resume", id))
      local r = env:pawl("cancel", id, "--json", "--reason", "not needed")
      assert.are.equal(0, r.code, r.err)
      j = decode_one(r.out)
      assert.are.equal(id, j.id)
      assert.are.equal("canceled", j.state)
      assert.is_not.equal(cjson.null, j.finished_at)
      j = env:show_json(id)
      assert.are.equal(4, #j.events)
      assert.are.equal("not needed", j.events[4].reason)
    end)

    it("treats a repeated action as a no-op", function()
      local id = env:enqueue("t")
      local before = env:show_json(id)
      -- Resuming a pending job: nothing to do, nothing changes.
      assert.are.equal(id .. ": pending\n", env:ok("resume", id))
      assert.are.same(before, env:show_json(id))
      env:ok("cancel", id)
      local canceled = env:show_json(id)
      assert.are.equal(id .. ": canceled\n", env:ok("cancel", id))
      assert.are.same(canceled, env:show_json(id))
    end)

    it("refuses an action not allowed from the state, changing nothing", function()
      local id = env:enqueue("t")
      env:ok("cancel", id)
      local before = env:ok("show", id, "--json")
      for _, action in ipairs({ "pause", "resume", "retry" }) do
        local r = env:pawl(action, id)
        assert_error(r, { "cannot " .. action, id, "canceled" }, 1)
        assert.are.equal("", r.out)
        assert.are.equal(before, env:ok("show", id, "--json"))
      end
      assert.are.equal(before, env:ok("show", id, "--json"))
    end)

    it("reports a job that does not exist", function()
      local id = env:enqueue("t")
      local missing = id:sub(1, 35) .. (id:sub(36) == "0" and "1" or "0")
      local before = env:ok("jobs", "--json")
      for _, cmd in ipairs({ "show", "cancel", "pause", "resume", "retry" }) do
        assert_error(env:pawl(cmd, missing), { missing }, 1)
      end
      assert.are.equal(before, env:ok("jobs", "--json"))
    end)

    -- No command fails a job yet, so the failure is written with the sqlite3
    -- shell, mirroring the store's own "dead-letter" UPDATE.
    local retry_test = H.have_sqlite3 and it or pending
    retry_test("retries and pauses a failed job (failure set up with sqlite3)",
               function()
      local id = env:enqueue("t", "--max-attempts", "2")
      local blob = "X'" .. id:gsub("-", "") .. "'"
      local out = H.sqlite3(env.db_path,
        "UPDATE pawl_jobs SET state = 3, attempt = 2, last_error = 'boom', " ..
        "finished_at = updated_at + 1, updated_at = updated_at + 1, " ..
        "lease_expires = NULL, version = version + 1 WHERE id = " .. blob ..
        "; SELECT changes();")
      assert.are.equal("1\n", out)
      local j = env:show_json(id)
      assert.are.equal("failed", j.state)
      assert.are.equal("boom", j.last_error)

      assert.are.equal(id .. ": paused\n", env:ok("pause", id))
      assert.are.equal("failed", env:show_json(id).paused_from)
      assert.are.equal(id .. ": failed\n", env:ok("resume", id))

      assert.are.equal(id .. ": pending\n", env:ok("retry", id, "--reason", "fixed"))
      j = env:show_json(id)
      assert.are.equal("pending", j.state)
      assert.are.equal(0, j.attempt)
      assert.are.equal(cjson.null, j.last_error)
      assert.are.equal(cjson.null, j.finished_at)
      assert.are.equal("fixed", j.events[#j.events].reason)
      -- Retrying a pending job again is a no-op.
      local v = j.version
      assert.are.equal(id .. ": pending\n", env:ok("retry", id))
      assert.are.equal(v, env:show_json(id).version)
    end)
  end)

  describe("bad input", function()
    local snapshot, id

    before_each(function()
      id = env:enqueue("t", '{"a":1}', "--key", "k")
      env:enqueue("u", "--queue", "q")
      snapshot = env:ok("jobs", "--json")
    end)

    -- The stored jobs are exactly as they were.
    local function assert_unchanged()
      assert.are.equal(snapshot, env:ok("jobs", "--json"))
    end

    local function refused(args, wants, code)
      local r = env:pawl(unpack(args))
      assert_error(r, wants, code)
      assert.are.equal("", r.out)
      assert_unchanged()
    end

    it("malformed JSON payload", function()
      refused({ "enqueue", "t", '{"a" 1}' },
              { "payload is not valid JSON", "line 1, column" }, 2)
      refused({ "enqueue", "t", "{'a':1}" }, { "payload is not valid JSON" }, 2)
      refused({ "enqueue", "t", "" }, { "payload is not valid JSON" }, 2)
      refused({ "enqueue", "t", "{}", "--params", "[1,]" },
              { "--params is not valid JSON" }, 2)
    end)

    it("unknown state name", function()
      refused({ "jobs", "--state", "runing" },
              { 'unknown state "runing"', "pending, running, succeeded, " ..
                "failed, canceled, paused, blocked" }, 2)
    end)

    it("bad job id", function()
      refused({ "show", "xyz" }, { '"xyz" is not a job id' }, 2)
      refused({ "cancel", id .. "0" }, { "is not a job id" }, 2)
      refused({ "pause", (id:gsub("-", "")) }, { "is not a job id" }, 2)
      refused({ "show" }, { "show needs a job ID" }, 2)
    end)

    it("unknown option, command or argument", function()
      refused({ "enqueue", "t", "--foo" }, { "unknown option --foo for enqueue" }, 2)
      refused({ "jobs", "--priority", "1" }, { "unknown option --priority for jobs" }, 2)
      refused({ "show", id, "--reason", "x" }, { "unknown option --reason for show" }, 2)
      refused({ "enquue", "t" }, { 'unknown command "enquue"' }, 2)
      refused({ "show", id, "extra" }, { 'unexpected argument "extra"' }, 2)
      refused({ "enqueue", "t", "--queue" }, { "--queue needs a value" }, 2)
      refused({ "enqueue", "t", "--existing" }, { "--existing needs --business-key" }, 2)
    end)

    it("numbers that are not integers or out of range", function()
      refused({ "enqueue", "t", "--priority", "high" },
              { '--priority expects an integer, got "high"' }, 2)
      for _, v in ipairs({ "1.5", "", " 1", "12abc", "0x10" }) do
        refused({ "enqueue", "t", "--priority", v }, { "--priority expects an integer" }, 2)
      end
      refused({ "enqueue", "t", "--priority", "99999999999999999999" },
              { "--priority must be between" }, 2)
      refused({ "enqueue", "t", "--max-attempts", "0" }, { "--max-attempts must be between 1" }, 2)
      refused({ "enqueue", "t", "--timeout", "-1" }, { "--timeout must be between 0" }, 2)
      refused({ "jobs", "--limit", "ten" }, { "--limit expects an integer" }, 2)
      refused({ "enqueue", "t", "--delay", "-1" }, { "--delay expects a number of seconds" }, 2)
      refused({ "enqueue", "t", "--delay", "1e3" }, { "--delay expects a number of seconds" }, 2)
      refused({ "enqueue", "t", "--run-at", "2030-02-30T00:00:00Z" }, { "--run-at expects an ISO 8601" }, 2)
      refused({ "enqueue", "t", "--run-at", "2030-01-01T00:00:00" }, { "--run-at expects an ISO 8601" }, 2)
      refused({ "enqueue", "t", "--delay", "1", "--run-at", "2030-01-01" },
              { "--delay and --run-at cannot be combined" }, 2)
    end)

    it("names the library's refusals", function()
      refused({ "enqueue", "" }, { "job type must not be empty" }, 2)
      refused({ "enqueue", "t", "--queue", "a\nb" }, { "queue name contains a control character" }, 2)
    end)

    describe("--db", function()
      -- Runs a write and a read against a bad database URL: both refused,
      -- with one line naming the problem; the real database is untouched.
      local function refused_db(url, wants, code)
        for _, args in ipairs({ { "--db", url, "enqueue", "t", "{}" },
                                { "jobs", "--db", url } }) do
          local r = H.run(args, { cwd = env.dir })
          assert_error(r, wants, code)
          assert.are.equal("", r.out)
        end
        assert_unchanged()
      end

      it("pointing at a text file", function()
        local path = env:path("notes.txt")
        H.write_file(path, "just some notes, not a database\n")
        refused_db("sqlite:" .. path, { path, "not a pawl database" }, 1)
        assert.are.equal("just some notes, not a database\n", H.read_file(path))
      end)

      local db_test = H.have_sqlite3 and it or pending
      db_test("pointing at an SQLite file with a foreign table", function()
        local path = env:path("other.db")
        H.sqlite3(path, "CREATE TABLE customers (name TEXT); " ..
                        "INSERT INTO customers VALUES ('ada');")
        local dump = H.sqlite3(path, ".dump")
        refused_db("sqlite:" .. path, { path, "not a pawl database" }, 1)
        assert.are.equal(dump, H.sqlite3(path, ".dump"))
      end)

      db_test("pointing at a database with a newer schema (version 99)", function()
        local path = env:path("newer.db")
        local r = H.run({ "--db", "sqlite:" .. path, "migrate" })
        assert.are.equal(0, r.code, r.err)
        H.sqlite3(path, "INSERT INTO pawl_schema VALUES (99,'V099__x.sql','0',0)")
        local dump = H.sqlite3(path, ".dump")
        refused_db("sqlite:" .. path, { path, "version 99", "newer" }, 1)
        r = H.run({ "--db", "sqlite:" .. path, "migrate" })
        assert_error(r, { "version 99" }, 1)
        assert.are.equal(dump, H.sqlite3(path, ".dump"))
      end)

      it("in a missing directory", function()
        local dir = env:path("no/such/dir")
        refused_db("sqlite:" .. dir .. "/pawl.db", { dir, "does not exist" }, 1)
        assert.is_false(H.exists(env:path("no")))
      end)

      if H.is_root then
        pending("in a read-only directory: skipped, running as root " ..
                "(directory permissions do not apply to root)")
      else
        it("in a read-only directory", function()
          local dir = env:path("ro")
          assert.is_true(H.sh("mkdir -m 555 " .. H.quote(dir)))
          refused_db("sqlite:" .. dir .. "/pawl.db", { dir, "not writable" }, 1)
          assert.is_false(H.exists(dir .. "/pawl.db"))
        end)
      end

      it("with an unknown scheme", function()
        refused_db("mysql://localhost/jobs", { "mysql://localhost/jobs", "not understood" })
        refused_db("", { "--db needs a value" }, 2)
      end)
    end)
  end)

  describe("help and version", function()
    it("prints the version", function()
      local r = H.run({ "version" })
      assert.are.equal(0, r.code)
      assert.truthy(r.out:match("^pawl %d+%.%d+%.%d+\n$"), r.out)
      assert.are.equal(r.out, H.run({ "--version" }).out)
    end)

    it("prints usage listing every command and the global options", function()
      for _, args in ipairs({ { "help" }, { "--help" }, { "-h" },
                              { "--db", "sqlite:x.db", "--help" } }) do
        local r = H.run(args)
        assert.are.equal(0, r.code)
        assert.are.equal("", r.err)
        for _, w in ipairs({ "migrate", "enqueue", "show", "jobs", "cancel",
                             "pause", "resume", "retry", "version", "--db",
                             "--sync-full", "PAWL_DB" }) do
          assert.truthy(r.out:find(w, 1, true), "usage lacks " .. w)
        end
      end
      -- A command's --help is its own: its usage and its options, wherever
      -- --help is on the line (spec/functional/cli_help_spec.lua checks
      -- every command's against the docs).
      for _, args in ipairs({ { "enqueue", "--help" }, { "enqueue", "t", "--queue", "q", "--help" },
                              { "help", "enqueue" }, { "enqueue", "-h" } }) do
        local r = H.run(args)
        assert.are.equal(0, r.code, r.err)
        assert.are.equal("", r.err)
        assert.truthy(r.out:find("^usage: pawl enqueue TYPE"), r.out)
        assert.truthy(r.out:find("\n  --business-key K ", 1, true), r.out)
        assert.falsy(r.out:find("--until-idle", 1, true), r.out)
      end
      -- No arguments: the same text, as a usage error.
      local r = H.run({})
      assert.are.equal(2, r.code)
      assert.are.equal("", r.out)
      assert.truthy(r.err:find("usage: pawl", 1, true))
    end)
  end)
end)
