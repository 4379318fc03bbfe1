-- pawl.worker: the Lua side of one worker thread.
--
-- Every worker thread owns a lua_State and loads this module once. The C
-- side lists the scripts directory (host/runner/loader.c), builds each
-- job's `job` table and runs `run(job, ctx)` under the job's deadline
-- (host/lua/run.c), and hands the outcome to the completer. This module does what is best written in Lua:
-- the curated environment job code runs in, loading and checking scripts,
-- the sanitizer and retry-policy steps after a failure, and the hooks.
--
-- `pawl.host` is a table of C functions the worker provides (log,
-- progress, canceled, heartbeat, enqueue, now, print, entropy); they act on
-- the job the worker is running and refuse a ctx used after its job ended.

local host = require "pawl.host"
local retry = require "pawl.retry"
local sanitize = require "pawl.sanitize"
-- pawl's JSON codec (host/lua/ljson.c): arrays stay arrays, numbers keep every
-- digit, and it refuses what the store would refuse (host/core/json.h).
local pjson = require "pawl.json"

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

-- Job code that ran out of its heap ceiling (the host's "not enough
-- memory", LuaJIT does not collect before it gives up) leaves its garbage
-- behind: collected before pawl.worker goes on, so that what follows has
-- room again.
local function after_error(e)
  if e == "not enough memory" then collectgarbage() end
end

-- Script defaults an operator may set in scripts/_defaults.lua.
local defaults = { retry = retry.default, sanitize = nil, timeout = 300,
                   max_attempts = nil }
local host_timeout = 300 -- the host's default timeout, when no file sets one
local file_defaults = false -- whether _defaults.lua's settings are in use

-- Capabilities the operator grants job code (pawl run --allow-io /
-- --allow-env), and those _defaults.lua adds (its `allow` list).
local granted = { io = false, env = false, signal = false, replace = false,
                  restart = false }
local defaults_allow = {}
-- Loading without host options: an enqueuer reading a script's settings
-- (pawl_script_info), which does not know what `pawl run` will grant.
local inspecting = false

-- The defaults when there is no _defaults.lua (or no good one yet).
local function builtin_defaults()
  defaults.retry, defaults.sanitize = retry.default, nil
  defaults.timeout, defaults.max_attempts = host_timeout, nil
  defaults.memory = nil
  defaults.queue, defaults.priority = nil, nil
  defaults.ordering = nil
  defaults.on_dead, defaults.alert_window = nil, nil
  defaults.max_children, defaults.max_batch, defaults.max_depth = nil, nil, nil
  defaults_allow = {}
  host.webhook_grants({}, {})
  file_defaults = false
end

local types = {}      -- type name -> checked script table
-- Job types of the program's own Lua state (the Lua module's db:define,
-- run by db:step; see set_hosted): type name -> table or run function,
-- looked up when no script has the name. nil in pawl's own states.
local hosted = nil
local spec_of -- name -> checked script table, or nil (after check_script)
-- name -> { path =, err = } of a script that did not load and has no
-- earlier version serving (W.load_failed); cleared when it loads or goes.
local load_errors = {}
local unsafe = false
local max_error_length = 2000

local SENTINEL = {}   -- marks errors raised by pawl.fatal / pawl.snooze

-- ---- the `pawl` table job code sees -----------------------------------

local json = {
  encode = pjson.encode,
  decode = pjson.decode,
  null = pjson.null,   -- JSON null inside arrays and objects
  array = pjson.array, -- marks a table as an array: pawl.json.array({})
}

local ENQUEUE_OPTS = {
  queue = "string", priority = "number", delay = "number", run_at = "number",
  max_attempts = "number", timeout = "number", key = "string",
  business_key = "string", return_existing = "boolean",
  correlation_id = "string", tags = "table", params = "table",
  blocked = "boolean", ordering_key = "string", resource = "string",
  signal = "string", signal_timeout = "number", -- signals
  -- Dependencies: after is a job id or a list of them.
  after = "table", when = "string",
}

-- The job running now and its script, for the sanitizer of what it logs
-- and prints (set by prepare and hook; a worker runs one job at a time).
local current_job, current_spec = nil, nil
-- The capabilities of the code running now (its script's; _defaults.lua's
-- for the global on_dead hook): whether pawl.signal, pawl.replace and an
-- enqueue that restarts a dead instance may act on jobs this job did not
-- enqueue (docs/security.md, "Authority over other jobs").
local current_caps = {}
local function may(cap) return current_caps[cap] and true or false end
local clean -- the sanitizer step, defined below

local pawl = {
  retry = retry,
  sanitize = sanitize.default,
  json = json,
}

-- The arguments of host.enqueue for one job (a list of 21), checked; or
-- raises naming `fname`. The target type's script chooses its queue,
-- priority and resource (decided now, unless opts say otherwise); its
-- max_attempts and timeout are left to the worker that runs it, which
-- reads them from the script then.
local function enqueue_args(fname, jtype, payload, opts, level)
  level = level + 1
  if type(jtype) ~= "string" then
    error(fname .. ": job type must be a string", level)
  end
  opts = opts or {}
  if type(opts) ~= "table" then error(fname .. ": opts must be a table", level) end
  for k, v in pairs(opts) do
    local want = ENQUEUE_OPTS[k]
    if not want then error(("%s: unknown option %q"):format(fname, tostring(k)), level) end
    if type(v) ~= want and not (k == "after" and type(v) == "string") then
      error(("%s: option %s must be a %s"):format(fname, k, want), level)
    end
  end
  local after = opts.after
  if type(after) == "string" then after = { after } end
  if after then
    for i = 1, #after do
      if type(after[i]) ~= "string" then
        error(("%s: after must list job ids (item %d is a %s)")
          :format(fname, i, type(after[i])), level)
      end
    end
  end
  -- Dependencies: a branch of the job that is running now (its
  -- own children) is checked against its script here; a branch of another
  -- job is not (its script is not at hand): a name it does not define
  -- never fires, and the child is canceled when that parent ends.
  local when = opts.when
  if when and when:sub(1, 7) == "branch:" and after and current_job then
    local name = when:sub(8)
    for i = 1, #after do
      if after[i] == current_job.id then
        local b = current_spec and current_spec.branches
        if not (b and b[name]) then
          error(("%s: unknown branch %q: job type %s defines no such branch")
            :format(fname, name, current_job.type), level)
        end
      end
    end
  end
  local spec = spec_of(jtype)
  local body = payload == nil and "{}" or (type(payload) == "string" and payload
               or pjson.encode(payload))
  local okey = opts.ordering_key
  if okey == nil and spec then
    local err
    okey, err = W.ordering_key_of(spec, jtype, payload)
    if err then error(fname .. ": " .. err, level) end
  end
  return { jtype, body,
    opts.queue or (spec and spec.queue),
    opts.priority or (spec and spec.priority) or 0,
    opts.delay, opts.run_at,
    opts.max_attempts, opts.timeout,
    opts.key, opts.business_key, opts.return_existing,
    opts.correlation_id,
    opts.tags and pjson.encode(opts.tags) or nil,
    opts.params and pjson.encode(opts.params) or nil,
    opts.blocked, okey,
    opts.resource or (spec and spec.resource),
    opts.signal, opts.signal_timeout, after, when,
    spec and spec.identity, n = 22 }
end

-- The fan-out limits of the job running now (its script's, else
-- _defaults.lua's; nil: the host's defaults): max_children, max_batch,
-- max_depth, which host.enqueue, host.chain and host.batch enforce.
local function fanout()
  local s = current_spec or {}
  return s.max_children or defaults.max_children,
         s.max_batch or defaults.max_batch,
         s.max_depth or defaults.max_depth
end

-- Enqueues a job from inside a job. A rerun of the job (after a crash or
-- a retry) enqueues again unless opts.key (an idempotency key) says which
-- job this is: see docs/security.md, "What job code may write".
function pawl.enqueue(jtype, payload, opts)
  local a = enqueue_args("pawl.enqueue", jtype, payload, opts, 2)
  a[23], a[24], a[25] = fanout()
  a[26] = may("restart")
  local id, status = host.enqueue(unpack(a, 1, 26))
  if not id then error("pawl.enqueue: " .. status, 2) end
  return id, status
end

-- Delivers a decision ("approve" or "reject") and a payload to the job
-- waiting for signal `key` (docs/flows.md "Signals and replace"). Returns the
-- job's id and "delivered", or "already" when a decision came before
-- (nothing changed). A job this job did not enqueue is refused unless the
-- script has the "signal" capability.
function pawl.signal(key, decision, payload)
  if type(key) ~= "string" then error("pawl.signal: key must be a string", 2) end
  if type(decision) ~= "string" then
    error("pawl.signal: decision must be \"approve\" or \"reject\"", 2)
  end
  local body = payload == nil and "{}" or (type(payload) == "string" and payload
               or pjson.encode(payload))
  local id, status = host.signal(key, decision, body, may("signal"))
  if not id then error("pawl.signal: " .. status, 2) end
  return id, status
end

local REPLACE_OPTS = {
  payload = "table", params = "table", queue = "string", priority = "number",
  delay = "number", run_at = "number", max_attempts = "number",
  timeout = "number", reason = "string",
}

-- Replaces job `id` by a new job with its fields and `changes`, canceling
-- it if it is live, in one transaction. Returns the new job's id. A job
-- this job did not enqueue is refused unless the script has the "replace"
-- capability.
function pawl.replace(id, changes)
  if type(id) ~= "string" then error("pawl.replace: id must be a string", 2) end
  changes = changes or {}
  if type(changes) ~= "table" then error("pawl.replace: changes must be a table", 2) end
  for k, v in pairs(changes) do
    local want = REPLACE_OPTS[k]
    if not want then error(("pawl.replace: unknown option %q"):format(tostring(k)), 2) end
    if type(v) ~= want and not (k == "payload" and type(v) == "string") then
      error(("pawl.replace: option %s must be a %s"):format(k, want), 2)
    end
  end
  local c = changes
  local payload = c.payload
  if type(payload) == "table" then payload = pjson.encode(payload) end
  local nid, err = host.replace(id, payload,
    c.params and pjson.encode(c.params) or nil, c.queue, c.priority, c.delay,
    c.run_at, c.max_attempts, c.timeout, c.reason, may("replace"))
  if not nid then error("pawl.replace: " .. err, 2) end
  return nid
end

-- One job of a batch as host.batch takes it: the options a
-- child or callback may have, checked as pawl.enqueue checks them, with the
-- target type's script choosing queue and priority. `what` names it in
-- errors ("job 3", "on_success").
local function batch_entry(what, e)
  if type(e) ~= "table" then
    error(("pawl.batch: %s must be a table {type, payload, opts}"):format(what), 3)
  end
  local jtype, payload, opts = e[1] or e.type, e[2] or e.payload, e[3] or e.opts or {}
  if type(jtype) ~= "string" then
    error(("pawl.batch: %s: job type must be a string"):format(what), 3)
  end
  if type(opts) ~= "table" then
    error(("pawl.batch: %s: opts must be a table"):format(what), 3)
  end
  for k, v in pairs(opts) do
    local want = ENQUEUE_OPTS[k]
    if not want then
      error(("pawl.batch: %s: unknown option %q"):format(what, tostring(k)), 3)
    end
    if type(v) ~= want and not (k == "after" and type(v) == "string") then
      error(("pawl.batch: %s: option %s must be a %s"):format(what, k, want), 3)
    end
  end
  -- What the C API refuses too (pawl_batch_enqueue), in its words: these
  -- options do not travel to host.batch.
  local bad = opts.key and "an idempotency key"
    or opts.business_key and "a business key"
    or opts.ordering_key and "an ordering key"
    or opts.blocked and "blocked"
    or opts.return_existing and "return_existing"
  if bad then
    error(("pawl.batch: %s: %s may not have %s"):format(what,
          what:match("^job") and "a batch's child" or "a callback", bad), 3)
  end
  local spec = spec_of(jtype)
  -- Job instances: one is enqueued alone (pawl.enqueue), not
  -- as a batch's child or callback (the C API refuses identity there too).
  if spec and spec.identity then
    error(("pawl.batch: %s: job type %s has identity fields (a job instance "
           .. "is enqueued alone, with pawl.enqueue)"):format(what, jtype), 3)
  end
  return { jtype,
    payload == nil and "{}" or (type(payload) == "string" and payload
                                or pjson.encode(payload)),
    opts.queue or (spec and spec.queue),
    opts.priority or (spec and spec.priority) or 0,
    opts.delay, opts.run_at, opts.max_attempts, opts.timeout,
    opts.correlation_id, opts.tags,
    opts.params and pjson.encode(opts.params) or nil,
    -- A child takes its script's resource as pawl.enqueue does; a callback
    -- only the one given (which the C API refuses: it would be lost).
    opts.resource or (what:match("^job") and spec and spec.resource or nil),
    opts.signal, opts.signal_timeout,
    -- Dependencies: a child may wait for jobs outside the batch.
    type(opts.after) == "string" and { opts.after } or opts.after, opts.when }
end

-- A call's key (pawl.batch's t.key, pawl.chain's opts.key): nil or
-- 1..200 bytes without control characters.
local function check_call_key(fname, key)
  if key == nil then return end
  if type(key) ~= "string" or key == "" or #key > 200
     or key:find("[%z\1-\31\127]") then
    error(("%s: key must be 1..200 bytes without control characters (got %s)")
      :format(fname, type(key) == "string" and ("%d bytes"):format(#key)
                     or type(key)), 3)
  end
end

-- Enqueues a batch (docs/flows.md "Batches"): t.jobs, a list of {type, payload,
-- opts}, and optional callbacks t.on_success, t.on_failure, t.on_complete
-- ({type, payload, opts} each), enqueued once when the last job ends.
-- Returns the batch's id, the list of the jobs' ids and "new", or
-- "duplicate" when a rerun of the job found the batch this call made
-- before (the call's identity: the job and the call's ordinal in its run,
-- or t.key).
function pawl.batch(t)
  if type(t) ~= "table" then error("pawl.batch: expected a table", 2) end
  for k in pairs(t) do
    if k ~= "jobs" and k ~= "on_success" and k ~= "on_failure"
       and k ~= "on_complete" and k ~= "key" then
      error(("pawl.batch: unknown field %q"):format(tostring(k)), 2)
    end
  end
  check_call_key("pawl.batch", t.key)
  if type(t.jobs) ~= "table" then
    error("pawl.batch: jobs must be a list of {type, payload, opts}", 2)
  end
  -- More jobs than one call may have: host.batch refuses them by their
  -- number, before it reads any, so they are not checked one by one here
  -- first (a million would take seconds of the job's time).
  local mc, mb, md = fanout()
  if current_job and #t.jobs > (mb or limits.fanout_batch_default) then
    local _, err = host.batch(t.jobs, {}, mc, mb, md, t.key)
    error("pawl.batch: " .. tostring(err), 2)
  end
  local children = {}
  for i, e in ipairs(t.jobs) do children[i] = batch_entry("job " .. i, e) end
  local cbs = {}
  for _, role in ipairs({ "on_success", "on_failure", "on_complete" }) do
    if t[role] ~= nil then cbs[role] = batch_entry(role, t[role]) end
  end
  local id, ids, status = host.batch(children, cbs, mc, mb, md, t.key)
  if not id then error("pawl.batch: " .. ids, 2) end
  return id, ids, status
end

-- Enqueues a chain of jobs in one transaction: steps is a list
-- of { type, payload, opts }; each step waits for the one before it to
-- succeed. Returns the list of their ids and "new", or "duplicate" when a
-- rerun of the job found the chain this call made before (its identity:
-- the job and the call's ordinal, or opts.key).
function pawl.chain(steps, copts)
  if type(steps) ~= "table" then error("pawl.chain: steps must be a list", 2) end
  if copts ~= nil and type(copts) ~= "table" then
    error("pawl.chain: opts must be a table", 2)
  end
  copts = copts or {}
  for k in pairs(copts) do
    if k ~= "key" then
      error(("pawl.chain: unknown option %q"):format(tostring(k)), 2)
    end
  end
  check_call_key("pawl.chain", copts.key)
  local args = {}
  for i = 1, #steps do
    local st = steps[i]
    if type(st) ~= "table" then
      error(("pawl.chain: step %d must be a table {type, payload, opts}"):format(i), 2)
    end
    args[i] = enqueue_args(("pawl.chain: step %d"):format(i), st[1], st[2], st[3], 2)
  end
  local mc, mb, md = fanout()
  local ids, status = host.chain(args, mc, mb, md, copts.key)
  if not ids then error("pawl.chain: " .. status, 2) end
  return ids, status
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

-- ---- alerts -----------------------------------------------------------

-- `url` as messages show it: its user information (user:password@) and
-- its query (?api_key=...) replaced, by the C rule the webhook sender's
-- log lines use (host/core/redact.c), so both show a URL the same way.
local function redact_url(url)
  return host.redact_web_url(tostring(url))
end

local WEBHOOK_OPTS = { url = "string", headers = "table", timeout = "number",
                       attempts = "number", backoff = "number" }

-- pawl.alert.webhook{ url = ..., headers = {...}, timeout = 10,
-- attempts = 5, backoff = 1 }: a hook function (for on_dead, global or a
-- type's) that posts the alert as JSON to `url`. The post is handed to
-- the host's sender thread (never made on the calling thread): a failed
-- one is logged and retried up to `attempts` times, the delay doubling
-- from `backoff` seconds. Everything is checked here, when the script
-- loads: a bad option fails the script, not the alert.
pawl.alert = {}
-- The URLs pawl.alert.webhook was given while _defaults.lua's top level
-- runs (a list), nil at any other time: its global on_dead hook may post
-- to them without a grant (the operator wrote them there).
local defaults_webhooks = nil
function pawl.alert.webhook(opts)
  local F = "pawl.alert.webhook: "
  if type(opts) ~= "table" then
    error(F .. "takes a table { url = ... } (got " .. type(opts) .. ")", 2)
  end
  for k, v in pairs(opts) do
    local want = WEBHOOK_OPTS[k]
    if not want then error(F .. ("unknown option %q"):format(tostring(k)), 2) end
    if type(v) ~= want then
      error(F .. ("%s must be a %s (got %s)"):format(k, want, type(v)), 2)
    end
  end
  local url = opts.url
  if not url then error(F .. "url is required", 2) end
  local scheme, rest = url:match("^(%a[%w+.-]*)://(.*)$")
  scheme = scheme and scheme:lower()
  if (scheme ~= "http" and scheme ~= "https") or rest == "" then
    error(F .. "url must be an http:// or https:// URL (got "
          .. redact_url(url) .. ")", 2)
  end
  if #url > 2048 or url:find("[%s%c]") then
    error(F .. "url must be at most 2048 characters, without spaces or "
          .. "control characters (got " .. redact_url(url) .. ")", 2)
  end
  local timeout, attempts, backoff = opts.timeout or 10, opts.attempts or 5,
                                     opts.backoff or 1
  local bad = out_of_range("timeout", timeout, 0.1, 60, false, "seconds")
    or out_of_range("attempts", attempts, 1, 10, true)
    or out_of_range("backoff", backoff, 0.01, 600, false, "seconds")
  if bad then error(F .. bad, 2) end
  local headers, n = {}, 0
  for k, v in pairs(opts.headers or {}) do
    n = n + 1
    if type(k) ~= "string" or not k:match("^[%w!#$%%&'*+.^_`|~-]+$")
       or #k > 256 then
      error(F .. "header names must be HTTP tokens of at most 256 "
            .. "characters (got " .. tostring(k) .. ")", 2)
    end
    if type(v) ~= "string" or v:find("[\r\n%z]") or #v > 4096 then
      error(F .. ("header %s must be a string of at most 4096 characters "
                  .. "without line breaks"):format(k), 2)
    end
    headers[#headers + 1] = k .. ": " .. v
  end
  if n > 32 then error(F .. ("at most 32 headers (got %d)"):format(n), 2) end
  if defaults_webhooks then defaults_webhooks[#defaults_webhooks + 1] = url end
  table.sort(headers)
  return function(job, err, info)
    info = type(info) == "table" and info or {}
    local body = pjson.encode {
      id = job.id, type = job.type, queue = job.queue,
      attempt = job.attempt, error = err, node = job.node or host.node(),
      count = info.count or 1, suppressed = info.suppressed or 0,
      first_at = info.first_at, last_at = info.last_at,
    }
    local e = host.alert_post(url, headers, body, timeout, attempts, backoff)
    if e then error(F .. e, 0) end
  end
end

-- The database clock (what scheduling uses), in seconds.
function pawl.now() return host.now() end
-- The wall clock with microseconds, for measuring.
function pawl.time() return host.time() end

-- ---- ctx --------------------------------------------------------------

-- A copy of log fields fit to store: string values sanitized at any depth,
-- and the value of every key that looks secret (password, token, ...)
-- replaced whatever it is.
-- Text a job logs is stored whatever bytes it holds: invalid UTF-8 and NUL
-- become U+FFFD (host.text), so a log line can never make the store refuse
-- the outcome (PostgreSQL refuses both).
-- Secret keys: the sanitizer's (a key whose last word looks secret: pwd,
-- auth, ...), the words admin views hide (a key that contains
-- password, token, key, ...; host.redact_key, the C rule of
-- host/core/redact_json.c) and the names in the job type's `redact`.
local MAX_FIELD_DEPTH = 512 -- the store's nesting limit (json.h)
local function clean_fields(v, depth, names)
  if type(v) == "string" then return clean(current_spec, host.text(v), current_job) end
  if type(v) ~= "table" then return v end
  if depth >= MAX_FIELD_DEPTH then
    error(("ctx:log: fields are nested deeper than %d levels"):format(MAX_FIELD_DEPTH), 0)
  end
  local out = {}
  for k, x in pairs(v) do
    if type(k) == "string" then k = host.text(k) end
    if type(k) == "string" and (sanitize.secret_key(k) or host.redact_key(k)
                                or names[k]) then
      out[k] = sanitize.REDACTED
    else
      out[k] = clean_fields(x, depth + 1, names)
    end
  end
  return out
end

-- The job type's `redact` names as a set (none: an empty one).
local NO_NAMES = {}
local function redact_names(spec)
  if not (spec and spec.redact) then return NO_NAMES end
  local set = {}
  for _, key in ipairs(spec.redact) do set[key] = true end
  return set
end

-- ctx's methods. Job code never gets this table: its metatable is hidden,
-- and ctx.__index is nil (Ctx.__index is not Ctx), so no job can replace a
-- method for the jobs after it.
local CtxMethods = {}
local Ctx = { __index = CtxMethods, __metatable = false }

local LEVELS = { debug = true, info = true, warn = true, error = true }

function CtxMethods:log(level, msg, fields)
  if not LEVELS[level] then
    error("ctx:log: level must be debug, info, warn or error", 2)
  end
  -- The cap is checked before the sanitizer walks the text.
  msg = tostring(msg)
  if #msg > limits.log_message_max then
    error(("ctx:log: the message is %d bytes; at most %d")
      :format(#msg, limits.log_message_max), 2)
  end
  local f = nil
  if fields ~= nil then
    if type(fields) ~= "table" then error("ctx:log: fields must be a table", 2) end
    f = pjson.encode(clean_fields(fields, 0, redact_names(current_spec)))
  end
  local err = host.log(self._seq, level,
                       clean(current_spec, host.text(msg), current_job), f)
  if err then error("ctx:log: " .. err, 2) end
end

function CtxMethods:progress(done, total)
  if type(done) ~= "number" or (total ~= nil and type(total) ~= "number") then
    error("ctx:progress: done and total must be numbers", 2)
  end
  host.progress(self._seq, done, total or 0)
end

function CtxMethods:canceled() return host.canceled(self._seq) end

-- Restartable steps (docs/flows.md "Restartable steps").

-- Saves `t` (a table of named values: a JSON object of at most
-- limits.checkpoint_max bytes) as the running step's execution context,
-- with its counters, in one write: a later attempt starts this step with
-- ctx.checkpoint holding t. In a step, ctx.checkpoint is that context (an
-- empty table when none was saved), callable: ctx:checkpoint(t) reaches
-- this function either way.
local function save_checkpoint(ctx, t)
  if type(t) ~= "table" then
    error("ctx:checkpoint: the context must be a table (got " .. type(t) .. ")", 3)
  end
  local ok, text = pcall(pjson.encode, t)
  if not ok then error("ctx:checkpoint: " .. tostring(text), 3) end
  if text == "[]" then text = "{}" end -- an empty table
  if text:sub(1, 1) ~= "{" then
    error("ctx:checkpoint: the context must be a table of named values "
          .. "(a JSON object), not a list", 3)
  end
  if #text > limits.checkpoint_max then
    error(("ctx:checkpoint: the context is %d bytes of JSON, more than the "
           .. "limit of %d"):format(#text, limits.checkpoint_max), 3)
  end
  local err = host.step_save(ctx._seq, text)
  if err then error("ctx:checkpoint: " .. err, 3) end
end

function CtxMethods:checkpoint(t) save_checkpoint(self, t) end

-- The metatable of ctx.checkpoint in a step (hidden, so job code cannot
-- take the call away from the context it reads).
local CHECKPOINT = {
  __call = function(_, ctx, t) save_checkpoint(ctx, t) end,
  __metatable = false,
}

local COUNTERS = { read = 0, written = 1, filtered = 2, skipped = 3,
                   commits = 4, rollbacks = 5 }

-- Adds n (default 1; a whole number) to counter `name` of the running
-- step; returns its new value. Stored with each checkpoint and at the
-- step's end.
function CtxMethods:count(name, n)
  local which = COUNTERS[name]
  if not which then
    error(("ctx:count: counter must be read, written, filtered, skipped, "
           .. "commits or rollbacks (got %s)"):format(tostring(name)), 2)
  end
  if n == nil then n = 1 end
  if type(n) ~= "number" then error("ctx:count: n must be a number", 2) end
  local v, err = host.step_count(self._seq, which, n)
  if not v then error("ctx:count: " .. err, 2) end
  return v
end

-- Sets the exit code (a string or a whole number) and message of the job
-- (stored now) and of the running step (stored at its end).
function CtxMethods:exit(code, message)
  if type(code) == "number" and code % 1 == 0 then code = ("%d"):format(code) end
  if type(code) ~= "string" then
    error("ctx:exit: code must be a string or a whole number", 2)
  end
  if message ~= nil then
    if type(message) ~= "string" then error("ctx:exit: message must be a string", 2) end
    message = clean(current_spec, host.text(message), current_job)
  end
  local err = host.step_exit(self._seq, host.text(code), message)
  if err then error("ctx:exit: " .. err, 2) end
end

function CtxMethods:heartbeat() return host.heartbeat(self._seq) end

-- ---- the sandbox ------------------------------------------------------
--
-- A worker state runs one job after another, so whatever job code can
-- reach that outlives its job is a channel to every later job on this
-- worker: the library tables, the `pawl` table, the modules `require`
-- returns, the string metatable, a script's globals, and state-wide
-- settings (the random seed, the JIT, the collector). Job code
-- therefore gets read-only views of the tables (as Redis 7 does for its
-- scripts): an empty table whose metatable reads from a private copy,
-- refuses writes and is hidden from getmetatable/setmetatable. The raw
-- functions of the curated environment know the views: rawset,
-- table.insert/remove/sort refuse them, rawget, next, pairs and ipairs read
-- through them. State-wide settings job code may change are put back
-- before the next job's code runs (settle). The host's own Lua (this
-- module, pawl.retry, pawl.sanitize, cjson) is never handed out: job code
-- sees views of it.

-- view -> the table it reads from. Weak both ways: a script's globals and
-- its view go when the script is reloaded.
local backing = setmetatable({}, { __mode = "kv" })
local view_of = {} -- host table -> its view (built once per state)
local opening = setmetatable({}, { __mode = "k" }) -- envs whose top level runs

local function read_only(name)
  return function(_, k)
    error(("%s.%s is read-only in job code"):format(name, tostring(k)), 2)
  end
end

-- A read-only view of `t`; tables in it are viewed too (then it reads
-- from a copy of `t` holding their views: later changes to `t` do not
-- show, and host modules do not change after they load).
local function view(t, name)
  local v = view_of[t]
  if v then return v end
  local b = t
  for _, x in pairs(t) do
    if type(x) == "table" then b = {} break end
  end
  v = setmetatable({}, { __index = b, __newindex = read_only(name),
                         __metatable = false })
  view_of[t] = v
  backing[v] = b
  if b ~= t then
    for k, x in pairs(t) do
      if type(x) == "table" then x = view(x, name .. "." .. tostring(k)) end
      b[k] = x
    end
  end
  return v
end

local function copy(t, keys)
  local c = {}
  if keys then
    for _, k in ipairs(keys) do c[k] = t[k] end
  else
    for k, v in pairs(t) do c[k] = v end
  end
  return c
end

-- Settings of the whole state that job code may change, put back before
-- the next job's (or hook's) code runs.
local dirty = false   -- something below needs putting back
local reseeded = false -- job code called math.randomseed

local function settle()
  dirty = false
  if reseeded then
    -- The job's own seed applied to its own draws only: the next job
    -- starts from a fresh seed, like every state does.
    reseeded = false
    math.randomseed(host.entropy())
  end
end

local function state_wide(what)
  return function()
    error(("%s is not allowed in job code: it would change every later job on "
           .. "this worker (the operator can allow everything with --unsafe-lua)")
          :format(what), 2)
  end
end

-- The raw functions, aware of views.
local function refuse_views(fn, name)
  return function(t, ...)
    if backing[t] then
      if opening[t] then return fn(backing[t], ...) end
      error(name .. ": the table is read-only in job code", 2)
    end
    return fn(t, ...)
  end
end

local function through(fn)
  return function(t, ...) return fn(backing[t] or t, ...) end
end

-- pairs and ipairs return the table they walk: for a view, walk what it
-- reads from without handing that out.
local function view_next(t, k) return next(backing[t], k) end
local function view_inext(t, i)
  i = i + 1
  local x = rawget(backing[t], i)
  if x ~= nil then return i, x end
end

local SANDBOX = {
  rawset = refuse_views(rawset, "rawset"),
  rawget = through(rawget), next = through(next),
  pairs = function(t)
    if backing[t] then return view_next, t, nil end
    return pairs(t)
  end,
  ipairs = function(t)
    if backing[t] then return view_inext, t, 0 end
    return ipairs(t)
  end,
  collectgarbage = function(opt, ...)
    if opt == nil or opt == "collect" or opt == "count" or opt == "step" then
      return collectgarbage(opt, ...)
    end
    if type(opt) == "string" then
      return state_wide(("collectgarbage(%q)"):format(opt))()
    end
    error("collectgarbage: option must be \"collect\", \"count\" or \"step\"", 2)
  end,
}

-- Library views shared by every script (built on first use, after the
-- `pawl` table is complete).
local LIB = nil

local CAPS = { io = "file access", env = "environment variables",
               signal = "signalling jobs it did not enqueue",
               replace = "replacing jobs it did not enqueue",
               restart = "restarting job instances it did not enqueue" }

local function capability(what, cap)
  return function()
    error(("%s is not allowed in job code: the operator grants %s with "
           .. "pawl run --allow-%s (or allow = { %q } in _defaults.lua)")
          :format(what, CAPS[cap], cap, cap), 2)
  end
end

local IO_FNS = { "open", "lines", "read", "write", "type" }

-- os.date hands its whole format to one strftime() call, which no
-- interrupt can stop: a format of millions of "%c" took seconds.
local DATE_FORMAT_MAX = 1000

local function os_date(format, ...)
  if type(format) == "string" and #format > DATE_FORMAT_MAX then
    error(("os.date: the format is %d bytes long, at most %d"):format(#format,
          DATE_FORMAT_MAX), 2)
  end
  return os.date(format, ...)
end

local function libraries()
  if LIB then return LIB end
  LIB = {}
  -- The string metatable is one for every string in the state: job code
  -- gets a read-only stand-in for it, whose __index is the `string` view.
  LIB.string = view(string, "string")
  getmetatable("").__metatable = view({ __index = string }, 'getmetatable("")')
  -- Open files share one metatable whose __index is itself: give it an
  -- __index of its own (a view) and hide it, so f.__index reaches nothing.
  local fmt = getmetatable(io.stdout)
  if fmt and rawget(fmt, "__metatable") == nil then
    local methods = {}
    for k, v in pairs(fmt) do
      if type(k) == "string" and k:sub(1, 2) ~= "__" then methods[k] = v end
    end
    fmt.__index = view(methods, "file")
    fmt.__metatable = false
  end
  local t = copy(table)
  t.insert = refuse_views(table.insert, "table.insert")
  t.remove = refuse_views(table.remove, "table.remove")
  t.sort = refuse_views(table.sort, "table.sort")
  LIB.table = view(t, "table")
  local m = copy(math)
  -- Seeds this job's draws; settle() reseeds before the next job.
  m.randomseed = function(x)
    math.randomseed(x)
    reseeded, dirty = true, true
  end
  LIB.math = view(m, "math")
  LIB.coroutine = view(coroutine, "coroutine")
  LIB.bit = view(bit, "bit")
  -- Only what describes the VM. LuaJIT runs jit.attach handlers with
  -- hooks off (the timeout could never stop one, and their errors go raw
  -- to stderr); jit.util and jit.profile are not handed out at all, nor is
  -- ffi (see docs/security.md, "What the sandbox exposes").
  LIB.jit = view({
    version = jit.version, version_num = jit.version_num, os = jit.os,
    arch = jit.arch, status = jit.status,
    attach = function()
      error("jit.attach is not allowed in job code: LuaJIT runs its handlers "
            .. "with the timeout off (the operator can allow everything with "
            .. "--unsafe-lua)", 2)
    end,
    on = state_wide("jit.on"), off = state_wide("jit.off"),
    flush = state_wide("jit.flush"),
    opt = { start = state_wide("jit.opt.start") },
  }, "jit")
  LIB.pawl = view(pawl, "pawl")
  LIB.retry = view(retry, "pawl.retry")
  LIB.sanitize = view(sanitize, "pawl.sanitize")
  LIB.json = view(json, "cjson")
  -- io and os, with and without the capability.
  for _, allowed in ipairs { true, false } do
    local io_ = {}
    for _, k in ipairs(IO_FNS) do
      io_[k] = allowed and io[k] or capability("io." .. k, "io")
    end
    LIB[allowed and "io_yes" or "io_no"] = view(io_, "io")
    local os_ = copy(os, { "clock", "time", "difftime" })
    os_.date = os_date
    os_.getenv = allowed and os.getenv or capability("os.getenv", "env")
    LIB[allowed and "os_yes" or "os_no"] = view(os_, "os")
  end
  LIB.require = {
    ["pawl.retry"] = LIB.retry, ["pawl.sanitize"] = LIB.sanitize,
    cjson = LIB.json, string = LIB.string, table = LIB.table,
    math = LIB.math, bit = LIB.bit, jit = LIB.jit,
  }
  return LIB
end

local SAFE = {
  "assert", "error", "pcall", "xpcall", "select", "tonumber", "tostring",
  "type", "unpack", "rawequal", "setmetatable", "getmetatable", "_VERSION",
}

-- Loading text only: bytecode can break out of any sandbox.
local function text_only(chunk)
  if type(chunk) == "string" and chunk:byte(1) == 27 then
    return nil, "loading bytecode is not allowed in job code"
  end
  return true
end

-- print(): the text goes to the host's log, sanitized like an error.
local function print_(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
  local text = table.concat(parts, "\t")
  -- A log line's cap, checked before the sanitizer walks the text.
  if #text > limits.log_message_max then
    error(("print: the text is %d bytes; at most %d")
      :format(#text, limits.log_message_max), 2)
  end
  host.print(clean(current_spec, text, current_job))
end

-- The curated environment of one script, with capabilities `caps` (a set:
-- io, env). Returns the environment (a view of the script's globals, open
-- for assignments until its top level has run) and a function that locks
-- it: a script's globals are shared by every job of its type on this
-- worker, so job code assigning one is an error.
local function safe_env(caps)
  local lib = libraries()
  local g = copy(_G, SAFE)
  for k, fn in pairs(SANDBOX) do g[k] = fn end
  g.string, g.table, g.math = lib.string, lib.table, lib.math
  g.coroutine, g.bit, g.jit = lib.coroutine, lib.bit, lib.jit
  g.io = caps.io and lib.io_yes or lib.io_no
  g.os = caps.env and lib.os_yes or lib.os_no
  g.pawl = lib.pawl
  g.print = print_
  local open = true
  local env = setmetatable({}, {
    __index = g,
    __newindex = function(_, k, v)
      if open then
        g[k] = v
        return
      end
      error(("assignment to global %s in job code: use a local"):format(tostring(k)), 2)
    end,
    __metatable = false,
  })
  backing[env] = g
  opening[env] = true
  -- Chunks job code loads get globals of their own, reading through to
  -- the script's.
  local function chunk_env(e)
    return e or setmetatable({}, { __index = env })
  end
  g.load = function(chunk, name, mode, e)
    local ok, err = text_only(chunk)
    if not ok then return nil, err end
    return load(chunk, name, "t", chunk_env(e))
  end
  g.loadstring = function(s, name)
    local ok, err = text_only(s)
    if not ok then return nil, err end
    local f, lerr = loadstring(s, name)
    if f then setfenv(f, chunk_env(nil)) end
    return f, lerr
  end
  g.require = function(name)
    local m = lib.require[name]
    if m == nil then
      error(("require %q is not allowed in job code (the operator can allow "
             .. "everything with --unsafe-lua)"):format(tostring(name)), 2)
    end
    return m
  end
  g._G = env
  return env, function(final)
    g.io = final.io and lib.io_yes or lib.io_no
    g.os = final.env and lib.os_yes or lib.os_no
    open = false
    opening[env] = nil
  end
end

local function script_env(caps)
  if unsafe then
    local env = setmetatable({ pawl = libraries().pawl, print = print_ },
                             { __index = _G })
    env._G = env
    return env, function() end
  end
  return safe_env(caps)
end

-- ---- scripts ----------------------------------------------------------

local FIELDS = {
  run = "function", queue = "string", priority = "number",
  max_attempts = "number", timeout = "number", retry = "function",
  sanitize = "function", redact = "table", on_success = "function",
  on_failure = "function", on_dead = "function", allow = "table",
  -- recurring: the type's definition (docs/scheduling.md "Recurring jobs")
  cron = "string", tz = "string", misfire = "string",
  catch_up_limit = "number", payload = "table", cron_name = "string",
  -- Per-key ordering: ordering_key is a string or a function
  -- of the payload (checked below); ordering "strict" or "skip_failed".
  ordering_key = "function", ordering = "string",
  -- Limits: the resource its jobs hold a permit of.
  resource = "string",
  -- Dependencies: name -> predicate of the result.
  branches = "table",
  -- Restartable steps and job instances (checked below).
  steps = "table", identity = "table",
  -- Dead-letter alerts: _defaults.lua's dedup window, seconds.
  alert_window = "number",
  -- _defaults.lua's webhook destinations job code may post to.
  allow_webhook = "table",
  -- What the type's jobs may enqueue (docs/security.md, "What job code may
  -- write"): jobs per attempt, jobs per pawl.batch / pawl.chain call, and
  -- how deep a line of jobs enqueued by jobs may go. Checked below.
  max_children = "number", max_batch = "number", max_depth = "number",
  -- The job's heap ceiling: "64M", "1G" or bytes (checked below).
  memory = "string",
}

local MISFIRE = { run_once = true, catch_up = true, skip = true }

-- The recurring fields: cron with its zone (checked by the cron core:
-- host.cron_check), misfire, catch_up_limit, payload (JSON-encoded now,
-- into t.cron_payload, so that a bad one fails the load) and cron_name.
-- Returns nil or the reason, one line naming the field and the value.
local function check_cron(t, is_defaults)
  if t.cron == nil then
    for _, k in ipairs { "tz", "misfire", "catch_up_limit", "payload", "cron_name" } do
      if t[k] ~= nil then return ("field %s needs cron (the schedule)"):format(k) end
    end
    return nil
  end
  if is_defaults then return "_defaults.lua cannot declare cron" end
  local err = host.cron_check(t.cron, t.tz)
  if err then return err end
  if t.misfire ~= nil and not MISFIRE[t.misfire] then
    return ("misfire must be run_once, catch_up or skip (got %q)"):format(t.misfire)
  end
  local bad = t.catch_up_limit and out_of_range("catch_up_limit",
    t.catch_up_limit, 1, limits.catch_up_limit_max, true)
  if bad then return bad end
  if t.cron_name == "" then return "cron_name must not be empty" end
  if t.payload ~= nil then
    local ok, text = pcall(json.encode, t.payload)
    if not ok then return "payload: " .. tostring(text) end
    t.cron_payload = text
  end
  return nil
end

local ORDERING = { strict = true, skip_failed = true }

-- A stored ordering key: what pawl_enqueue takes (1..200 bytes, no control
-- characters). Returns nil, or what is wrong with it.
local function bad_ordering_key(v)
  if type(v) ~= "string" then
    return ("must be a string (got %s)"):format(type(v))
  end
  if v == "" then return "must not be empty" end
  if #v > 200 then return "is longer than 200 bytes" end
  if v:find("[%z\1-\31\127]") then return "contains a control character" end
  return nil
end

-- steps: a list of 1..steps_max { name = NAME, run = function } with
-- distinct names; identity: a list of 1..16 payload field names. Returns
-- nil or the reason.
local function check_steps(t, is_defaults)
  if t.steps ~= nil then
    if is_defaults then return "steps belong to a job type's script, not _defaults.lua" end
    if t.run ~= nil then return "a script has run or steps, not both" end
    local n, seen = 0, {}
    for k in pairs(t.steps) do
      if type(k) ~= "number" or k % 1 ~= 0 or k < 1 then
        return "steps must be a list of { name = ..., run = function }"
      end
      n = n + 1
    end
    if n == 0 or n > limits.steps_max or #t.steps ~= n then
      return ("steps must list 1 to %d steps (got %d)"):format(limits.steps_max, n)
    end
    for i, st in ipairs(t.steps) do
      if type(st) ~= "table" or type(st.run) ~= "function" then
        return ("step %d must be a table with a run function"):format(i)
      end
      local bad = bad_ordering_key(st.name) -- a name: 1..200 bytes, no controls
      if bad then return ("step %d: name %s"):format(i, bad) end
      for k in pairs(st) do
        if k ~= "name" and k ~= "run" then
          return ("step %s: unknown field %q"):format(st.name, tostring(k))
        end
      end
      if seen[st.name] then return ("two steps are named %s"):format(st.name) end
      seen[st.name] = true
    end
  end
  if t.identity ~= nil then
    if is_defaults then return "identity belongs to a job type's script, not _defaults.lua" end
    local n = 0
    for _ in pairs(t.identity) do n = n + 1 end
    if n == 0 or n > 16 or #t.identity ~= n then
      return ("identity must list 1 to 16 payload field names (got %d entries)"):format(n)
    end
    for i, f in ipairs(t.identity) do
      local bad = bad_ordering_key(f)
      if bad then return ("identity field %d %s"):format(i, bad) end
    end
  end
  return nil
end

-- The host's own copies of a checked script's steps and identity: job
-- code holding the script's tables cannot change what the host runs.
local function copy_steps(t)
  if t.steps then
    local c = {}
    for i, st in ipairs(t.steps) do c[i] = { name = st.name, run = st.run } end
    t.steps = c
  end
  if t.identity then t.identity = copy(t.identity) end
  return t
end

local function check_script(t, is_defaults)
  if type(t) ~= "table" then
    return nil, "script must return a table (got " .. type(t) .. ")"
  end
  for k, v in pairs(t) do
    local want = FIELDS[k]
    if not want then return nil, ("unknown field %q"):format(tostring(k)) end
    if k == "ordering_key" and type(v) == "string" then
      local bad = bad_ordering_key(v)
      if bad then return nil, "ordering_key " .. bad end
    elseif k == "memory" then
      if type(v) ~= "string" and type(v) ~= "number" then
        return nil, ("field memory must be a size such as \"256M\" or a "
                     .. "number of bytes (got %s)"):format(type(v))
      end
    elseif type(v) ~= want then
      return nil, ("field %s must be a %s (got %s)"):format(k, want, type(v))
    end
  end
  if t.alert_window ~= nil then
    if not is_defaults then
      return nil, "alert_window belongs to _defaults.lua, not a job type's script"
    end
    local bad = out_of_range("alert_window", t.alert_window, 0, 86400, false,
                             "seconds")
    if bad then return nil, bad end
  end
  -- memory, in bytes from here on (t is the script's own table; the host
  -- keeps a copy of it).
  if t.memory ~= nil then
    local bytes, merr = host.memory_check(t.memory)
    if not bytes then return nil, merr end
    t.memory = bytes
  end
  local serr = check_steps(t, is_defaults)
  if serr then return nil, serr end
  if not is_defaults and t.run == nil and t.steps == nil then
    return nil, "no run function (or steps)"
  end
  if is_defaults and t.run ~= nil then
    return nil, "_defaults.lua sets defaults; it has no run function"
  end
  local bad = t.priority and out_of_range("priority", t.priority,
      limits.priority_min, limits.priority_max, true)
    or t.max_attempts and out_of_range("max_attempts", t.max_attempts, 1,
      limits.attempts_max, true)
    or t.max_children and out_of_range("max_children", t.max_children, 0,
      limits.children_max, true)
    or t.max_batch and out_of_range("max_batch", t.max_batch, 1,
      limits.fanout_batch_max, true)
    or t.max_depth and out_of_range("max_depth", t.max_depth, 0,
      limits.depth_max, true)
  if bad then return nil, bad end
  -- A timeout may have a fraction; zero would mean none, which a script
  -- cannot ask for.
  if t.timeout and not (t.timeout > 0 and t.timeout <= limits.timeout_max_s) then
    return nil, ("timeout must be a number of seconds above 0 and at most %s "
                 .. "(got %s)"):format(tostring(limits.timeout_max_s),
                                       tostring(t.timeout))
  end
  if t.queue and t.queue == "" then return nil, "queue must not be empty" end
  local cerr = check_cron(t, is_defaults)
  if cerr then return nil, cerr end
  if t.ordering and not ORDERING[t.ordering] then
    return nil, ("ordering must be \"strict\" or \"skip_failed\" (got %q)")
      :format(t.ordering)
  end
  if is_defaults and t.ordering_key ~= nil then
    return nil, "ordering_key belongs to a job type's script, not _defaults.lua"
  end
  -- Limits: the resource its jobs hold a permit of. A name as
  -- pawl_enqueue() takes it; "queue:..." names a queue's limit.
  if t.resource ~= nil then
    if is_defaults then
      return nil, "_defaults.lua cannot set a resource (it belongs to a job type)"
    end
    local r = t.resource
    if r == "" or #r > 200 or r:find("[%c]") or r:sub(1, 6) == "queue:" then
      return nil, ("resource must be 1..200 bytes without control characters, "
                   .. "not beginning with \"queue:\" (got %q)"):format(r)
    end
  end
  if t.branches then
    if is_defaults then
      return nil, "branches belong to a job type's script, not _defaults.lua"
    end
    for k, v in pairs(t.branches) do
      local bad = bad_ordering_key(k) -- the same rule: a name
      if bad then return nil, "branches: a branch name " .. bad end
      if type(v) ~= "function" then
        return nil, ("branches: %s must be a function (got %s)"):format(k, type(v))
      end
    end
  end
  if t.redact then
    for _, key in ipairs(t.redact) do
      if type(key) ~= "string" then return nil, "redact must list field names" end
    end
  end
  if t.allow_webhook ~= nil then
    if not is_defaults then
      return nil, "allow_webhook belongs to _defaults.lua: the operator "
                  .. "grants webhook destinations"
    end
    local n = 0
    for k, v in pairs(t.allow_webhook) do
      n = n + 1
      if type(k) ~= "number" or type(v) ~= "string" then
        return nil, "allow_webhook must list destinations, \"HOST\" or "
                    .. "\"HOST:PORT\""
      end
      local bad = host.web_grant_check(v)
      if bad then return nil, "allow_webhook: " .. bad end
    end
    if n > 64 then
      return nil, ("allow_webhook: at most 64 destinations (got %d)"):format(n)
    end
  end
  if t.allow then
    for k, cap in pairs(t.allow) do
      if type(k) ~= "number" or not CAPS[cap] then
        return nil, ("allow must list capabilities, \"io\", \"env\", \"signal\", "
                     .. "\"replace\" or \"restart\" (got %s)")
          :format(type(cap) == "string" and ("%q"):format(cap) or tostring(cap))
      end
    end
  end
  return t
end

-- A hosted type's table, checked like a script the first time a job of
-- it runs (cached per value: db:define hands in a fresh copy each time).
-- One that does not pass is a table whose `bad` says why: its jobs fail
-- for good (W.prepare).
local hosted_checked = setmetatable({}, { __mode = "k" })

spec_of = function(name)
  local s = types[name]
  if s or not hosted then return s end
  local v = hosted[name]
  if v == nil then return nil end
  local c = hosted_checked[v]
  if c == nil then
    local t = type(v) == "function" and { run = v } or v
    local ok, err = check_script(t, false)
    c = ok and copy_steps(copy(ok)) or { bad = ("job type %s: %s"):format(name, err) }
    hosted_checked[v] = c
  end
  return c
end

-- The program's job types (a table the Lua module keeps: name -> table
-- or function), for a worker set up in the program's own state.
function W.set_hosted(t) hosted = t end

-- What the operator grants: pawl run's flags and _defaults.lua's `allow`.
local function operator_caps()
  local caps = {}
  for cap in pairs(CAPS) do
    caps[cap] = granted[cap] or defaults_allow[cap] or false
  end
  return caps
end

-- The capabilities of a checked script: what it asks for in `allow`, which
-- must be granted by the operator, else everything the operator grants.
local function script_caps(t, is_defaults)
  if is_defaults then return granted end
  local op = operator_caps()
  if not t.allow or unsafe or inspecting then return op end
  local caps = {}
  for _, cap in ipairs(t.allow) do
    if not op[cap] then
      return nil, ("allow asks for %s (%s), which the operator has not granted "
                   .. "(pawl run --allow-%s, or allow = { %q } in _defaults.lua)")
        :format(cap, CAPS[cap], cap, cap)
    end
    caps[cap] = true
  end
  return caps
end

local function load_script(path, is_defaults, src)
  local f, err
  if src then
    f, err = load(src, "@" .. path)
  else
    f, err = loadfile(path)
  end
  if not f then return nil, err end
  -- The top level runs with what the operator grants; the jobs with what
  -- the script asks for (allow), if it asks for less.
  local env, seal = script_env(is_defaults and granted or operator_caps())
  setfenv(f, env)
  local named = {}
  if is_defaults then defaults_webhooks = named end
  local ok, t = pcall(f)
  defaults_webhooks = nil
  if not ok then return nil, tostring(t) end
  local checked, cerr = check_script(t, is_defaults)
  if not checked then return nil, path .. ": " .. cerr end
  local caps, aerr = script_caps(checked, is_defaults)
  if not caps then return nil, path .. ": " .. aerr end
  seal(caps)
  -- The host keeps its own copy: job code holding the script's table
  -- cannot change the settings (sanitize, retry, ...) the host uses.
  checked = copy_steps(copy(checked))
  if unsafe then -- --unsafe-lua: every capability (the sandbox is off)
    caps = {}
    for cap in pairs(CAPS) do caps[cap] = true end
  end
  checked.caps = caps
  if checked.redact then checked.redact = copy(checked.redact) end
  if is_defaults then checked.named_webhooks = named end
  return checked
end

-- Loading is split in steps so that the host can run each script's top
-- level under a deadline of its own (a script that never returns is
-- interrupted, and must not take the others with it): load_begin, then
-- load_one for each file (_defaults first), and load_failed for a script
-- whose load the host cut short.

-- Starts loading the scripts in `files` (name -> path; "_defaults" for the
-- defaults file): takes the host's settings from `opts` and drops the
-- types whose file is gone.
function W.load_begin(files, opts)
  if opts then
    unsafe = opts.unsafe and true or false
    granted.io = opts.allow_io and true or false
    granted.env = opts.allow_env and true or false
    granted.signal = opts.allow_signal and true or false
    granted.replace = opts.allow_replace and true or false
    granted.restart = opts.allow_restart and true or false
    if opts.default_timeout then host_timeout = opts.default_timeout end
  end
  inspecting = opts == nil
  if dirty then settle() end
  current_job, current_spec = nil, nil
  if not files._defaults then
    -- No defaults file, or not any more: the built-in defaults apply again
    -- (a removed file must not leave its policy behind until a restart).
    builtin_defaults()
  end
  for name in pairs(types) do
    if not files[name] then types[name] = nil end
  end
  for name in pairs(load_errors) do
    if not files[name] then load_errors[name] = nil end
  end
end

-- Loads one script (`src`, its text as the host read it, or else the file
-- at `path`). Returns nil, or the reason it did not load; then its previous
-- version, if any, keeps serving.
function W.load_one(name, path, src)
  if name == "_defaults" then
    local t, err = load_script(path, true, src)
    if not t then
      W.load_failed(name)
      return err
    end
    defaults.retry = t.retry or retry.default
    defaults.sanitize = t.sanitize
    defaults.timeout = t.timeout or host_timeout
    defaults.memory = t.memory
    defaults.max_attempts = t.max_attempts
    defaults.queue, defaults.priority = t.queue, t.priority
    defaults.ordering = t.ordering
    defaults.max_children, defaults.max_batch, defaults.max_depth =
      t.max_children, t.max_batch, t.max_depth
    -- the global on_dead hook and its dedup window
    defaults.on_dead, defaults.alert_window = t.on_dead, t.alert_window
    defaults_allow = {}
    for _, cap in ipairs(t.allow or {}) do defaults_allow[cap] = true end
    local werr = host.webhook_grants(copy(t.allow_webhook or {}),
                                     t.named_webhooks)
    if werr then return werr end
    file_defaults = true
    return nil
  end
  local t, err = load_script(path, false, src)
  if not t then
    W.load_failed(name, path, err)
    return err
  end
  types[name] = t
  load_errors[name] = nil
  return nil
end

-- A job type in C (pawl_define_c): `run` is the C function (a closure of
-- host/lua/cjob.c), `settings` what its script table would say (queue,
-- priority, max_attempts, timeout). Checked like a script. Returns nil or
-- the reason it was refused.
function W.load_c(name, run, settings)
  local t = { run = run }
  for k, v in pairs(settings) do t[k] = v end
  local checked, err = check_script(t, false)
  if not checked then return name .. ": " .. err end
  types[name] = copy(checked)
  return nil
end

-- A script that did not load: its previous version keeps serving; for the
-- defaults file with none, the built-in defaults. A type with no version
-- to serve remembers why (`path` and `err`), so that its jobs fail with
-- the load error rather than with "no script for job type".
function W.load_failed(name, path, err)
  if name == "_defaults" and not file_defaults then builtin_defaults() end
  if name ~= "_defaults" and path and not types[name] then
    load_errors[name] = { path = path, err = tostring(err or "(no error message)") }
  end
end

-- The scripts that did not load in the host's loader and have no version
-- serving (name -> { path =, err = }), for the workers, which never see
-- them: their jobs fail with that error.
function W.set_load_errors(t)
  load_errors = t
end

-- Loads the scripts in `files` in one go (see load_begin and load_one);
-- `sources` (name -> text, optional) as for load_one. Returns a list of
-- { name, error }.
function W.load(files, opts, sources)
  sources = sources or {}
  W.load_begin(files, opts)
  local errors = {}
  local names = {}
  for name in pairs(files) do
    if name ~= "_defaults" then names[#names + 1] = name end
  end
  table.sort(names)
  if files._defaults then table.insert(names, 1, "_defaults") end
  for _, name in ipairs(names) do
    local err = W.load_one(name, files[name], sources[name])
    if err then errors[#errors + 1] = { name, err } end
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
-- apply when a job runs; see max_attempts_of), its ordering_key when it
-- is a string, whether it is a function of the payload instead, and its
-- resource (limits), identity (the list of identifying payload fields, or
-- nil); then the max_attempts and the timeout that apply to its jobs that
-- set none (the built-in defaults and the host's default timeout
-- included).
function W.defaults_of(name)
  local t = spec_of(name)
  if not t then return nil end
  local k = t.ordering_key
  return t.queue or defaults.queue, t.priority or defaults.priority,
         t.max_attempts or defaults.max_attempts, t.timeout,
         type(k) == "string" and k or nil, type(k) == "function", t.resource,
         t.identity,
         t.max_attempts or defaults.max_attempts or limits.default_max_attempts,
         t.timeout or defaults.timeout
end

-- The recurring definition a loaded type declares (cron = ...): its name,
-- expression, zone, misfire, catch_up_limit, payload (JSON), queue and
-- priority; nil when it declares none.
function W.cron_of(name)
  local t = types[name]
  if not t or not t.cron then return nil end
  return t.cron_name or name, t.cron, t.tz or "UTC", t.misfire or "run_once",
         t.catch_up_limit or 10, t.cron_payload or "{}",
         t.queue or defaults.queue, t.priority or defaults.priority or 0
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

-- Returns run, ctx, the timeout in seconds, the type's hooks (a bit
-- set: 1 on_success, 2 on_failure, 4 on_dead) and its memory ceiling in
-- bytes (nil: the host's) for `job`; or nil and an error (with the
-- timeout and 0) when its type has no script.
-- The `job` table job code gets is read-only: what it holds is moved to a
-- private table the metatable reads from, so that assigning job.id or
-- job.type (or rawset) fails, and nothing keyed by the job (job.signal,
-- the ctx functions, the host's own reads) can be pointed at another job
-- (docs/security.md, "Authority over other jobs"). The sandbox's pairs,
-- next and rawget read through it as through the library views.
-- job.signal: the job's signal as {key, state, decision,
-- payload, at, by, timeout_at}, nil when it has none; read from the
-- database when job code first asks (most jobs never do, and pay nothing)
-- for the job that runs (the host knows which, whatever the table says),
-- kept, and handed out as a copy each time (job code changing one cannot
-- change what the next read says). The metatable is locked (__metatable):
-- job code can neither read nor change it.
local function deep_copy(v)
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in pairs(v) do c[k] = deep_copy(x) end
  return setmetatable(c, getmetatable(v))
end

local NO_SIGNAL = {}
local job_read_only = read_only("job")

local function seal_job(job, with_signal)
  if backing[job] then return job end
  -- In the program's own state (the Lua module's db:step) the job's code
  -- is the program's and plain pairs is not the sandbox's: the fields stay
  -- in the table. job.signal reads the running job there too.
  local b = job
  if not hosted then
    b = {}
    for k, v in pairs(job) do b[k] = v end
    for k in pairs(b) do job[k] = nil end
    backing[job] = b
  end
  local sig = nil
  return setmetatable(job, {
    __metatable = false,
    __newindex = not hosted and job_read_only or nil,
    __index = function(_, k)
      -- rawget: in the program's state b is the job table itself.
      if k ~= "signal" or not with_signal then return rawget(b, k) end
      if sig == nil then sig = host.signal_of() or NO_SIGNAL end
      if sig == NO_SIGNAL then return nil end
      return deep_copy(sig)
    end,
  })
end

local prepare -- below: everything but the memory ceiling
function W.prepare(job, seq)
  local r, c, t, h = prepare(job, seq)
  local spec = spec_of(job.type)
  return r, c, t, h, (spec and spec.memory) or defaults.memory
end

prepare = function(job, seq)
  if dirty then settle() end
  local spec = spec_of(job.type)
  -- Job code, the retry step and the hooks see the max_attempts that
  -- applies (set before the table is sealed).
  job.max_attempts = max_attempts_of(job, spec)
  seal_job(job, true)
  current_job, current_spec = job, spec
  current_caps = spec and spec.caps or operator_caps()
  local ctx = setmetatable({ _seq = seq }, Ctx)
  local timeout = (job.timeout_s > 0 and job.timeout_s)
                  or (spec and spec.timeout) or defaults.timeout
  if not spec then
    local le = load_errors[job.type]
    if le then
      return nil, ("the script of job type %s (%s) did not load: %s")
                  :format(job.type, le.path, le.err), timeout, 0
    end
    return nil, ("no script for job type %s"):format(job.type), timeout, 0
  end
  if spec.bad then
    return nil, { [SENTINEL] = "fatal", message = spec.bad }, timeout, 0
  end
  if job._json_error then -- stored before pawl checked JSON: cannot run
    return nil, { [SENTINEL] = "fatal", message = job._json_error }, timeout,
           W.hooks_of(job.type)
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
  return spec.run or W.steps_runner(spec), ctx, timeout, W.hooks_of(job.type)
end

-- The run function of a script with `steps`: reads the job's
-- step executions, skips the steps that completed (in any earlier
-- attempt), and runs the others in order, each recorded (begin, end; a
-- step that raises is ended as failed by the host, with the sanitized
-- error). A step starts with ctx.checkpoint holding the last context
-- saved for it (ctx:checkpoint; an empty table when none), ctx.step its
-- name. A step whose name or
-- place changed since an execution is a new step: it runs from the start.
-- The job's result is what the last step run returns.
function W.steps_runner(spec)
  return function(job, ctx)
    local seq = ctx._seq
    local rows, err = host.steps(seq)
    if not rows then error("steps: " .. err, 0) end
    local done, saved = {}, {}
    for _, r in ipairs(rows) do
      local i, name, status, cp = r[1], r[2], r[3], r[4]
      local st = spec.steps[i]
      if st and st.name == name then
        if status == 1 then done[i] = true end
        if cp ~= nil then saved[i] = cp end -- oldest first: the last wins
      end
    end
    local result
    for i, st in ipairs(spec.steps) do
      if not done[i] then
        local cp = saved[i]
        host.step_begin(seq, i, st.name, cp)
        ctx.step = st.name
        local saved_cp = cp and pjson.decode(cp)
        if type(saved_cp) ~= "table" or getmetatable(saved_cp) ~= nil then
          saved_cp = {} -- none (or not an object: a database edited by hand)
        end
        ctx.checkpoint = setmetatable(saved_cp, CHECKPOINT)
        result = st.run(job, ctx)
        local eerr = host.step_end(seq)
        if eerr then error(("step %s: %s"):format(st.name, eerr), 0) end
      end
    end
    ctx.step, ctx.checkpoint = nil, nil
    return result
  end
end

-- The stored form of a successful run's return value: JSON, or nil.
function W.result_json(result)
  if result == nil then return nil end
  local ok, s = pcall(pjson.encode, result)
  if not ok then
    error("the job's return value cannot be stored as JSON: " .. tostring(s), 0)
  end
  return s
end

-- The text of an error value. A table is shown as JSON with its secret
-- members hidden by the rule ctx:log's fields follow (the built-in words
-- and the type's `redact` names, at any depth): the sanitizer that runs
-- on the text after it knows no type's names, and error(job.payload)
-- would otherwise store a `redact` field in last_error, the attempts, the
-- host's log and an alert's webhook body.
local function encode_clean(err, spec)
  return pjson.encode(clean_fields(err, 0, redact_names(spec)))
end
local function message_of(err, spec)
  if type(err) == "string" then return err end
  if type(err) == "table" then
    local ok, s = pcall(encode_clean, err, spec)
    if ok then return s end
  end
  return tostring(err)
end

-- The branches of `job`'s type that fire on its result: each
-- predicate runs once, in name order; the names that return a true value
-- are returned as a JSON array (nil: none fired, or the type has none). A
-- predicate that raises fires nothing and is recorded as an error line in
-- the job's log (ctx seq `seq`).
function W.branches_json(job, result, seq)
  local spec = spec_of(job.type)
  local b = spec and spec.branches
  if not b then return nil end
  local names = {}
  for k in pairs(b) do names[#names + 1] = k end
  table.sort(names)
  local fired = {}
  for _, name in ipairs(names) do
    local ok, v = pcall(b[name], result, job)
    if not ok then
      after_error(v)
      host.log(seq, "error", clean(spec, ("branch %s raised: %s")
        :format(name, message_of(v, spec)), job), nil)
    elseif v then
      fired[#fired + 1] = name
    end
  end
  if #fired == 0 then return nil end
  return pjson.encode(fired)
end

-- The sanitized text of `msg`: the type's sanitizer, else the operator's
-- default, else the built-in one. A sanitizer that raises, or returns
-- something that is not a string, falls back to the built-in sanitizer:
-- the raw message is never what gets stored.
function clean(spec, msg, job) -- declared above, with ctx
  local fn = (spec and spec.sanitize) or defaults.sanitize
  if fn then
    local ok, out = pcall(fn, msg, job)
    if ok and type(out) == "string" then
      return sanitize.truncate(out, max_error_length)
    end
    if not ok then after_error(out) end
  end
  local ok, out = pcall(sanitize.default, msg, job, max_error_length)
  if ok then return out end
  return "(error message withheld: the sanitizer failed)"
end

-- The message of an error text and its traceback (what the message
-- handler appended, from "stack traceback:" on), or nil when it has none.
local TRACE_MARK = "\nstack traceback:"
local function split_trace(s)
  local at = s:find(TRACE_MARK, 1, true)
  if not at then return s, nil end
  return s:sub(1, at - 1), s:sub(at + 1)
end
W.split_trace = split_trace

-- After a failed attempt: returns kind ("failed" | "retry" | "snooze"),
-- the sanitized error text (the message alone), the delay in seconds,
-- whether a retry lets later jobs of its ordering key pass, and the
-- sanitized traceback (nil: none). The traceback goes through the
-- sanitizer as the message does, and is cut to the same length.
function W.failed(job, err)
  local spec = spec_of(job.type)
  if type(err) == "table" and err[SENTINEL] == "snooze" then
    return "snooze", nil, err.seconds
  end
  if type(err) == "table" and err[SENTINEL] == "fatal" then
    return "failed", clean(spec, err.message, job), 0
  end
  local msg, tb = split_trace(message_of(err, spec))
  local text = clean(spec, msg, job)
  local trace = tb and clean(spec, tb, job) or nil
  if job.attempt >= max_attempts_of(job, spec) then
    return "failed", text, 0, false, trace
  end
  local policy = (spec and spec.retry) or defaults.retry
  local ok, delay = pcall(policy, job.attempt, err, job)
  if not ok then
    after_error(delay)
    return "failed", text .. "\nretry policy failed: "
      .. clean(spec, (split_trace(message_of(delay, spec))), job), 0, false,
      trace
  end
  if delay == nil then return "failed", text, 0, false, trace end
  if out_of_range("delay", delay, 0, limits.delay_max_s) then
    return "failed", text .. "\nretry policy returned "
      .. clean(spec, tostring(delay), job) .. ", not a delay in seconds "
      .. "(between 0 and " .. tostring(limits.delay_max_s) .. ")", 0, false,
      trace
  end
  return "retry", text, delay, W.ordering_of(spec) == "skip_failed", trace
end

-- The ordering a type's jobs keep when one fails and will be retried:
-- "strict" (it holds its key) or "skip_failed" (later jobs of its key may
-- pass it while it waits).
function W.ordering_of(spec)
  return (spec and spec.ordering) or defaults.ordering or "strict"
end

-- The ordering key the script of type `name` (checked table `spec`) gives
-- a job with `payload` (a table, a JSON text or nil): its string, or what
-- its function returns for the payload (nil: none). Returns key, or nil
-- and an error naming the type (a key that is not one, a payload that is
-- not JSON); what the function raises is raised.
function W.ordering_key_of(spec, name, payload)
  local k = spec.ordering_key
  if type(k) ~= "function" then return k end
  if type(payload) == "string" then
    local ok, v = pcall(pjson.decode, payload)
    if not ok then
      return nil, ("ordering_key of %s: the payload is not JSON: %s")
        :format(name, tostring(v))
    end
    payload = v
  end
  -- Called as job code is (no pcall here: what it raises, the deadline's
  -- error too, goes on up as the enqueuing code's error).
  local v = k(payload == nil and {} or payload)
  if v == nil then return nil end
  local bad = bad_ordering_key(v)
  if bad then
    return nil, ("ordering_key of %s returned a key that %s"):format(name, bad)
  end
  return v
end

-- Runs hook `name` (on_success, on_failure, on_dead) if the script has
-- one. Returns nil, or the sanitized error it raised.
function W.hook(name, job, arg)
  local spec = spec_of(job.type)
  local fn = spec and spec[name]
  if not fn then return nil end
  if dirty then settle() end
  current_job, current_spec = job, spec
  current_caps = spec.caps or operator_caps()
  local ok, err = pcall(fn, job, arg)
  if ok then return nil end
  after_error(err)
  return clean(spec, message_of(err, spec), job)
end

-- The global on_dead hook of _defaults.lua, run by the host's
-- alert chore for each job that landed in the dead-letter set, and for
-- each dedup window that ended with alerts suppressed: fn(job, err, info),
-- job = { id, type, queue, attempt, node }, info = { count, suppressed,
-- first_at, last_at } (seconds). Returns nil, or the sanitized error it
-- raised.
function W.alert(job, err, info)
  local fn = defaults.on_dead
  if not fn then return nil end
  if dirty then settle() end
  seal_job(job, false)
  current_job, current_spec = job, spec_of(job.type)
  current_caps = granted -- _defaults.lua's code: what the operator grants
  local ok, e = pcall(fn, job, err, info)
  current_job, current_spec = nil, nil
  current_caps = {}
  if ok then return nil end
  after_error(e)
  return clean(spec_of(job.type), message_of(e, spec_of(job.type)), job)
end

-- Whether _defaults.lua has an on_dead hook, its dedup window in seconds
-- (default 600; 0: no dedup), and how long the hook may run (its timeout,
-- else the host's).
function W.alert_settings()
  return defaults.on_dead ~= nil, defaults.alert_window or 600,
         defaults.timeout, defaults.memory
end

-- How long the hooks of a type may run: its script's timeout, else the
-- default one; and their memory ceiling (nil: the host's).
function W.hook_timeout(name)
  local spec = spec_of(name)
  return (spec and spec.timeout) or defaults.timeout,
         (spec and spec.memory) or defaults.memory
end

-- Which hooks the type has, as a bit set: 1 success, 2 failure, 4 dead.
function W.hooks_of(name)
  local spec = spec_of(name)
  if not spec then return 0 end
  return (spec.on_success and 1 or 0) + (spec.on_failure and 2 or 0)
       + (spec.on_dead and 4 or 0)
end

-- The redact lists and branch names of the loaded
-- job types `names`, as the JSON the host records in pawl_types:
-- [[type, [field, ...], [branch, ...]], ...], [] for none, branch names
-- sorted. Names without a loaded type are left out.
function W.types_json(names)
  local out = {}
  for _, name in ipairs(names) do
    local spec = types[name]
    if spec then
      local list, branches = {}, {}
      for i, key in ipairs(spec.redact or {}) do list[i] = key end
      for b in pairs(spec.branches or {}) do branches[#branches + 1] = b end
      table.sort(branches)
      out[#out + 1] = pjson.array({ name, pjson.array(list), pjson.array(branches) })
    end
  end
  return pjson.encode(pjson.array(out))
end

W.json = json
W.SENTINEL = SENTINEL

return W
