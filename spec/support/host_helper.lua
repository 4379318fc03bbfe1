-- host_helper.lua: run the real `pawl run` host from busted specs.
--
-- Builds on cli_helper: every test gets a temp dir holding its database and
-- a scripts dir it writes job scripts into. Hosts are started in the
-- background with fork/exec through the LuaJIT FFI, so the spec knows the
-- pawl process's own pid (to signal it), its exit status (waitpid) and has
-- its stdout and stderr in files. cleanup() kills whatever is still
-- running (by the pids it started, nothing else) and removes the dir.
local ffi = require "ffi"
local cjson = require "cjson"
local C = require "cli_helper"

local M = setmetatable({}, { __index = C })

-- Declared under names of our own (bound to the libc symbols), so that a
-- declaration another module made of the same function cannot clash.
ffi.cdef [[
  struct pawl_spec_timespec { long tv_sec; long tv_nsec; };
  int pawl_spec_fork(void) __asm__("fork");
  int pawl_spec_execv(const char *path, char *const argv[]) __asm__("execv");
  int pawl_spec_dup2(int oldfd, int newfd) __asm__("dup2");
  int pawl_spec_open(const char *path, int flags, int mode) __asm__("open");
  void pawl_spec_exit(int status) __asm__("_exit");
  int pawl_spec_waitpid(int pid, int *status, int options) __asm__("waitpid");
  int pawl_spec_kill(int pid, int sig) __asm__("kill");
  int pawl_spec_setpgid(int pid, int pgid) __asm__("setpgid");
  int pawl_spec_unsetenv(const char *name) __asm__("unsetenv");
  int pawl_spec_clock_gettime(int clk, struct pawl_spec_timespec *ts)
      __asm__("clock_gettime");
  int pawl_spec_poll(void *fds, unsigned long nfds, int timeout) __asm__("poll");
  int pawl_spec_sigprocmask(int how, const void *set, void *old)
      __asm__("sigprocmask");
  void *pawl_spec_signal(int sig, void *handler) __asm__("signal");
]]
local L = setmetatable({}, { __index = function(_, k) return ffi.C["pawl_spec_" .. k] end })

local SIG = { INT = 2, KILL = 9, TERM = 15 }
local O_WRONLY, O_CREAT, O_TRUNC = 1, 64, 512
local WNOHANG = 1
local CLOCK_MONOTONIC = 1
local SIG_SETMASK = 2

-- Monotonic seconds.
function M.mono()
  local ts = ffi.new("struct pawl_spec_timespec")
  L.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
end

function M.sleep(s)
  L.poll(nil, 0, math.floor(s * 1000 + 0.5))
end

-- How long the specs wait for something that should happen (a job to run,
-- a host to stop) before they call it a hang. Only a hang guard: every wait
-- ends as soon as its condition holds, so a generous cap costs nothing
-- when things work, and a slow, loaded or instrumented machine (a 2-core
-- CI runner under AddressSanitizer, with a CPU hog beside it) never meets it.
M.HANG_S = 60

-- Polls fn() every 20 ms until it returns something true, and returns
-- that; raises `what` after `timeout` seconds (default M.HANG_S).
function M.wait_until(what, fn, timeout)
  local deadline = M.mono() + (timeout or M.HANG_S)
  while true do
    local v = fn()
    if v then return v end
    if M.mono() > deadline then error("timed out waiting for " .. what, 2) end
    M.sleep(0.02)
  end
end

-- ---- a background pawl process -----------------------------------------

local Proc = {}
Proc.__index = Proc

-- Starts `argv` (argv[1] is the program's path) with stdin from /dev/null
-- and stdout/stderr into the given files, in a process group of its own,
-- without $PAWL_DB, with default signal handling.
local function spawn(argv, out_path, err_path)
  -- Everything the child touches is built before fork.
  local cargv = ffi.new("char *[?]", #argv + 1)
  local keep = {}
  for i, a in ipairs(argv) do
    local s = ffi.new("char[?]", #a + 1, a)
    keep[i] = s
    cargv[i - 1] = s
  end
  cargv[#argv] = nil
  local empty = ffi.new("uint8_t[128]")
  local pid = L.fork()
  assert(pid >= 0, "fork failed")
  if pid == 0 then
    L.setpgid(0, 0)
    L.sigprocmask(SIG_SETMASK, empty, nil)
    L.signal(SIG.INT, nil)
    L.signal(SIG.TERM, nil)
    local inp = L.open("/dev/null", 0, 0)
    local out = L.open(out_path, O_WRONLY + O_CREAT + O_TRUNC, 384)
    local err = L.open(err_path, O_WRONLY + O_CREAT + O_TRUNC, 384)
    if inp < 0 or out < 0 or err < 0 then L.exit(126) end
    L.dup2(inp, 0)
    L.dup2(out, 1)
    L.dup2(err, 2)
    L.unsetenv("PAWL_DB")
    L.execv(cargv[0], cargv)
    L.exit(127)
  end
  -- Also from the parent, so a signal to the group cannot miss the child.
  L.setpgid(pid, pid)
  return setmetatable({ pid = pid, out_path = out_path, err_path = err_path,
                        started = M.mono(), keep = keep, argv = argv }, Proc)
end

-- The exit status once the process has ended (128 + N if signal N killed
-- it), else nil. Reaps it.
function Proc:poll()
  if self.code then return self.code end
  local st = ffi.new("int[1]")
  local r = L.waitpid(self.pid, st, WNOHANG)
  if r == self.pid then
    local s = st[0]
    if bit.band(s, 0x7f) == 0 then
      self.code = bit.band(bit.rshift(s, 8), 0xff)
    else
      self.code = 128 + bit.band(s, 0x7f)
    end
    self.ended = M.mono()
  end
  return self.code
end

-- Waits up to `timeout` seconds for the process to end; its status or nil.
function Proc:wait(timeout)
  local deadline = M.mono() + timeout
  while not self:poll() do
    if M.mono() > deadline then return nil end
    M.sleep(0.01)
  end
  return self.code
end

function Proc:alive() return self:poll() == nil end

function Proc:signal(name)
  assert(self:alive(), "the process has already ended")
  local sig = assert(SIG[name], name)
  assert(L.kill(self.pid, sig) == 0, "kill failed")
end

-- Kills the process and reaps it, and kills what is left of its process
-- group (children it started, such as a job's `sleep`, may outlive it).
function Proc:kill()
  L.kill(-self.pid, SIG.KILL)
  if not self:alive() then return end
  L.kill(self.pid, SIG.KILL)
  self:wait(10)
end

function Proc:stderr() return C.read_file(self.err_path) or "" end
function Proc:stdout() return C.read_file(self.out_path) or "" end

-- How many lines of stderr contain `text` (plain).
function Proc:count(text)
  local n = 0
  for line in self:stderr():gmatch("[^\n]+") do
    if line:find(text, 1, true) then n = n + 1 end
  end
  return n
end

-- ---- the test environment ----------------------------------------------

local Env = setmetatable({}, { __index = C.Env })
Env.__index = Env

function M.env()
  local self = setmetatable(C.env(), Env)
  self.scripts = self:path("scripts")
  assert(C.sh("mkdir " .. C.quote(self.scripts)))
  self.procs = {}
  self.nstarted = 0
  return self
end

-- Writes scripts/NAME.lua atomically (a temp file renamed over it), so a
-- host scanning the directory never sees a half-written script. The temp
-- name starts with a dot: the host ignores such files.
function Env:script(name, src)
  local path = self.scripts .. "/" .. name .. ".lua"
  local tmp = self.scripts .. "/." .. name .. ".tmp"
  C.write_file(tmp, src)
  assert(os.rename(tmp, path))
  return path
end

-- Enqueues a job of `jtype` with the scripts dir given, so the script's
-- queue, priority and max_attempts apply; returns the id.
function Env:enqueue(jtype, payload, ...)
  local out = self:ok("enqueue", jtype, payload or "{}", "--scripts",
                      self.scripts, ...)
  return (out:gsub("%s+$", ""))
end

-- Payload JSON from a Lua table.
function M.json(t) return cjson.encode(t) end

function Env:show(id) return self:show_json(id) end

-- How many jobs `pawl jobs` lists in `state` (at most 1,000), each
-- checked to be in it.
function Env:count_state(state)
  local n = 0
  for line in self:ok("jobs", "--json", "--state", state, "--limit",
                      "1000"):gmatch("[^\n]+") do
    assert(cjson.decode(line).state == state, "not " .. state .. ": " .. line)
    n = n + 1
  end
  return n
end

-- `pawl show ID --json` as text: every stored field of the job, its
-- attempts, events and logs.
function Env:show_text(id) return self:ok("show", id, "--json", "--raw") end

-- What `pawl run` needs for job code that waits at a gate (see Env:gate):
-- the gate is a file the job opens with io.open, which job code may use
-- only when the operator grants it (--allow-io). Every host of an env
-- with a gate gets these.
M.GATE_RUN_ARGS = { "--allow-io" }

-- Starts `pawl --db DB --create run --scripts DIR ARGS...` in the
-- background (--create: a host may be a spec's first command).
function Env:start(...)
  local args = { "--db", self.db, "--create", "run", "--scripts", self.scripts }
  if self.gated then
    for _, a in ipairs(M.GATE_RUN_ARGS) do args[#args + 1] = a end
  end
  for _, a in ipairs({ ... }) do args[#args + 1] = a end
  return self:spawn(unpack(args))
end

-- Starts `pawl ARGS...` in the background (no --db added).
function Env:spawn(...)
  self.nstarted = self.nstarted + 1
  local argv = { C.bin, ... }
  local n = self.nstarted
  local p = spawn(argv, self:path("proc" .. n .. ".out"),
                  self:path("proc" .. n .. ".err"))
  self.procs[#self.procs + 1] = p
  return p
end

-- Starts another program in the background: argv[1] is its path (an
-- example program, a server), with the same files and cleanup.
function Env:spawn_program(argv)
  self.nstarted = self.nstarted + 1
  local n = self.nstarted
  local p = spawn(argv, self:path("proc" .. n .. ".out"),
                  self:path("proc" .. n .. ".err"))
  self.procs[#self.procs + 1] = p
  return p
end

-- Runs a host with --until-idle and waits for it to end by itself; returns
-- the finished process. The cap (twice M.HANG_S) is a hang guard only:
-- runs in the specs take a second or two, ten times that under
-- AddressSanitizer on a loaded machine.
function Env:run_idle(...)
  local p = self:start("--until-idle", ...)
  if not p:wait(2 * M.HANG_S) then
    p:kill()
    error("pawl run --until-idle did not end by itself; stderr:\n" .. p:stderr(), 2)
  end
  return p
end

-- M.wait_until, with what the processes this env started said when it
-- times out (a host that died at start explains a job that never ran).
function Env:wait_until(what, fn, timeout)
  local ok, v = pcall(M.wait_until, what, fn, timeout)
  if ok then return v end
  local parts = { tostring(v) }
  for _, p in ipairs(self.procs) do
    parts[#parts + 1] = ("-- %s (%s):\n%s"):format(table.concat(p.argv, " ", 2),
      p:alive() and "running" or "exited " .. p.code, p:stderr())
  end
  error(table.concat(parts, "\n"), 2)
end

-- Waits until job `id` is in `state`; returns the job.
function Env:wait_state(id, state, timeout)
  return self:wait_until(("job %s to be %s"):format(id, state), function()
    local j = self:show(id)
    return j.state == state and j
  end, timeout)
end

-- The nodes `pawl nodes --json` lists: id -> row (incarnation, last_beat,
-- running, ...). The CLI reads both stores alike.
function Env:nodes()
  local by_id = {}
  for line in self:ok("nodes", "--json"):gmatch("[^\n]+") do
    local n = cjson.decode(line)
    by_id[n.id] = n
  end
  return by_id
end

-- Waits until node `id` is listed with an incarnation other than
-- `not_incarnation` (its poller runs: a node beats once its workers are
-- ready); returns the incarnation.
function Env:wait_node(id, not_incarnation, timeout)
  return self:wait_until(("node %s to be up"):format(id), function()
    local n = self:nodes()[id]
    return n and n.incarnation ~= not_incarnation and n.incarnation
  end, timeout)
end

-- Every job as `pawl jobs --json --raw` lists it (newest first), of type
-- `jtype` if given.
function Env:all_jobs(jtype)
  local args = { "jobs", "--json", "--raw", "--limit", "1000000" }
  if jtype then args[#args + 1] = "--type" args[#args + 1] = jtype end
  local list = {}
  for line in self:ok(unpack(args)):gmatch("[^\n]+") do list[#list + 1] = cjson.decode(line) end
  return list
end

-- How many of `jobs` (a list of jobs as pawl prints them) have each value
-- of `field`: value -> count.
function M.tally(jobs, field)
  local t = {}
  for _, j in ipairs(jobs) do
    local v = j[field]
    if v == nil or v == cjson.null then v = "(none)" end
    t[v] = (t[v] or 0) + 1
  end
  return t
end

-- ---- gates --------------------------------------------------------------
--
-- A gate holds a job at a point of its body until the test opens it, so a
-- spec that needs a job to be running at some moment does not bet on how
-- long a busy-wait or a sleep lasts on this machine. The job calls
-- pawl_gate(path) (defined by M.GATE_LUA, which a script puts before its
-- own code); the test gets the path from env:gate() and passes it in the
-- payload:
--
--   local g = env:gate()
--   env:script("held", H.GATE_LUA .. [[
--   return { run = function(job) pawl_gate(job.payload.gate) return "done" end }]])
--   local id = env:enqueue("held", H.json { gate = g.path })
--   g:wait_reached()   -- the job is in its body, waiting
--   ...                -- whatever must happen while it runs
--   g:open()           -- and now it may go on
--
-- pawl_gate(path [, timeout_s]) appends a line to PATH.reached (so the test
-- knows how many jobs got there), then waits for the file PATH to exist,
-- looking every 10 ms with pawl.sleep (which a job timeout or a host that
-- stops cuts short). A gate never opened raises "gate PATH was not opened
-- within N s" after timeout_s (default M.GATE_S), so a job left at a
-- closed gate ends by itself, with an error saying why.
M.GATE_S = 60

M.GATE_LUA = ([[
local function pawl_gate(path, timeout_s)
  local mark = assert(io.open(path .. ".reached", "a"))
  mark:write("reached\n")
  mark:close()
  local deadline = pawl.time() + (timeout_s or %d)
  while true do
    local f = io.open(path, "r")
    if f then f:close() return end
    if pawl.time() > deadline then
      error(("gate %%s was not opened within %%g s"):format(path, timeout_s or %d))
    end
    pawl.sleep(0.01)
  end
end
]]):format(M.GATE_S, M.GATE_S)

local Gate = {}
Gate.__index = Gate

-- A new closed gate of this env (a path in its temp dir).
function Env:gate(name)
  self.ngates = (self.ngates or 0) + 1
  self.gated = true
  return setmetatable({ env = self,
                        path = self:path(("gate-%d%s"):format(self.ngates,
                                         name and ("-" .. name) or "")) }, Gate)
end

-- Opens the gate: every job waiting at it goes on, and any job that comes
-- to it later passes at once.
function Gate:open() C.write_file(self.path, "open\n") end

-- How many times a job has come to this gate.
function Gate:arrivals()
  local text = C.read_file(self.path .. ".reached") or ""
  local n = 0
  for _ in text:gmatch("reached\n") do n = n + 1 end
  return n
end

-- Waits until `n` (default 1) arrivals at the gate; a hang guard caps it.
function Gate:wait_reached(n)
  n = n or 1
  return self.env:wait_until(("%d job(s) at gate %s"):format(n, self.path),
                             function() return self:arrivals() >= n end)
end

-- The raw bytes of the database: the main file and its WAL, if any.
function Env:db_bytes()
  return (C.read_file(self.db_path) or "") ..
         (C.read_file(self.db_path .. "-wal") or "")
end

function Env:cleanup()
  for _, p in ipairs(self.procs) do p:kill() end
  C.Env.cleanup(self)
end

-- Stored times as ms since the epoch (nil stays nil).
function M.ms(iso)
  if iso == nil or iso == cjson.null then return nil end
  return C.iso_ms(iso)
end

return M
