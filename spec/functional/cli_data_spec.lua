-- cli_data_spec.lua: the CLI and the data it keeps: who creates a
-- database, with which permissions, passwords in connection errors, large
-- payloads, and JSON that survives job code.
local H = require "host_helper"
local cjson = require "cjson"

local SECRET = "SuperSecret99"

-- The permission bits of a file, as an octal string ("600").
local function mode_of(path)
  return (H.capture("stat -c %a " .. H.quote(path)):gsub("%s+$", ""))
end

describe("pawl CLI and its data", function()
  local env

  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  -- Runs pawl on this env's database without --create.
  local function plain(...)
    local args = { "--db", env.db }
    for _, a in ipairs({ ... }) do args[#args + 1] = a end
    return H.run(args)
  end

  -- ---- who creates a database -------------------------------------------

  describe("a missing database", function()
    it("is created by migrate only; other commands say there is none", function()
      local id = "01a20000-0000-7000-8000-000000000000"
      for _, args in ipairs({ { "jobs" }, { "show", id }, { "enqueue", "t", "{}" },
                              { "enqueue", "t", "not json" }, { "cancel", id } }) do
        local r = plain(unpack(args))
        local what = table.concat(args, " ")
        if args[3] == "not json" then
          assert.are.equal(2, r.code, what) -- refused before anything is opened
        else
          assert.are.equal(1, r.code, what .. ": " .. r.err)
          assert.truthy(r.err:find("no database at " .. env.db, 1, true), r.err)
          assert.truthy(r.err:find("create it with `pawl migrate` (or pass --create)",
                                   1, true), r.err)
        end
        assert.is_false(H.exists(env.db_path), what)
      end
      local r = plain("migrate")
      assert.are.equal(0, r.code, r.err)
      assert.is_true(H.exists(env.db_path))
      r = plain("jobs")
      assert.are.equal(0, r.code, r.err)
    end)

    it("is created by any command given --create", function()
      local r = H.run { "--db", env.db, "enqueue", "t", "{}", "--create" }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal(1, #H.json_lines(plain("jobs", "--json").out))
    end)

    it("is not served by pawl run: a mistyped --db is an error", function()
      local p = env:spawn("--db", "sqlite:" .. env:path("typo.db"), "run",
                          "--scripts", env.scripts)
      assert.are.equal(1, p:wait(60), p:stderr())
      assert.truthy(p:stderr():find("no database at", 1, true), p:stderr())
      assert.is_false(H.exists(env:path("typo.db")))
    end)

    it("refuses an empty file as well", function()
      H.write_file(env.db_path, "")
      local r = plain("jobs")
      assert.are.equal(1, r.code)
      assert.truthy(r.err:find("the file is empty", 1, true), r.err)
      assert.are.equal("", H.read_file(env.db_path))
    end)

    it("refuses sqlite::memory: and SQLite URIs, which keep nothing", function()
      for _, url in ipairs({ "sqlite::memory:", "sqlite:file::memory:",
                             "sqlite:file:x.db?mode=memory" }) do
        for _, cmd in ipairs({ { "migrate" }, { "enqueue", "t" } }) do
          local r = H.run({ "--db", url, unpack(cmd) }, { cwd = env.dir })
          assert.are.equal(2, r.code, url .. " " .. cmd[1])
          assert.truthy(r.err:find("give a file path", 1, true), r.err)
        end
      end
    end)
  end)

  describe("pawl run", function()
    local function serving(db)
      env:script("ok", [[return { run = function() return { ok = true } end }]])
      local p = env:spawn("--db", db, "run", "--scripts", env.scripts,
                          "--poll", "0.1")
      local id = env:enqueue("ok")
      env:wait_state(id, "succeeded", 60)
      return p
    end

    it("stops with an error when its database file is deleted", function()
      env:ok("migrate")
      local p = serving(env.db)
      assert.is_true(os.remove(env.db_path))
      assert.are.equal(1, p:wait(60), p:stderr())
      assert.truthy(p:stderr():find("deleted or replaced", 1, true), p:stderr())
    end)

    it("stops with an error when its database file is replaced", function()
      env:ok("migrate")
      local other = env:path("other.db")
      assert.are.equal(0, H.run({ "--db", "sqlite:" .. other, "migrate" }).code)
      local p = serving(env.db)
      assert.is_true(os.rename(other, env.db_path))
      assert.are.equal(1, p:wait(60), p:stderr())
      assert.truthy(p:stderr():find("deleted or replaced", 1, true), p:stderr())
    end)
  end)

  -- ---- permissions ------------------------------------------------------

  describe("a new database file", function()
    it("is readable by its owner only, whatever the umask", function()
      local cmd = ("umask 022 && %s --db %s migrate >/dev/null"):format(
        H.quote(H.bin), H.quote(env.db))
      assert.is_true(H.sh(cmd))
      assert.are.equal("600", mode_of(env.db_path))
      env:enqueue("t", '{"card":"4242"}')
      assert.are.equal("600", mode_of(env.db_path))
    end)

    it("takes --db-mode, exactly, for the file and its -wal and -shm", function()
      local db = env:path("group.db")
      local cmd = ("umask 077 && %s --db %s --db-mode 0640 migrate >/dev/null")
        :format(H.quote(H.bin), H.quote("sqlite:" .. db))
      assert.is_true(H.sh(cmd))
      assert.are.equal("640", mode_of(db))
      -- A host keeps the -wal and -shm files open: they have the same bits.
      env:script("ok", [[return { run = function() return 1 end }]])
      local p = env:spawn("--db", "sqlite:" .. db, "run", "--scripts", env.scripts)
      -- "host started" is logged after the signals are blocked (a TERM
      -- before that would kill the process instead of stopping it).
      env:wait_until("the host to start", function()
        return p:stderr():find("host started", 1, true) ~= nil
      end, 60)
      assert.is_true(H.exists(db .. "-shm"))
      assert.are.equal("640", mode_of(db .. "-wal"))
      assert.are.equal("640", mode_of(db .. "-shm"))
      p:signal("TERM")
      assert.are.equal(0, p:wait(60), p:stderr())
    end)

    it("refuses a mode that locks its owner out", function()
      for _, m in ipairs({ "0444", "0200", "1600", "rw", "" }) do
        local r = H.run { "--db", env.db, "--db-mode", m, "migrate" }
        assert.are.equal(2, r.code, m)
        assert.is_false(H.exists(env.db_path))
      end
    end)
  end)

  -- ---- passwords in connection errors ------------------------------------

  describe("a PostgreSQL URL's password", function()
    local urls = {
      "postgres://alice:" .. SECRET .. "@[::1/db",
      "postgres://alice:Super%zz" .. SECRET .. "@localhost/db",
      "postgresql://alice@localhost/db?password=" .. SECRET .. "&x=%zz",
      "postgres:password=" .. SECRET .. " host='unterminated",
      "postgres://alice:Super/" .. SECRET .. "@localhost/db",
      "postgresx://alice:" .. SECRET .. "@localhost/db",
    }
    for _, url in ipairs(urls) do
      it("never shows in an error: " .. url:gsub(SECRET, "***"), function()
        for _, cmd in ipairs({ "jobs", "migrate", "run" }) do
          local r = H.run { "--db", url, cmd }
          assert.is_true(r.code == 1 or r.code == 2, cmd .. ": " .. r.err)
          assert.is_nil(r.err:find("Secret", 1, true), r.err)
          assert.is_nil(r.out:find("Secret", 1, true), r.out)
        end
      end)
    end
  end)

  -- ---- one JSON policy, and round trips through job code ----------------

  describe("JSON", function()
    it("outside pawl's policy is refused at enqueue, payload and --params", function()
      env:ok("migrate")
      local cases = {
        { [[{"s":"\ud800"}]], "lone UTF-16 surrogate" },
        { [[{"s":"a\u0000b"}]], "NUL is not allowed" },
        { [[{"n":1e400}]], "out of the range of a double" },
        { [[{"id":9007199254740993}]], "would reach job code as 9.007199254740992e+15" },
      }
      for _, c in ipairs(cases) do
        local r = env:pawl("enqueue", "t", c[1])
        assert.are.equal(2, r.code, c[1])
        assert.truthy(r.err:find("payload is not valid JSON", 1, true), r.err)
        assert.truthy(r.err:find(c[2], 1, true), r.err)
        r = env:pawl("enqueue", "t", "{}", "--params", c[1])
        assert.are.equal(2, r.code, c[1])
        assert.truthy(r.err:find(c[2], 1, true), r.err)
      end
      assert.are.equal(0, #H.json_lines(env:ok("jobs", "--json")))
    end)

    it("survives job code: arrays stay arrays, numbers keep their digits", function()
      env:script("echo", [[return { run = function(job) return job.payload end }]])
      env:script("probe", [[return { run = function(job)
        local p = job.payload
        local function arr(t) return getmetatable(t) == "pawl.json.array" end
        return { a = arr(p.a), b = not arr(p.b), c = arr(p.c[1]) and arr(p.c[2]),
                 null = p.d[2] == pawl.json.null, n = #p.d,
                 made = pawl.json.array(), also = { pawl.json.array(), {} },
                 text = pawl.json.encode(p.a) .. pawl.json.encode(p.b) }
      end }]])
      local payload = [=[{"a":[],"b":{},"c":[[],[{}]],"d":[1,null,3],]=] ..
        [["max":9007199254740991,"f":0.1,"third":0.3333333333333333,]] ..
        [["big":1e300,"s":"\ud83d\ude00 caf\u00e9"}]]
      local echo = env:enqueue("echo", payload)
      local probe = env:enqueue("probe", payload)
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      local pawl = require "pawl"
      local db = assert(pawl.open { db = env.db, create = false })
      local function arr(t) return getmetatable(t) == "pawl.json.array" end
      local r = db:get(echo).result
      assert.is_true(arr(r.a) and #r.a == 0)
      assert.is_false(arr(r.b))
      assert.is_nil(next(r.b))
      assert.is_true(arr(r.c) and arr(r.c[1]) and arr(r.c[2]))
      assert.is_false(arr(r.c[2][1]))
      assert.are.equal(pawl.json.null, r.d[2])
      assert.are.equal(3, #r.d)
      assert.are.equal(2 ^ 53 - 1, r.max)
      assert.are.equal(0.1, r.f)
      assert.are.equal(1 / 3, r.third)
      assert.are.equal(1e300, r.big)
      assert.are.equal("\240\159\152\128 caf\195\169", r.s)
      local q = db:get(probe).result
      assert.are.same({ a = true, b = true, c = true, null = true, n = 3,
                        text = "[]{}" }, { a = q.a, b = q.b, c = q.c,
                        null = q.null, n = q.n, text = q.text })
      assert.is_true(arr(q.made) and #q.made == 0)
      assert.is_true(arr(q.also[1]) and not arr(q.also[2]))
      db:close()
    end)

    it("a result JSON cannot hold fails the job with a clear error", function()
      env:script("nan", [[return { max_attempts = 1,
        run = function() return { x = { 1, 0/0 } } end }]])
      local id = env:enqueue("nan")
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      local j = env:show_json(id)
      assert.are.equal("failed", j.state)
      assert.truthy(j.last_error:find("NaN and infinity have no JSON form at .x[2]",
                                      1, true), j.last_error)
    end)

    it("stored before the policy, fails its job instead of passing it on raw", function()
      if not H.have_sqlite3 then pending("no sqlite3 shell") return end
      env:script("show", [[return { run = function(job) return { got = job.payload } end }]])
      local id = env:enqueue("show", "{}")
      assert.are.equal("", H.sqlite3(env.db_path,
        [[UPDATE pawl_jobs SET payload = '{"s":"\ud800"}']]))
      local p = env:run_idle()
      assert.are.equal(0, p.code, p:stderr())
      -- (lua-cjson, which show_json uses, cannot read the lone surrogate
      -- that `pawl show --json` passes on as stored: ask the module.)
      local db = assert(require("pawl").open { db = env.db, create = false })
      local j = db:get(id)
      db:close()
      assert.are.equal("failed", j.state)
      assert.are.equal(1, j.attempt) -- fatal: not retried
      assert.truthy(j.last_error:find("the stored payload cannot be read as JSON",
                                      1, true), j.last_error)
      assert.is_nil(j.result)
    end)
  end)

  describe("pawl.open (the Lua module)", function()
    it("creates unless create = false, with file_mode", function()
      local pawl = require "pawl"
      local db, err = pawl.open { db = env.db, create = false }
      assert.is_nil(db)
      assert.truthy(tostring(err):find("no database at", 1, true), err)
      assert.is_false(H.exists(env.db_path))
      db = assert(pawl.open { db = env.db, file_mode = tonumber("640", 8) })
      db:close()
      assert.are.equal("640", mode_of(env.db_path))
      local ok, e = pcall(pawl.open, { db = env.db, file_mode = tonumber("1777", 8) })
      assert.is_false(ok)
      assert.truthy(tostring(e):find("file_mode", 1, true), e)
    end)
  end)

  -- ---- large payloads ---------------------------------------------------

  describe("enqueue's payload and --params", function()
    local big = cjson.encode { blob = ("x"):rep(300 * 1024) } -- > 128 KiB

    it("come from a file with @PATH", function()
      env:ok("migrate")
      H.write_file(env:path("big.json"), big)
      H.write_file(env:path("params.json"), '{"mode":"fast"}\n')
      local id = env:enqueue("t", "@" .. env:path("big.json"),
                             "--params", "@" .. env:path("params.json"))
      local j = env:show_json(id)
      assert.are.equal(300 * 1024, #j.payload.blob)
      assert.are.same({ mode = "fast" }, j.params)
    end)

    it("come from standard input with -", function()
      env:ok("migrate")
      H.write_file(env:path("big.json"), big)
      local out = H.capture(("%s --db %s enqueue t - < %s"):format(
        H.quote(H.bin), H.quote(env.db), H.quote(env:path("big.json"))))
      local id = out:match("^(%S+)\n$")
      assert.truthy(id, out)
      assert.are.equal(300 * 1024, #env:show_json(id).payload.blob)
      out = H.capture(("echo '{\"p\":1}' | %s --db %s enqueue t '{}' --params -")
        :format(H.quote(H.bin), H.quote(env.db)))
      id = out:match("^(%S+)\n$")
      assert.are.same({ p = 1 }, env:show_json(id).params)
    end)

    it("are bounded, checked, and refused with a clear message", function()
      env:ok("migrate")
      local huge = env:path("huge.json")
      assert.is_true(H.sh("head -c 17000000 /dev/zero | tr '\\0' ' ' > " .. H.quote(huge)))
      local r = env:pawl("enqueue", "t", "@" .. huge)
      assert.are.equal(2, r.code)
      assert.truthy(r.err:find("larger than 16777216 bytes", 1, true), r.err)
      r = env:pawl("enqueue", "t", "@" .. env:path("missing.json"))
      assert.are.equal(2, r.code)
      assert.truthy(r.err:find("missing.json", 1, true), r.err)
      H.write_file(env:path("bad.json"), "{nope")
      r = env:pawl("enqueue", "t", "@" .. env:path("bad.json"))
      assert.are.equal(2, r.code)
      assert.truthy(r.err:find("payload is not valid JSON", 1, true), r.err)
      r = env:pawl("enqueue", "t", "-", "--params", "-")
      assert.are.equal(2, r.code)
      assert.truthy(r.err:find("only one of", 1, true), r.err)
      assert.are.equal(0, #H.json_lines(env:ok("jobs", "--json")))
    end)
  end)
end)
