-- pg_helper.lua: PostgreSQL for busted specs that run real `pawl run` hosts.
--
-- The ctest fixture `pg` (spec/support/pg_server.sh) starts one throwaway
-- server per test run and names a file holding its admin URL in
-- $PAWL_TEST_PG_URL_FILE. Each test gets a schema of its own on it (pawl's
-- tables live in the schema named first in search_path); a test that must
-- stop the server starts a private one instead (M.server).
--
-- Builds on host_helper: M.env() is a host_helper env whose database is a
-- fresh schema, and whose cleanup also drops the schema and stops the
-- private servers it started.
local ffi = require "ffi"
local H = require "host_helper"
local C = require "cli_helper"

local M = setmetatable({}, { __index = H })

-- host_helper declared struct pawl_spec_timespec; our own names for the
-- libc functions, bound by __asm__, so no declaration can clash.
ffi.cdef [[
  int pawl_pgh_setenv(const char *name, const char *value, int overwrite)
      __asm__("setenv");
  int pawl_pgh_unsetenv(const char *name) __asm__("unsetenv");
  int pawl_pgh_getpid(void) __asm__("getpid");
  int pawl_pgh_clock_gettime(int clk, struct pawl_spec_timespec *ts)
      __asm__("clock_gettime");
]]

local CLOCK_REALTIME = 0

-- Wall-clock seconds (float), the clock pawl.time() reads in job code.
function M.wall()
  local ts = ffi.new("struct pawl_spec_timespec")
  ffi.C.pawl_pgh_clock_gettime(CLOCK_REALTIME, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- Why PostgreSQL tests are skipped (PAWL_TEST_NO_PG), or nil.
function M.skip_reason()
  local v = os.getenv("PAWL_TEST_NO_PG")
  if v and v ~= "" then
    return "PAWL_TEST_NO_PG is set: PostgreSQL tests are SKIPPED"
  end
  return nil
end

-- The fixture server's admin URL; raises with what to do when there is
-- none.
function M.admin_url()
  local file = os.getenv("PAWL_TEST_PG_URL_FILE")
  if not file or file == "" then
    error("no PostgreSQL server: PAWL_TEST_PG_URL_FILE is not set. Run this "
          .. "spec through ctest (cd build && ctest -R multinode), which "
          .. "starts one (the pg fixture), or set PAWL_TEST_NO_PG=1 to skip "
          .. "the PostgreSQL tests", 2)
  end
  local url = C.read_file(file)
  if not url or trim(url) == "" then
    error(("no PostgreSQL server: %s (PAWL_TEST_PG_URL_FILE) is missing or "
           .. "empty; did the pg.start fixture test fail? Set "
           .. "PAWL_TEST_NO_PG=1 to skip the PostgreSQL tests"):format(file), 2)
  end
  return trim(url)
end

-- The socket directory and port of a pg_server.sh URL
-- (postgresql://postgres@/postgres?host=DIR&port=PORT).
function M.parse_url(url)
  local host = url:match("[?&]host=([^&]+)")
  local port = url:match("[?&]port=(%d+)")
  assert(host and port, "not a pg_server.sh URL: " .. url)
  return host, port
end

-- A pawl --db value for `schema` on the server of `url`.
function M.conninfo(url, schema)
  local host, port = M.parse_url(url)
  return ("postgres:host=%s port=%s user=postgres dbname=postgres "
          .. "options=-csearch_path=%s"):format(host, port, schema)
end

-- Runs SQL through psql (unaligned, tuples only, "|" between columns);
-- returns its output, raises with psql's message if it fails.
function M.psql(url, sql)
  local errf = os.tmpname()
  -- Without the sanitizer runtime the ASan build preloads into this
  -- process: in psql (not built for it) it can deadlock.
  local cmd = ("env -u LD_PRELOAD psql %s -X -A -t -q -v ON_ERROR_STOP=1 -c %s 2>%s </dev/null; echo \"rc=$?\"")
              :format(C.quote(url), C.quote(sql), C.quote(errf))
  local out = C.capture(cmd)
  local err = C.read_file(errf) or ""
  os.remove(errf)
  local body, rc = out:match("^(.-)rc=(%d+)%s*$")
  if rc ~= "0" then
    error(("psql failed (%s): %s\nSQL: %s"):format(tostring(rc), err, sql), 2)
  end
  return body
end

-- psql's rows as lists of column texts.
function M.rows(url, sql)
  local list = {}
  for line in M.psql(url, sql):gmatch("[^\n]+") do
    local cols = {}
    for c in (line .. "|"):gmatch("([^|]*)|") do cols[#cols + 1] = c end
    list[#list + 1] = cols
  end
  return list
end

-- One number from SQL.
function M.scalar(url, sql)
  return tonumber(trim(M.psql(url, sql)))
end

local schema_seq = 0

-- Creates a fresh schema on `url`; returns its name.
function M.create_schema(url, prefix)
  schema_seq = schema_seq + 1
  local name = ("%s_%d_%d_%d"):format(prefix or "spec", ffi.C.pawl_pgh_getpid(),
                                      os.time() % 100000, schema_seq)
  M.psql(url, "CREATE SCHEMA " .. name)
  return name
end

-- ---- private servers ----------------------------------------------------

local function server_script()
  local src = assert(os.getenv("PAWL_SOURCE_DIR"),
                     "PAWL_SOURCE_DIR must name the source tree (ctest sets it)")
  return src .. "/spec/support/pg_server.sh"
end

local function run_server(...)
  local words = { "env -u LD_PRELOAD sh", C.quote(server_script()) }
  for _, a in ipairs({ ... }) do words[#words + 1] = C.quote(a) end
  local errf = os.tmpname()
  local out = C.capture(table.concat(words, " ") .. " 2>" .. C.quote(errf)
                        .. " </dev/null; echo \"rc=$?\"")
  local err = C.read_file(errf) or ""
  os.remove(errf)
  local body, rc = out:match("^(.-)rc=(%d+)%s*$")
  if rc ~= "0" then
    error(("pg_server.sh %s failed (%s): %s%s"):format(table.concat({ ... }, " "),
          tostring(rc), body or out, err), 3)
  end
  return body
end

M.server = {}

-- Starts a private server whose state lives in `state` (a directory);
-- returns its admin URL.
function M.server.start(state)
  local out = run_server("start", state, "test")
  local url = out:match("(postgresql://%S+)")
  assert(url, "pg_server.sh start printed no URL: " .. out)
  return url
end

-- Fast shutdown (sessions are cut), down for `seconds`, up again on the
-- same port. Blocks until the server is back.
function M.server.restart(state, seconds)
  run_server("restart", state, tostring(seconds or 0))
end

-- Fast shutdown (sessions are cut), keeping the data and the port:
-- M.server.up brings it back. Blocks until it is down.
function M.server.down(state)
  run_server("down", state)
end

-- Starts a server stopped by M.server.down. Blocks until it is up.
function M.server.up(state)
  run_server("up", state)
end

function M.server.stop(state)
  pcall(run_server, "stop", state)
end

-- ---- the test environment -----------------------------------------------

-- Env's methods fall back on host_helper's env (whose metatable host_helper
-- keeps to itself: taken from the first env made).
local Env = {}
Env.__index = Env
local HEnv

-- A host_helper env (temp dir, scripts dir, processes) whose database is a
-- new schema on the server of `url` (default: the fixture's; false: none
-- yet, call env:use_server(env:private_server()) ).
function M.env(url, prefix)
  local self = H.env()
  if not HEnv then
    HEnv = getmetatable(self)
    setmetatable(Env, { __index = HEnv })
  end
  setmetatable(self, Env)
  self.servers = {}
  if url == false then return self end
  local ok, err = pcall(function() self:use_server(url or M.admin_url(), prefix) end)
  if not ok then
    self:cleanup()
    error(err, 2)
  end
  return self
end

-- An env for `backend` ("sqlite" or "postgres"), its database migrated:
-- H.env(), or M.env() on the fixture's server (nil when PostgreSQL tests
-- are skipped: M.skip_reason() says why).
function M.env_for(backend)
  local env
  if backend == "postgres" then
    if M.skip_reason() then return nil end
    env = M.env()
  else
    env = H.env()
  end
  local r = C.run({ "--db", env.db, "migrate" })
  if r.code ~= 0 then
    env:cleanup()
    error("migrate: " .. r.err, 2)
  end
  return env
end

-- The stores a test of several `pawl run` nodes runs on, for a spec that
-- loops over them with one body per property: SQLite (several processes
-- on one database file) and PostgreSQL (a schema of its own on the
-- fixture's server). Each entry has `name`; `env(prefix)`, a fresh env of
-- this helper (env:start_with), its database not migrated yet; and
-- `test`, the spec's `it`, or, for PostgreSQL when its tests are skipped,
-- its `pending` with a name that says why. (busted's `it` and `pending`
-- live in the spec file's environment, not in this module's: the spec
-- passes them.)
function M.backends(it, pending)
  local skip = M.skip_reason()
  return {
    { name = "SQLite", key = "sqlite", test = it,
      env = function() return M.env(false) end },
    { name = "PostgreSQL", key = "postgres",
      test = skip and function(name) pending(name .. " -- SKIPPED: " .. skip) end or it,
      env = function(prefix) return M.env(nil, prefix) end },
  }
end

-- Points the env at a new schema on the server of `url`: self.db for pawl,
-- self.sql_url for psql (search_path set to the schema).
function Env:use_server(url, prefix)
  self.url = url
  self.schema = M.create_schema(url, prefix)
  self.db = M.conninfo(url, self.schema)
  self.sql_url = url .. "&options=-csearch_path%3D" .. self.schema
  self.db_path = nil
end

-- Starts a private server (stopped by cleanup); returns its URL.
function Env:private_server(name)
  local state = self:path(name or "pgstate")
  self.servers[#self.servers + 1] = state
  return M.server.start(state)
end

-- SQL in this env's schema.
function Env:psql(sql) return M.psql(self.sql_url, sql) end
function Env:rows(sql) return M.rows(self.sql_url, sql) end
function Env:scalar(sql) return M.scalar(self.sql_url, sql) end

-- Starts `pawl run` with extra environment variables (a table): set in
-- this process around the fork, so the child inherits them.
function Env:start_with(vars, ...)
  for k, v in pairs(vars) do ffi.C.pawl_pgh_setenv(k, v, 1) end
  local ok, p = pcall(self.start, self, ...)
  for k in pairs(vars) do ffi.C.pawl_pgh_unsetenv(k) end
  if not ok then error(p, 2) end
  return p
end

function Env:cleanup()
  for _, p in ipairs(self.procs) do p:kill() end
  if self.url and self.schema then
    pcall(M.psql, self.url, "DROP SCHEMA IF EXISTS " .. self.schema .. " CASCADE")
  end
  for _, state in ipairs(self.servers) do M.server.stop(state) end
  self.servers = {}
  HEnv.cleanup(self)
end

return M
