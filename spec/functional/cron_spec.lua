-- cron_spec.lua: `pawl cron next` through the real binary: its output, its
-- exit status and its messages. The rules themselves are tested in C
-- (spec/unit/test_cron.c, also against an independent implementation).
local H = require "cli_helper"

-- Exit status `code` and exactly one "pawl: ..." line on stderr that
-- contains every one of `wants` (plain text), nothing on stdout.
local function assert_error(r, code, wants)
  assert.are.equal(code, r.code, r.err)
  assert.are.equal("", r.out)
  local _, nl = r.err:gsub("\n", "")
  assert.are.equal(1, nl, "expected one line on stderr, got: " .. r.err)
  assert.truthy(r.err:match("^pawl: "), "stderr: " .. r.err)
  for _, w in ipairs(type(wants) == "table" and wants or { wants }) do
    assert.truthy(r.err:find(w, 1, true), ("stderr %q lacks %q"):format(r.err, w))
  end
end

local function next_times(...)
  local r = H.run({ "cron", "next", ... })
  assert.are.equal(0, r.code, r.err)
  assert.are.equal("", r.err)
  return H.lines(r.out)
end

describe("pawl cron next", function()
  it("prints the next fire times in the zone, with its offset", function()
    assert.are.same({
      "2026-03-28T02:30:00+01:00",
      "2026-03-29T03:00:00+02:00", -- 02:30 does not exist: the gap's end
      "2026-03-30T02:30:00+02:00",
    }, next_times("30 2 * * *", "--tz", "Europe/Berlin",
                  "--from", "2026-03-28T00:00:00Z", "--count", "3"))
    assert.are.same({
      "2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00",
      "2026-10-25T02:00:00+01:00", "2026-10-25T02:30:00+01:00",
    }, next_times("*/30 * * * *", "--tz=Europe/Berlin",
                  "--from=2026-10-25T01:50:00+02:00", "--count=4"))
    assert.are.same({ "2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00" },
                    next_times("15 2 * * *", "--tz", "Australia/Lord_Howe",
                               "--from", "2026-10-03", "--count", "2"))
  end)

  it("takes six fields, macros, names and the day forms", function()
    assert.are.same({ "2026-01-01T00:00:10+00:00", "2026-01-01T00:00:20+00:00" },
                    next_times("*/10 * * * * *", "--from", "2026-01-01T00:00:00Z",
                               "--count", "2"))
    assert.are.same({ "2027-01-01T00:00:00+00:00" },
                    next_times("@yearly", "--from", "2026-01-01T00:00:00Z",
                               "--count", "1"))
    assert.are.same({ "2026-01-30T09:00:00+00:00", "2026-02-27T09:00:00+00:00" },
                    next_times("0 9 ? * friL", "--from", "2026-01-01", "--count", "2"))
    assert.are.same({ "2044-02-29T00:00:00-05:00" },
                    next_times("0 0 ? FEB MON#5", "--tz", "America/New_York",
                               "--from", "2026-01-01", "--count", "1"))
  end)

  it("defaults to five fire times, in UTC, from now", function()
    local before = H.now_ms()
    local lines = next_times("* * * * * *")
    assert.are.equal(5, #lines)
    for i, l in ipairs(lines) do
      assert.truthy(l:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%+00:00$"), l)
      if i > 1 then assert.is_true(l > lines[i - 1]) end
    end
    -- Strictly after the moment it ran, which is after `before`.
    local first = H.iso_ms((lines[1]:gsub("%+00:00$", ".000Z")))
    assert.is_true(first > before - 1000)
  end)

  it("stops at the end of year 9999", function()
    assert.are.same({ "9999-12-31T23:00:00+00:00" },
                    next_times("0 * * * *", "--from", "9999-12-31T22:00:00Z"))
    local r = H.run({ "cron", "next", "0 0 29 2 *", "--from", "9997-01-01" })
    assert_error(r, 1, "no fire time after 9997-01-01T00:00:00+00:00 before the year 10000")
  end)

  it("refuses a bad expression with the field and the value", function()
    for _, c in ipairs({
      { "0 0 32 * *", "bad cron expression: day-of-month: 32 is out of range 1-31" },
      { "0 0 * FOO *", "unknown month name FOO" },
      { "* * * *", "expected 5 or 6 fields, got 4" },
      { "0 0 30 2 *", "never fires: day-of-month 30 does not occur in month 2" },
      { "0 0 ? * MON#6", "day-of-week: 6 in #n" },
      { "@reboot", "@reboot is not supported" },
      { "0 0 * * 1\1", "day-of-week: unexpected \"\\x01\"" },
    }) do
      assert_error(H.run({ "cron", "next", c[1] }), 2, c[2])
    end
  end)

  it("refuses an unknown or unsafe zone", function()
    assert_error(H.run({ "cron", "next", "@daily", "--tz", "Mars/Olympus_Mons" }), 2,
                 { "--tz: unknown time zone \"Mars/Olympus_Mons\"", "(no file " })
    assert_error(H.run({ "cron", "next", "@daily", "--tz", "../../etc/passwd" }), 2,
                 "\"..\" parts")
    assert_error(H.run({ "cron", "next", "@daily", "--tz", "/etc/localtime" }), 2,
                 "relative to the zone directory")
    assert_error(H.run({ "cron", "next", "@daily", "--tz", "Europe" }), 2,
                 "is a directory of zones")
    -- $TZDIR is where zones come from.
    assert_error(H.run({ "cron", "next", "@daily", "--tz", "Europe/Berlin" },
                       { env = { TZDIR = "/nonexistent" } }), 2,
                 "(no file /nonexistent/Europe/Berlin)")
  end)

  it("refuses bad options", function()
    for _, n in ipairs({ "0", "1001", "-1", "x", "", "5x", " 5" }) do
      assert_error(H.run({ "cron", "next", "@daily", "--count", n }), 2,
                   "--count must be between 1 and 1000, got \"" .. n .. "\"")
    end
    assert_error(H.run({ "cron", "next", "@daily", "--from", "2026-03-29T02:00:00" }), 2,
                 "--from expects an ISO 8601 time with a zone")
    assert_error(H.run({ "cron", "next", "@daily", "--from", "yesterday" }), 2,
                 "got \"yesterday\"")
    assert_error(H.run({ "cron", "next", "@daily", "--queue", "q" }), 2,
                 "unknown option --queue for cron")
    assert_error(H.run({ "cron", "next", "@daily", "--tz" }), 2, "--tz needs a value")
    assert_error(H.run({ "cron" }), 2, "cron needs a command and an expression")
    assert_error(H.run({ "cron", "next" }), 2, "cron needs a command and an expression")
    assert_error(H.run({ "cron", "list" }), 2, "unknown cron command \"list\"")
    assert_error(H.run({ "cron", "next", "@daily", "@hourly" }), 2,
                 "unexpected argument \"@hourly\" for cron")
  end)

  it("opens no database", function()
    local env = H.env()
    local r = H.run({ "cron", "next", "@daily", "--count", "1" }, { cwd = env.dir })
    assert.are.equal(0, r.code, r.err)
    r = H.run({ "--db", env.db, "cron", "next", "@daily", "--count", "1" })
    assert.are.equal(0, r.code, r.err)
    assert.is_false(H.exists(env.db_path))
    assert.is_false(H.exists(env.dir .. "/pawl.db"))
    env:cleanup()
  end)

  it("is in the help", function()
    local r = H.run({ "help" })
    assert.are.equal(0, r.code)
    assert.truthy(r.out:find("\n  cron ", 1, true))
    r = H.run({ "help", "cron" })
    assert.are.equal(0, r.code)
    assert.truthy(r.out:find("cron next EXPR", 1, true))
    assert.truthy(r.out:find("--count N", 1, true))
  end)
end)
