-- pawl.console: the Lua side of `pawl console`: the operator's functions
-- (jobs, job, enqueue, retry, ...), how results are shown (aligned job
-- tables, records, readable nested Lua, JSON Lines), the evaluation of a
-- chunk, and completion candidates.
--
-- The C front end (host/cli/console.c) owns the terminal: line editing,
-- history, Ctrl-C, the prompt. It talks to a session made here through a
-- few calls: eval(chunk), incomplete(chunk), complete(line), trace(),
-- prompt(). Everything the session prints goes through opts.write, and it
-- asks the operator through opts.ask: a console attached to a running host
-- later keeps this front end and runs the same session in the host's admin
-- state, with write and ask carried over the socket.
--
-- Two environments for chunks. The direct console (`pawl console`, the
-- operator's own process, run as the operator) gives chunks the full
-- standard library: what it could do there, the operator can do with
-- `lua` or `sqlite3` anyway. A console attached to a running host
-- (opts.curated) runs its chunks in the host's process, on a state every
-- attached console shares, under the admin timeout: it gets the curated
-- environment below ("the attached console's environment"). The console's
-- functions, how they show results and ask, are the same code in both.
local pawl = require "pawl"
local json = pawl.json

local M = {}

-- Above this many matching jobs a bulk action asks first (force = true
-- skips the question); without a terminal to ask on, it needs force.
M.CONFIRM_ABOVE = 100

-- What any one result may print before it is cut with a note.
local MAX_LINES = 400
local MAX_BYTES = 256 * 1024
local RECENT_IDS = 200

local STATES = { "pending", "running", "succeeded", "failed", "canceled",
                 "paused", "blocked" }
local FILTER_FIELDS = { "state", "queue", "type", "tag", "older_than", "limit" }
local JOBS_FIELDS = { "state", "queue", "type", "tag", "older_than", "limit", "raw" }
local BULK_FIELDS = { "state", "queue", "type", "tag", "older_than", "limit",
                      "force", "reason" }
local ENQUEUE_FIELDS = { "queue", "priority", "run_at", "delay_ms",
                         "max_attempts", "timeout", "params", "tags", "key",
                         "business_key", "return_existing", "correlation_id",
                         "blocked" }

local KEYWORDS = { "and", "break", "do", "else", "elseif", "end", "false",
                   "for", "function", "if", "in", "local", "nil", "not", "or",
                   "repeat", "return", "then", "true", "until", "while" }

-- ---- small helpers --------------------------------------------------------

local function set_of(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

local function fail(fmt, ...) error(fmt:format(...), 0) end

-- Text for a terminal: control characters escaped, so a stored error or
-- payload cannot move the cursor or pass for another line.
local function safe(s)
  s = tostring(s)
  return (s:gsub("[%z\1-\31\127]", function(c)
    if c == "\n" then return "\\n" end
    if c == "\t" then return "\\t" end
    return ("\\x%02x"):format(c:byte())
  end))
end

-- Columns a string takes: UTF-8 code points (close enough for a table).
local function width(s)
  local _, n = s:gsub("[^\128-\191]", "")
  return n
end

-- The first `w` columns of s, with "…" when cut.
local function cut(s, w)
  if w <= 0 then return "" end
  if width(s) <= w then return s end
  local out, n = {}, 0
  for ch in s:gmatch("[%z\1-\127\194-\244][\128-\191]*") do
    if n + 1 >= w then break end
    out[#out + 1] = ch
    n = n + 1
  end
  return table.concat(out) .. "…"
end

local function iso(ms)
  if not ms or ms == 0 then return "-" end
  local s = math.floor(ms / 1000)
  return os.date("!%Y-%m-%dT%H:%M:%S", s) .. (".%03dZ"):format(ms - s * 1000)
end

-- "3s", "4m12s", "2h5m", "3d4h".
local function span(ms)
  local s = math.floor(math.abs(ms) / 1000)
  if s < 60 then return s .. "s" end
  if s < 3600 then return ("%dm%ds"):format(s / 60, s % 60) end
  if s < 86400 then return ("%dh%dm"):format(s / 3600, s % 3600 / 60) end
  return ("%dd%dh"):format(s / 86400, s % 86400 / 3600)
end

local function is_job(t)
  return type(t) == "table" and type(t.id) == "string" and
         type(t.state) == "string" and type(t.type) == "string"
end

local function is_job_list(t)
  if type(t) ~= "table" or getmetatable(t) == nil and #t == 0 then
    return false
  end
  local mt = getmetatable(t)
  if mt and mt.pawl_kind == "jobs" then return true end
  if #t == 0 then return false end
  for i = 1, #t do if not is_job(t[i]) then return false end end
  return true
end

-- Marks a result so that it is shown the way its kind is.
local function kind(t, k) return setmetatable(t, { pawl_kind = k }) end

local function kind_of(v)
  local mt = type(v) == "table" and getmetatable(v)
  return type(mt) == "table" and mt.pawl_kind or nil
end

-- ---- output with a budget -------------------------------------------------

-- Collects lines, stopping at MAX_LINES / MAX_BYTES with a count of what
-- was left out.
local Out = {}
Out.__index = Out

local function out_new() return setmetatable({ lines = {}, bytes = 0, cut = 0 }, Out) end

function Out:line(s)
  if self.cut > 0 or #self.lines >= MAX_LINES or self.bytes + #s > MAX_BYTES then
    self.cut = self.cut + 1
    return false
  end
  self.lines[#self.lines + 1] = s
  self.bytes = self.bytes + #s + 1
  return true
end

function Out:full() return self.cut > 0 end

function Out:text()
  local t = table.concat(self.lines, "\n")
  if #self.lines > 0 then t = t .. "\n" end
  if self.cut > 0 then
    t = t .. ("... (cut: %d more line%s; narrow it down, or loop over the "
              .. "value and print what you need)\n"):format(self.cut,
              self.cut == 1 and "" or "s")
  end
  return t
end

-- An aligned table: rows of cells, each line cut to `w` columns (0: no
-- limit). The last column takes what is left.
local function table_lines(out, rows, w)
  local widths = {}
  for _, r in ipairs(rows) do
    for c = 1, #r - 1 do
      widths[c] = math.max(widths[c] or 0, width(r[c]))
    end
  end
  for _, r in ipairs(rows) do
    local parts = {}
    for c = 1, #r do
      local cell = r[c]
      if c < #r then cell = cell .. (" "):rep(widths[c] - width(cell) + 2) end
      parts[c] = cell
    end
    local line = table.concat(parts):gsub("%s+$", "")
    if w and w > 0 then line = cut(line, w) end
    if not out:line(line) then break end
  end
end

-- ---- readable nested Lua --------------------------------------------------

local function quote(s)
  return '"' .. safe(s):gsub('"', '\\"') .. '"'
end

local function key_text(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") and
     not set_of(KEYWORDS)[k] then
    return k
  end
  if type(k) == "string" then return "[" .. quote(k) .. "]" end
  return "[" .. tostring(k) .. "]"
end

local function scalar(v)
  local t = type(v)
  if t == "string" then return quote(v) end
  if t == "number" then
    if v == math.floor(v) and math.abs(v) < 2^53 then return ("%d"):format(v) end
    return ("%.17g"):format(v)
  end
  if v == json.null then return "json.null" end
  return tostring(v)
end

local function sorted_keys(t)
  local keys, n = {}, #t
  for k in pairs(t) do
    if not (type(k) == "number" and k >= 1 and k <= n and k == math.floor(k)) then
      keys[#keys + 1] = k
    end
  end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "number" or ta == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return keys, n
end

-- Writes v as readable Lua: one line when it fits, else one field a line.
local function pretty(out, v, indent, prefix, seen, depth)
  indent, prefix, seen, depth = indent or "", prefix or "", seen or {}, depth or 0
  if type(v) ~= "table" or v == json.null then
    out:line(indent .. prefix .. scalar(v))
    return
  end
  if seen[v] then out:line(indent .. prefix .. "<cycle>") return end
  if depth >= 8 then out:line(indent .. prefix .. "{...}") return end
  local keys, n = sorted_keys(v)
  if n == 0 and #keys == 0 then
    out:line(indent .. prefix .. "{}")
    return
  end
  -- Short and flat: one line.
  local flat, len = {}, 0
  for i = 1, n do
    if type(v[i]) == "table" then flat = nil break end
    flat[#flat + 1] = scalar(v[i])
    len = len + #flat[#flat] + 2
  end
  if flat then
    for _, k in ipairs(keys) do
      if type(v[k]) == "table" and v[k] ~= json.null then flat = nil break end
      flat[#flat + 1] = key_text(k) .. " = " .. scalar(v[k])
      len = len + #flat[#flat] + 2
    end
  end
  if flat and len + #indent + #prefix < 100 then
    out:line(indent .. prefix .. "{ " .. table.concat(flat, ", ") .. " }")
    return
  end
  seen[v] = true
  out:line(indent .. prefix .. "{")
  local inner = indent .. "  "
  for i = 1, n do
    if out:full() then break end
    pretty(out, v[i], inner, "", seen, depth + 1)
    -- The comma goes after the element's last line (not after a line
    -- shown before the output was cut).
    if not out:full() then out.lines[#out.lines] = out.lines[#out.lines] .. "," end
  end
  for _, k in ipairs(keys) do
    if out:full() then break end
    pretty(out, v[k], inner, key_text(k) .. " = ", seen, depth + 1)
    if not out:full() then out.lines[#out.lines] = out.lines[#out.lines] .. "," end
  end
  out:line(indent .. "}")
  seen[v] = nil
end

-- ---- the session -----------------------------------------------------------

local Session = {}
Session.__index = Session

-- A short name of the database for the prompt: sqlite:PATH as given,
-- postgres:DBNAME (never a password).
local function db_label(url)
  if url:match("^sqlite:") then return url end
  local name = url:match("dbname=([^%s]+)") or url:match("^postgres%a*://[^/]*/([^?]+)")
  return "postgres:" .. (name or "?")
end

-- opts: db (URL or nil), create, db_mode, sync_full, scripts, json,
-- interactive, write(text), write_err(text) (error lines), ask(question)
-- -> answer | nil, width() -> n.
--
-- Attached to a running host (the host's admin state runs the session):
-- opts.handle is the host's handle (borrowed: never closed here),
-- opts.node its node id, and opts.host the functions only the live host
-- has (workers, reload, drain, resume_claiming, stop, log_level: see
-- M.host_functions).
function M.new(opts)
  local url, db, err = opts.db or os.getenv("PAWL_DB"), opts.handle, nil
  if not url or url == "" then url = "sqlite:./pawl.db" end
  if not db then
    db, err = pawl.open{ db = url, create = opts.create or false,
                         file_mode = opts.db_mode ~= 0 and opts.db_mode or nil,
                         sync_full = opts.sync_full or false }
  end
  if not db then
    if not opts.create and (err:match("^no database at ") or
                            err:match("^no pawl database in ")) then
      err = err .. " (or pass --create)"
    end
    return nil, err
  end
  local self = setmetatable({
    db = db, url = url, opts = opts, json = opts.json,
    owns_db = opts.handle == nil, node = opts.node, host = opts.host,
    interactive = opts.interactive, recent = {}, last_trace = nil,
    scripts_dir = opts.scripts or "./scripts",
  }, Session)
  self.write = opts.write or io.write
  self.write_err = opts.write_err or self.write
  self.ask = opts.ask or function() return nil end
  self.width = opts.width or function() return 0 end
  self.env = self:make_env()
  return self
end

function Session:close()
  if self.db and self.owns_db then self.db:close() end
  self.db = nil
end

function Session:prompt()
  local main = self.node and ("pawl@" .. self.node .. "> ") or
               ("pawl:" .. db_label(self.url) .. "> ")
  local cont = (" "):rep(math.max(0, width(main) - 4)) .. "..> "
  return main, cont
end

-- Remembers the ids of jobs shown, newest first, for completion.
function Session:remember(id)
  if type(id) ~= "string" then return end
  for i, v in ipairs(self.recent) do
    if v == id then table.remove(self.recent, i) break end
  end
  table.insert(self.recent, 1, id)
  self.recent[RECENT_IDS + 1] = nil
end

-- ---- the operator's functions ----------------------------------------------

-- Checks a filter table: known fields, known states, durations; returns a
-- copy for the module (without force and reason) and those two.
local function check_filter(name, f, fields)
  if f == nil then f = {} end
  if type(f) ~= "table" then
    fail("%s: expected a filter table like %s{state = \"failed\"} (got %s)",
         name, name, type(f))
  end
  local allowed = set_of(fields)
  local copy = {}
  for k, v in pairs(f) do
    if not allowed[k] then
      fail("%s: unknown filter field %s (expected %s)", name, tostring(k),
           table.concat(fields, ", "))
    end
    copy[k] = v
  end
  if copy.state ~= nil and not set_of(STATES)[copy.state] then
    fail("%s: unknown state %s (expected %s)", name, tostring(copy.state),
         table.concat(STATES, ", "))
  end
  for _, k in ipairs{ "queue", "type", "tag" } do
    if copy[k] ~= nil and type(copy[k]) ~= "string" then
      fail("%s: %s must be a string (got %s)", name, k, type(copy[k]))
    end
  end
  if copy.older_than ~= nil then
    local ot = copy.older_than
    if type(ot) == "string" then
      local ms, err = pawl.duration(ot)
      if not ms then fail("%s: older_than: %s", name, err) end
    elseif type(ot) ~= "number" then
      fail("%s: older_than must be a duration like \"2h\" or a number of "
           .. "seconds (got %s)", name, type(ot))
    end
  end
  if copy.limit ~= nil and (type(copy.limit) ~= "number" or copy.limit < 1 or
      copy.limit ~= math.floor(copy.limit) or copy.limit > 2147483647) then
    fail("%s: limit must be a whole number from 1 to 2147483647 (got %s)",
         name, tostring(copy.limit))
  end
  local force, reason = copy.force, copy.reason
  copy.force, copy.reason = nil, nil
  if force ~= nil and type(force) ~= "boolean" then
    fail("%s: force must be true or false (got %s)", name, type(force))
  end
  if reason ~= nil and type(reason) ~= "string" then
    fail("%s: reason must be a string (got %s)", name, type(reason))
  end
  return copy, force, reason
end

local function check(v, msg, code)
  if v == nil then fail("%s", tostring(msg) .. (code and (" (" .. code .. ")") or "")) end
  return v
end

-- One of retry, cancel, pause, resume: a job id, or a filter for every
-- matching job.
local function action(S, name, arg, reason)
  if type(arg) == "string" then
    if reason ~= nil and type(reason) ~= "string" then
      fail("%s: the reason must be a string (got %s)", name, type(reason))
    end
    local j = check(S.db[name](S.db, arg, reason))
    S:remember(j.id)
    -- The job after the action, shown as job(id) shows it.
    S:redact(j, {})
    S:applied(j, {})
    return kind(j, "job")
  end
  if type(arg) ~= "table" then
    fail("%s: expected a job id or a filter table like %s{state = \"failed\"}"
         .. " (got %s)", name, name, type(arg))
  end
  local f, force, why = check_filter(name, arg, BULK_FIELDS)
  if next(f) == nil or (next(f) == "limit" and next(f, "limit") == nil) then
    fail("%s: a filter needs at least one of state, queue, type, tag, "
         .. "older_than (every job is too easy to type by accident)", name)
  end
  local n = check(S.db:count(name, f))
  if n > M.CONFIRM_ABOVE and not force then
    if not S.interactive then
      fail("%s: %d jobs match: pass force = true to %s more than %d jobs "
           .. "(no terminal to confirm on)", name, n, name, M.CONFIRM_ABOVE)
    end
    local answer = S.ask(("%s %d jobs? [y/N] "):format(name, n))
    if not (answer and answer:match("^%s*[yY]")) then
      S.write("not confirmed: nothing changed\n")
      return 0
    end
  end
  if n == 0 then return 0 end
  -- At most the jobs counted (and confirmed).
  f.limit = math.min(f.limit or n, n)
  local changed, skipped, refused = S.db[name](S.db, f, why or reason)
  check(changed, skipped, refused)
  if skipped > 0 or refused > 0 then
    S.write(("note: %d skipped (changed meanwhile), %d refused (business key "
             .. "held by a live job)\n"):format(skipped, refused))
  end
  return changed
end

-- The table of functions: adding one is one entry here. hints.fields are
-- the names completed inside name{...}; hints.values those completed for
-- a field's string value; hints.id: its first argument is a job id.
M.functions = {
  { name = "jobs", help = "jobs{state=, queue=, type=, tag=, older_than=, limit=, raw=}: jobs, newest first (100 unless limit); payloads redacted unless raw = true",
    hints = { fields = JOBS_FIELDS, values = { state = STATES } },
    fn = function(S, f)
      local filter = check_filter("jobs", f, JOBS_FIELDS)
      local raw = filter.raw
      filter.raw = nil
      if raw ~= nil and type(raw) ~= "boolean" then
        fail("jobs: raw must be true or false (got %s)", type(raw))
      end
      local list = check(S.db:jobs(filter))
      local names, limits = {}, {}
      for _, j in ipairs(list) do
        S:remember(j.id)
        if not raw then S:redact(j, names) end
        S:applied(j, limits)
      end
      return kind(list, "jobs")
    end },
  { name = "job", help = "job(id, {raw=}): one job with its attempts, events, logs, progress and result; payloads redacted unless raw = true",
    hints = { id = true },
    fn = function(S, id, o)
      if type(id) ~= "string" then fail("job: expected a job id (got %s)", type(id)) end
      if o ~= nil and (type(o) ~= "table" or (o.raw ~= nil and type(o.raw) ~= "boolean")) then
        fail("job: options must be a table like {raw = true}")
      end
      for k in pairs(o or {}) do
        if k ~= "raw" then fail("job: unknown option %s (expected raw)", tostring(k)) end
      end
      local j = check(S.db:job(id))
      S:remember(j.id)
      if not (o and o.raw) then S:redact(j, {}) end
      S:applied(j, {})
      return kind(j, "job")
    end },
  { name = "enqueue", help = "enqueue(type, payload, opts): add a job (opts as in pawl enqueue: queue=, priority=, delay_ms=, tags=, ...); returns its id",
    hints = { fields = ENQUEUE_FIELDS },
    fn = function(S, jtype, payload, o)
      if type(jtype) ~= "string" then
        fail("enqueue: expected a job type (got %s)", type(jtype))
      end
      local id, status, code = S.db:enqueue(jtype, payload, o)
      check(id, status, code)
      S:remember(id)
      if status ~= "new" then S.write(("note: %s job\n"):format(status)) end
      return id
    end },
  { name = "retry", help = "retry(id | filter): failed -> pending; a filter retries every matching job and returns how many",
    hints = { fields = BULK_FIELDS, values = { state = { "failed" } }, id = true },
    fn = function(S, a, r) return action(S, "retry", a, r) end },
  { name = "cancel", help = "cancel(id | filter): pending, running, blocked, paused -> canceled; a filter returns how many",
    hints = { fields = BULK_FIELDS, values = { state = { "pending", "running", "blocked", "paused" } }, id = true },
    fn = function(S, a, r) return action(S, "cancel", a, r) end },
  { name = "pause", help = "pause(id | filter): pending, failed -> paused; a filter returns how many",
    hints = { fields = BULK_FIELDS, values = { state = { "pending", "failed" } }, id = true },
    fn = function(S, a, r) return action(S, "pause", a, r) end },
  { name = "resume", help = "resume(id | filter): paused -> where it was; a filter returns how many",
    hints = { fields = BULK_FIELDS, values = { state = { "paused" } }, id = true },
    fn = function(S, a, r) return action(S, "resume", a, r) end },
  { name = "stats", help = "stats(): jobs by state and queue, finished in the last 1/5/15 minutes, oldest due wait",
    fn = function(S) return kind(check(S.db:stats()), "stats") end },
  { name = "nodes", help = "nodes(): the nodes serving this database (id, version, queues, last beat, running jobs)",
    fn = function(S) return kind(check(S.db:nodes()), "nodes") end },
  { name = "locks", help = "locks(): the distributed locks (name, owner, expiry)",
    fn = function(S) return kind(check(S.db:locks()), "locks") end },
  { name = "queues", help = "queues(): each queue: jobs by state, oldest due wait, paused (by whom, why), age boost",
    fn = function(S) return kind(check(S.db:queues()), "queues") end },
  { name = "queue_pause", help = "queue_pause(q, reason): no node claims queue q's jobs until queue_resume(q); running ones finish",
    fn = function(S, q, reason)
      if type(q) ~= "string" then fail("queue_pause: expected a queue name (got %s)", type(q)) end
      local changed = check(S.db:queue_pause(q, reason))
      return changed and ("queue %s paused"):format(q) or ("queue %s was already paused"):format(q)
    end },
  { name = "queue_resume", help = "queue_resume(q): claim queue q's jobs again",
    fn = function(S, q)
      if type(q) ~= "string" then fail("queue_resume: expected a queue name (got %s)", type(q)) end
      local changed = check(S.db:queue_resume(q))
      if not changed then fail("queue %s is not paused (queues() shows the paused ones)", q) end
      return ("queue %s resumed"):format(q)
    end },
  { name = "queue_set", help = "queue_set(q, {age_boost = \"60s\" | ms | 0 | \"database\"}): queue q's own age boost",
    hints = { fields = { "age_boost" } },
    fn = function(S, q, o)
      if type(q) ~= "string" then fail("queue_set: expected a queue name (got %s)", type(q)) end
      if type(o) ~= "table" then fail("queue_set: expected a table {age_boost = ...} (got %s)", type(o)) end
      check(S.db:queue_set(q, o))
      return ("queue %s: age boost %s"):format(q, tostring(o.age_boost))
    end },
  { name = "cleanup", help = "cleanup{retain = POLICY, state = S, older_than = DUR, dry_run = true}: remove old finished jobs now, as `pawl cleanup` (docs/operations.md, \"Retention\"); what went, by state, queue and type",
    hints = { fields = { "retain", "state", "older_than", "dry_run" },
              values = { state = { "succeeded", "failed", "canceled" } } },
    fn = function(S, o)
      if o ~= nil and type(o) ~= "table" then
        fail("cleanup: expected a table like cleanup{older_than = \"7d\"} (got %s)", type(o))
      end
      local ok, r, msg, code = pcall(S.db.cleanup, S.db, o)
      if not ok then fail("cleanup: %s", tostring(r)) end
      return check(r, msg, code)
    end },
  { name = "scripts", help = "scripts(): the job types in the scripts directory, their settings and load errors",
    fn = function(S) return kind(check(pawl.scripts(S.scripts_dir)), "scripts") end },
  { name = "help", help = "help(): this list; help(fn) or help\"name\": one function",
    fn = function(S, what) return S:help(what) end },
}

-- What only a running host knows and does: in a console attached to it
-- (`pawl console --connect`), where S.host holds the C side of each
-- (include/pawl.h, "the live host").
local LEVELS = { "debug", "info", "warn", "error" }
M.host_functions = {
  { name = "workers", help = "workers(): each worker, busy or idle, the job it runs (id, type, attempt) and for how long",
    fn = function(S)
      local list = check(S.host.workers())
      for _, w in ipairs(list) do if w.job then S:remember(w.job) end end
      return kind(list, "workers")
    end },
  { name = "reload", help = "reload(): look at the scripts directory now, load what changed, and report the scripts that do not load",
    fn = function(S) return kind(check(S.host.reload()), "reload") end },
  { name = "drain", help = "drain(): stop claiming jobs (those claimed ahead go back); running jobs finish",
    fn = function(S)
      check(S.host.drain())
      return "draining: no new jobs are claimed; running jobs finish (resume_claiming() undoes it)"
    end },
  { name = "resume_claiming", help = "resume_claiming(): claim jobs again after drain()",
    fn = function(S)
      check(S.host.resume_claiming())
      return "claiming jobs again"
    end },
  { name = "stop", help = "stop(grace): stop the host gracefully: running jobs get grace seconds (default: the host's --grace), then go back",
    fn = function(S, grace)
      if grace ~= nil and (type(grace) ~= "number" or grace ~= grace or
                           grace < 0 or grace > 315360000) then
        fail("stop: grace must be a number of seconds from 0 to 315360000 (got %s)",
             tostring(grace))
      end
      check(S.host.stop(grace))
      return grace and ("stopping: running jobs get %g s to finish"):format(grace)
             or "stopping: running jobs get the host's grace period to finish"
    end },
  { name = "log_level", help = "log_level(l): set the host's log level (debug, info, warn, error); returns the one before. log_level(): the current one",
    hints = { values = {} },
    fn = function(S, level)
      if level ~= nil and not set_of(LEVELS)[level] then
        fail("log_level: expected debug, info, warn or error (got %s)", tostring(level))
      end
      return check(S.host.log_level(level))
    end },
}

local by_name = {}
for _, e in ipairs(M.functions) do by_name[e.name] = e end
for _, e in ipairs(M.host_functions) do by_name[e.name] = e end
M.by_name = by_name

-- The functions of a session: the host's too when attached.
local function functions_of(S)
  if not S.host then return M.functions end
  local all = {}
  for _, e in ipairs(M.functions) do all[#all + 1] = e end
  for _, e in ipairs(M.host_functions) do all[#all + 1] = e end
  return all
end

function Session:help(what)
  if what == nil then
    local rows = {}
    for _, e in ipairs(functions_of(self)) do rows[#rows + 1] = { e.name, e.help } end
    rows[#rows + 1] = { "db", "the pawl handle: db:jobs{...}, db:get(id), ... (docs/lua-module.md)" }
    rows[#rows + 1] = { ":trace", "the traceback of the last error, or of the attempts of the job last shown" }
    return kind(rows, "help")
  end
  for _, e in ipairs(functions_of(self)) do
    if what == e.name or what == self.env[e.name] then
      return kind({ { e.name, e.help } }, "help")
    end
  end
  fail("help: no console function %s (help() lists them)", tostring(what))
end

-- ---- the attached console's environment -------------------------------------
--
-- Attached, a chunk runs in the host's own process, on the admin state
-- that every attached console (and this module) shares, under a count hook
-- that enforces the admin timeout and Ctrl-C. So it must not reach: what
-- ends or wedges the process (os.exit, os.execute, io.popen, io.read on
-- the host's stdin), what switches the hook off or runs Lua without it
-- (the debug library, jit.attach handlers, __gc finalizers of newproxy
-- userdata, the collector stopped), what loads code or bytes from
-- elsewhere (require of any module, package, loadfile, dofile, bytecode,
-- ffi), the environments of this module's functions (getfenv, setfenv), and
-- the tables every session shares: those it gets as read-only views, built
-- the way the job sandbox builds them (lua/pawl/worker.lua, "the
-- sandbox"): an empty table whose hidden metatable reads from a copy that
-- holds views of the nested tables; rawset and table.insert/remove/sort
-- refuse views, rawget, next, pairs and ipairs read through them. What is
-- not available raises, naming it and why, rather than being nil.

local WHERE = "in the attached console"

-- view -> the table it reads from.
local backing = setmetatable({}, { __mode = "k" })
local view_of = {} -- shared table -> its view (built once per state)

local function read_only(name)
  return function(_, k)
    error(("%s.%s is read-only %s"):format(name, tostring(k), WHERE), 2)
  end
end

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

local function refused(what, why)
  return function()
    error(("%s is not available %s (%s)"):format(what, WHERE, why), 2)
  end
end

-- A library of which chunks get only `keep` (names -> values): any other
-- field raises, naming it.
local function partial(name, keep, why, whys)
  local b = {}
  for k, x in pairs(keep) do b[k] = x end
  local v = setmetatable({}, {
    __index = function(_, k)
      local x = b[k]
      if x ~= nil then return x end
      error(("%s.%s is not available %s (%s)"):format(name, tostring(k), WHERE,
            whys and whys[k] or why), 2)
    end,
    __newindex = read_only(name), __metatable = false })
  backing[v] = b
  return v
end

local function refuse_views(fn, name)
  return function(t, ...)
    if backing[t] then error(("%s: the table is read-only %s"):format(name, WHERE), 2) end
    return fn(t, ...)
  end
end

local function through(fn)
  return function(t, ...) return fn(backing[t] or t, ...) end
end

local function view_next(t, k) return next(backing[t], k) end
local function view_inext(t, i)
  i = i + 1
  local x = rawget(backing[t], i)
  if x ~= nil then return i, x end
end

local function pick(t, keys)
  local c = {}
  for _, k in ipairs(keys) do c[k] = t[k] end
  return c
end

local NO_HOOK = "it could switch off the chunk's time limit or reach the host's own Lua"
local NO_PROC = "it would run outside the chunk's time limit, in the host's process"
local NO_FILES = "chunks do not load code or read files on the host"

-- Built on first use: the views every curated session shares.
local CURATED = nil

local function curated()
  if CURATED then return CURATED end
  local c = {}
  local str = {}
  for k, x in pairs(string) do str[k] = x end
  str.dump = refused("string.dump", NO_FILES)
  c.string = view(str, "string")
  local tab = {}
  for k, x in pairs(table) do tab[k] = x end
  tab.insert = refuse_views(table.insert, "table.insert")
  tab.remove = refuse_views(table.remove, "table.remove")
  tab.sort = refuse_views(table.sort, "table.sort")
  c.table = view(tab, "table")
  c.math = view(math, "math")
  c.coroutine = view(coroutine, "coroutine")
  c.bit = view(bit, "bit")
  c.pawl = view(pawl, "pawl")
  c.json = view(json, "pawl.json")
  c.os = partial("os", pick(os, { "clock", "date", "time", "difftime" }),
                 "the host's files and environment are not the console's",
                 { exit = "it would end the host without its shutdown",
                   execute = NO_PROC })
  c.io = partial("io", {},
                 "the host's files and streams are not the console's; print() writes to the console",
                 { popen = NO_PROC })
  c.debug = partial("debug", { traceback = debug.traceback }, NO_HOOK)
  c.jit = partial("jit", { version = jit.version, version_num = jit.version_num,
                           os = jit.os, arch = jit.arch, status = jit.status },
                  "it could run Lua without the chunk's time limit")
  c.package = partial("package", {}, NO_FILES)
  c.require = {
    pawl = c.pawl, cjson = c.json, string = c.string, table = c.table,
    math = c.math, bit = c.bit, coroutine = c.coroutine,
  }
  CURATED = c
  return c
end

-- Loading text only: bytecode can break out of any sandbox. A reader
-- function's pieces are joined first, so that the first byte is seen.
local function text_of(chunk)
  if type(chunk) == "function" then
    local parts = {}
    while true do
      local piece = chunk()
      if piece == nil or piece == "" then break end
      if type(piece) ~= "string" then return nil, "load: the reader must return strings" end
      parts[#parts + 1] = piece
    end
    chunk = table.concat(parts)
  end
  if type(chunk) == "string" and chunk:byte(1) == 27 then
    return nil, "loading bytecode is not allowed " .. WHERE
  end
  return chunk
end

-- The globals of a curated session (its env reads from them).
local SAFE_GLOBALS = {
  "assert", "error", "pcall", "xpcall", "select", "tonumber", "tostring",
  "type", "unpack", "rawequal", "setmetatable", "_VERSION",
}

function Session:curated_globals()
  local c = curated()
  local S = self
  local g = pick(_G, SAFE_GLOBALS)
  g.string, g.table, g.math, g.coroutine, g.bit = c.string, c.table, c.math, c.coroutine, c.bit
  g.pawl, g.json, g.os, g.io, g.debug, g.jit, g.package =
    c.pawl, c.json, c.os, c.io, c.debug, c.jit, c.package
  g.rawset = refuse_views(rawset, "rawset")
  g.rawget, g.next = through(rawget), through(next)
  g.pairs = function(t)
    if backing[t] then return view_next, t, nil end
    return pairs(t)
  end
  g.ipairs = function(t)
    if backing[t] then return view_inext, t, 0 end
    return ipairs(t)
  end
  -- A string's or a userdata's metatable (the string library, the
  -- database handle's methods) is shared by every session.
  g.getmetatable = function(v)
    if type(v) == "table" then return getmetatable(v) end
    return false
  end
  g.collectgarbage = function(opt, ...)
    if opt == nil or opt == "collect" or opt == "count" or opt == "step" then
      return collectgarbage(opt, ...)
    end
    error(("collectgarbage(%q) is not available %s (it would change the collector of "
           .. "the state every console shares; \"collect\", \"count\" and \"step\" are)")
          :format(tostring(opt), WHERE), 2)
  end
  g.load = function(chunk, name, mode, e)
    local text, err = text_of(chunk)
    if not text then return nil, err end
    return load(text, name, "t", e or S.env)
  end
  g.loadstring = function(text, name)
    local t, err = text_of(text)
    if not t then return nil, err end
    return load(t, name, "t", S.env)
  end
  g.require = function(name)
    local m = c.require[name]
    if m == nil then
      error(("require %q is not available %s (only pawl, cjson, string, table, "
             .. "math, bit and coroutine are)"):format(tostring(name), WHERE), 2)
    end
    return m
  end
  for _, k in ipairs{ "loadfile", "dofile" } do g[k] = refused(k, NO_FILES) end
  for _, k in ipairs{ "getfenv", "setfenv" } do g[k] = refused(k, NO_HOOK) end
  g.newproxy = refused("newproxy", "its finalizers would run without the chunk's time limit")
  g.module = refused("module", NO_FILES)
  return g
end

-- The global table chunks run in: the console's functions, db, pawl, json,
-- show; the standard library through _G (direct) or the curated globals
-- (attached).
function Session:make_env()
  local g = _G
  if self.opts.curated then g = self:curated_globals() end
  self.globals = g
  local mt = { __index = g }
  if self.opts.curated then mt.__metatable = false end
  local env = setmetatable({}, mt)
  local S = self
  for _, e in ipairs(functions_of(self)) do
    env[e.name] = function(...) return e.fn(S, ...) end
  end
  env.db = self.db
  env.pawl = self.opts.curated and g.pawl or pawl
  env.json = self.opts.curated and g.json or json
  env.show = function(...) S:show(select("#", ...), ...) end
  env.print = function(...)
    local parts = {}
    for i = 1, select("#", ...) do
      local v = select(i, ...)
      if type(v) == "table" then
        local o = out_new()
        S:render(o, v)
        parts[#parts + 1] = o:text():gsub("\n$", "")
      else
        parts[#parts + 1] = tostring(v)
      end
    end
    S.write(table.concat(parts, "\t") .. "\n")
  end
  env._G = env
  return env
end

-- ---- redaction ---------------------------------------------------------------

-- Replaces, in job table `j` (db:job's or db:jobs'), the payload, params,
-- result and log fields (decoded and as JSON text) with what admin views
-- show: secret members "<redacted>" (pawl.redact_json: key words such as
-- password, token, key, and the type's `redact` names as the hosts
-- recorded them). `names`: type -> its names, filled as types are met.
function Session:redact(j, names)
  local list = names[j.type]
  if list == nil then
    list = check(self.db:type_redact(j.type))
    names[j.type] = list
  end
  for _, k in ipairs{ "payload", "params", "result" } do
    local text = j[k .. "_json"]
    if text then
      text = pawl.redact_json(text, list)
      j[k .. "_json"], j[k] = text, json.decode(text)
    end
  end
  for _, l in ipairs(j.logs or {}) do
    if l.fields_json then
      l.fields_json = pawl.redact_json(l.fields_json, list)
      l.fields = json.decode(l.fields_json)
    end
  end
end

-- What a view says of a limit no script here can tell (pawl show and pawl
-- jobs say the same words).
local NO_SCRIPT = "no script visible"
local BROKEN_SCRIPT = "its script does not load"

-- Sets, in job table `j`, max_attempts and timeout_s to what applies when
-- it runs: what its enqueue set, else what its script in the scripts
-- directory says (its _defaults.lua and the built-in defaults included);
-- nil when no script here can say. max_attempts_from and timeout_from
-- say which ("enqueue", "script", NO_SCRIPT or BROKEN_SCRIPT). `cache`
-- keeps the scripts' settings for one listing.
function Session:applied(j, cache)
  if not cache.types then
    cache.types = {}
    for _, s in ipairs(pawl.scripts(self.scripts_dir) or {}) do
      cache.types[s.type] = s
    end
  end
  local s = cache.types[j.type]
  local from = not s and NO_SCRIPT or s.error and BROKEN_SCRIPT or "script"
  if (j.max_attempts or 0) > 0 then
    j.max_attempts_from = "enqueue"
  else
    j.max_attempts = from == "script" and s.applies_max_attempts or nil
    j.max_attempts_from = from
  end
  if (j.timeout_s or 0) > 0 then
    j.timeout_from = "enqueue"
  else
    j.timeout_s = from == "script" and s.applies_timeout or nil
    j.timeout_from = from
  end
end

-- ---- showing results ---------------------------------------------------------

local function attempt_text(j)
  return ("%d/%s"):format(j.attempt or 0, j.max_attempts or "?")
end

-- A limit as pawl show says it: "5", "5 (the script's)", "? (no script
-- visible)".
local function limit_text(v, from)
  if from == nil or from == "enqueue" then return v and tostring(v) or nil end
  if from == "script" then return ("%s (the script's)"):format(tostring(v)) end
  return ("? (%s)"):format(from)
end

function Session:render_jobs(out, list)
  if #list == 0 then out:line("(no jobs)") return end
  local now = self.db:now()
  local rows = { { "ID", "TYPE", "QUEUE", "STATE", "ATTEMPT", "RUN_AT", "LAST_ERROR" } }
  for _, j in ipairs(list) do
    local when = "-"
    if j.state == "pending" and j.run_at then
      when = j.run_at > now and ("in " .. span(j.run_at - now)) or
             (span(now - j.run_at) .. " late")
    elseif j.finished_at then
      when = span(now - j.finished_at) .. " ago"
    elseif j.started_at then
      when = "started " .. span(now - j.started_at) .. " ago"
    end
    -- Running with no start: claimed ahead of a free worker, waiting.
    local state = j.state
    if state == "running" and not j.started_at then
      state = "claimed"
      when = "claimed " .. span(now - (j.updated_at or now)) .. " ago"
    end
    rows[#rows + 1] = { j.id, safe(j.type), safe(j.queue), state,
                        attempt_text(j), when, j.last_error and safe(j.last_error) or "" }
  end
  table_lines(out, rows, self.width())
  if #list > 1 then out:line(("(%d jobs)"):format(#list)) end
  for _, j in ipairs(list) do
    if j.max_attempts == nil then
      out:line(("(N/?: %s for the type in %s)"):format(NO_SCRIPT, safe(self.scripts_dir)))
      break
    end
  end
end

local JOB_FIELDS = { "id", "type", "queue", "state", "paused_from", "priority",
                     "attempt", "max_attempts", "run_at", "created_at", "started_at",
                     "finished_at", "lease_owner", "lease_expires", "timeout_s",
                     "idempotency_key", "business_key", "correlation_id",
                     "enqueued_by", "recoveries", "version" }
local TIMES = set_of{ "run_at", "created_at", "updated_at", "started_at",
                      "finished_at", "lease_expires", "at", "scheduled_at",
                      "ended_at", "last_beat", "acquired_at", "expires_at",
                      "stopped_at" }

function Session:render_job(out, j)
  local w = self.width()
  local rows = {}
  for _, k in ipairs(JOB_FIELDS) do
    local v = j[k]
    if k == "attempt" then v = attempt_text(j) end
    -- Running with no start: claimed ahead of a free worker.
    if k == "state" and v == "running" and not j.started_at then
      v = "claimed"
    end
    if k == "max_attempts" then v = limit_text(v, j.max_attempts_from) end
    if k == "timeout_s" then v = limit_text(v, j.timeout_from) end
    if v ~= nil and v ~= "" then
      if TIMES[k] then v = iso(v) end
      rows[#rows + 1] = { k .. ":", safe(v) }
    end
  end
  if j.progress_total and j.progress_total > 0 then
    rows[#rows + 1] = { "progress:", ("%g/%g (%d%%)"):format(j.progress_done,
      j.progress_total, math.floor(100 * j.progress_done / j.progress_total)) }
  elseif j.progress_done and j.progress_done > 0 then
    rows[#rows + 1] = { "progress:", ("%g"):format(j.progress_done) }
  end
  rows[#rows + 1] = { "tags:", safe(j.tags and json.encode(j.tags) or "[]") }
  rows[#rows + 1] = { "payload:", safe(j.payload_json or "null") }
  if j.params_json then rows[#rows + 1] = { "params:", safe(j.params_json) } end
  if j.result_json then rows[#rows + 1] = { "result:", safe(j.result_json) } end
  if j.last_error then rows[#rows + 1] = { "last_error:", safe(j.last_error) } end
  table_lines(out, rows, w)
  if j.attempts then
    if #j.attempts == 0 then out:line("attempts: none") else
      out:line("attempts:")
      local r = { { "  #", "NODE", "STARTED", "ENDED", "OUTCOME", "ERROR" } }
      local traces = {}
      for _, a in ipairs(j.attempts) do
        r[#r + 1] = { "  " .. a.attempt, safe(a.node or "-"), iso(a.started_at),
                      iso(a.ended_at), a.outcome or "-", safe(a.error or "") }
        if a.trace then
          -- Each line made safe, the lines kept: :trace shows them.
          traces[#traces + 1] = ("traceback of attempt %d:"):format(a.attempt)
          for line in (a.trace .. "\n"):gmatch("([^\n]*)\n") do
            traces[#traces + 1] = "  " .. safe((line:gsub("\t", " ")))
          end
        end
      end
      table_lines(out, r, w)
      if #traces > 0 then
        self.last_trace = table.concat(traces, "\n")
        out:line("  (tracebacks of its attempts: :trace)")
      end
    end
  end
  if j.events then
    out:line("events:")
    local r = { { "  AT", "CHANGE", "ACTOR", "REASON" } }
    for _, e in ipairs(j.events) do
      r[#r + 1] = { "  " .. iso(e.at), e.from .. " -> " .. e.to,
                    safe(e.actor or "-"), safe(e.reason or "") }
    end
    table_lines(out, r, w)
  end
  if j.logs then
    if #j.logs == 0 then out:line("logs: none") else
      out:line("logs:")
      local r = { { "  #", "AT", "LEVEL", "MESSAGE", "FIELDS" } }
      for _, l in ipairs(j.logs) do
        r[#r + 1] = { "  " .. l.attempt, iso(l.at), l.level, safe(l.message),
                      safe(l.fields_json or "") }
      end
      table_lines(out, r, w)
    end
  end
end

function Session:render_stats(out, s)
  local rows = { { "QUEUE", "PENDING", "RUNNING", "SUCCEEDED", "FAILED",
                   "CANCELED", "PAUSED", "BLOCKED", "DONE/1M", "DONE/5M",
                   "DONE/15M", "FAILED/15M", "OLDEST_DUE" } }
  local function row(name, q)
    local c = q.counts
    rows[#rows + 1] = { safe(name), tostring(c.pending), tostring(c.running),
      tostring(c.succeeded), tostring(c.failed), tostring(c.canceled),
      tostring(c.paused), tostring(c.blocked), tostring(q.finished_1m),
      tostring(q.finished_5m), tostring(q.finished_15m),
      tostring(q.failed_15m), q.oldest_due_ms > 0 and span(q.oldest_due_ms) or "-" }
  end
  for _, q in ipairs(s.queues) do row(q.queue, q) end
  row("(all)", s)
  table_lines(out, rows, self.width())
end

function Session:render_nodes(out, list)
  if #list == 0 then out:line("(no nodes)") return end
  local now = self.db:now()
  local rows = { { "ID", "STATE", "VERSION", "QUEUES", "LAST_BEAT", "RUNNING", "STARTED", "INCARNATION" } }
  for _, n in ipairs(list) do
    local state = n.state or "-"
    if n.stopped_at then state = "stopped " .. iso(n.stopped_at) end
    rows[#rows + 1] = { safe(n.id), safe(state), safe(n.version),
      #n.queues > 0 and safe(table.concat(n.queues, ",")) or "(all)",
      n.last_beat and (span(now - n.last_beat) .. " ago") or "-",
      tostring(n.running), iso(n.started_at), n.incarnation }
  end
  table_lines(out, rows, self.width())
end

function Session:render_locks(out, list)
  if #list == 0 then out:line("(no locks)") return end
  local rows = { { "NAME", "OWNER", "ACQUIRED", "EXPIRES" } }
  for _, l in ipairs(list) do
    rows[#rows + 1] = { safe(l.name), safe(l.owner), iso(l.acquired_at),
                        iso(l.expires_at) .. (l.expired and " (expired)" or "") }
  end
  table_lines(out, rows, self.width())
end

function Session:render_queues(out, list)
  if #list == 0 then out:line("(no queues)") return end
  local rows = { { "QUEUE", "PAUSED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED",
                   "CANCELED", "PAUSED_JOBS", "BLOCKED", "OLDEST_DUE", "AGE_BOOST" } }
  for _, q in ipairs(list) do
    local c = q.counts
    local b = q.effective_age_boost_ms > 0 and span(q.effective_age_boost_ms) or "none"
    rows[#rows + 1] = { safe(q.queue), q.paused and "yes" or "no",
      tostring(c.pending), tostring(c.running), tostring(c.succeeded),
      tostring(c.failed), tostring(c.canceled), tostring(c.paused),
      tostring(c.blocked), q.oldest_due_ms > 0 and span(q.oldest_due_ms) or "-",
      b .. (q.age_boost_ms and "" or " (database)") }
  end
  table_lines(out, rows, self.width())
  for _, q in ipairs(list) do
    if q.paused then
      out:line(("paused: %s since %s by %s%s"):format(safe(q.queue), iso(q.paused_at),
               safe(q.paused_by or "?"), q.reason and (": " .. safe(q.reason)) or ""))
    end
  end
end

function Session:render_scripts(out, list)
  if #list == 0 then out:line(("(no job scripts in %s)"):format(safe(self.scripts_dir))) return end
  local rows = { { "TYPE", "QUEUE", "PRIORITY", "MAX_ATTEMPTS", "TIMEOUT", "ERROR" } }
  for _, s in ipairs(list) do
    rows[#rows + 1] = { safe(s.type), safe(s.queue or "-"),
      s.priority and tostring(s.priority) or "-",
      s.max_attempts and tostring(s.max_attempts) or "-",
      s.timeout and (s.timeout .. "s") or "-", safe(s.error or "") }
  end
  table_lines(out, rows, self.width())
end

function Session:render_workers(out, list)
  local rows = { { "WORKER", "STATE", "JOB", "TYPE", "ATTEMPT", "RUNNING" } }
  for _, w in ipairs(list) do
    if w.job then
      rows[#rows + 1] = { tostring(w.worker), "busy", w.job, safe(w.type),
                          tostring(w.attempt), span(w.running_ms) }
    else
      rows[#rows + 1] = { tostring(w.worker), "idle", "-", "-", "-", "-" }
    end
  end
  table_lines(out, rows, self.width())
  local busy = 0
  for _, w in ipairs(list) do if w.job then busy = busy + 1 end end
  out:line(("(%d busy, %d idle; %d claimed ahead%s)"):format(busy, #list - busy,
           list.queued or 0, list.draining and "; draining: no new jobs are claimed" or ""))
end

function Session:render_reload(out, r)
  out:line(("scripts: %d serving, %d not loading"):format(r.files, #r.errors))
  if #r.errors > 0 then
    local rows = { { "TYPE", "ERROR" } }
    for _, e in ipairs(r.errors) do rows[#rows + 1] = { safe(e.type), safe(e.error) } end
    table_lines(out, rows, self.width())
  end
end

function Session:render_help(out, rows)
  for _, r in ipairs(rows) do out:line(("%-8s %s"):format(r[1], r[2])) end
end

-- Any value, the way its kind reads best.
function Session:render(out, v)
  local k = kind_of(v)
  if k == "jobs" or (k == nil and is_job_list(v)) then return self:render_jobs(out, v) end
  if k == "job" or (k == nil and is_job(v)) then return self:render_job(out, v) end
  if k == "stats" then return self:render_stats(out, v) end
  if k == "nodes" then return self:render_nodes(out, v) end
  if k == "locks" then return self:render_locks(out, v) end
  if k == "scripts" then return self:render_scripts(out, v) end
  if k == "queues" then return self:render_queues(out, v) end
  if k == "help" then return self:render_help(out, v) end
  if k == "workers" then return self:render_workers(out, v) end
  if k == "reload" then return self:render_reload(out, v) end
  if type(v) == "string" then
    -- A string result reads as itself when it is one line of text.
    return out:line(v:find("[%z\1-\31\127]") and quote(v) or v)
  end
  return pretty(out, v)
end

-- JSON Lines: a list of jobs, nodes, locks or scripts one element a line;
-- anything else one line. Raw JSON copies (payload_json, ...) are left out.
local function for_json(v, seen)
  if type(v) ~= "table" or v == json.null then
    if type(v) == "function" or type(v) == "userdata" or type(v) == "thread" then
      return tostring(v)
    end
    return v
  end
  seen = seen or {}
  if seen[v] then return "<cycle>" end
  seen[v] = true
  local mt = getmetatable(v)
  local copy = {}
  for k, x in pairs(v) do
    if not (type(k) == "string" and k:match("_json$")) then
      copy[k] = for_json(x, seen)
    end
  end
  seen[v] = nil
  if type(mt) == "string" or (#v > 0 and next(v, #v) == nil) then
    copy = json.array(copy)
  end
  return copy
end

function Session:json_lines(v)
  local k = kind_of(v)
  local items = (k == "jobs" or k == "nodes" or k == "locks" or k == "scripts"
                 or k == "workers" or k == "queues" or (k == nil and is_job_list(v))) and v or { v }
  if #items == 0 and items == v then return end
  for i = 1, #items do
    local ok, text = pcall(json.encode, for_json(items[i]))
    if not ok then text = json.encode(tostring(items[i])) end
    self.write(text .. "\n")
  end
end

-- Shows n values (the results of a chunk).
function Session:show(n, ...)
  for i = 1, n do
    local v = select(i, ...)
    if self.json then
      self:json_lines(v)
    else
      local out = out_new()
      self:render(out, v)
      self.write(out:text())
    end
  end
end

-- ---- evaluating chunks ---------------------------------------------------------

-- Whether a chunk's compile error says it simply ended too early (lua.c's
-- test: the message names <eof> at its end).
local function ends_early(err)
  return err and err:sub(-7) == "'<eof>'"
end

function Session:incomplete(chunk)
  if chunk:match("^%s*=") then chunk = "return " .. chunk:match("^%s*=(.*)") end
  local f, err = loadstring(chunk, "=stdin")
  if f then return false end
  if loadstring("return " .. chunk, "=stdin") then return false end
  return ends_early(err)
end

-- A one-line error, with a hint for the commonest slip.
local function one_line(err)
  local msg = tostring(err)
  local name = msg:match("attempt to call global '([^']+)' %(a nil value%)")
  if name then
    msg = msg .. ("; there is no function %s (help() lists the console's)"):format(name)
  end
  return safe(msg)
end

-- Compiles a chunk the way a REPL reads it: "=expr" and a bare expression
-- return their values; anything else runs as statements. Returns the
-- function and whether it is an expression: an expression is compiled as
-- `return pack(expr)`, pack given as its argument, so that a call in it
-- is never a tail call (which would lose its place in error messages:
-- `error("x")` would blame the console instead of stdin:1).
function Session:compile(chunk, chunkname, as_script)
  chunkname = chunkname or "=stdin"
  if as_script then return loadstring(chunk, chunkname) end
  local expr = chunk:match("^%s*=(.*)") or chunk
  local f, err = loadstring("local __pawl_pack = ...; return __pawl_pack("
                            .. expr .. "\n)", chunkname)
  if f then return f, true end
  if chunk:match("^%s*=") then return nil, err end
  return loadstring(chunk, chunkname)
end

local function pack(...) return { n = select("#", ...), ... } end

-- Runs a chunk and shows its results (or its error, as one line; the
-- traceback is kept for :trace). Returns true when it succeeded.
function Session:eval(chunk, chunkname, as_script)
  local f, is_expr = self:compile(chunk, chunkname, as_script)
  local err = not f and is_expr
  if not f then
    self.last_trace = tostring(err)
    self:error_line(err)
    return false
  end
  setfenv(f, self.env)
  local trace
  local function handler(e)
    -- The chunk's frames; the console's own below them are left out.
    trace = debug.traceback(tostring(e), 2)
      :gsub("\n%s*%[C%]: in function 'xpcall'.*$", "")
      :gsub("\n%s*lua/pawl/console%.lua:[^\n]*$", "")
    return e
  end
  -- Running and showing are one protected call: Ctrl-C may land in
  -- either, and a value whose __tostring raises is an error like any.
  local results
  local ok, e = xpcall(function()
    if is_expr then results = f(pack) else results = pack(f()) end
    if results.n > 0 then self:show(results.n, unpack(results, 1, results.n)) end
  end, handler)
  if not ok then
    self.last_trace = trace or tostring(e)
    self:error_line(e)
    return false
  end
  return true
end

function Session:error_line(err)
  if self.json then
    self.write(json.encode{ error = tostring(err) } .. "\n")
  else
    self.write_err("error: " .. one_line(err) .. "\n")
  end
end

function Session:trace()
  return self.last_trace or "no error yet"
end

-- ---- completion ------------------------------------------------------------------

local function starts(s, prefix) return s:sub(1, #prefix) == prefix end

local function add_matches(list, cands, prefix, decorate)
  for _, c in ipairs(list) do
    if starts(c, prefix) then cands[#cands + 1] = decorate and decorate(c) or c end
  end
end

-- The table a dotted path names in the console's globals, without calling
-- anything (a field read through an __index table, never a function).
function Session:resolve(path)
  local t = self.env
  for part in path:gmatch("[^%.:]+") do
    local v = rawget(backing[t] or t, part)
    if v == nil and t == self.env then v = rawget(self.globals, part) end
    if v == nil then
      local mt = getmetatable(t)
      local idx = type(mt) == "table" and rawget(mt, "__index")
      if type(idx) == "table" then v = rawget(backing[idx] or idx, part) end
    end
    t = v
    if type(t) ~= "table" and type(t) ~= "userdata" then return nil end
  end
  return t
end

local function keys_of(t, methods)
  local names, seen = {}, {}
  local function take(tab)
    if type(tab) ~= "table" then return end
    for k, v in pairs(tab) do
      if type(k) == "string" and k:match("^[%a_][%w_]*$") and not seen[k] and
         (not methods or type(v) == "function") then
        seen[k] = true
        names[#names + 1] = k
      end
    end
  end
  if type(t) == "table" then take(backing[t] or t) end
  local mt = getmetatable(t)
  if type(mt) == "table" and type(rawget(mt, "__index")) == "table" then
    take(rawget(mt, "__index"))
  end
  table.sort(names)
  return names
end

-- Completion candidates for the text before the cursor: returns the byte
-- position (1-based) where the word being completed starts, and the words
-- that may replace it (each starting with what is typed).
function Session:complete(line)
  local cands = {}
  -- Inside a string: a filter value (state = "fa) or a job id.
  local open = line:match("^.*()[\"']")
  if open then
    local before = line:sub(1, open - 1)
    local _, quotes = before:gsub("[\"']", "")
    if quotes % 2 == 0 then
      local q = line:sub(open, open)
      local prefix = line:sub(open + 1)
      local fn = before:match("([%a_][%w_]*)%s*%(?%s*{[^{}]*$")
      local field = before:match("([%a_][%w_]*)%s*=%s*$")
      local e = fn and by_name[fn]
      if e and field and e.hints and e.hints.values and e.hints.values[field] then
        add_matches(e.hints.values[field], cands, prefix, function(c) return c .. q end)
      else
        add_matches(self.recent, cands, prefix, function(c) return c .. q end)
      end
      return open + 1, cands
    end
  end
  local word = line:match("[%w_%.:]*$")
  local start = #line - #word + 1
  local before = line:sub(1, start - 1)
  -- A field of a console function's table argument: jobs{st -> state=.
  local fn = before:match("([%a_][%w_]*)%s*%(?%s*{[^{}]*$")
  if fn and by_name[fn] and by_name[fn].hints and by_name[fn].hints.fields and
     before:match("[{,]%s*$") and not word:find("[%.:]") then
    add_matches(by_name[fn].hints.fields, cands, word, function(c) return c .. "=" end)
    return start, cands
  end
  local base, sep, last = word:match("^(.*)([%.:])([%w_]*)$")
  if base and base ~= "" then
    local t = self:resolve(base)
    if t then
      add_matches(keys_of(t, sep == ":"), cands, last,
                  function(c) return base .. sep .. c end)
    end
    return start, cands
  end
  local names = keys_of(self.env)
  for k in pairs(self.globals) do
    if type(k) == "string" and not rawget(self.env, k) then names[#names + 1] = k end
  end
  table.sort(names)
  add_matches(names, cands, word)
  add_matches(KEYWORDS, cands, word)
  return start, cands
end

return M
