-- pawl.worker: the Lua side of one worker thread.
--
-- Every worker thread owns a lua_State and loads this module once. The C
-- side (host/worker.c) lists the scripts directory, builds each job's
-- `job` table, runs `run(job, ctx)` under the job's deadline, and hands the
-- outcome to the completer. This module does what is best written in Lua:
-- the curated environment job code runs in, loading and checking scripts,
-- the sanitizer and retry-policy steps after a failure, and the hooks.
--
-- `pawl.host` is a table of C functions the worker provides (log,
-- progress, canceled, heartbeat, enqueue, now, print); they act on the job
-- the worker is running and refuse a ctx used after its job ended.

local host = require "pawl.host"
local retry = require "pawl.retry"
local sanitize = require "pawl.sanitize"
local cjson = require("cjson").new()

local W = {}

-- The bounds of pawl.h (include/pawl.h), in seconds where Lua speaks them.
local limits = host.limits

-- nil when `v` is a number within [min, max] (and whole, if asked); else
-- "WHAT must be ... between MIN and MAX (got V)", naming the value.
local function out_of_range(what, v, min, max, whole, unit)
  if type(v) == "number" and v >= min and v <= max
     and (not whole or v % 1 == 0) then
    return nil
  end
  return ("%s must be %s between %s and %s%s (got %s)"):format(what,
    whole and "a whole number" or "a number", tostring(min), tostring(max),
    unit and " " .. unit or "", tostring(v))
end

-- Script defaults an operator may set in scripts/_defaults.lua.
local defaults = { retry = retry.default, sanitize = nil, timeout = 300,
                   max_attempts = nil }
local host_timeout = 300 -- the host's default timeout, when no file sets one
local file_defaults = false -- whether _defaults.lua's settings are in use

-- The defaults when there is no _defaults.lua (or no good one yet).
local function builtin_defaults()
  defaults.retry, defaults.sanitize = retry.default, nil
  defaults.timeout, defaults.max_attempts = host_timeout, nil
  defaults.queue, defaults.priority = nil, nil
  file_defaults = false
end

local types = {}      -- type name -> checked script table
local unsafe = false
local max_error_length = 2000

local SENTINEL = {}   -- marks errors raised by pawl.fatal / pawl.snooze

-- ---- the `pawl` table job code sees -----------------------------------

local json = {
  encode = function(v) return cjson.encode(v) end,
  decode = function(s) return cjson.decode(s) end,
}

local ENQUEUE_OPTS = {
  queue = "string", priority = "number", delay = "number", run_at = "number",
  max_attempts = "number", timeout = "number", key = "string",
  business_key = "string", return_existing = "boolean",
  correlation_id = "string", tags = "table", params = "table",
  blocked = "boolean",
}

local pawl = {
  retry = retry,
  sanitize = sanitize.default,
  json = json,
}

-- Enqueues a job from inside a job. The target type's script chooses its
-- queue and priority (decided now, unless opts say otherwise); its
-- max_attempts and timeout are left to the worker that runs it, which
-- reads them from the script then.
function pawl.enqueue(jtype, payload, opts)
  if type(jtype) ~= "string" then
    error("pawl.enqueue: job type must be a string", 2)
  end
  opts = opts or {}
  if type(opts) ~= "table" then error("pawl.enqueue: opts must be a table", 2) end
  for k, v in pairs(opts) do
    local want = ENQUEUE_OPTS[k]
    if not want then error(("pawl.enqueue: unknown option %q"):format(tostring(k)), 2) end
    if type(v) ~= want then
      error(("pawl.enqueue: option %s must be a %s"):format(k, want), 2)
    end
  end
  local spec = types[jtype]
  local body = payload == nil and "{}" or (type(payload) == "string" and payload
               or cjson.encode(payload))
  local id, status = host.enqueue(jtype, body,
    opts.queue or (spec and spec.queue),
    opts.priority or (spec and spec.priority) or 0,
    opts.delay, opts.run_at,
    opts.max_attempts, opts.timeout,
    opts.key, opts.business_key, opts.return_existing,
    opts.correlation_id,
    opts.tags and cjson.encode(opts.tags) or nil,
    opts.params and cjson.encode(opts.params) or nil,
    opts.blocked)
  if not id then error("pawl.enqueue: " .. status, 2) end
  return id, status
end

-- Fails the job without retrying.
function pawl.fatal(msg)
  error({ [SENTINEL] = "fatal", message = tostring(msg) }, 2)
end

-- Runs the job again after `seconds` without using up an attempt.
function pawl.snooze(seconds)
  local bad = out_of_range("pawl.snooze: seconds", seconds, 0,
                           limits.delay_max_s, false)
  if bad then error(bad, 2) end
  error({ [SENTINEL] = "snooze", seconds = seconds }, 2)
end

-- Runs fn() holding the distributed lock `name`, shared by every node on the
-- database, for at most `ttl` seconds (a holder that dies frees it when the
-- TTL runs out, so fn should finish well within it). Returns false when
-- another holder has it, else true and fn's results. The lock is released
-- however fn ends; an error in fn is raised again after the release.
function pawl.lock(name, ttl, fn)
  if type(name) ~= "string" or name == "" then
    error("pawl.lock: name must be a non-empty string", 2)
  end
  if type(ttl) ~= "number" then error("pawl.lock: ttl must be a number of seconds", 2) end
  if type(fn) ~= "function" then error("pawl.lock: fn must be a function", 2) end
  local owner, err = host.lock_acquire(name, ttl)
  if owner == nil then error("pawl.lock: " .. err, 2) end
  if not owner then return false end
  local function released(ok, ...)
    local done, rerr = host.lock_release(name, owner)
    if not ok then error((...), 0) end
    if not done then error("pawl.lock: " .. rerr, 3) end
    return true, ...
  end
  return released(pcall(fn))
end

-- Waits `seconds` (this job's worker only; a timeout or a stop cuts it short).
function pawl.sleep(seconds)
  if type(seconds) ~= "number" then error("pawl.sleep: seconds must be a number", 2) end
  host.sleep(seconds)
end

-- The database clock (what scheduling uses), in seconds.
function pawl.now() return host.now() end
-- The wall clock with microseconds, for measuring.
function pawl.time() return host.time() end

-- ---- ctx --------------------------------------------------------------

local Ctx = {}
Ctx.__index = Ctx

local LEVELS = { debug = true, info = true, warn = true, error = true }

function Ctx:log(level, msg, fields)
  if not LEVELS[level] then
    error("ctx:log: level must be debug, info, warn or error", 2)
  end
  local f = nil
  if fields ~= nil then
    if type(fields) ~= "table" then error("ctx:log: fields must be a table", 2) end
    f = cjson.encode(fields)
  end
  host.log(self._seq, level, tostring(msg), f)
end

function Ctx:progress(done, total)
  if type(done) ~= "number" or (total ~= nil and type(total) ~= "number") then
    error("ctx:progress: done and total must be numbers", 2)
  end
  host.progress(self._seq, done, total or 0)
end

function Ctx:canceled() return host.canceled(self._seq) end

function Ctx:heartbeat() return host.heartbeat(self._seq) end

-- ---- the curated environment ------------------------------------------

local SAFE = {
  "assert", "error", "ipairs", "next", "pairs", "pcall", "xpcall", "select",
  "tonumber", "tostring", "type", "unpack", "rawequal", "rawget", "rawset",
  "setmetatable", "getmetatable", "collectgarbage", "_VERSION",
}

local function copy(t, keys)
  local c = {}
  if keys then
    for _, k in ipairs(keys) do c[k] = t[k] end
  else
    for k, v in pairs(t) do c[k] = v end
  end
  return c
end

-- Loading text only: bytecode can break out of any sandbox.
local function text_only(chunk)
  if type(chunk) == "string" and chunk:byte(1) == 27 then
    return nil, "loading bytecode is not allowed in job code"
  end
  return true
end

local function safe_env()
  local env = copy(_G, SAFE)
  env.string = copy(string)
  env.table = copy(table)
  env.math = copy(math)
  env.coroutine = copy(coroutine)
  env.bit = copy(bit)
  env.jit = copy(jit)
  env.os = copy(os, { "clock", "date", "time", "difftime", "getenv" })
  env.io = copy(io, { "open", "lines", "read", "write", "type" })
  env.pawl = pawl
  env.print = function(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
    host.print(table.concat(parts, "\t"))
  end
  env.load = function(chunk, name, mode, e)
    local ok, err = text_only(chunk)
    if not ok then return nil, err end
    local f, lerr = load(chunk, name, "t", e or env)
    return f, lerr
  end
  env.loadstring = function(s, name)
    local ok, err = text_only(s)
    if not ok then return nil, err end
    local f, lerr = loadstring(s, name)
    if f then setfenv(f, env) end
    return f, lerr
  end
  local allowed = {
    ["pawl.retry"] = retry, ["pawl.sanitize"] = sanitize, cjson = json,
    string = env.string, table = env.table, math = env.math, bit = env.bit,
    jit = env.jit,
  }
  env.require = function(name)
    local m = allowed[name]
    if m == nil then
      error(("require %q is not allowed in job code (the operator can allow "
             .. "everything with --unsafe-lua)"):format(tostring(name)), 2)
    end
    return m
  end
  env._G = env
  return env
end

local function script_env()
  if unsafe then
    local env = setmetatable({ pawl = pawl }, { __index = _G })
    env._G = env
    return env
  end
  return safe_env()
end

-- ---- scripts ----------------------------------------------------------

local FIELDS = {
  run = "function", queue = "string", priority = "number",
  max_attempts = "number", timeout = "number", retry = "function",
  sanitize = "function", redact = "table", on_success = "function",
  on_failure = "function", on_dead = "function",
}

local function check_script(t, is_defaults)
  if type(t) ~= "table" then
    return nil, "script must return a table (got " .. type(t) .. ")"
  end
  for k, v in pairs(t) do
    local want = FIELDS[k]
    if not want then return nil, ("unknown field %q"):format(tostring(k)) end
    if type(v) ~= want then
      return nil, ("field %s must be a %s (got %s)"):format(k, want, type(v))
    end
  end
  if not is_defaults and t.run == nil then return nil, "no run function" end
  if is_defaults and t.run ~= nil then
    return nil, "_defaults.lua sets defaults; it has no run function"
  end
  local bad = t.priority and out_of_range("priority", t.priority,
      limits.priority_min, limits.priority_max, true)
    or t.max_attempts and out_of_range("max_attempts", t.max_attempts, 1,
      limits.attempts_max, true)
  if bad then return nil, bad end
  -- A timeout may have a fraction; zero would mean none, which a script
  -- cannot ask for.
  if t.timeout and not (t.timeout > 0 and t.timeout <= limits.timeout_max_s) then
    return nil, ("timeout must be a number of seconds above 0 and at most %s "
                 .. "(got %s)"):format(tostring(limits.timeout_max_s),
                                       tostring(t.timeout))
  end
  if t.queue and t.queue == "" then return nil, "queue must not be empty" end
  if t.redact then
    for _, key in ipairs(t.redact) do
      if type(key) ~= "string" then return nil, "redact must list field names" end
    end
  end
  return t
end

local function load_script(path, is_defaults, src)
  local f, err
  if src then
    f, err = load(src, "@" .. path)
  else
    f, err = loadfile(path)
  end
  if not f then return nil, err end
  setfenv(f, script_env())
  local ok, t = pcall(f)
  if not ok then return nil, tostring(t) end
  local checked, cerr = check_script(t, is_defaults)
  if not checked then return nil, path .. ": " .. cerr end
  return checked
end

-- Loads the scripts in `files` (name -> path; "_defaults" for the defaults
-- file). `sources` (name -> text, optional) holds the text to load instead
-- of reading the file, as the host read it for every worker. A script that
-- fails keeps its previous version, if any; a type whose file is gone is
-- dropped. Returns a list of { name, error }.
function W.load(files, opts, sources)
  sources = sources or {}
  if opts then
    unsafe = opts.unsafe and true or false
    if opts.default_timeout then host_timeout = opts.default_timeout end
  end
  local errors = {}
  local d = files._defaults
  if d then
    local t, err = load_script(d, true, sources._defaults)
    if t then
      defaults.retry = t.retry or retry.default
      defaults.sanitize = t.sanitize
      defaults.timeout = t.timeout or host_timeout
      defaults.max_attempts = t.max_attempts
      defaults.queue, defaults.priority = t.queue, t.priority
      file_defaults = true
    else
      errors[#errors + 1] = { "_defaults", err }
      -- Its previous version keeps serving; with none, the built-in ones.
      if not file_defaults then builtin_defaults() end
    end
  else
    -- No defaults file, or not any more: the built-in defaults apply again
    -- (a removed file must not leave its policy behind until a restart).
    builtin_defaults()
  end
  for name in pairs(types) do
    if not files[name] then types[name] = nil end
  end
  for name, path in pairs(files) do
    if name ~= "_defaults" then
      local t, err = load_script(path, false, sources[name])
      if t then
        types[name] = t
      else
        errors[#errors + 1] = { name, err }
      end
    end
  end
  table.sort(errors, function(a, b) return a[1] < b[1] end)
  return errors
end

-- Names of the loaded types, sorted.
function W.types()
  local names = {}
  for name in pairs(types) do names[#names + 1] = name end
  table.sort(names)
  return names
end

-- Settings of a type: queue, priority, max_attempts, timeout (the last two
-- apply when a job runs; see max_attempts_of).
function W.defaults_of(name)
  local t = types[name]
  if not t then return nil end
  return t.queue or defaults.queue, t.priority or defaults.priority,
         t.max_attempts or defaults.max_attempts, t.timeout
end

-- ---- running a job ----------------------------------------------------

-- The max_attempts that applies to `job`: what its enqueue set, else its
-- script's, else _defaults.lua's, else the built-in default. Decided each
-- time the job runs, so that a job enqueued by anyone (without the
-- script at hand, from C, from another machine) follows its script.
local function max_attempts_of(job, spec)
  if job.max_attempts > 0 then return job.max_attempts end
  return (spec and spec.max_attempts) or defaults.max_attempts
         or limits.default_max_attempts
end

-- Returns run, ctx, the timeout in seconds and the type's hooks (a bit
-- set: 1 on_success, 2 on_failure, 4 on_dead) for `job`; or nil and an
-- error (with the timeout and 0) when its type has no script.
function W.prepare(job, seq)
  local spec = types[job.type]
  local ctx = setmetatable({ _seq = seq }, Ctx)
  local timeout = (job.timeout_s > 0 and job.timeout_s)
                  or (spec and spec.timeout) or defaults.timeout
  -- Job code, the retry step and the hooks see the max_attempts that
  -- applies.
  job.max_attempts = max_attempts_of(job, spec)
  if not spec then
    return nil, ("no script for job type %s"):format(job.type), timeout, 0
  end
  -- An attempt past max_attempts is not started: a lost attempt (its node
  -- died) was counted by the store, which cannot know the script's
  -- max_attempts; or the script lowered it since.
  if job.attempt > job.max_attempts then
    return nil, ("no attempts left: attempt %d of a job whose max_attempts "
                 .. "is %d was not started"):format(job.attempt,
                                                    job.max_attempts),
           timeout, 0
  end
  return spec.run, ctx, timeout, W.hooks_of(job.type)
end

-- The stored form of a successful run's return value: JSON, or nil.
function W.result_json(result)
  if result == nil then return nil end
  local ok, s = pcall(cjson.encode, result)
  if not ok then
    error("the job's return value cannot be stored as JSON: " .. tostring(s), 0)
  end
  return s
end

local function message_of(err)
  if type(err) == "string" then return err end
  if type(err) == "table" then
    local ok, s = pcall(cjson.encode, err)
    if ok then return s end
  end
  return tostring(err)
end

-- The sanitized text of `msg`: the type's sanitizer, else the operator's
-- default, else the built-in one. A sanitizer that raises, or returns
-- something that is not a string, falls back to the built-in sanitizer:
-- the raw message is never what gets stored.
local function clean(spec, msg, job)
  local fn = (spec and spec.sanitize) or defaults.sanitize
  if fn then
    local ok, out = pcall(fn, msg, job)
    if ok and type(out) == "string" then
      return sanitize.truncate(out, max_error_length)
    end
  end
  local ok, out = pcall(sanitize.default, msg, job, max_error_length)
  if ok then return out end
  return "(error message withheld: the sanitizer failed)"
end

-- After a failed attempt: returns kind ("failed" | "retry" | "snooze"),
-- the sanitized error text, and the delay in seconds.
function W.failed(job, err)
  local spec = types[job.type]
  if type(err) == "table" and err[SENTINEL] == "snooze" then
    return "snooze", nil, err.seconds
  end
  if type(err) == "table" and err[SENTINEL] == "fatal" then
    return "failed", clean(spec, err.message, job), 0
  end
  local text = clean(spec, message_of(err), job)
  if job.attempt >= max_attempts_of(job, spec) then return "failed", text, 0 end
  local policy = (spec and spec.retry) or defaults.retry
  local ok, delay = pcall(policy, job.attempt, err, job)
  if not ok then
    return "failed", text .. "\nretry policy failed: "
      .. clean(spec, message_of(delay), job), 0
  end
  if delay == nil then return "failed", text, 0 end
  if out_of_range("delay", delay, 0, limits.delay_max_s) then
    return "failed", text .. "\nretry policy returned "
      .. clean(spec, tostring(delay), job) .. ", not a delay in seconds "
      .. "(between 0 and " .. tostring(limits.delay_max_s) .. ")", 0
  end
  return "retry", text, delay
end

-- Runs hook `name` (on_success, on_failure, on_dead) if the script has
-- one. Returns nil, or the sanitized error it raised.
function W.hook(name, job, arg)
  local spec = types[job.type]
  local fn = spec and spec[name]
  if not fn then return nil end
  local ok, err = pcall(fn, job, arg)
  if ok then return nil end
  return clean(spec, message_of(err), job)
end

-- Which hooks the type has, as a bit set: 1 success, 2 failure, 4 dead.
function W.hooks_of(name)
  local spec = types[name]
  if not spec then return 0 end
  return (spec.on_success and 1 or 0) + (spec.on_failure and 2 or 0)
       + (spec.on_dead and 4 or 0)
end

-- Payload fields named in the script's `redact`, masked for log output.
function W.redacted_payload(job)
  local spec = types[job.type]
  if not (spec and spec.redact) or type(job.payload) ~= "table" then
    return nil
  end
  local copy_ = {}
  for k, v in pairs(job.payload) do copy_[k] = v end
  for _, key in ipairs(spec.redact) do
    if copy_[key] ~= nil then copy_[key] = "<redacted>" end
  end
  return cjson.encode(copy_)
end

W.json = json
W.SENTINEL = SENTINEL

return W
