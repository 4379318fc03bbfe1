-- pawl.retry: retry policies for job scripts.
--
-- A policy is a function (attempt, err, job) -> delay_seconds | nil, called
-- in the worker after a failed attempt. nil means give up: the job goes to
-- the dead-letter set. The engine gives up anyway once `attempt` reaches the
-- job's max_attempts, so policies only choose the delay.

local bit = require "bit"

local retry = {}

-- The jitter draws from a generator of its own (xorshift128, Marsaglia
-- 2003, on 32-bit words), not from math.random: job code may reseed
-- math.random (math.randomseed), and the jitter must stay spread however it
-- does. It is seeded once, from math.random, which the worker seeds from the
-- kernel (getrandom) before this module loads, so every worker state and
-- every node draws a different sequence. Job code cannot reach its state.
local bxor, lshift, rshift, tobit = bit.bxor, bit.lshift, bit.rshift, bit.tobit
local function seed_word() return tobit(math.floor(math.random() * 4294967296)) end
local jx, jy, jz, jw = seed_word(), seed_word(), seed_word(), seed_word()
if jx == 0 and jy == 0 and jz == 0 and jw == 0 then jw = 1 end -- never all zero

-- A number in [0, 1).
local function jitter_random()
  local t = bxor(jx, lshift(jx, 11))
  jx, jy, jz = jy, jz, jw
  jw = bxor(jw, rshift(jw, 19), t, rshift(t, 8))
  return (jw % 4294967296) / 4294967296
end

local function check_number(ctor, opts, field, default, min)
  local v = opts[field]
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v or v < min or v == math.huge then
    error(("pawl.retry.%s: %s must be a number >= %s (got %s)")
      :format(ctor, field, min, tostring(v)), 3)
  end
  return v
end

local function check_opts(ctor, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    error(("pawl.retry.%s expects a table of options"):format(ctor), 3)
  end
  for k in pairs(opts) do
    if not allowed[k] then
      error(("pawl.retry.%s: unknown option %q"):format(ctor, tostring(k)), 3)
    end
  end
  return opts
end

-- Never retry: the first failure is final.
function retry.none()
  return function() return nil end
end

-- The same delay after every failure.
function retry.fixed(opts)
  opts = check_opts("fixed", opts, { delay = true })
  local delay = check_number("fixed", opts, "delay", 10, 0)
  return function() return delay end
end

-- base, 2*base, 3*base, ... capped at max.
function retry.linear(opts)
  opts = check_opts("linear", opts, { base = true, max = true })
  local base = check_number("linear", opts, "base", 10, 0)
  local max = check_number("linear", opts, "max", 3600, 0)
  return function(attempt)
    return math.min(base * math.max(attempt, 1), max)
  end
end

-- base * factor^(attempt-1), capped at max, then spread by +-jitter (a
-- fraction) so that jobs failing together do not retry together.
function retry.exponential(opts)
  opts = check_opts("exponential", opts,
    { base = true, factor = true, max = true, jitter = true })
  local base = check_number("exponential", opts, "base", 2, 0)
  local factor = check_number("exponential", opts, "factor", 2, 1)
  local max = check_number("exponential", opts, "max", 3600, 0)
  local jitter = check_number("exponential", opts, "jitter", 0.1, 0)
  if jitter > 1 then
    error("pawl.retry.exponential: jitter must be at most 1", 2)
  end
  return function(attempt)
    local d = math.min(base * factor ^ (math.max(attempt, 1) - 1), max)
    if jitter > 0 then
      d = d * (1 + jitter * (2 * jitter_random() - 1))
    end
    return d
  end
end

-- The policy used when a script sets none (scripts/_defaults.lua may
-- replace it): exponential from 2 s, doubling, capped at one hour.
retry.default = retry.exponential { base = 2, factor = 2, max = 3600, jitter = 0.1 }

return retry
