-- sandbox_spec.lua: no job may change what another job sees, read what the
-- operator did not grant, or forge what the host shows. Each test runs the
-- real `pawl run` on a temp database: jobs that try to tamper with the
-- worker's Lua state, then jobs on the same worker (`--workers 1`) that show
-- they saw nothing of it; random numbers of two states; file and
-- environment access with and without the grant; secrets in ctx:log and
-- print; control characters in what jobs log. No assertion depends on
-- timing: jobs that must overlap wait for each other through files.
local cjson = require "cjson"
local H = require "host_helper"

local SECRET = "hunter2"

local function has(s, text) return s:find(text, 1, true) ~= nil end

-- Runs the host until idle with `args`; returns the finished process.
local function run(env, ...)
  local p = env:run_idle(...)
  assert.are.equal(0, p.code, p:stderr())
  return p
end

-- Asserts that the secret is nowhere: not in the database's bytes (jobs,
-- attempts, events, logs) and not in the host's log.
local function assert_no_secret(env, p)
  assert.is_false(has(env:db_bytes(), SECRET), "the database holds the secret")
  assert.is_false(has(p:stderr(), SECRET), "the host's log holds the secret:\n"
                  .. p:stderr())
end

describe("the sandbox", function()
  local env

  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  -- ---- shared tables are read-only (one worker, two jobs) ---------------

  describe("a job that tampers with what it shares", function()
    -- One script serves both jobs, so what the first changes in the
    -- script's environment is what the second would see. The second
    -- compares its environment with what the script's top level saw, logs
    -- a secret and fails with one.
    local function script(attack)
      return ([[
local seen = {
  gsub = string.gsub, tostring = tostring, pairs = pairs, insert = table.insert,
  fatal = pawl.fatal, encode = pawl.json.encode, retry = pawl.retry.default,
  sanitize = require("pawl.sanitize").default, log = nil,
}
local function attack(job, ctx)
  %s
end
return {
  max_attempts = 1,
  run = function(job, ctx)
    if job.payload.mode == "tamper" then
      local ok, err = pcall(attack, job, ctx)
      return { refused = not ok, error = tostring(err) }
    end
    local problems = {}
    local function check(name, ok)
      if not ok then problems[#problems + 1] = name end
    end
    check("string.gsub", string.gsub == seen.gsub)
    check("string methods", ("ab"):gsub("a", "x") == "xb" and ("a"):rep(2) == "aa")
    check("string fields", string.nothing == nil)
    check("tostring", tostring == seen.tostring and tostring(1) == "1")
    check("pairs", pairs == seen.pairs)
    check("table.insert", table.insert == seen.insert)
    check("pawl.fatal", pawl.fatal == seen.fatal)
    check("pawl.json", pawl.json.encode == seen.encode and pawl.json.encode({ 1 }) == "[1]")
    check("pawl.retry", pawl.retry.default == seen.retry)
    local s = require("pawl.sanitize")
    check("pawl.sanitize", s.default == seen.sanitize
          and s.default("password=x") == "password=<redacted>")
    check("globals", evil == nil and rawget(_G, "evil") == nil)
    check("math", math[1] == nil and rawget(math, 1) == nil)
    check("jit", jit.status() == true)
    ctx:log("info", "victim says password=]] .. SECRET .. [[")
    error("victim: password=]] .. SECRET .. [[ problems=[" .. table.concat(problems, ",") .. "]")
  end,
}]]):format(attack)
    end

    -- Each attack, with what its refusal says.
    local ATTACKS = {
      { "the string metatable's __index (the reported attack)",
        [[getmetatable("").__index.gsub = function(s) return s, 0 end]],
        "string.gsub is read-only in job code" },
      { "the string metatable itself",
        [[getmetatable("").__index = {}]], 'getmetatable("").__index is read-only in job code' },
      { "the pawl.sanitize module (the reported attack)",
        [[require("pawl.sanitize").default = function(m) return m end]],
        "pawl.sanitize.default is read-only in job code" },
      { "the string library", [[string.gsub = function(s) return s, 0 end]],
        "string.gsub is read-only in job code" },
      { "the pawl table", [[pawl.fatal = function() end]],
        "pawl.fatal is read-only in job code" },
      { "pawl.retry", [[pawl.retry.default = function() return 0 end]],
        "pawl.retry.default is read-only in job code" },
      { "pawl.json", [[pawl.json.encode = function() return "{}" end]],
        "is read-only in job code" },
      { "a global the environment provides", [[tostring = function() return "x" end]],
        "assignment to global tostring in job code: use a local" },
      { "a new global", [[evil = true]],
        "assignment to global evil in job code: use a local" },
      { "a global through _G", [[_G.evil = true]],
        "assignment to global evil in job code: use a local" },
      { "a global with rawset", [[rawset(_G, "evil", true)]],
        "rawset: the table is read-only in job code" },
      { "the string library with rawset",
        [[rawset(string, "gsub", function(s) return s, 0 end)]],
        "rawset: the table is read-only in job code" },
      { "the pawl table with rawset", [[rawset(pawl, "fatal", nil)]],
        "rawset: the table is read-only in job code" },
      { "a library with table.insert", [[table.insert(math, 1)]],
        "table.insert: the table is read-only in job code" },
      { "a library's metatable",
        [[setmetatable(string, { __index = function() return "evil" end })]],
        "protected metatable" },
      { "the pairs function", [[pairs = function() return next, {} end]],
        "assignment to global pairs" },
      { "the string library through what pairs returns",
        [[local _, t = pairs(string) t.gsub = function(s) return s, 0 end]],
        "string.gsub is read-only in job code" },
      { "the pawl table through what ipairs returns",
        [[local _, t = ipairs(pawl) t.fatal = function() end]],
        "pawl.fatal is read-only in job code" },
      { "the script's globals through what pairs returns",
        [[local _, g = pairs(_G) g.tostring = function() return "x" end]],
        "assignment to global tostring in job code" },
      { "ctx's methods through its metatable",
        [[getmetatable(ctx).log = function() end]], "attempt to index" },
      { "ctx's methods through ctx.__index",
        [[ctx.__index.log = function() end]], "attempt to index" },
      { "the JIT compiler", [[jit.off()]],
        "jit.off is not allowed in job code" },
    }

    for _, a in ipairs(ATTACKS) do
      local name, code, refusal = a[1], a[2], a[3]
      it("cannot change " .. name .. " for the next job", function()
        env:script("t", script(code))
        local tamper = env:enqueue("t", H.json { mode = "tamper" }, "--priority", "10")
        local victim = env:enqueue("t", H.json { mode = "victim" })
        local p = run(env, "--workers", "1")
        local t = env:show(tamper)
        assert.are.equal("succeeded", t.state, cjson.encode(t))
        assert.is_true(t.result.refused, "the attack was not refused")
        assert.is_true(has(t.result.error, refusal), t.result.error)
        local v = env:show(victim)
        assert.are.equal("failed", v.state)
        -- Ran after the attack (its priority is lower, one worker), and
        -- saw nothing of it.
        assert.is_true(has(v.last_error, "victim: password=<redacted> problems=[]"),
                       v.last_error)
        assert.are.equal(1, #v.logs)
        assert.are.equal("victim says password=<redacted>", v.logs[1].message)
        assert_no_secret(env, p)
      end)
    end

    it("cannot leave a JIT handler running in the next job", function()
      env:script("t", [[
local calls = 0 -- shared by the jobs of this script, on purpose
return {
  run = function(job)
    if job.payload.mode == "attach" then
      local ok, err = pcall(jit.attach, function() calls = calls + 1 end, "trace")
      return { ok = ok, err = tostring(err) }
    end
    local before = calls
    local x = 0
    for i = 1, 100000 do x = x + i % 7 end -- hot: the JIT records a trace
    return { calls = calls - before, x = x }
  end,
}]])
      local attach = env:enqueue("t", H.json { mode = "attach" }, "--priority", "10")
      local later = env:enqueue("t", H.json { mode = "loop" })
      run(env, "--workers", "1")
      local a = env:show(attach)
      assert.are.equal("succeeded", a.state)
      assert.is_false(a.result.ok)
      assert.is_true(has(a.result.err, "jit.attach is not allowed in job code"), a.result.err)
      local j = env:show(later)
      assert.are.equal("succeeded", j.state)
      assert.are.equal(0, j.result.calls)
    end)

    it("cannot change the collector for the next job", function()
      env:script("t", [[
return { run = function()
  local ok, err = pcall(collectgarbage, "stop")
  return { ok = ok, err = tostring(err), count = collectgarbage("count") > 0 }
end }]])
      local id = env:enqueue("t")
      run(env, "--workers", "1")
      local j = env:show(id)
      assert.is_false(j.result.ok)
      assert.is_true(has(j.result.err, 'collectgarbage("stop") is not allowed'), j.result.err)
      assert.is_true(j.result.count)
    end)

    it("still reads the library tables through views", function()
      env:script("t", [[
-- A script's top level may define globals; its jobs read them.
function helper() return "from the top level" end
return { run = function()
  local n = 0
  for k in pairs(string) do n = n + 1 end
  local keys = 0
  for k in next, math do keys = keys + 1 end
  local own = {}
  rawset(own, "a", 1)
  table.insert(own, 2)
  return {
    string_fields = n, math_fields = keys,
    rawget = rawget(string, "format") == string.format,
    meta = getmetatable("").__index == string,
    hidden = getmetatable(string) == false,
    top_global = helper(),
    own_tables = own.a + own[1],
    loaded = load("x = 5 return x")(),
    required = require("string") == string and require("pawl.retry") == pawl.retry,
  }
end }]])
      local id = env:enqueue("t")
      run(env, "--workers", "1")
      local r = env:show(id).result
      assert.is_true(r.string_fields > 10, cjson.encode(r))
      assert.is_true(r.math_fields > 10, cjson.encode(r))
      assert.is_true(r.rawget)
      assert.is_true(r.meta)
      assert.is_true(r.hidden)
      assert.are.equal("from the top level", r.top_global)
      assert.are.equal(3, r.own_tables)
      assert.are.equal(5, r.loaded)
      assert.is_true(r.required)
    end)
  end)

  -- ---- random numbers -----------------------------------------------------

  describe("random numbers", function()
    -- Draws three numbers from math.random and three jitter factors from
    -- pawl.retry (base 1, jitter 1: the delay is twice the draw). A job
    -- with payload.gate first makes the file gate/<payload.me> and waits
    -- (up to 60 s) until gate/1 .. gate/<payload.n> all exist, so that
    -- each of the n jobs runs on a worker of its own.
    local DICE = [[
-- Numbers as text: JSON would round them to 14 digits.
local function exact(x) return ("%.17g"):format(x) end
local function wait_for_others(p)
  assert(io.open(p.gate .. "/" .. p.me, "w")):close()
  for _ = 1, 6000 do
    local n = 0
    for i = 1, p.n do
      local f = io.open(p.gate .. "/" .. i, "r")
      if f then f:close() n = n + 1 end
    end
    if n == p.n then return end
    pawl.sleep(0.01)
  end
  error("the other jobs never started")
end
return {
  run = function(job)
    if job.payload.seed then
      math.randomseed(job.payload.seed)
      return { r = { exact(math.random()), exact(math.random()), exact(math.random()) } }
    end
    if job.payload.gate then wait_for_others(job.payload) end
    local jitter = pawl.retry.exponential { base = 1, factor = 1, max = 10, jitter = 1 }
    return { r = { exact(math.random()), exact(math.random()), exact(math.random()) },
             j = { exact(jitter(1) / 2), exact(jitter(1) / 2), exact(jitter(1) / 2) } }
  end,
}]]

    -- The first `n` numbers math.random draws after math.randomseed(seed),
    -- here (the same LuaJIT).
    local function seeded(seed, n)
      math.randomseed(seed)
      local list = {}
      for i = 1, n do list[i] = ("%.17g"):format(math.random()) end
      return list
    end

    local function member(x, list)
      for _, y in ipairs(list) do
        if x == y then return true end
      end
      return false
    end

    it("differ between the worker states of one host", function()
      env:script("dice", DICE)
      local gate = env:path("gate")
      assert(H.sh("mkdir " .. H.quote(gate)))
      local a = env:enqueue("dice", H.json { gate = gate, me = 1, n = 2 })
      local b = env:enqueue("dice", H.json { gate = gate, me = 2, n = 2 })
      run(env, "--workers", "2", "--allow-io")
      local ra, rb = env:show(a).result, env:show(b).result
      assert.are_not.same(ra.r, rb.r)
      assert.are_not.same(ra.j, rb.j)
      -- Jitter and job code draw from different generators.
      assert.are_not.same(ra.r, ra.j)
    end)

    it("differ between hosts (nodes)", function()
      env:script("dice", DICE)
      local a = env:enqueue("dice")
      run(env, "--workers", "1")
      local b = env:enqueue("dice")
      run(env, "--workers", "1")
      local ra, rb = env:show(a).result, env:show(b).result
      assert.are_not.same(ra.r, rb.r)
      assert.are_not.same(ra.j, rb.j)
    end)

    it("math.randomseed in one job decides neither the next job's numbers nor the jitter", function()
      env:script("dice", DICE)
      local seeder = env:enqueue("dice", H.json { seed = 7 }, "--priority", "10")
      local after = env:enqueue("dice")
      run(env, "--workers", "1")
      local expected = seeded(7, 12)
      local s = env:show(seeder).result
      -- The seeding job's own draws follow its seed.
      assert.are.same({ expected[1], expected[2], expected[3] }, s.r)
      local r = env:show(after).result
      for i = 1, 3 do
        assert.is_false(member(r.r[i], expected), "math.random followed the seed")
        assert.is_false(member(r.j[i], expected), "the jitter followed the seed")
      end
    end)
  end)

  -- ---- capabilities: files and the environment ------------------------------

  describe("file and environment access", function()
    -- Tries every function of both capabilities; returns what each did.
    local PROBE = [[
return {
  run = function(job)
    local p = job.payload
    local out = {}
    local function try(name, fn)
      local ok, v = pcall(fn)
      out[name] = ok and { ok = true, value = v } or { ok = false, error = tostring(v) }
    end
    try("io.open", function()
      local f = assert(io.open(p.file, "w"))
      f:write("written by a job")
      f:close()
      return "opened"
    end)
    try("io.lines", function()
      for line in io.lines(p.file) do return line end
    end)
    try("io.type", function() return io.type(42) end)
    try("io.read", function() return io.read(0) end)
    try("io.write", function() io.write("") return "written" end)
    try("os.getenv", function() return os.getenv("PATH") end)
    return out
  end,
}]]

    local IO = { "io.open", "io.lines", "io.type", "io.read", "io.write" }

    local function probe(...)
      env:script("probe", PROBE)
      local file = env:path("file.txt")
      local id = env:enqueue("probe", H.json { file = file })
      local p = run(env, "--workers", "1", ...)
      local j = env:show(id)
      assert.are.equal("succeeded", j.state, p:stderr())
      return j.result, file, p
    end

    local function assert_refused(r, names, flag)
      for _, name in ipairs(names) do
        assert.is_false(r[name].ok, name .. " was allowed")
        assert.is_true(has(r[name].error, name .. " is not allowed in job code"), r[name].error)
        assert.is_true(has(r[name].error, flag), r[name].error)
      end
    end

    local function assert_allowed(r, names)
      for _, name in ipairs(names) do
        assert.is_true(r[name].ok, name .. ": " .. tostring(r[name].error))
      end
    end

    it("are refused without a grant", function()
      local r, file = probe()
      assert_refused(r, IO, "--allow-io")
      assert_refused(r, { "os.getenv" }, "--allow-env")
      assert.is_false(H.exists(file))
    end)

    it("--allow-io grants files, not the environment", function()
      local r, file = probe("--allow-io")
      assert_allowed(r, IO)
      assert.are.equal("written by a job", H.read_file(file))
      assert.are.equal("written by a job", r["io.lines"].value)
      assert_refused(r, { "os.getenv" }, "--allow-env")
    end)

    it("--allow-env grants the environment, not files", function()
      local r, file = probe("--allow-env")
      assert_allowed(r, { "os.getenv" })
      assert.are.equal(os.getenv("PATH"), r["os.getenv"].value)
      assert_refused(r, IO, "--allow-io")
      assert.is_false(H.exists(file))
    end)

    it("_defaults.lua may grant them with allow", function()
      env:script("_defaults", [[return { allow = { "io", "env" } }]])
      local r = probe()
      assert_allowed(r, IO)
      assert_allowed(r, { "os.getenv" })
    end)

    it("--unsafe-lua gives everything", function()
      local r = probe("--unsafe-lua")
      assert_allowed(r, IO)
      assert_allowed(r, { "os.getenv" })
    end)

    it("a script may ask for less than the operator grants, never more", function()
      env:script("less", PROBE:gsub("^return {", 'return { allow = { "env" },'))
      env:script("more", PROBE:gsub("^return {", 'return { allow = { "io" },'))
      local file = env:path("file.txt")
      local less = env:enqueue("less", H.json { file = file })
      local p = run(env, "--workers", "1", "--allow-env")
      local r = env:show(less).result
      assert_allowed(r, { "os.getenv" })
      assert_refused(r, IO, "--allow-io")
      -- `more` asks for io, which the operator did not grant: not loaded.
      assert.is_true(has(p:stderr(), 'allow asks for io (file access), which the '
                         .. 'operator has not granted'), p:stderr())
      -- With the grant it loads, and gets only what it asked for.
      local more = env:enqueue("more", H.json { file = file })
      run(env, "--workers", "1", "--allow-io", "--allow-env")
      r = env:show(more).result
      assert_allowed(r, IO)
      assert_refused(r, { "os.getenv" }, "--allow-env")
    end)

    it("pawl enqueue reads a script that asks for a capability", function()
      -- The enqueuer cannot know what pawl run will grant: it reads the
      -- script's settings all the same.
      env:script("files", [[return { queue = "files", allow = { "io" }, run = function() end }]])
      local r = env:pawl("enqueue", "files", "{}", "--scripts", env.scripts)
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("", r.err)
      assert.are.equal("files", env:show((r.out:gsub("%s+$", ""))).queue)
    end)

    it("allow lists only known capabilities", function()
      env:script("_defaults", [[return { allow = { "io", "net" } }]])
      local r, _, p = probe()
      assert.is_true(has(p:stderr(), 'allow must list capabilities, \\"io\\", '
                         .. '\\"env\\", \\"signal\\", \\"replace\\" or '
                         .. '\\"restart\\" (got \\"net\\")'), p:stderr())
      -- The broken defaults file grants nothing.
      assert_refused(r, IO, "--allow-io")
    end)

    it("open files do not hand out their shared metatable", function()
      env:script("t", [[
return { run = function(job)
  local f = assert(io.open(job.payload.file, "w"))
  local out = { meta = getmetatable(f) == false, index = f.__index == nil }
  local ok, err = pcall(function() f.write = nil end)
  out.assign = not ok
  f:write("still works")
  f:close()
  return out
end }]])
      local file = env:path("f.txt")
      local id = env:enqueue("t", H.json { file = file })
      run(env, "--workers", "1", "--allow-io")
      local r = env:show(id).result
      assert.is_true(r.meta)
      assert.is_true(r.index)
      assert.is_true(r.assign)
      assert.are.equal("still works", H.read_file(file))
    end)
  end)

  -- ---- secrets in what jobs log ---------------------------------------------

  describe("ctx:log and print", function()
    it("are sanitized in the database and the host's log", function()
      env:script("chatty", [[
return { run = function(job, ctx)
  ctx:log("info", "connecting with password=]] .. SECRET .. [[", {
    user = "ada",
    password = "]] .. SECRET .. [[",
    nested = { url = "postgres://ada:]] .. SECRET .. [[@db/app",
               list = { "token=]] .. SECRET .. [[", 42, true } },
    apiKey = { deep = "]] .. SECRET .. [[" },
  })
  print("print says", "Authorization: Bearer ]] .. SECRET .. [[")
end }]])
      local id = env:enqueue("chatty")
      local p = run(env, "--workers", "1")
      local j = env:show(id)
      assert.are.equal("succeeded", j.state)
      assert.are.equal(1, #j.logs)
      local l = j.logs[1]
      assert.are.equal("connecting with password=<redacted>", l.message)
      assert.are.same({
        user = "ada", password = "<redacted>",
        nested = { url = "postgres://ada:<redacted>@db/app",
                   list = { "token=<redacted>", 42, true } },
        apiKey = "<redacted>",
      }, l.fields)
      assert.is_true(has(p:stderr(), "Authorization: <redacted>"), p:stderr())
      assert_no_secret(env, p)
    end)

    it("go through the type's own sanitizer", function()
      env:script("card", [[
return {
  sanitize = function(msg) return (msg:gsub("card=%d+", "card=<hidden>")) end,
  run = function(job, ctx)
    ctx:log("info", "charging card=4242424242424242", { note = "card=4242424242424242" })
    print("card=4242424242424242")
  end,
}]])
      local id = env:enqueue("card")
      local p = run(env, "--workers", "1")
      local l = env:show(id).logs[1]
      assert.are.equal("charging card=<hidden>", l.message)
      assert.are.same({ note = "card=<hidden>" }, l.fields)
      assert.is_false(has(env:db_bytes(), "4242424242424242"))
      assert.is_false(has(p:stderr(), "4242424242424242"), p:stderr())
    end)
  end)

  -- ---- what jobs write cannot forge the host's log ---------------------------

  describe("the host's log", function()
    -- Text with a newline that looks like a log line, a terminal escape
    -- sequence, DEL, a C1 control (CSI), a bidirectional override and a
    -- byte that is not UTF-8.
    local NASTY = "first\n2026-01-01T00:00:00.000Z error FORGED job=x \27[31mred\27[0m"
                  .. " del\127 csi\194\155 rlo\226\128\174 end"
    -- print is not stored: it may hold bytes that are not UTF-8 too.
    local PRINTED = NASTY .. " bad\255"
    local RAW = { "\n2026-01-01", "\27", "\127", "\194\155", "\226\128\174", "\255" }

    local function nasty_script()
      return ([[
local NASTY, PRINTED = %q, %q
return { run = function(job, ctx)
  ctx:log("warn", NASTY, { text = NASTY })
  print(PRINTED)
  error(NASTY)
end, max_attempts = 1 }]]):format(NASTY, PRINTED)
    end

    for _, format in ipairs { "text", "json" } do
      it("keeps one line per event whatever a job writes (" .. format .. ")", function()
        env:script("nasty", nasty_script())
        local id = env:enqueue("nasty")
        local p = run(env, "--workers", "1", "--log-format", format)
        local err = p:stderr()
        for _, raw in ipairs(RAW) do
          assert.is_false(has(err, raw), ("the log holds %q:\n%s"):format(raw, err))
        end
        -- Two lines hold the text (ctx:log, print; the failure's line shows
        -- the error's first line), each starting like a line of the host's.
        local n = 0
        for line in err:gmatch("[^\n]+") do
          if has(line, "FORGED") then
            n = n + 1
            if format == "json" then
              assert.is_table(cjson.decode(line))
            else
              assert.is_truthy(line:match("^%d%d%d%d%-%d%d%-%d%dT[%d:.]+Z %a+ "), line)
              assert.is_false(line:find("^2026%-01%-01") ~= nil, line)
            end
          end
        end
        assert.are.equal(2, n, err)
        assert.are.equal(1, p:count("job failed: dead-lettered"), err)
        -- What was stored is what the job wrote (sanitized, not escaped).
        local j = env:show(id)
        assert.are.equal("failed", j.state)
        assert.is_true(has(j.logs[1].message, "FORGED job=x \27[31mred"))
      end)
    end

    it("cannot reach the operator's terminal through pawl show and pawl jobs", function()
      env:script("nasty", nasty_script())
      local id = env:enqueue("nasty")
      run(env, "--workers", "1")
      for _, args in ipairs { { "show", id }, { "jobs" } } do
        local out = env:ok(unpack(args))
        if args[1] == "show" then assert.is_true(has(out, "FORGED"), out) end
        for _, raw in ipairs { "\27", "\127", "\194\155", "\226\128\174" } do
          assert.is_false(has(out, raw), ("pawl %s prints %q:\n%s"):format(args[1], raw, out))
        end
      end
    end)
  end)

  -- ---- what runs without the timeout ---------------------------------------

  -- LuaJIT runs jit.attach handlers with hooks off: a handler that loops
  -- was never stopped (its worker taken for good, the loader hung by one
  -- at a script's top level), and its errors went raw to stderr. Job code
  -- cannot reach jit.attach, nor the rest of jit.*, ffi or debug.
  describe("jit.attach and its kin", function()
    -- Each way job code might reach the function, with what stops it.
    -- The handler spins; `load` fires the "bc" event.
    local ROUTES = {
      { "jit.attach", [[jit.attach(spin, "bc")]], "jit.attach is not allowed in job code" },
      { "require 'jit'", [[require("jit").attach(spin, "bc")]],
        "jit.attach is not allowed in job code" },
      { "rawget", [[rawget(jit, "attach")(spin, "bc")]], "jit.attach is not allowed" },
      { "pairs over jit", [[for k, f in pairs(jit) do if k == "attach" then f(spin, "bc") end end
  error("pairs found no attach")]], "jit.attach is not allowed" },
      { "a coroutine", [[coroutine.wrap(function() jit.attach(spin, "bc") end)()]],
        "jit.attach is not allowed" },
      { "a loaded chunk", [[load("jit.attach(...)")(spin, "bc")]], "jit.attach is not allowed" },
      { "the trace event", [[jit.attach(spin, "trace")]], "jit.attach is not allowed" },
      { "jit's metatable", [[(getmetatable(jit) or {}).__index.attach(spin, "bc")]],
        "attempt to index" },
      { "jit.util", [[jit.util.funcinfo(spin)]], "attempt to index field 'util'" },
      { "require 'jit.util'", [[require("jit.util")]], [[require "jit.util" is not allowed]] },
      { "require 'jit.profile'", [[require("jit.profile").start("f", spin)]],
        [[require "jit.profile" is not allowed]] },
      { "require 'ffi'", [[require("ffi").C.abort()]], [[require "ffi" is not allowed]] },
      { "package.loaded", [[package.loaded.jit.attach(spin, "bc")]], "attempt to index global 'package'" },
      { "debug", [[debug.sethook()]], "attempt to index global 'debug'" },
      { "getfenv", [[getfenv(0).jit.attach(spin, "bc")]], "attempt to call global 'getfenv'" },
      { "jit.opt", [[jit.opt.start("hotloop=1")]], "jit.opt.start is not allowed" },
      { "jit.flush", [[jit.flush()]], "jit.flush is not allowed" },
    }

    it("cannot reach it from run, however it asks; the worker serves on", function()
      local ids = {}
      for i, r in ipairs(ROUTES) do
        env:script("route" .. i, ([[
local function spin() while true do end end
return { timeout = 2, max_attempts = 1, run = function()
  %s
  load("return 1")
  return "the attack ran and returned"
end }]]):format(r[2]))
        ids[i] = env:ok("enqueue", "route" .. i, "{}", "--priority", "10"):gsub("%s+$", "")
      end
      env:script("quick", [[return { run = function() return "served" end }]])
      local quick = env:ok("enqueue", "quick", "{}"):gsub("%s+$", "")
      local p = run(env, "--workers", "1")
      for i, r in ipairs(ROUTES) do
        local j = env:show(ids[i])
        assert.are.equal("failed", j.state, r[1])
        assert.is_true(has(j.last_error, r[3]), r[1] .. ": " .. j.last_error)
      end
      assert.are.equal("served", env:show(quick).result)
      assert.is_false(has(p:stderr(), "VM handler failed"), p:stderr())
    end)

    it("cannot reach it from a script's top level: pawl run serves the rest", function()
      env:script("ok", [[return { run = function() return "served" end }]])
      env:script("top", [[
jit.attach(function() while true do end end, "bc")
load("return 1")
return { run = function() end }]])
      local id = env:ok("enqueue", "ok", "{}"):gsub("%s+$", "")
      local p = run(env, "--workers", "1")
      assert.are.equal("served", env:show(id).result)
      local loaded = false
      for line in p:stderr():gmatch("[^\n]+") do
        loaded = loaded or (has(line, "script not loaded") and has(line, "script=top")
                            and has(line, "jit.attach is not allowed"))
      end
      assert.is_true(loaded, p:stderr())
    end)

    it("cannot reach it from a script's top level: pawl enqueue --scripts ends", function()
      env:script("top", [[
jit.attach(function() while true do end end, "bc")
load("return 1")
return { run = function() end }]])
      env:ok("migrate")
      local p = env:spawn("--db", env.db, "enqueue", "top", "{}", "--scripts", env.scripts)
      -- Hang guard: its own deadline is 10 s.
      if not p:wait(H.HANG_S) then
        p:kill()
        error("pawl enqueue --scripts did not end; stderr:\n" .. p:stderr())
      end
      assert.are.equal(0, p.code, p:stderr())
      assert.is_true(has(p:stderr(), "is broken"), p:stderr())
      assert.is_true(has(p:stderr(), "jit.attach is not allowed"), p:stderr())
    end)

    -- A handler's error was printed by LuaJIT itself ("VM handler failed:
    -- ..."), past the sanitizer and the log's escaping.
    for _, where in ipairs { "run", "top" } do
      it("leaves nothing raw on the host's stderr (" .. where .. ")", function()
        local attack = ([[
pcall(jit.attach, function() error("password=%s \27[2J\27]0;owned\7") end, "bc")
pcall(jit.attach, function() error("password=%s") end, "trace")
load("return 1")
for i = 1, 1000 do local _ = i %% 3 end
]]):format(SECRET, SECRET)
        if where == "top" then
          env:script("t", attack .. [[return { max_attempts = 1, run = function() end }]])
        else
          env:script("t", ("return { max_attempts = 1, run = function() %s end }"):format(attack))
        end
        local id = env:ok("enqueue", "t", "{}"):gsub("%s+$", "")
        local p = run(env, "--workers", "1")
        assert.are.equal("succeeded", env:show(id).state)
        assert.is_false(has(p:stderr(), "VM handler failed"), p:stderr())
        assert.is_false(has(p:stderr(), "\27"), p:stderr())
        assert_no_secret(env, p)
      end)
    end

    it("cannot hand os.date a format that takes seconds in one C call", function()
      env:script("t", [[
return { timeout = 2, max_attempts = 1, run = function()
  local ok, err = pcall(os.date, ("%c"):rep(2^22))
  return { ok = ok, err = tostring(err), short = os.date("!%Y", 0), t = os.date("*t", 0).year }
end }]])
      local id = env:ok("enqueue", "t", "{}"):gsub("%s+$", "")
      run(env, "--workers", "1")
      local r = env:show(id).result
      assert.is_false(r.ok)
      assert.is_true(has(r.err, "os.date: the format is 8388608 bytes long, at most 1000"), r.err)
      assert.are.equal("1970", r.short)
      assert.is_number(r.t)
    end)

    it("gets no finalizer on a table (they would run with hooks off)", function()
      env:script("t", [[
return { timeout = 2, max_attempts = 1, run = function()
  for _ = 1, 3 do setmetatable({}, { __gc = function() while true do end end }) end
  collectgarbage()
  collectgarbage()
  return "collected"
end }]])
      local id = env:ok("enqueue", "t", "{}"):gsub("%s+$", "")
      run(env, "--workers", "1")
      assert.are.equal("collected", env:show(id).result)
    end)

    it("still reads what describes the VM", function()
      env:script("t", [[
return { run = function()
  return { v = jit.version, n = jit.version_num, os = jit.os, arch = jit.arch,
           on = (jit.status()), req = require("jit").version == jit.version }
end }]])
      local id = env:ok("enqueue", "t", "{}"):gsub("%s+$", "")
      run(env, "--workers", "1")
      local r = env:show(id).result
      assert.is_true(has(r.v, "LuaJIT"), cjson.encode(r))
      assert.is_number(r.n)
      assert.are.equal("Linux", r.os)
      assert.is_string(r.arch)
      assert.is_true(r.on)
      assert.is_true(r.req)
    end)
  end)
end)
