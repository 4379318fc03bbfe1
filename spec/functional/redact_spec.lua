-- redact_spec.lua: no admin view shows a secret a job carries, on SQLite
-- and on PostgreSQL, with a real `pawl run` host.
--
-- Jobs carry secrets everywhere a view can reach: the payload and params
-- (keys with the built-in words at any depth, inside arrays, one escaped,
-- and `ssn`, a field its script lists in `redact`), the result, a signal's
-- payload, a step checkpoint, ctx:log fields, print, an error raised as a
-- table (error(job.payload)), an error's message and its Lua traceback
-- (a chunk named with a secret), a recurring definition's payload, and a
-- webhook URL with a key in its query. Then VIEWS, one row per view, is
-- walked: every row's text must hold none of SECRETS and must show what
-- proves it is looking at the data (its `shows`: usually "<redacted>").
--
-- A NEW VIEW OF JOBS (a CLI verb, a --json, a console function, a log
-- line, an HTTP route) IS ADDED TO VIEWS BELOW; docs/security.md
-- ("Redaction in admin views") says so too.
--
-- Nothing waits on time: hosts run until the jobs reach their states
-- (hang guards only), the webhook receiver waits for the post.
local cjson = require "cjson"
local ffi = require "ffi"
local H = require "host_helper"
local PG = require "pg_helper"
local C = require "cli_helper"

local PG_SKIP = PG.skip_reason()
if PG_SKIP then
  io.stderr:write("\n*** redact_spec: " .. PG_SKIP .. " ***\n\n")
end

local R = "<redacted>"

-- Strings that must never show in a view (only with --raw).
local SECRETS = { "hunter2", "k-one", "t-two", "Bearer xyz", "123-45-6789",
                  "esc-secret", "r-secret", "log-secret", "cp-secret",
                  "sig-secret", "cookie-val", "prm-secret", "rec-secret",
                  "wh-secret", "hook-pw", "hook-q-secret", "print-secret",
                  "tb-secret" }

local PAYLOAD = [[{"user":"ada","password":"hunter2","ssn":"123-45-6789",]]
  .. [["items":[{"name":"a","api_key":"k-one"},{"name":"b","Token":"t-two"},]]
  .. [=[[{"SESSION_COOKIE":{"v":"cookie-val"}}]],]=]
  .. [["deep":{"a":{"b":{"c":{"Authorization":"Bearer xyz","n":1.5e300}}}},]]
  .. [["db_pass\u0077ord":"esc-secret","n":9007199254740991}]]
local PARAMS = [[{"mode":"fast","nested":[{"api_key":"prm-secret"}]}]]
local REC_PAYLOAD = [[{"ssn":"rec-secret","list":[{"password":"rec-secret"}]}]]

-- signup: checks it sees the secrets (redaction is a view), logs fields,
-- prints and checkpoints some, fails its first attempt with the payload
-- as the error, then returns a result holding secrets.
local SIGNUP = [[
return {
  redact = { "ssn" },
  retry = function() return 0 end,
  steps = {
    { name = "check", run = function(job, ctx)
        local p = job.payload
        assert(p.password == "hunter2", "password: " .. tostring(p.password))
        assert(p.ssn == "123-45-6789", "ssn")
        assert(p.items[1].api_key == "k-one" and p.items[2].Token == "t-two")
        assert(p.items[3][1].SESSION_COOKIE.v == "cookie-val")
        assert(p.deep.a.b.c.Authorization == "Bearer xyz")
        assert(p.db_password == "esc-secret")
        assert(job.params.nested[1].api_key == "prm-secret")
        assert(job.signal.payload.token == "sig-secret")
        ctx:log("info", "signing up", { user = p.user, ssn = p.ssn,
                                        list = { { ssn = "log-secret" } },
                                        session_key = "log-secret" })
        print("password=print-secret", "token: print-secret")
        ctx:checkpoint { cursor = 3, session_token = "cp-secret" }
        if job.attempt == 1 then error(job.payload) end
      end },
    { name = "finish", run = function(job, ctx)
        return { ok = true, token = "r-secret", ssn = job.payload.ssn }
      end },
  },
}
]]

-- doomed: dies at once with a table as its error, holding the type's
-- `redact` field and a key with a built-in word (an alert follows).
local DOOMED = [[
return { redact = { "ssn" }, max_attempts = 1,
         run = function(job)
           local p = job.payload
           error({ reason = "declined", customer = { name = p.user, ssn = p.ssn },
                   keys = { { api_key = p.items[1].api_key } } })
         end }
]]

-- traced: its attempt fails with a string error, a secret in the message
-- and in its traceback (a chunk whose name holds one); the retry waits an
-- hour, so the job stays pending with the attempt (and no alert).
local TRACED = [[
return { redact = { "ssn" }, max_attempts = 2, retry = function() return 3600 end,
         run = function(job)
           load("local f = ... ; f()", "=token=tb-secret")(function()
             error("traced password=tb-secret")
           end)
         end }
]]

-- fanout: a batch of one child carrying the payload; returns its id.
local FANOUT = [[
return { redact = { "ssn" }, run = function(job)
  local batch = pawl.batch{ jobs = { { "kid", job.payload } } }
  return { batch = batch }
end }
]]

local KID = [[return { redact = { "ssn" }, run = function() return {} end }]]

-- A webhook refused at load: its URL's user information and query must
-- not reach the loader's log or `pawl enqueue --scripts`.
local BADHOOK = [[
return { run = function() end,
  on_dead = pawl.alert.webhook{ url = "ftp://ops:hook-pw@hooks.example/x?api_key=hook-q-secret" } }
]]

-- ---- a webhook receiver (plain sockets through the FFI) -------------------

ffi.cdef [[
  struct pawl_rd_sockaddr_in {
    uint16_t family; uint8_t port[2]; uint8_t addr[4]; uint8_t zero[8];
  };
  struct pawl_rd_pollfd { int fd; short events; short revents; };
  int pawl_rd_socket(int domain, int type, int protocol) __asm__("socket");
  int pawl_rd_bind(int fd, const void *addr, unsigned len) __asm__("bind");
  int pawl_rd_listen(int fd, int backlog) __asm__("listen");
  int pawl_rd_accept(int fd, void *addr, void *len) __asm__("accept");
  int pawl_rd_getsockname(int fd, void *addr, unsigned *len)
      __asm__("getsockname");
  long pawl_rd_send(int fd, const void *buf, size_t len, int flags)
      __asm__("send");
  long pawl_rd_recv(int fd, void *buf, size_t len, int flags) __asm__("recv");
  int pawl_rd_poll(struct pawl_rd_pollfd *fds, unsigned long n, int ms)
      __asm__("poll");
  int pawl_rd_close(int fd) __asm__("close");
]]
local F = setmetatable({}, { __index = function(_, k) return ffi.C["pawl_rd_" .. k] end })

-- A listening socket on 127.0.0.1: fd, port.
local function listener()
  local fd = F.socket(2, 1, 0)
  assert(fd >= 0, "socket")
  local sa = ffi.new("struct pawl_rd_sockaddr_in")
  sa.family = 2
  sa.addr[0], sa.addr[3] = 127, 1
  assert(F.bind(fd, sa, ffi.sizeof(sa)) == 0, "bind")
  assert(F.listen(fd, 8) == 0, "listen")
  local len = ffi.new("unsigned[1]", ffi.sizeof(sa))
  assert(F.getsockname(fd, sa, len) == 0, "getsockname")
  return fd, sa.port[0] * 256 + sa.port[1]
end

local function readable(fd, ms)
  local p = ffi.new("struct pawl_rd_pollfd")
  p.fd, p.events = fd, 1
  return F.poll(p, 1, ms) > 0
end

-- The body of the next POST to the listener (answered 200).
local function receive_post(lfd)
  assert(readable(lfd, H.HANG_S * 1000), "no webhook post came")
  local fd = F.accept(lfd, nil, nil)
  assert(fd >= 0, "accept")
  local buf, got = ffi.new("char[65536]"), {}
  local text = ""
  while true do
    assert(readable(fd, H.HANG_S * 1000), "the post stalled")
    local n = F.recv(fd, buf, 65536, 0)
    assert(n > 0, "the post ended early")
    got[#got + 1] = ffi.string(buf, n)
    text = table.concat(got)
    local head_end = text:find("\r\n\r\n", 1, true)
    local len = head_end and tonumber(text:lower():match("content%-length:%s*(%d+)"))
    if len and #text >= head_end + 3 + len then
      text = text:sub(head_end + 4, head_end + 3 + len)
      break
    end
  end
  local ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
  F.send(fd, ok, #ok, 0x4000)
  F.close(fd)
  return text
end

-- ---- the views -------------------------------------------------------------

-- `x` (built by the test below) holds the env, the jobs' ids, the host's
-- admin socket and metrics address, what the webhook received, and
-- helpers: x.later() a fresh delayed signup job; x.dead() a fresh failed
-- doomed job; x.console(mode, json, code) a console's output, direct or
-- attached.
local function out_err(r)
  assert(r.code == 0 or r.code == 3, "exit " .. tostring(r.code) .. ": " .. r.err)
  return r.out .. r.err
end

-- Console chunks: each one runs in the console direct (`pawl console -e`)
-- and attached to the running host (`--connect`), as text and --json.
local CONSOLE = {
  { "job(id)", function(x) return ("job(%q)"):format(x.signup) end },
  -- The text list shows no payload, and a succeeded job no last error
  -- (its failed first attempt's, redacted, showed here before).
  { "jobs{}", shows = "signup", function() return "jobs{type = 'signup'}" end },
  { "jobs{} of the dead", function() return "jobs{state = 'failed'}" end },
  { "print(job(id))", function(x) return ("print(job(%q))"):format(x.signup) end },
  { "show(job(id))", function(x) return ("show(job(%q))"):format(x.signup) end },
  { "pause(id)", function(x) return ("pause(%q)"):format(x.later()) end },
  { "resume(id)", function(x)
      local id = x.later()
      x.env:ok("pause", id)
      return ("resume(%q)"):format(id)
    end },
  { "cancel(id)", function(x) return ("cancel(%q)"):format(x.later()) end },
  { "retry(id)", function(x) return ("retry(%q)"):format(x.dead()) end },
  { "scripts()", shows = "ftp://<redacted>@hooks.example/x?<redacted>",
    function() return "scripts()" end },
  { "pause{filter}", shows = "1", function(x)
      local tag = "b" .. x.later_n
      x.later(tag)
      return ("pause{tag = %q}"):format(tag)
    end },
}

-- THE TABLE: every view that shows a job's payload, params, result,
-- error, log line, signal payload, checkpoint or a recurring payload.
-- name; fn(x) -> the text the view printed; shows: a string the text must
-- contain (default "<redacted>"), proving the view shows the data.
local VIEWS = {
  -- pawl show / jobs
  { "pawl show", function(x) return x.env:ok("show", x.signup) end },
  { "pawl show --json", function(x) return x.env:ok("show", x.signup, "--json") end },
  { "pawl show (the dead job)", function(x) return x.env:ok("show", x.doomed) end },
  { "pawl show --json (the dead job)", function(x) return x.env:ok("show", x.doomed, "--json") end },
  { "pawl show (a batch child)", function(x) return x.env:ok("show", x.kid) end },
  { "pawl show --trace (a traceback)", function(x)
      return x.env:ok("show", x.traced, "--trace") end },
  { "pawl show --json (a traceback)", function(x)
      return x.env:ok("show", x.traced, "--json") end },
  { "console direct: job(id) then :trace", shows = "traceback of attempt 1",
    function(x) return x.console_lines("direct", ("job(%q)\n:trace"):format(x.traced)) end },
  { "console attached: job(id) then :trace", shows = "traceback of attempt 1",
    function(x) return x.console_lines("attached", ("job(%q)\n:trace"):format(x.traced)) end },
  { "pawl jobs", shows = "signup", function(x) return x.env:ok("jobs") end },
  { "pawl jobs --json", function(x) return x.env:ok("jobs", "--json") end },
  { "pawl jobs --json --state failed", function(x)
      return x.env:ok("jobs", "--json", "--state", "failed") end },
  -- the actions on one job
  { "pawl pause ID --json", function(x) return x.env:ok("pause", x.later(), "--json") end },
  { "pawl pause ID", shows = "paused", function(x) return x.env:ok("pause", x.later()) end },
  { "pawl resume ID --json", function(x)
      local id = x.later()
      x.env:ok("pause", id)
      return x.env:ok("resume", id, "--json")
    end },
  { "pawl cancel ID --json", function(x) return x.env:ok("cancel", x.later(), "--json") end },
  { "pawl retry ID --json", function(x) return x.env:ok("retry", x.dead(), "--json") end },
  { "pawl retry ID", shows = "pending", function(x) return x.env:ok("retry", x.dead()) end },
  -- the actions on many jobs
  { "pawl pause --tag T --yes", shows = "1", function(x)
      local tag = "c" .. x.later_n
      x.later(tag)
      return out_err(x.env:pawl("pause", "--tag", tag, "--yes"))
    end },
  { "pawl cancel --tag T --yes --json", shows = "1", function(x)
      local tag = "d" .. x.later_n
      x.later(tag)
      return out_err(x.env:pawl("cancel", "--tag", tag, "--yes", "--json"))
    end },
  -- replace, signal
  { "pawl replace ID --json", shows = "replaces", function(x)
      return x.env:ok("replace", x.later(), "--payload", PAYLOAD, "--json")
    end },
  { "pawl replace ID", shows = "-", function(x)
      return x.env:ok("replace", x.later(), "--payload", PAYLOAD)
    end },
  { "pawl signal KEY approve JSON --json", shows = "delivered", function(x)
      x.env:enqueue("kid", PAYLOAD, "--signal", "sig-" .. x.later_n)
      return x.env:ok("signal", "sig-" .. x.later_n, "approve",
                      '{"token":"sig-secret"}', "--json")
    end },
  { "pawl signal (already delivered)", shows = "already delivered", function(x)
      return out_err(x.env:pawl("signal", "ok-1", "approve", '{"token":"sig-secret"}'))
    end },
  -- batches
  { "pawl batch show", shows = "succeeded", function(x) return x.env:ok("batch", "show", x.batch) end },
  { "pawl batch show --json", shows = "callbacks", function(x)
      return x.env:ok("batch", "show", x.batch, "--json") end },
  -- recurring definitions
  { "pawl recurring add --json", function(x)
      return x.env:ok("recurring", "add", "nightly", "0 3 * * *",
                      "--type", "signup", "--payload", REC_PAYLOAD, "--json")
    end },
  { "pawl recurring list --json", function(x) return x.env:ok("recurring", "list", "--json") end },
  { "pawl recurring list", shows = "nightly", function(x) return x.env:ok("recurring", "list") end },
  { "pawl recurring pause --json", function(x)
      return x.env:ok("recurring", "pause", "nightly", "--json") end },
  -- summaries
  { "pawl top --once", shows = "doomed", function(x) return x.env:ok("top", "--once") end },
  { "pawl top --once --json", shows = "doomed", function(x) return x.env:ok("top", "--once", "--json") end },
  { "pawl top --once --connect", shows = "doomed", function(x)
      return out_err(C.run({ "top", "--once", "--connect", x.sock })) end },
  { "pawl stats --json", shows = "default", function(x) return x.env:ok("stats", "--json") end },
  { "pawl stats", shows = "default", function(x) return x.env:ok("stats") end },
  { "pawl queue list --json", shows = "default", function(x) return x.env:ok("queue", "list", "--json") end },
  -- what a script that does not load says
  { "pawl enqueue --scripts (a refused webhook URL)", shows = "ftp://<redacted>@hooks.example/x?<redacted>",
    function(x)
      -- A warning: the job is enqueued with the options given.
      return out_err(x.env:pawl("enqueue", "badhook", "{}", "--scripts", x.env.scripts))
    end },
  { "console attached: reload()", shows = "ftp://<redacted>@hooks.example/x?<redacted>",
    function(x) return x.console("attached", false, "reload()") end },
  -- metrics and webhooks
  { "GET /metrics", shows = 'type="doomed"', function(x)
      return C.capture("env -u LD_PRELOAD -u ASAN_OPTIONS curl -s --max-time 30 "
                       .. C.quote("http://" .. x.metrics .. "/metrics"))
    end },
  { "the alert's webhook body", function(x) return x.webhook end },
  -- the host's log: ctx:log fields, print, failed attempts, the loader
  { "the host's log", function(x) return x.host:stderr() .. x.host:stdout() end },
}
for _, c in ipairs(CONSOLE) do
  for _, mode in ipairs({ "direct", "attached" }) do
    for _, json in ipairs({ false, true }) do
      VIEWS[#VIEWS + 1] = {
        ("console %s%s: %s"):format(mode, json and " --json" or "", c[1]),
        shows = c.shows,
        function(x) return x.console(mode, json, c[2](x)) end,
      }
    end
  end
end

-- ---- the test ----------------------------------------------------------------

local function scenarios(backend)
  local it_ = (backend == "postgres" and PG_SKIP) and pending or it
  describe("redaction on " .. backend, function()
    local env, lfd

    before_each(function() env = PG.env_for(backend) end)
    after_each(function()
      if lfd then F.close(lfd) end
      lfd = nil
      if env then env:cleanup() end
      env = nil
    end)

    it_("no view shows a secret: every row of VIEWS", function()
      local port
      lfd, port = listener()
      env:script("signup", SIGNUP)
      env:script("doomed", DOOMED)
      env:script("fanout", FANOUT)
      env:script("kid", KID)
      env:script("badhook", BADHOOK)
      env:script("traced", TRACED)
      env:script("_defaults", ([[
return { on_dead = pawl.alert.webhook{
  url = "http://127.0.0.1:%d/hook?api_key=wh-secret", attempts = 1 } }
]]):format(port))
      local x = { env = env, later_n = 0 }
      x.signup = env:enqueue("signup", PAYLOAD, "--signal", "ok-1", "--params", PARAMS)
      env:ok("signal", "ok-1", "approve", '{"token":"sig-secret","note":"fine"}')
      x.doomed = env:enqueue("doomed", PAYLOAD)
      x.traced = env:enqueue("traced", PAYLOAD)
      local fan = env:enqueue("fanout", PAYLOAD)

      -- Before any host loaded the scripts, the database has no list for
      -- the type: the built-in words apply, the type's ssn shows.
      local before = cjson.decode(env:ok("show", x.signup, "--json"))
      assert.are.equal(R, before.payload.password)
      assert.are.equal("123-45-6789", before.payload.ssn)

      x.sock = env:path("admin.sock")
      x.host = env:start("--workers", "1", "--admin-socket", x.sock,
                         "--metrics", "127.0.0.1:0", "--log-level", "debug")
      x.metrics = env:wait_until("the metrics address", function()
        return x.host:stderr():match("metrics listening http=(%S+)")
      end)
      x.webhook = receive_post(lfd)
      env:wait_state(x.signup, "succeeded")
      env:wait_state(x.doomed, "failed")
      env:wait_state(fan, "succeeded")
      env:wait_until("the traced job's failed attempt", function()
        local a = env:show(x.traced).attempts[1]
        return a and a.outcome == "retry"
      end)
      x.batch = assert(env:show(fan).result.batch)
      env:wait_until("the batch's child to succeed", function()
        for line in env:ok("jobs", "--json", "--type", "kid", "--raw"):gmatch("[^\n]+") do
          local j = cjson.decode(line)
          if j.state == "succeeded" then x.kid = j.id return true end
        end
      end)
      env:wait_until("the host to record the types' redact lists", function()
        return cjson.decode(env:ok("show", x.signup, "--json")).payload.ssn == R
      end)
      env:wait_until("the admin socket to answer", function()
        return C.run({ "console", "--connect", x.sock, "-e", "1" }).code == 0
      end)

      function x.later(tag)
        x.later_n = x.later_n + 1
        local args = { "signup", PAYLOAD, "--delay", "3600", "--params", PARAMS }
        if tag then args[#args + 1] = "--tag"; args[#args + 1] = tag end
        return env:enqueue(unpack(args))
      end
      function x.dead()
        local id = env:enqueue("doomed", PAYLOAD)
        env:wait_state(id, "failed")
        return id
      end
      function x.console(mode, json, code)
        local args = { "console" }
        if mode == "attached" then
          args[#args + 1] = "--connect"
          args[#args + 1] = x.sock
        else
          args[#args + 1] = "--scripts"
          args[#args + 1] = env.scripts
        end
        if json then args[#args + 1] = "--json" end
        args[#args + 1] = "-e"
        args[#args + 1] = code
        local r = mode == "attached" and C.run(args) or env:pawl(unpack(args))
        assert(r.code == 0, code .. ": " .. r.err)
        return r.out .. r.err
      end

      -- Lines typed into the console (its commands too, such as :trace).
      function x.console_lines(mode, lines)
        local f = env:path("console.in")
        C.write_file(f, lines .. "\n")
        local words = { C.quote(C.bin) }
        if mode == "attached" then
          words[#words + 1] = "console --connect " .. C.quote(x.sock)
        else
          words[#words + 1] = "--db " .. C.quote(env.db) .. " console --scripts "
                              .. C.quote(env.scripts)
        end
        return C.capture(table.concat(words, " ") .. " <" .. C.quote(f) .. " 2>&1")
      end

      -- Every row is read; the failures are reported together.
      local bad = {}
      for _, v in ipairs(VIEWS) do
        local text, why = v[2](x), nil
        for _, s in ipairs(SECRETS) do
          if text:find(s, 1, true) then why = ("shows %q"):format(s) break end
        end
        local shows = v.shows or R
        if not why and not text:find(shows, 1, true) then
          why = ("does not show %q (is it looking at the data?)"):format(shows)
        end
        if why then
          bad[#bad + 1] = ("%s %s:\n%s"):format(v[1], why, text:sub(1, 2000))
        end
      end
      assert(#bad == 0, #bad .. " of " .. #VIEWS .. " views failed:\n\n"
                        .. table.concat(bad, "\n\n"))

      -- The redacted payload keeps what is not secret, as written.
      local v = cjson.decode(env:ok("show", x.signup, "--json"))
      local p = v.payload
      assert.are.equal("ada", p.user)
      assert.are.equal(R, p.ssn)
      assert.are.equal("a", p.items[1].name)
      assert.are.equal(R, p.items[3][1].SESSION_COOKIE)
      assert.are.equal(1.5e300, p.deep.a.b.c.n)
      assert.are.equal(9007199254740991, p.n)
      assert.are.equal("fast", v.params.mode)
      assert.are.equal("fine", v.signal.payload.note)
      assert.are.equal(3, v.steps[1].checkpoint.cursor)
      assert.is_true(v.result.ok)

      -- Stored data is unchanged, and --raw / {raw = true} show it.
      local raw = cjson.decode(env:ok("show", x.signup, "--json", "--raw"))
      assert.are.equal("hunter2", raw.payload.password)
      assert.are.equal("123-45-6789", raw.payload.ssn)
      assert.are.equal("sig-secret", raw.signal.payload.token)
      assert.are.equal("cp-secret", raw.steps[1].checkpoint.session_token)
      assert.matches("hunter2", env:ok("show", x.signup, "--raw"), 1, true)
      assert.matches("k-one", env:ok("jobs", "--json", "--raw"), 1, true)
      local c = x.console("direct", true, ("job(%q, {raw = true})"):format(x.signup))
      assert.are.equal("hunter2", cjson.decode(c).payload.password)
      c = x.console("attached", true, ("job(%q, {raw = true})"):format(x.signup))
      assert.are.equal("123-45-6789", cjson.decode(c).payload.ssn)
      local r = env:pawl("console", "-e", ("job(%q, {rwa = true})"):format(x.signup))
      assert.are_not.equal(0, r.code)
      assert.matches("unknown option rwa", r.out .. r.err, 1, true)
      x.host:signal("TERM")
      assert.truthy(x.host:wait(H.HANG_S), x.host:stderr())
    end)

    -- A name a script adds reaches the views when a host loads it; a name
    -- a script no longer lists stays hidden, so that one node running an
    -- older copy of the script cannot reveal what the others hide.
    it_("a script's redact list reaches the views at reload, and only grows", function()
      env:script("plain", [[return { redact = { "pin" }, run = function() end }]])
      local id = env:enqueue("plain", '{"pin":"1234","card":"4242","zip":"02139"}')
      env:run_idle("--workers", "1")
      local v = cjson.decode(env:ok("show", id, "--json"))
      assert.are.equal(R, v.payload.pin)
      assert.are.equal("4242", v.payload.card)
      env:script("plain", [[return { redact = { "card" }, run = function() end }]])
      env:run_idle("--workers", "1")
      v = cjson.decode(env:ok("show", id, "--json"))
      assert.are.equal(R, v.payload.pin)
      assert.are.equal(R, v.payload.card)
      -- The older copy, without any redact: nothing is revealed.
      env:script("plain", [[return { run = function() end }]])
      env:run_idle("--workers", "1")
      v = cjson.decode(env:ok("show", id, "--json"))
      assert.are.equal(R, v.payload.pin)
      assert.are.equal(R, v.payload.card)
      assert.are.equal("02139", v.payload.zip)
    end)
  end)
end

scenarios("sqlite")
scenarios("postgres")

describe("pawl.redact_json", function()
  local env
  before_each(function() env = PG.env_for("sqlite") end)
  after_each(function() env:cleanup() end)

  it("applies the rule to any JSON text, with names of one's own", function()
    local out = env:ok("console", "-e", [[
return pawl.redact_json('{"a":[{"PassWord":{"x":1}}],"ssn":2,"n":1e400}', { "ssn" })]])
    assert.are.equal('{"a":[{"PassWord":"<redacted>"}],"ssn":"<redacted>","n":1e400}',
                     (out:gsub("%s+$", "")))
    -- Not JSON: one redacted value, never the text.
    out = env:ok("console", "-e", [[return pawl.redact_json('{"password":"x"')]])
    assert.are.equal('"<redacted>"', (out:gsub("%s+$", "")))
    local r = env:pawl("console", "-e", [[return pawl.redact_json('{}', { 1 })]])
    assert.are_not.equal(0, r.code)
    assert.matches("names must be strings", r.out .. r.err, 1, true)
  end)
end)
