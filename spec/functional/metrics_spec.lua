-- metrics_spec.lua: `pawl run --metrics`. A real host serves
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

-- ---- slow clients -----------------------------------------------------------

-- A client that opens connections and sends request heads a line at a
-- time, as a slowloris does, through plain sockets from the FFI (no
-- outside tool can hold 200 half-sent requests).
ffi.cdef [[
  struct pawl_ms_sockaddr_in {
    uint16_t family; uint8_t port[2]; uint8_t addr[4]; uint8_t zero[8];
  };
  struct pawl_ms_pollfd { int fd; short events; short revents; };
  int pawl_ms_socket(int domain, int type, int protocol) __asm__("socket");
  int pawl_ms_bind(int fd, const void *addr, unsigned len) __asm__("bind");
  int pawl_ms_connect(int fd, const void *addr, unsigned len)
      __asm__("connect");
  long pawl_ms_send(int fd, const void *buf, size_t len, int flags)
      __asm__("send");
  long pawl_ms_recv(int fd, void *buf, size_t len, int flags) __asm__("recv");
  int pawl_ms_poll(struct pawl_ms_pollfd *fds, unsigned long n, int ms)
      __asm__("poll");
  int pawl_ms_close(int fd) __asm__("close");
]]
local AF_INET, SOCK_STREAM, SOCK_NONBLOCK = 2, 1, 2048
local MSG_DONTWAIT, MSG_NOSIGNAL = 0x40, 0x4000
local POLLIN, POLLOUT = 1, 4
local EAGAIN, EINPROGRESS = 11, 115

local function sockaddr(ip, port)
  local sa = ffi.new("struct pawl_ms_sockaddr_in")
  sa.family = AF_INET
  sa.port[0], sa.port[1] = bit.rshift(port, 8), bit.band(port, 255)
  local i = 0
  for b in ip:gmatch("%d+") do sa.addr[i] = tonumber(b); i = i + 1 end
  return sa
end

-- Waits up to `ms` for `events` on fd; the revents.
local function wait_fd(fd, events, ms)
  local pfd = ffi.new("struct pawl_ms_pollfd")
  pfd.fd, pfd.events = fd, events
  if ffi.C.pawl_ms_poll(pfd, 1, ms) <= 0 then return 0 end
  return pfd.revents
end

-- A connection from the loopback address `from` to port, the request
-- head `head` sent (unfinished: no blank line). nil when the server did
-- not take the connection within `ms` (it stopped accepting: what the
-- attacker wanted).
local function slow_open(port, from, head, ms)
  local fd = ffi.C.pawl_ms_socket(AF_INET, SOCK_STREAM + SOCK_NONBLOCK, 0)
  assert(fd >= 0, "socket")
  local src = sockaddr(from, 0)
  assert(ffi.C.pawl_ms_bind(fd, src, ffi.sizeof(src)) == 0, "bind " .. from)
  local dst = sockaddr("127.0.0.1", port)
  local rc = ffi.C.pawl_ms_connect(fd, dst, ffi.sizeof(dst))
  assert(rc == 0 or ffi.errno() == EINPROGRESS, "connect")
  if bit.band(wait_fd(fd, POLLOUT, ms), POLLOUT) == 0 or
     ffi.C.pawl_ms_send(fd, head, #head, MSG_NOSIGNAL) ~= #head then
    ffi.C.pawl_ms_close(fd)
    return nil
  end
  return fd
end

-- Whether the server has closed fd (reads what it sent meanwhile).
local function server_closed(fd)
  local buf = ffi.new("char[4096]")
  while true do
    local n = ffi.C.pawl_ms_recv(fd, buf, 4096, MSG_DONTWAIT)
    if n == 0 then return true end
    if n < 0 then return ffi.errno() ~= EAGAIN end
  end
end

-- One more header line; false when the connection is gone.
local function trickle(fd)
  local line = "X-Slow: 1\r\n"
  return not server_closed(fd) and
         ffi.C.pawl_ms_send(fd, line, #line, MSG_NOSIGNAL) == #line
end

-- The head deadline (http.c): a request head must arrive whole within it.
local HEAD_S = 5

describe("pawl run --metrics: slow clients", function()
  local env
  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  -- The attacker opens up to 200 connections (from the loopback
  -- addresses `from`, in turn) and sends each a request line and a
  -- header, never the blank line that ends the head; it opens until the
  -- server stops taking connections, then sends every open one another
  -- header line (as a slowloris does to stay under an idle timeout) and
  -- reopens the ones the server closed. A scrape must be answered while
  -- all that is open, well before the head deadline could have freed a
  -- slot: the slots a new connection needs are made for it.
  local cases = {
    { name = "from the scraper's own address", from = { "127.0.0.1" } },
    { name = "spread over eight loopback addresses",
      from = { "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5",
               "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9" } },
    { name = "against a token-protected endpoint", from = { "127.0.0.1" },
      token = true },
  }
  for _, case in ipairs(cases) do
    it("answers a scrape while 200 slow request heads are open, " .. case.name, function()
      local args = { "--metrics", "127.0.0.1:0" }
      local auth = {}
      if case.token then
        local token = env:path("token")
        C.write_file(token, "s3cret\n")
        C.sh("chmod 600 " .. q(token))
        args[#args + 1] = "--metrics-token-file"
        args[#args + 1] = token
        auth = { "-H", "Authorization: Bearer s3cret" }
      end
      local p = env:start(unpack(args))
      local port = tonumber(started(env, p):match(":(%d+)$"))
      local head = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      local fds = {}
      finally(function()
        for _, fd in pairs(fds) do ffi.C.pawl_ms_close(fd) end
      end)
      for i = 1, 200 do
        fds[i] = slow_open(port, case.from[(i - 1) % #case.from + 1], head, 2000)
        if not fds[i] then break end
      end
      local held = 0
      for i, fd in pairs(fds) do
        if not trickle(fd) then
          ffi.C.pawl_ms_close(fd)
          fds[i] = slow_open(port, case.from[(i - 1) % #case.from + 1], head, 2000)
        end
        if fds[i] then held = held + 1 end
      end
      assert.is_true(held >= 64, "the attacker holds " .. held .. " connections")
      local t0 = H.mono()
      local status, body = curl(env, "http://127.0.0.1:" .. port .. "/metrics",
                                "--max-time", "2", unpack(auth))
      local took = H.mono() - t0
      assert.are.equal(200, status, "scrape after " .. took .. " s")
      assert.truthy(body:find("# TYPE pawl_workers gauge", 1, true))
      assert.is_true(took < HEAD_S / 2, "scrape took " .. took .. " s")
    end)
  end

  it("closes a request head that is still arriving at the head deadline, however it trickles", function()
    local p = env:start("--metrics", "127.0.0.1:0")
    local port = tonumber(started(env, p):match(":(%d+)$"))
    -- A header line every 200 ms (the idle timeout never fires), and a
    -- connection that sends nothing.
    local t0 = H.mono()
    local conns = {
      trickling = slow_open(port, "127.0.0.1", "GET /metrics HTTP/1.1\r\n", 2000),
      silent = slow_open(port, "127.0.0.1", "", 2000),
    }
    finally(function()
      for _, fd in pairs(conns) do ffi.C.pawl_ms_close(fd) end
    end)
    -- A connection cannot be kept to send a slow head after a request
    -- was answered: the server closes it once the answer is sent.
    local answered = slow_open(port, "127.0.0.1",
      "GET /nope HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\n", 2000)
    wait_fd(answered, POLLIN, H.HANG_S * 1000)
    H.wait_until("the answered connection to be closed", function()
      wait_fd(answered, POLLIN, 100)
      return server_closed(answered)
    end)
    ffi.C.pawl_ms_close(answered)
    local closed_at = {}
    while next(conns) and H.mono() - t0 < HEAD_S + 3 do
      for name, fd in pairs(conns) do
        local gone
        if name == "silent" then gone = server_closed(fd) else gone = not trickle(fd) end
        if gone then
          closed_at[name] = H.mono() - t0
          ffi.C.pawl_ms_close(fd)
          conns[name] = nil
        end
      end
      H.sleep(0.2)
    end
    for _, name in ipairs({ "trickling", "silent" }) do
      assert.is_nil(conns[name], name .. ": still open after " .. (HEAD_S + 3) .. " s")
      -- Not before the deadline either: a slow scraper has its 5 s.
      assert.is_true(closed_at[name] >= HEAD_S - 0.5,
                     name .. " closed after only " .. closed_at[name] .. " s")
    end
  end)
end)
