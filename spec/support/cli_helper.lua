-- cli_helper.lua: drive the real `pawl` binary from busted specs.
--
-- Every run captures stdout, stderr and the exit status separately (stderr
-- and the status go through temp files, since io.popen only hands back
-- stdout), with $PAWL_DB removed from the environment so a spec never
-- touches a database it did not name. Each spec works in its own temp dir;
-- cleanup() removes it, whatever permissions a test left on it.
local cjson = require "cjson"

local M = {}

M.bin = assert(os.getenv("PAWL_BIN"), "PAWL_BIN must name the pawl binary")

-- Single-quotes a word for /bin/sh.
local function q(s)
  return "'" .. tostring(s):gsub("'", [['\'']]) .. "'"
end
M.quote = q

function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

function M.write_file(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end

-- os.execute returns 0 under Lua 5.1 semantics and true under 5.2's.
local function sh(cmd)
  local ok = os.execute(cmd)
  return ok == 0 or ok == true
end
M.sh = sh

-- Runs a shell command line and returns its stdout.
function M.capture(cmd)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("*a")
  p:close()
  return out
end

function M.exists(path)
  return sh("test -e " .. q(path))
end

-- Runs pawl with `args` (a list of words). opts.cwd: working directory;
-- opts.env: extra environment variables. Returns {out, err, code}.
function M.run(args, opts)
  opts = opts or {}
  local errf, codef = os.tmpname(), os.tmpname()
  local words = {}
  if opts.cwd then words[#words + 1] = "cd " .. q(opts.cwd) .. " &&" end
  words[#words + 1] = "env -u PAWL_DB"
  for k, v in pairs(opts.env or {}) do words[#words + 1] = q(k .. "=" .. v) end
  words[#words + 1] = q(M.bin)
  for _, a in ipairs(args) do words[#words + 1] = q(a) end
  local cmd = "{ " .. table.concat(words, " ") .. " 2>" .. q(errf) ..
              " </dev/null; echo $? >" .. q(codef) .. "; }"
  local out = M.capture(cmd)
  local err = M.read_file(errf) or ""
  local code = tonumber((M.read_file(codef) or ""):match("%d+"))
  os.remove(errf)
  os.remove(codef)
  return { out = out, err = err, code = code }
end

-- Runs the sqlite3 shell on a database file; returns its output.
function M.sqlite3(path, sql)
  return M.capture("sqlite3 " .. q(path) .. " " .. q(sql) .. " 2>&1")
end

M.have_sqlite3 = sh("command -v sqlite3 >/dev/null 2>&1")
M.is_root = M.capture("id -u"):match("^%s*0%s*$") ~= nil
M.user = M.capture("id -un"):match("^%s*(.-)%s*$")

-- A temp dir for one spec, with a database URL inside it.
local Env = {}
Env.__index = Env
M.Env = Env -- host_helper.lua builds on it

function M.env()
  local dir = os.tmpname()
  os.remove(dir)
  assert(sh("mkdir -m 700 " .. q(dir)), "cannot create " .. dir)
  local self = setmetatable({ dir = dir }, Env)
  self.db_path = dir .. "/pawl.db"
  self.db = "sqlite:" .. self.db_path
  return self
end

function Env:path(name) return self.dir .. "/" .. name end

-- pawl with --db pointing at this env's database (unless args give one),
-- and --create: a spec's first command makes the database, as it did
-- before only `pawl migrate` could (spec/functional/cli_data_spec.lua tests that).
function Env:pawl(...)
  local args = { "--db", self.db, "--create" }
  for _, a in ipairs({ ... }) do args[#args + 1] = a end
  return M.run(args)
end

-- Runs pawl and insists that it succeeded; returns stdout.
function Env:ok(...)
  local r = self:pawl(...)
  if r.code ~= 0 then
    error(("pawl %s failed (%s): %s"):format(table.concat({ ... }, " "),
                                             tostring(r.code), r.err), 2)
  end
  return r.out
end

-- Enqueues and returns the new id (trimmed).
function Env:enqueue(...)
  return (self:ok("enqueue", ...):gsub("%s+$", ""))
end

-- The job as stored (--raw: the specs check stored data; redaction in the
-- views is spec/functional/redact_spec.lua's).
function Env:show_json(id)
  return cjson.decode(self:ok("show", id, "--json", "--raw"))
end

function Env:cleanup()
  sh("chmod -R u+rwx " .. q(self.dir) .. " 2>/dev/null")
  sh("rm -rf " .. q(self.dir))
end

-- Decodes JSON Lines into a list of values.
function M.json_lines(s)
  local list = {}
  for line in s:gmatch("[^\n]+") do list[#list + 1] = cjson.decode(line) end
  return list
end

-- The lines of s, without their newlines.
function M.lines(s)
  local list = {}
  for line in s:gmatch("([^\n]*)\n") do list[#list + 1] = line end
  return list
end

-- "2026-11-21T21:05:03.123Z" -> ms since the epoch, independent of $TZ
-- (os.time would read the table as local time).
function M.iso_ms(s)
  local y, mo, d, h, mi, sec, ms =
    s:match("^(%d%d%d%d)-(%d%d)-(%d%d)T(%d%d):(%d%d):(%d%d)%.(%d%d%d)Z$")
  assert(y, "not a pawl timestamp: " .. tostring(s))
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * (mo > 2 and mo - 3 or mo + 9) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  return ((days * 24 + tonumber(h)) * 60 + tonumber(mi)) * 60000 +
         tonumber(sec) * 1000 + tonumber(ms)
end

-- Wall clock in ms (whole seconds are enough for "roughly now").
function M.now_ms() return os.time() * 1000 end

return M
