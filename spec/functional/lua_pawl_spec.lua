-- The Lua side of the host: retry policies and the default sanitizer.
local retry = require "pawl.retry"
local sanitize = require "pawl.sanitize"

describe("pawl.retry", function()
  it("none gives up at once", function()
    assert.is_nil(retry.none()(1, "e", {}))
  end)

  it("fixed returns its delay every time", function()
    local p = retry.fixed { delay = 3 }
    assert.equals(3, p(1))
    assert.equals(3, p(7))
  end)

  it("linear grows by base and stops at max", function()
    local p = retry.linear { base = 5, max = 12 }
    assert.equals(5, p(1))
    assert.equals(10, p(2))
    assert.equals(12, p(3))
  end)

  it("exponential doubles from base, capped, without jitter", function()
    local p = retry.exponential { base = 2, factor = 3, max = 100, jitter = 0 }
    assert.equals(2, p(1))
    assert.equals(6, p(2))
    assert.equals(18, p(3))
    assert.equals(100, p(10))
  end)

  it("exponential jitter stays within its fraction", function()
    local p = retry.exponential { base = 10, factor = 1, jitter = 0.2 }
    local lo, hi = math.huge, -math.huge
    for _ = 1, 2000 do
      local d = p(1)
      lo, hi = math.min(lo, d), math.max(hi, d)
    end
    assert.is_true(lo >= 8 and hi <= 12)
    assert.is_true(hi - lo > 2) -- it does spread
  end)

  it("the default is a bounded exponential", function()
    assert.is_true(retry.default(1) < 3)
    assert.is_true(retry.default(50) <= 3600 * 1.1)
  end)

  it("rejects bad options, naming them", function()
    assert.has_error(function() retry.fixed { delay = -1 } end,
      "pawl.retry.fixed: delay must be a number >= 0 (got -1)")
    assert.has_error(function() retry.exponential { bsae = 1 } end,
      'pawl.retry.exponential: unknown option "bsae"')
    assert.has_error(function() retry.linear "x" end)
    assert.has_error(function() retry.exponential { jitter = 2 } end)
  end)
end)

describe("pawl.sanitize.default", function()
  local s = sanitize.default

  it("removes passwords from URLs", function()
    assert.equals("connect postgres://app:<redacted>@db:5432/x failed",
      s("connect postgres://app:hunter2@db:5432/x failed"))
  end)

  it("removes Authorization headers and bearer tokens", function()
    assert.equals("Authorization: <redacted>", s("Authorization: Basic dXNlcjpwYXNz"))
    assert.equals("got 401 with bearer <redacted> from api",
      s("got 401 with bearer eyJhbGciOi.J9x-y_z from api"))
  end)

  it("removes password=, token=, secret= values", function()
    local out = s("login password=hunter2&user=ada token=abc123 SECRET: s3cr3t")
    assert.is_nil(out:find("hunter2", 1, true))
    assert.is_nil(out:find("abc123", 1, true))
    assert.is_nil(out:find("s3cr3t", 1, true))
    assert.truthy(out:find("user=ada", 1, true))
    assert.is_nil(s('{"password": "p4ss", "n": 1}'):find("p4ss", 1, true))
  end)

  it("truncates without splitting a UTF-8 character", function()
    local msg = string.rep("é", 100) -- 200 bytes, 2 per character
    for n = 40, 60 do
      local out = sanitize.truncate(msg, n)
      assert.is_true(#out <= n)
      local body = out:gsub("%.%.%.%[truncated%]$", "")
      assert.equals(0, #body % 2)
      assert.truthy(body:match("^[\xC3\xA9]*$"))
    end
    assert.equals("short", sanitize.truncate("short", 10))
    assert.is_true(#s(string.rep("x", 5000)) <= sanitize.max_length)
  end)

  it("leaves ordinary messages alone", function()
    assert.equals("division by zero at job.lua:3", s("division by zero at job.lua:3"))
  end)
end)
