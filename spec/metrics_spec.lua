-- metrics_spec.lua: `pawl run --metrics` (issue 16). A real host serves
-- /metrics; the spec runs a known set of jobs (a success, a retry then a
-- success, a job that dies, one held running at a gate, one pending, one
-- canceled), scrapes with curl, parses the text, and checks the node's
-- counters against what happened and the database gauges against what
-- `pawl stats` reads; promtool checks the text. On SQLite and on the
-- throwaway PostgreSQL server. Then the endpoint's edges: other paths and
-- methods, a non-loopback address without a token refused, the token
-- checked, bad --metrics values.
--
-- Nothing here waits on time: the gauges are refreshed asynchronously, so
-- the spec scrapes until they show the database's numbers (a hang guard
-- caps it), and the job held running waits at a gate the spec opens.
local H = require "host_helper"
local PG = require "pg_helper"
local C = require "cli_helper"

local q = C.quote
local ffi = require "ffi"
ffi.cdef [[
  int pawl_ms_setenv(const char *name, const char *value, int overwrite)
      __asm__("setenv");
  int pawl_ms_unsetenv(const char *name) __asm__("unsetenv");
]]

-- ---- the text format ------------------------------------------------------

-- Parses the exposition: { [name] = { [labels] = value } }, labels as
-- "k=v,k=v" sorted by key, the values unescaped; plus help and type by
-- name.
local function parse(text)
  local m, types, helps = {}, {}, {}
  for line in text:gmatch("[^\n]+") do
    local kind, name, rest = line:match("^# (%u+) ([%w_:]+) (.*)$")
    if kind == "TYPE" then
      types[name] = rest
    elseif kind == "HELP" then
      helps[name] = rest
    else
      assert(not line:match("^#"), "unexpected comment: " .. line)
      local n, i = line:match("^([%w_:]+)()")
      assert(n, "no metric name: " .. line)
      local labels = {}
      if line:sub(i, i) == "{" then
        i = i + 1
        while line:sub(i, i) ~= "}" do
          local k, j = line:match("^([%w_]+)=\"()", i)
          assert(k, "bad label at " .. i .. ": " .. line)
          local v = {}
          i = j
          while true do
            local c = line:sub(i, i)
            assert(c ~= "", "unterminated label value: " .. line)
            if c == "\\" then
              local e = line:sub(i + 1, i + 1)
              v[#v + 1] = e == "n" and "\n" or e
              i = i + 2
            elseif c == '"' then
              i = i + 1
              break
            else
              v[#v + 1] = c
              i = i + 1
            end
          end
          labels[#labels + 1] = k .. "=" .. table.concat(v)
          if line:sub(i, i) == "," then i = i + 1 end
        end
        i = i + 1
      end
      table.sort(labels)
      local value = line:sub(i):match("^ (%S+)$")
      assert(value, "no value: " .. line)
      m[n] = m[n] or {}
      m[n][table.concat(labels, ",")] = tonumber(value) or
          (value == "+Inf" and math.huge) or error("bad value: " .. line)
    end
  end
  return m, types, helps
end

-- Outside tools run without the sanitizer runtime the ASan build
-- preloads for LuaJIT (curl deadlocks in setlocale under it).
local PLAIN = "env -u LD_PRELOAD -u ASAN_OPTIONS "

-- curl's HTTP status and body.
local function curl(env, url, ...)
  local body = env:path("body.txt")
  local args = { PLAIN .. "curl", "-s", "-o", q(body), "-w", "'%{http_code}'",
                 "--max-time", "30" }
  for _, a in ipairs({ ... }) do args[#args + 1] = q(a) end
  args[#args + 1] = q(url)
  local status = C.capture(table.concat(args, " "))
  return tonumber(status), C.read_file(body) or ""
end

local function started(env, p)
  return env:wait_until("the metrics endpoint's address in the log", function()
    return p:stderr():match("metrics listening http=(%S+)")
  end)
end

local function scripts(env)
  env:script("ok", [[return { queue = "mail", run = function() return { sent = true } end }]])
  env:script("flaky", [[
return {
  retry = function() return 0 end,
  run = function(job)
    if job.attempt == 1 then error("flaky: first attempt") end
    return {}
  end,
}]])
  env:script("doomed", [[
return {
  max_attempts = 2,
  retry = function() return 0 end,
  run = function() error("doomed") end,
}]])
  env:script("held", H.GATE_LUA .. [[
return { queue = 'sl"ow\\q', run = function(job) pawl_gate(job.payload.gate) return 1 end }]])
end

local backends = { "sqlite", "postgres" }

for _, backend in ipairs(backends) do
  describe("pawl run --metrics on " .. backend, function()
    local env

    before_each(function()
      if backend == "postgres" then
        if PG.skip_reason() then return end
        env = PG.env()
      else
        env = H.env()
      end
    end)
    after_each(function() if env then env:cleanup() end env = nil end)

    local function skip()
      if backend == "postgres" and PG.skip_reason() then
        pending(PG.skip_reason())
        return true
      end
    end

    it("counts what the node ran and shows the database's jobs by state and queue", function()
      if skip() then return end
      scripts(env)
      -- Finished before the host starts: counted by the first full read.
      local early = env:enqueue("ok", "{}")
      env:run_idle()
      assert.are.equal("succeeded", env:show(early).state)
      -- The rest while it runs (after that read, most likely: counted
      -- from the finish buckets; the numbers must match either way).
      local g = env:gate()
      local ok = env:enqueue("ok", "{}")
      local flaky = env:enqueue("flaky", "{}")
      local doomed = env:enqueue("doomed", "{}")
      local held = env:enqueue("held", H.json { gate = g.path })
      local later = env:enqueue("ok", "{}", "--queue", "later", "--delay", "3600")
      local gone = env:enqueue("ok", "{}", "--queue", "later", "--delay", "3600")
      local p = env:start("--workers", "2", "--metrics", "127.0.0.1:0",
                          "--metrics-refresh", "0.1")
      local addr = started(env, p)
      assert.truthy(addr:match("^127%.0%.0%.1:%d+$"), addr)
      env:wait_state(ok, "succeeded")
      env:wait_state(flaky, "succeeded")
      env:wait_state(doomed, "failed")
      g:wait_reached()
      env:ok("cancel", gone)
      assert.are.equal("pending", env:show(later).state)

      -- The database's numbers, as `pawl stats` reads them (nothing moves
      -- now: the held job waits at its gate).
      local stats = require("cjson").decode(env:ok("stats", "--json"))
      local want = {}
      for _, qs in ipairs(stats.queues) do
        for state, n in pairs(qs.counts) do
          want["queue=" .. qs.queue .. ",state=" .. state] = n
        end
      end
      assert.are.equal(1, want['queue=sl"ow\\q,state=running'])
      assert.are.equal(1, want["queue=later,state=canceled"])
      assert.are.equal(2, want["queue=mail,state=succeeded"])

      local text, m, types
      env:wait_until("the gauges to show the database's numbers", function()
        local status
        status, text = curl(env, "http://" .. addr .. "/metrics")
        if status ~= 200 then return false end
        m, types = parse(text)
        for k, n in pairs(want) do
          if (m.pawl_jobs or {})[k] ~= n then return false end
        end
        return true
      end)

      -- The node's own counters: what this host ran (not the early job).
      local function c(name, jtype, queue)
        return m[name][("queue=%s,type=%s"):format(queue, jtype)]
      end
      assert.are.equal(1, c("pawl_jobs_started_total", "ok", "mail"))
      assert.are.equal(1, c("pawl_jobs_succeeded_total", "ok", "mail"))
      assert.are.equal(2, c("pawl_jobs_started_total", "flaky", "default"))
      assert.are.equal(1, c("pawl_jobs_failed_total", "flaky", "default"))
      assert.are.equal(1, c("pawl_jobs_retried_total", "flaky", "default"))
      assert.are.equal(1, c("pawl_jobs_succeeded_total", "flaky", "default"))
      assert.are.equal(0, c("pawl_jobs_dead_total", "flaky", "default"))
      assert.are.equal(2, c("pawl_jobs_started_total", "doomed", "default"))
      assert.are.equal(2, c("pawl_jobs_failed_total", "doomed", "default"))
      assert.are.equal(1, c("pawl_jobs_retried_total", "doomed", "default"))
      assert.are.equal(1, c("pawl_jobs_dead_total", "doomed", "default"))
      assert.are.equal(1, c("pawl_jobs_started_total", "held", 'sl"ow\\q'))
      -- Histograms: one execution per finished attempt, one wait per start.
      assert.are.equal(2, c("pawl_job_execution_seconds_count", "flaky", "default"))
      assert.are.equal(2, c("pawl_job_queue_wait_seconds_count", "doomed", "default"))
      assert.are.equal(1, m.pawl_job_execution_seconds_bucket[
        'le=+Inf,queue=mail,type=ok'])
      assert.is_true(m.pawl_claim_batch_size_count[""] >= 1)
      assert.is_true(m.pawl_completion_batch_size_count[""] >= 1)
      assert.are.equal(2, m.pawl_workers[""])
      assert.are.equal(1, m.pawl_workers_busy[""])
      assert.are.equal(0, m.pawl_database_errors_total[""])
      assert.are.equal(0, m.pawl_leases_recovered_total[""])
      assert.are.equal(0, m.pawl_script_reload_errors_total[""])
      assert.are.equal(0, m.pawl_scripts_broken[""])
      assert.is_true(m.pawl_database_reconnects_total[""] >= 0)
      assert.is_true(m.pawl_queue_oldest_due_seconds["queue=later"] == 0)
      assert.are.equal("counter", types.pawl_jobs_started_total)
      assert.are.equal("gauge", types.pawl_jobs)
      assert.are.equal("histogram", types.pawl_job_execution_seconds)
      -- No payload reaches the labels: the gate's path is in one.
      assert.falsy(text:find(g.path, 1, true))

      -- promtool checks the format (and its naming rules).
      local file = env:path("scrape.txt")
      C.write_file(file, text)
      local out = C.capture(PLAIN .. "promtool check metrics < " .. q(file) ..
                        " 2>&1; echo rc=$?")
      assert.truthy(out:find("rc=0", 1, true), out)

      -- HEAD: the headers only; other methods and paths refused.
      local status, body = curl(env, "http://" .. addr .. "/metrics", "-I")
      assert.are.equal(200, status)
      assert.truthy(body:lower():find("content-type: text/plain; version=0.0.4", 1, true), body)
      assert.are.equal(404, (curl(env, "http://" .. addr .. "/nope")))
      assert.are.equal(404, (curl(env, "http://" .. addr .. "/")))
      assert.are.equal(405, (curl(env, "http://" .. addr .. "/metrics", "-X", "POST", "-d", "x")))

      g:open()
      env:wait_state(held, "succeeded")
      p:signal("INT")
      assert.truthy(p:wait(2 * H.HANG_S), p:stderr())
      assert.are.equal(0, p.code, p:stderr())
    end)
  end)
end

describe("pawl run --metrics: addresses and tokens", function()
  local env
  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  local function refused(r, text)
    assert.are_not.equal(0, r.code, r.err)
    assert.truthy(r.err:find(text, 1, true), r.err)
  end

  local function run(...)
    return env:pawl("run", "--scripts", env.scripts, "--until-idle",
                    "--admin-socket", "none", ...)
  end

  it("refuses a non-loopback address without a token, and checks the token with one", function()
    refused(run("--metrics", "0.0.0.0:0"),
            "--metrics 0.0.0.0:0 is not a loopback address: serving metrics "
            .. "to other machines needs --metrics-token-file")
    refused(run("--metrics", "[::]:0"), "is not a loopback address")
    local token = env:path("token")
    C.write_file(token, "s3cret\n")
    C.sh("chmod 644 " .. q(token))
    refused(run("--metrics", "0.0.0.0:0", "--metrics-token-file", token),
            "metrics token file " .. token .. " is mode 0644: its group or others may read or write it")
    C.sh("chmod 600 " .. q(token))
    local p = env:start("--metrics", "0.0.0.0:0", "--metrics-token-file", token)
    local port = started(env, p):match(":(%d+)$")
    local url = "http://127.0.0.1:" .. port .. "/metrics"
    local status = curl(env, url)
    assert.are.equal(401, status)
    assert.are.equal(401, (curl(env, url, "-H", "Authorization: Bearer wrong")))
    local body
    status, body = curl(env, url, "-H", "Authorization: Bearer s3cret")
    assert.are.equal(200, status)
    assert.truthy(body:find("# TYPE pawl_workers gauge", 1, true))
  end)

  it("counts database errors and scripts that do not load", function()
    env:script("ok", [[return { run = function() return 1 end }]])
    env:script("broken", [[return { run = function( end }]])
    local id = env:enqueue("ok", "{}")
    -- The first claim fails, and so does the first write of an outcome
    -- (the database away for a moment: both are tried again).
    ffi.C.pawl_ms_setenv("PAWL_TEST_FAULTS", "claim:1,finish:1:transient", 1)
    local ok, p = pcall(env.start, env, "--metrics", "127.0.0.1:0",
                        "--poll", "0.1")
    ffi.C.pawl_ms_unsetenv("PAWL_TEST_FAULTS")
    assert(ok, p)
    local addr = started(env, p)
    env:wait_state(id, "succeeded")
    local status, text = curl(env, "http://" .. addr .. "/metrics")
    assert.are.equal(200, status)
    local m = parse(text)
    assert.are.equal(2, m.pawl_database_errors_total[""])
    assert.are.equal(1, m.pawl_jobs_succeeded_total["queue=default,type=ok"])
    assert.are.equal(1, m.pawl_scripts_broken[""])
    assert.is_true(m.pawl_script_reload_errors_total[""] >= 1)
  end)

  it("caps the label sets: job-chosen types and queues past 200 count under _other", function()
    -- Job code picks type and queue names: one job enqueues 250 jobs, each
    -- of a type and a queue of its own (types without scripts, so each
    -- fails at once and is counted). The page keeps at most 200 (type,
    -- queue) series and 200 queues' gauges; the rest add up under
    -- "_other", and what was folded is counted.
    local N = 250
    env:script("fan", ([[
return { run = function()
  for i = 1, %d do
    assert(pawl.enqueue("t" .. i, {}, { queue = "q" .. i, max_attempts = 1 }))
  end
end }]]):format(N))
    local fan = env:enqueue("fan", "{}")
    local p = env:start("--workers", "2", "--metrics", "127.0.0.1:0",
                        "--metrics-refresh", "0.1")
    local addr = started(env, p)
    env:wait_state(fan, "succeeded")
    env:wait_until("the fanned-out jobs to fail", function()
      return env:count_state("failed") == N
    end)
    local text, m
    env:wait_until("the node's counters and the gauges to count them", function()
      local status
      status, text = curl(env, "http://" .. addr .. "/metrics")
      if status ~= 200 then return false end
      m = parse(text)
      local dead, failed = 0, 0
      for _, n in pairs(m.pawl_jobs_dead_total or {}) do dead = dead + n end
      for k, n in pairs(m.pawl_jobs or {}) do
        if k:match(",state=failed$") then failed = failed + n end
      end
      return dead == N and failed == N
    end)
    local series, queues = 0, {}
    for k in pairs(m.pawl_jobs_started_total) do
      series = series + 1
      assert.truthy(k:match("^queue=[%w_]+,type=[%w_]+$"), k)
    end
    for k in pairs(m.pawl_jobs) do queues[k:match("^queue=(.-),")] = true end
    local nqueues = 0
    for _ in pairs(queues) do nqueues = nqueues + 1 end
    -- 200 pairs of their own (the fan job's among them) and "_other".
    assert.are.equal(201, series)
    assert.are.equal(201, nqueues)
    assert.truthy(queues._other)
    local folded = m.pawl_jobs_dead_total["queue=_other,type=_other"]
    assert.are.equal(N - 199, folded)
    assert.is_true(m.pawl_metrics_labels_folded_total[""] >= folded)
    assert.is_true(m.pawl_jobs_folded_groups[""] >= 1)
    assert.are.equal(N - 199, m.pawl_jobs["queue=_other,state=failed"] +
                     (m.pawl_jobs["queue=default,state=failed"] or 0))
    assert.is_true(#text < 1024 * 1024, #text)
  end)

  it("says what is wrong with a bad --metrics value", function()
    refused(run("--metrics", "localhost:9464"),
            "--metrics: \"localhost\" is not a numeric address")
    refused(run("--metrics", "127.0.0.1"),
            "--metrics expects ADDRESS:PORT with a numeric address and a port "
            .. "0..65535 (got \"127.0.0.1\")")
    refused(run("--metrics", "127.0.0.1:65536"), "a port 0..65535")
    refused(run("--metrics", "127.0.0.1:x"), "a port 0..65535")
    refused(run("--metrics", ""), "a port 0..65535")
    refused(run("--metrics-token-file", "/nonexistent"),
            "--metrics-token-file and --metrics-refresh are for --metrics")
    refused(run("--metrics", "127.0.0.1:0", "--metrics-refresh", "0.05"),
            "--metrics-refresh must be between 0.1 and 3600 seconds")
    refused(run("--metrics", "127.0.0.1:0", "--metrics-token-file",
                env:path("none")), "metrics token file")
    -- An address in use: the bind's error, naming the flag and value.
    local p = env:start("--metrics", "127.0.0.1:0")
    local addr = started(env, p)
    refused(run("--metrics", addr), "--metrics " .. addr .. ": Address already in use")
  end)
end)
