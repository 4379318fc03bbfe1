-- pawl.sanitize: the default sanitizer of errors, log lines and prints.
--
-- What a job reports ends up where operators read it (attempts, last_error,
-- events, job logs, the host's log), so credentials are removed before
-- anything is stored or logged:
--
--   * passwords in URLs: scheme://user:password@host (an empty user, as in
--     redis://:pw@host, and a password holding an @ included);
--   * the value of every key=value / key: value pair whose key looks secret
--     (password, pass=, pwd, secret, token, api_key, X-Api-Key, secret_key,
--     access_key, aws_secret_access_key, private_key, auth, jwt,
--     credentials, ..., in snake_case, kebab-case, dotted.names and
--     camelCase), quoted values ("a b", 'x', JSON strings) included;
--     Authorization, Cookie and Set-Cookie values up to the end of the line;
--   * bearer tokens, PEM private key blocks, and tokens recognisable by
--     their prefix: AWS access key ids (AKIA..., ASIA...), GitHub (ghp_,
--     gho_, ghu_, ghs_, ghr_, github_pat_), Stripe (sk_live_, rk_live_,
--     sk_test_, rk_test_, whsec_) and Slack (xoxb-, xoxp-, xoxa-, xoxr-,
--     xoxs-, xapp-).
--
-- The text is then cut to a limit without splitting a UTF-8 character.
--
-- It runs on every error, log line and print, so it is built for text
-- without secrets: each shape is first looked for with a plain search (a
-- fixed string, fast), and the patterns run only where one is found. Every
-- pattern is anchored or starts at a literal or frontier, so the cost grows
-- linearly with the text; text far beyond the limit is cut first.

local find, sub, byte, lower, gsub, gmatch =
  string.find, string.sub, string.byte, string.lower, string.gsub, string.gmatch
local concat = table.concat

local sanitize = {}

sanitize.REDACTED = "<redacted>"
sanitize.max_length = 2000

-- ---- keys that look secret ----------------------------------------------

-- The last word of a key (after splitting camelCase and on _ - .) -> 1 for
-- a value up to the next separator, 2 for a value up to the end of the
-- line (headers whose value holds spaces and semicolons).
local LAST_WORD = {
  password = 1, passwd = 1, pwd = 1, pass = 1, passphrase = 1, secret = 1,
  token = 1, apikey = 1, auth = 1, jwt = 1, credential = 1, credentials = 1,
  cookie = 2, cookies = 2, authorization = 2,
}
-- ..._key is secret after these words: api_key, secret_key, access_key,
-- private_key (and so aws_secret_access_key, X-Api-Key).
local BEFORE_KEY = { api = true, secret = true, access = true, private = true }

-- 1, 2 (see LAST_WORD) or nil; `bare` is true for a key of one word.
local function key_kind(key)
  if #key > 64 then key = sub(key, -64) end
  local k = lower(gsub(key, "(%l)(%u)", "%1_%2"))
  local prev, last, n = nil, nil, 0
  for w in gmatch(k, "%w+") do
    prev, last, n = last, w, n + 1
  end
  if not last then return nil end
  local kind = LAST_WORD[last]
  if not kind and last == "key" and BEFORE_KEY[prev] then kind = 1 end
  return kind, n == 1, last
end

-- Whether the value of a field named `key` should never be shown
-- (ctx:log fields use this).
function sanitize.secret_key(key)
  return type(key) == "string" and key_kind(key) ~= nil
end

-- The end of a quoted value that starts after position `p` (the quote
-- `q`, a byte): the position of the closing quote, skipping backslash
-- escapes, or nil when it never closes.
local function closing(msg, p, q)
  local set = q == 34 and '[\\"]' or "[\\']"
  while true do
    local at = find(msg, set, p)
    if not at then return nil end
    if byte(msg, at) == 92 then
      p = at + 2
    else
      return at
    end
  end
end

-- Whether byte c may be part of a key: a letter, a digit, _ . or -
local function key_byte(c)
  return (c >= 97 and c <= 122) or (c >= 65 and c <= 90) or (c >= 48 and c <= 57)
         or c == 95 or c == 46 or c == 45
end

-- Lower-case words that every secret key contains: the text is searched
-- for these (plain search, fast), and only the keys around them are
-- looked at.
local WORDS = { "pass", "pwd", "secret", "token", "key", "auth", "jwt",
                "credential", "cookie" }
local SEPARATOR = "^[\"']?[ \t]*([=:])[ \t]*"
local VALUE_END = "[%s&;,\"'})%]]"

-- The end of the value that starts at `vs` (of a key of `kind`): the
-- first and last positions to redact (last < first: nothing to redact).
local function value_at(msg, vs, kind)
  local c = byte(msg, vs)
  if c == 92 and (byte(msg, vs + 1) == 34 or byte(msg, vs + 1) == 39) then
    -- An escaped quote: the pair is inside a JSON string.
    local close = find(msg, sub(msg, vs, vs + 1), vs + 2, true)
    return vs + 2, (close or #msg + 1) - 1
  elseif c == 34 or c == 39 then
    return vs + 1, (closing(msg, vs + 1, c) or #msg + 1) - 1
  elseif kind == 2 then
    return vs, (find(msg, "[\r\n]", vs) or #msg + 1) - 1
  end
  return vs, (find(msg, VALUE_END, vs) or #msg + 1) - 1
end

-- Redacts the values of key=value / key: value pairs whose key looks
-- secret. `low` is msg in lower case.
local function redact_pairs(msg, low)
  local starts, ends = nil, nil
  for _, w in ipairs(WORDS) do
    local init = 1
    while true do
      local s = find(low, w, init, true)
      if not s then break end
      -- The whole key around the word.
      local a = s
      while a > 1 and key_byte(byte(low, a - 1)) do a = a - 1 end
      local _, b = find(low, "^[%w_%.%-]*", s)
      if not starts then starts, ends = {}, {} end
      if not ends[a] then
        starts[#starts + 1] = a
        ends[a] = b
      end
      init = b + 1
    end
  end
  if not starts then return msg end
  table.sort(starts)
  local out, i, done = nil, 1, 0
  for _, a in ipairs(starts) do
    if a > done then
      local b = ends[a]
      local _, e, sep = find(msg, SEPARATOR, b + 1)
      local kind, bare, last = nil, nil, nil
      if e then kind, bare, last = key_kind(sub(msg, a, b)) end
      -- A lone "pass:" is ordinary text ("pass: 3 of 5"); "pass=" is not.
      if kind and bare and last == "pass" and sep == ":" then kind = nil end
      if kind then
        local vs, ve = value_at(msg, e + 1, kind)
        if ve >= vs then
          out = out or {}
          out[#out + 1] = sub(msg, i, vs - 1)
          out[#out + 1] = sanitize.REDACTED
          i = ve + 1
          done = ve
        end
      end
    end
  end
  if not out then return msg end
  out[#out + 1] = sub(msg, i)
  return concat(out)
end

-- ---- the other shapes of secrets ----------------------------------------

local BEGIN = "%-%-%-%-%-BEGIN [%u%d ]*PRIVATE KEY[%u ]*%-%-%-%-%-"
local END = "%-%-%-%-%-END [%u%d ]*PRIVATE KEY[%u ]*%-%-%-%-%-"

-- PEM private key blocks keep their BEGIN and END lines; the key goes. A
-- block without its END line is redacted to the end of the text.
local function redact_pem(msg)
  local out, i = {}, 1
  while true do
    local s, e = find(msg, BEGIN, i)
    if not s then break end
    out[#out + 1] = sub(msg, i, e)
    out[#out + 1] = sanitize.REDACTED
    local es, ee = find(msg, END, e + 1)
    if not es then
      i = #msg + 1
      break
    end
    out[#out + 1] = sub(msg, es, ee)
    i = ee + 1
  end
  out[#out + 1] = sub(msg, i)
  return concat(out)
end

-- scheme://user:password@host -> scheme://user:<redacted>@host; the
-- password runs to the last @ of the authority.
local function redact_urls(msg)
  local out, i, init = nil, 1, 1
  while true do
    local s = find(msg, "://", init, true)
    if not s then break end
    init = s + 3
    local _, colon = find(msg, "^[^/%s:@\"']*:", s + 3)
    local _, at = nil, nil
    if colon then _, at = find(msg, "^[^/?#%s\"']*@", colon + 1) end
    if at then
      out = out or {}
      out[#out + 1] = sub(msg, i, colon)
      out[#out + 1] = sanitize.REDACTED
      i = at
      init = at + 1
    end
  end
  if not out then return msg end
  out[#out + 1] = sub(msg, i)
  return concat(out)
end

local function rep(class, n) return (class):rep(n) end

-- Tokens recognisable by their prefix: plain strings one of which such a
-- token contains (a fast search), and the pattern that redacts it.
local TOKENS = {
  { { "AKIA", "ASIA" }, "%f[%w]A[KS]IA" .. rep("[%u%d]", 16) .. "%f[^%w]" },
  { { "ghp_", "gho_", "ghu_", "ghs_", "ghr_" }, "%f[%w]gh[pousr]_" .. rep("%w", 20) .. "%w*" },
  { { "github_pat_" }, "%f[%w]github_pat_[%w_]+" },
  { { "k_live_" }, "%f[%w][rs]k_live_%w+" },
  { { "k_test_" }, "%f[%w][rs]k_test_%w+" },
  { { "whsec_" }, "%f[%w]whsec_%w+" },
  { { "xox" }, "%f[%w]xox[abprs]%-[%w%-]+" },
  { { "xapp-" }, "%f[%w]xapp%-[%w%-]+" },
}

local function redact(msg)
  if find(msg, "PRIVATE KEY", 1, true) then msg = redact_pem(msg) end
  if find(msg, "://", 1, true) then msg = redact_urls(msg) end
  local low, lowered = lower(msg), msg
  if find(low, "bearer", 1, true) then
    -- Bearer tokens (8 characters or more: "the bearer of bad news" stays).
    msg = gsub(msg, "(%f[%a][Bb][Ee][Aa][Rr][Ee][Rr]%s+)" .. rep("[%w%-._~+/]", 8)
               .. "[%w%-._~+/]*=*", "%1" .. sanitize.REDACTED)
  end
  for _, t in ipairs(TOKENS) do
    for _, guard in ipairs(t[1]) do
      if find(msg, guard, 1, true) then
        msg = gsub(msg, t[2], sanitize.REDACTED)
        break
      end
    end
  end
  -- (Strings are interned: this compares two pointers.)
  if msg ~= lowered then low = lower(msg) end
  return redact_pairs(msg, low)
end

-- ---- cutting ------------------------------------------------------------

-- Cuts `s` to at most `n` bytes (a marker included), backing off so that a
-- multi-byte UTF-8 character is never split. `force` adds the marker even
-- when `s` fits (the text was cut before).
local SUFFIX = "...[truncated]"

function sanitize.truncate(s, n, force)
  if #s <= n and not force then return s end
  local suffix = n > #SUFFIX * 2 and SUFFIX or ""
  local cut = math.min(n - #suffix, #s)
  -- Back off over continuation bytes (10xxxxxx): the byte after the cut
  -- must start a character.
  while cut > 0 and cut < #s do
    local b = byte(s, cut + 1)
    if b < 0x80 or b >= 0xC0 then break end
    cut = cut - 1
  end
  return sub(s, 1, cut) .. suffix
end

-- Bytes of text looked at, per byte of output: text beyond it is cut
-- before the patterns run, so a huge message costs no more than this.
local LOOK_AHEAD = 8

local SEPARATORS = { [9] = true, [10] = true, [13] = true, [32] = true,
                     [44] = true, [59] = true, [38] = true }

function sanitize.default(msg, job, max_length)
  msg = tostring(msg)
  local n = max_length or sanitize.max_length
  local limit = math.max(n * LOOK_AHEAD, 4096)
  if #msg <= limit then return sanitize.truncate(redact(msg), n) end
  -- Cut first. A secret the cut went through may have lost what its
  -- pattern needs (a URL its @): drop the last word, it may be one.
  msg = redact(sub(msg, 1, limit))
  local last = #msg
  while last > 0 and not SEPARATORS[byte(msg, last)] do last = last - 1 end
  return sanitize.truncate(sub(msg, 1, last), n, true)
end

return sanitize
