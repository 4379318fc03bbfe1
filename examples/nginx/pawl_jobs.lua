-- pawl_jobs.lua: pawl in an nginx worker (nginx.conf beside this file).
--
-- init_worker() runs in every worker after nginx forks it: it opens the
-- store (one handle, one SQLite connection per worker), defines the job
-- types in the worker's Lua state and starts a timer that calls
-- db:step(), so the jobs run in that worker, between its requests. The
-- handlers enqueue (POST /enqueue) and show (GET /job?id=) jobs through
-- the same handle. Any worker may run any job: they share the database.
local pawl = require "pawl"

local M = {}

local STEP_EVERY_S = 0.05 -- how often each worker looks for due jobs
local STEP_BUDGET_MS = 5  -- and for how long it runs them, plus one job

local db, open_err

-- words: counts the words of the text. Its result names the worker that
-- ran it (any worker may claim any job).
local function words(job)
  local n = 0
  for _ in job.payload.text:gmatch("%S+") do n = n + 1 end
  return { words = n, worker = ngx.worker.id(), pid = ngx.worker.pid() }
end

-- digest: ngx's own md5 of the text, as a table with a retry policy.
-- Job code may call ngx functions that do not yield (no ngx.sleep, no
-- cosockets: a job runs inside db:step, a C call, which cannot yield).
local digest = {
  run = function(job)
    return { md5 = ngx.md5(job.payload.text), worker = ngx.worker.id() }
  end,
  max_attempts = 3,
  retry = function(attempt) return attempt end, -- seconds: 1, 2
  timeout = 5,
}

-- The timer's callback: one step. `premature` is true when the worker is
-- exiting (exit_worker closes the handle).
local function step(premature)
  if premature or not db then return end
  local n, err = db:step(STEP_BUDGET_MS)
  if not n then ngx.log(ngx.ERR, "pawl: step: ", err) end
end

function M.init_worker()
  -- data/ in nginx's prefix: the workers' user must be able to write it
  -- (nginx.conf says why and how).
  db, open_err = pawl.open { db = "sqlite:" .. ngx.config.prefix() .. "data/pawl.db" }
  if not db then
    ngx.log(ngx.ERR, "pawl: ", open_err)
    return
  end
  db:define("words", words)
  db:define("digest", digest)
  -- The first step starts step mode: the worker's thread owns it.
  -- log_level 2: pawl's own log lines (to nginx's stderr, which nginx
  -- sends to its error log) for warnings and errors only.
  local n, err = db:step(0, { log_level = 2 })
  if not n then ngx.log(ngx.ERR, "pawl: step: ", err) end
  local ok, terr = ngx.timer.every(STEP_EVERY_S, step)
  if not ok then ngx.log(ngx.ERR, "pawl: timer: ", terr) end
end

function M.exit_worker()
  -- Hands back what this worker claimed ahead and had not run yet.
  if db then db:close() end
  db = nil
end

local function answer(status, text)
  ngx.status = status
  ngx.header["Content-Type"] = "text/plain"
  ngx.say(text)
  return ngx.exit(status)
end

-- POST /enqueue[?type=words|digest]: the body is the payload's text.
function M.enqueue()
  if not db then return answer(503, "pawl: " .. tostring(open_err)) end
  if ngx.req.get_method() ~= "POST" then return answer(405, "POST a text") end
  ngx.req.read_body()
  local text = ngx.req.get_body_data()
  if not text then return answer(400, "no body (or larger than 64 KiB)") end
  local jtype = ngx.var.arg_type or "words"
  if jtype ~= "words" and jtype ~= "digest" then
    return answer(400, "type must be words or digest")
  end
  local id, err, code = db:enqueue(jtype, { text = text })
  if not id then
    return answer(code == "PAWL_EINVAL" and 400 or 503, err)
  end
  return answer(200, id)
end

-- GET /job?id=ID: the job as JSON.
function M.show()
  if not db then return answer(503, "pawl: " .. tostring(open_err)) end
  local job, err, code = db:get(ngx.var.arg_id or "")
  if not job then
    return answer(code == "PAWL_ENOTFOUND" and 404 or
                  code == "PAWL_EINVAL" and 400 or 503, err)
  end
  ngx.header["Content-Type"] = "application/json"
  ngx.say(pawl.json.encode {
    id = job.id, type = job.type, state = job.state, attempt = job.attempt,
    result = job.result, error = job.last_error,
  })
end

return M
