-- nginx_spec.lua: examples/nginx/ run as its users run it: Debian's nginx
-- with libnginx-mod-http-lua, two workers, the Lua module from an install
-- prefix (cmake --install, as spec/examples/install_check.sh makes one), driven
-- with curl on a loopback port. Every job enqueued over HTTP runs in a
-- worker (db:step from an ngx.timer) and succeeds; the workers use the
-- host's LuaJIT and no other; nginx stops on QUIT with nothing worse than
-- a notice in its error log. No sleeps: every wait ends on what the test
-- sees, under a hang guard.
local H = require "host_helper"
local ffi = require "ffi"
local cjson = require "cjson"

local build = assert(os.getenv("PAWL_BUILD_DIR"), "PAWL_BUILD_DIR")
local src = assert(os.getenv("PAWL_SOURCE_DIR"), "PAWL_SOURCE_DIR")
local NGINX = "/usr/sbin/nginx"
local LUA_MOD = "/usr/lib/nginx/modules/ngx_http_lua_module.so"

-- A sanitizer build's pawl.so needs its runtime in the process from the
-- start. Under AddressSanitizer the suite preloads it (LD_PRELOAD, which
-- nginx inherits here, as luajit does). The ThreadSanitizer suite
-- preloads nothing (it runs only the `threads` specs, this one is not),
-- and libtsan dlopen'ed later fails (static TLS). The plain build always
-- runs this spec.
local skip
if os.getenv("PAWL_TSAN") then
  skip = "ThreadSanitizer build: a TSan-built pawl.so loads only into a " ..
         "process started with libtsan, and nginx is not"
end

ffi.cdef [[
  struct pawl_ng_sockaddr_in {
    uint16_t family; uint16_t port; uint32_t addr; uint8_t zero[8];
  };
  int pawl_ng_socket(int domain, int type, int protocol) __asm__("socket");
  int pawl_ng_bind(int fd, const void *addr, unsigned len) __asm__("bind");
  int pawl_ng_getsockname(int fd, void *addr, unsigned *len)
      __asm__("getsockname");
  int pawl_ng_close(int fd) __asm__("close");
]]

-- A loopback port that was free a moment ago (the kernel's pick for a
-- socket bound to port 0). Someone may take it before nginx does: the
-- caller retries then.
local function free_port()
  local AF_INET, SOCK_STREAM = 2, 1
  local fd = ffi.C.pawl_ng_socket(AF_INET, SOCK_STREAM, 0)
  assert(fd >= 0, "socket failed")
  local sa = ffi.new("struct pawl_ng_sockaddr_in")
  sa.family = AF_INET
  sa.addr = ffi.abi("le") and bit.bswap(0x7f000001) or 0x7f000001
  local len = ffi.new("unsigned[1]", ffi.sizeof(sa))
  local ok = ffi.C.pawl_ng_bind(fd, sa, ffi.sizeof(sa)) == 0 and
             ffi.C.pawl_ng_getsockname(fd, sa, len) == 0
  ffi.C.pawl_ng_close(fd)
  assert(ok, "bind/getsockname failed")
  local p = sa.port
  return ffi.abi("le") and bit.rshift(bit.bswap(p), 16) or p
end

-- curl runs without the sanitizer runtime that the AddressSanitizer suite
-- preloads (examples_spec: it hangs curl's resolver). Returns the body
-- and the HTTP status.
local function curl(args)
  local out = H.capture("env -u LD_PRELOAD curl -s -S --max-time " .. H.HANG_S ..
                        " -w '\\n%{http_code}' " .. args .. " 2>&1")
  local body, status = out:match("^(.-)\n(%d%d%d)$")
  assert(body, "curl: " .. out)
  return (body:gsub("\n$", "")), tonumber(status)
end

local function url(port, path)
  return H.quote("http://127.0.0.1:" .. port .. path)
end

local function enqueue(port, jtype, text)
  local body, status = curl("--data-binary " .. H.quote(text) .. " " ..
                            url(port, "/enqueue?type=" .. jtype))
  assert.equal(200, status, body)
  return assert(body:match("^(%x+%-%x+%-%x+%-%x+%-%x+)$"), body)
end

local function show(port, id)
  local body, status = curl(url(port, "/job?id=" .. id))
  assert.equal(200, status, body)
  return cjson.decode(body)
end

-- One install prefix for the file: the installed module is what nginx
-- loads, as an embedder's would.
local prefix
local function install()
  if prefix then return prefix end
  prefix = os.tmpname()
  os.remove(prefix)
  assert(H.sh("cmake --install " .. H.quote(build) .. " --prefix " ..
              H.quote(prefix) .. " >/dev/null"), "cmake --install failed")
  return prefix
end

-- The user nginx.conf names (`user www-data;`): nginx started as root
-- runs its workers as it.
local WORKER_USER = "www-data"

-- Sets up a copy of examples/nginx in env's dir (nginx's prefix) as its
-- comments tell an operator to: logs/, and data/ for the database
-- (env.db_path), owned by the workers' user when nginx starts as root.
-- The prefix stays the starter's: the workers can read the configuration
-- and pawl_jobs.lua but not change them. `opts.no_chown`: the operator
-- forgot to hand data/ over.
local function setup_prefix(env, opts)
  local dir = env.dir .. "/"
  assert(H.sh("cp " .. H.quote(src .. "/examples/nginx/nginx.conf") .. " " ..
              H.quote(src .. "/examples/nginx/pawl_jobs.lua") .. " " ..
              H.quote(dir) .. " && mkdir " .. H.quote(dir .. "logs") ..
              " " .. H.quote(dir .. "data")))
  if H.is_root then
    -- The workers must reach the prefix (H.env made it 0700).
    assert(H.sh("chmod 755 " .. H.quote(dir)))
    if not (opts and opts.no_chown) then
      assert(H.sh("chown " .. WORKER_USER .. ": " .. H.quote(dir .. "data")))
    end
  end
  env.db_path = dir .. "data/pawl.db"
  env.db = "sqlite:" .. env.db_path
end

-- Starts nginx on env's prefix (setup_prefix) with nginx.conf as shipped
-- but for one edit: its `listen 127.0.0.1:8080;` becomes a free loopback
-- port (and -g 'daemon off;' keeps the master in the foreground). Returns
-- the process (the master), the port and the answer to a first request
-- once it answers; that answer must match `want` (default: a worker whose
-- store is open).
local function start_nginx(env, want)
  local dir = env.dir .. "/"
  local conf = assert(H.read_file(dir .. "nginx.conf"))
  local globals = "daemon off;"
  for _ = 1, 5 do
    -- A failed try's [emerg] must not fail the run that follows it.
    os.remove(dir .. "logs/error.log")
    local port = free_port()
    local text, n = conf:gsub("listen 127%.0%.0%.1:8080;",
                              "listen 127.0.0.1:" .. port .. ";")
    assert(n == 1, "nginx.conf has no `listen 127.0.0.1:8080;`")
    H.write_file(dir .. "nginx.conf", text)
    local p = env:spawn_program { "/usr/bin/env",
      "LUA_CPATH=" .. install() .. "/lib/lua/5.1/?.so;;",
      NGINX, "-p", dir, "-c", "nginx.conf", "-g", globals }
    -- nginx has bound its port once it starts its workers (it logs
    -- that); a connection made earlier might reach whoever holds the port.
    local up = env:wait_until("nginx to start its workers", function()
      if not p:alive() then return "ended" end
      local log = H.read_file(dir .. "logs/error.log") or ""
      return log:find("start worker processes", 1, true) and "up"
    end)
    if up == "up" then
      -- A worker accepts once its init_worker has run. One whose
      -- pawl.open failed answers "pawl: why".
      local body, status = curl(url(port, "/job?id=none"))
      assert.matches(want or "^invalid job id", body)
      return p, port, body, status
    end
    -- Only a port taken meanwhile is worth another try.
    local log = (H.read_file(dir .. "logs/error.log") or "") .. p:stderr()
    assert(log:find("Address already in use", 1, true),
           "nginx did not start:\n" .. log)
  end
  error("no free port in 5 tries")
end

-- The real uid a process runs as.
local function uid_of(pid)
  local status = assert(H.read_file(("/proc/%d/status"):format(pid)))
  return tonumber(status:match("\nUid:%s+(%d+)"))
end

-- The pids of the master's children (its workers).
local function workers(master)
  local text = H.read_file(("/proc/%d/task/%d/children"):format(master, master))
  local pids = {}
  for pid in (text or ""):gmatch("%d+") do pids[#pids + 1] = tonumber(pid) end
  return pids
end

describe("examples/nginx", function()
  local env
  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)
  lazy_teardown(function()
    if prefix then H.sh("rm -rf " .. H.quote(prefix)) end
  end)

  it("runs every job enqueued over HTTP in its workers, on nginx's LuaJIT", function()
    if skip then
      print("skipped: " .. skip)
      pending(skip)
      return
    end
    setup_prefix(env)
    local p, port = start_nginx(env)

    -- Word counts, one request at a time: each id with what it must count.
    local want = {}
    for i = 1, 20 do
      local words = {}
      for w = 1, i do words[w] = "w" .. w end
      want[enqueue(port, "words", table.concat(words, " \n"))] = i
    end
    -- And a burst of digests, eight connections at once: both workers
    -- enqueue and step the one database together.
    local many = {}
    for _ = 1, 30 do many[#many + 1] = url(port, "/enqueue?type=digest") end
    local out = H.capture("env -u LD_PRELOAD curl -s -S --max-time " ..
                          H.HANG_S .. " -Z --parallel-max 8 --data-binary hello " ..
                          table.concat(many, " ") .. " 2>&1")
    local digests = {}
    for id in out:gmatch("(%x+%-%x+%-%x+%-%x+%-%x+)\n") do
      digests[#digests + 1] = id
    end
    assert.equal(30, #digests, out)

    local pids = {}
    env:wait_until("every job to succeed", function()
      for id, n in pairs(want) do
        local j = show(port, id)
        assert.is_nil(j.state == "failed" or j.state == "dead" or nil, j.error)
        if j.state ~= "succeeded" then return false end
        assert.equal(n, j.result.words)
        pids[j.result.pid] = true
      end
      for _, id in ipairs(digests) do
        local j = show(port, id)
        assert.is_nil(j.state == "failed" or j.state == "dead" or nil, j.error)
        if j.state ~= "succeeded" then return false end
        assert.equal("5d41402abc4b2a76b9719d911017c592", j.result.md5)
      end
      return true
    end)

    -- The jobs ran in the workers (the master's children), and each
    -- worker maps one LuaJIT, the library nginx's lua module links, and
    -- the installed pawl.so, never libpawl.so (which carries a LuaJIT of
    -- its own).
    local kids = workers(p.pid)
    assert.equal(2, #kids)
    -- Started as root, the master keeps root and the workers (who ran
    -- the jobs and wrote the database) are www-data, not root.
    if H.is_root then
      local www = tonumber(H.capture("id -u " .. WORKER_USER))
      assert.equal(0, uid_of(p.pid))
      for _, k in ipairs(kids) do assert.equal(www, uid_of(k), "worker " .. k) end
      assert.equal(WORKER_USER, H.capture("stat -c %U " ..
                                          H.quote(env.db_path)):match("%S+"))
    end
    local is_kid = {}
    for _, k in ipairs(kids) do is_kid[k] = true end
    for pid in pairs(pids) do assert.is_true(is_kid[pid], "pid " .. pid) end
    local module_lj = H.capture("ldd " .. LUA_MOD):match("libluajit[^ ]* => (%S+)")
    assert.truthy(module_lj, "ngx_http_lua_module.so links no libluajit")
    local real_lj = H.capture("readlink -f " .. H.quote(module_lj)):match("%S+")
    for _, k in ipairs(kids) do
      local maps = assert(H.read_file(("/proc/%d/maps"):format(k)))
      local files = {}
      for path in maps:gmatch("(/%S+)\n") do files[path] = true end
      local luajits = {}
      for path in pairs(files) do
        if path:find("luajit", 1, true) then luajits[#luajits + 1] = path end
      end
      assert.same({ real_lj }, luajits)
      assert.is_true(files[prefix .. "/lib/lua/5.1/pawl.so"], "pawl.so not mapped")
      for path in pairs(files) do
        assert.is_nil(path:find("libpawl", 1, true), path)
      end
    end

    -- QUIT: the workers finish what they serve, close their handles and
    -- exit; so does the master.
    assert(H.sh("kill -s QUIT " .. p.pid))
    assert.equal(0, p:wait(H.HANG_S), p:stderr())
    local log = H.read_file(env:path("logs/error.log")) or ""
    assert.is_nil(log:match("%[alert%]") or log:match("%[crit%]") or
                  log:match("%[emerg%]"), log)
    assert.matches("exit", log)
    assert.equal(50, env:count_state("succeeded"))
    assert.equal(0, env:count_state("pending"))
    assert.equal(0, env:count_state("running"))
    print(("nginx: 2 workers, %d jobs succeeded, run by workers %s"):format(
      50, table.concat((function()
        local t = {}
        for pid in pairs(pids) do t[#t + 1] = tostring(pid) end
        table.sort(t)
        return t
      end)(), ", ")))
  end)

  it("answers 503 and why when the workers cannot write data/", function()
    if skip then
      print("skipped: " .. skip)
      pending(skip)
      return
    end
    -- As root: data/ left root's (the chown forgotten); as another user:
    -- data/ read-only for its owner.
    setup_prefix(env, { no_chown = true })
    if not H.is_root then
      assert(H.sh("chmod 555 " .. H.quote(env.dir .. "/data")))
    end
    local p, port, body, status = start_nginx(env, "^pawl: cannot create ")
    assert.equal(503, status)
    assert.truthy(body:find("/data is not writable", 1, true), body)
    local enq, enq_status = curl("--data-binary hi " .. url(port, "/enqueue"))
    assert.equal(503, enq_status)
    assert.truthy(enq:find("is not writable", 1, true), enq)
    local log = H.read_file(env:path("logs/error.log")) or ""
    assert.truthy(log:find("is not writable", 1, true), log)
    assert(H.sh("kill -s QUIT " .. p.pid))
    assert.equal(0, p:wait(H.HANG_S), p:stderr())
    assert.is_nil(H.read_file(env.db_path))
  end)

  it("uses the host's Lua API: the installed pawl.so links no LuaJIT of its own", function()
    local dir = install() .. "/lib/lua/5.1/pawl.so"
    local undef = H.capture("nm -D --undefined-only " .. H.quote(dir))
    for _, sym in ipairs { "lua_newstate", "lua_pcall", "lua_sethook" } do
      assert.matches(" U " .. sym .. "\n", undef, 1, true)
    end
    local defined = H.capture("nm -D --defined-only " .. H.quote(dir))
    for name in defined:gmatch(" %u (%S+)\n") do
      assert.is_nil(name:match("^lua_") or name:match("^luaL_") or
                    name:match("^luaJIT_") or name:match("^lj_"), name)
    end
    assert.is_nil(H.capture("ldd " .. H.quote(dir)):find("luajit", 1, true))
  end)
end)
