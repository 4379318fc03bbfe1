-- pawl.sanitize: the default error sanitizer.
--
-- Error messages end up in places operators read (attempts, last_error,
-- events, logs), so credentials are removed before anything is stored:
-- passwords in URLs, Authorization headers and bearer tokens, and the
-- values of password=/token=/secret=-style pairs. Long messages are cut
-- to a limit without splitting a UTF-8 character.

local sanitize = {}

sanitize.REDACTED = "<redacted>"
sanitize.max_length = 2000

-- A case-insensitive Lua pattern for a plain word: "ab" -> "[Aa][Bb]".
local function ci(word)
  return (word:gsub("%a", function(c)
    return "[" .. c:upper() .. c:lower() .. "]"
  end))
end

local SECRET_KEYS = {
  "password", "passwd", "pwd", "token", "secret", "api_key", "apikey",
  "access_token", "refresh_token", "client_secret", "private_key",
}

local function redact_pairs(msg, key)
  local k = ci(key)
  -- key=value and key: value, up to whitespace or a separator.
  msg = msg:gsub("(" .. k .. "%s*[=:]%s*)([^%s&;,\"'})%]]+)", "%1" .. sanitize.REDACTED)
  -- "key": "value" as in JSON.
  msg = msg:gsub("(\"" .. k .. "\"%s*:%s*\")([^\"]*)(\")", "%1" .. sanitize.REDACTED .. "%3")
  return msg
end

-- Cuts `s` to at most `n` bytes (a marker included), backing off so that a
-- multi-byte UTF-8 character is never split.
local SUFFIX = "...[truncated]"

function sanitize.truncate(s, n)
  if #s <= n then return s end
  local suffix = n > #SUFFIX * 2 and SUFFIX or ""
  local cut = n - #suffix
  -- Back off over continuation bytes (10xxxxxx): the byte after the cut
  -- must start a character.
  while cut > 0 do
    local b = s:byte(cut + 1)
    if b < 0x80 or b >= 0xC0 then break end
    cut = cut - 1
  end
  return s:sub(1, cut) .. suffix
end

function sanitize.default(msg, job, max_length)
  msg = tostring(msg)
  -- scheme://user:password@host -> scheme://user:<redacted>@host
  msg = msg:gsub("(%a[%w+.-]*://)([^/%s:@]+):([^/%s@]+)@", "%1%2:" .. sanitize.REDACTED .. "@")
  -- Authorization: <scheme> <credentials> (header or log line)
  msg = msg:gsub("(" .. ci("authorization") .. "%s*[:=]%s*)([^\r\n]+)", "%1" .. sanitize.REDACTED)
  -- Bearer tokens wherever they appear.
  msg = msg:gsub("(" .. ci("bearer") .. "%s+)([%w%-._~+/]+=*)", "%1" .. sanitize.REDACTED)
  for _, key in ipairs(SECRET_KEYS) do
    msg = redact_pairs(msg, key)
  end
  return sanitize.truncate(msg, max_length or sanitize.max_length)
end

return sanitize
