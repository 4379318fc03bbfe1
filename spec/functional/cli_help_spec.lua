-- cli_help_spec.lua: the help texts, docs/cli.md and the manual pages
-- (docs/man/*.scd) list the same commands and options, so that none of
-- them can drift from what the parser takes.
--
-- What is compared (docs/internals.md, "Adding a CLI command", says the
-- same for writers):
--
-- * The commands are the lines of `pawl --help`'s command list; each
--   command's options are the lines of `pawl CMD --help` that start with
--   two blanks and a dash ("  --queue Q ..."), --help itself aside. The
--   global options are those lines of `pawl --help`.
-- * docs/cli.md: a heading that names `pawl CMD` (in backticks; one
--   heading may name several commands that take the same options) opens
--   CMD's section, up to the next heading of the same level or above. Its
--   options are its list items that start with an option in backticks
--   ("- `--queue Q`: ..."). The section "Global options" lists the global
--   ones the same way.
-- * docs/man/*.scd: a heading that names pawl CMD ("## pawl enqueue")
--   opens CMD's section; its options are the lines that start with the
--   option in bold ("*--queue* _Q_"). pawl.1.scd's GLOBAL OPTIONS section
--   lists the global ones, and its COMMANDS section names every command
--   in bold.
--
-- Both ways: every option of the help is in the command's section, and
-- every option the section lists is in the help (so the command takes it).
local H = require "cli_helper"

local SRC = assert(os.getenv("PAWL_SOURCE_DIR"), "PAWL_SOURCE_DIR")
local OPT = "%-%-?[%w][%w%-]*"

local function run(args)
  local r = H.run(args)
  return r.out, r.err, r.code
end

-- The options of a help text: its lines "  -x ..." or "  --name ...".
local function help_options(text)
  local list = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do
    local o = line:match("^  (" .. OPT .. ")")
    if o and o ~= "--help" and o ~= "-h" then list[#list + 1] = o end
  end
  return list
end

-- `pawl --help`: the commands and the global options.
local function general_help()
  local out = assert(run({ "--help" }))
  local cmds, in_list = {}, false
  for line in (out .. "\n"):gmatch("(.-)\n") do
    if line:match("^Commands") then in_list = true
    elseif line == "" then in_list = false
    elseif in_list then cmds[#cmds + 1] = line:match("^  (%l+) ") end
  end
  local globals = out:match("\nGlobal options[^\n]*\n(.-)\n\n")
  return cmds, help_options(assert(globals, "no global options in pawl --help"))
end

-- Splits a page into sections: { title, level, cmds = {name...}, global,
-- items = {option = line} }. `kind` is "md" or "scd".
local function sections(text, kind)
  local out, cur, in_code = {}, nil, false
  local n = 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    if line:match("^%s*```") then
      in_code = not in_code
    elseif not in_code then
      local hashes, title = line:match("^(#+)%s+(.-)%s*$")
      if hashes then
        local level = #hashes
        -- A heading closes the sections at its level and below.
        for i = #out, 1, -1 do
          if out[i].open and out[i].level >= level then out[i].open = false end
        end
        local sec = { title = title, level = level, cmds = {}, items = {},
                      open = true,
                      global = title:match("^Global options") ~= nil or
                               title:match("^GLOBAL OPTIONS") ~= nil }
        local pat = kind == "md" and "`pawl (%l+)`" or "pawl (%l+)"
        for c in title:gmatch(pat) do sec.cmds[#sec.cmds + 1] = c end
        out[#out + 1] = sec
      else
        local o = kind == "md" and line:match("^%- `(" .. OPT .. ")")
                  or kind == "scd" and line:match("^%*(" .. OPT .. ")%*")
        if o then
          for _, s in ipairs(out) do
            if s.open then s.items[o] = s.items[o] or n end
          end
        end
      end
    end
  end
  return out
end

-- Compares a page's (or pages') sections with the help texts. helps:
-- { cmd = {option...} }; cmds: the command names in order; globals: the
-- global options; where: the page's name for the messages. Returns the
-- problems, one line each.
local function check(cmds, helps, globals, secs, where, opts)
  opts = opts or {}
  local bad, seen, global_sec = {}, {}, nil
  local known = {}
  for _, c in ipairs(cmds) do known[c] = true end
  for _, s in ipairs(secs) do
    if s.global and #s.cmds == 0 and not global_sec then global_sec = s end
    for _, c in ipairs(s.cmds) do
      if not known[c] then
        -- Headings may name other pages' commands in prose ("pawl run and
        -- pawl top"): only a section that lists options must be a command.
        if next(s.items) then
          bad[#bad + 1] = ("%s: section \"%s\" lists options of pawl %s, " ..
                           "which `pawl --help` does not list"):format(where, s.title, c)
        end
      else
        seen[c] = true
        local accepted = {}
        for _, o in ipairs(helps[c]) do
          accepted[o] = true
          if not s.items[o] then
            bad[#bad + 1] = ("%s: section \"%s\" lacks %s, which `pawl %s " ..
                             "--help` lists"):format(where, s.title, o, c)
          end
        end
        for o, line in pairs(s.items) do
          if not accepted[o] then
            bad[#bad + 1] = ("%s:%d: section \"%s\" lists %s, which `pawl %s " ..
                             "--help` does not"):format(where, line, s.title, o, c)
          end
        end
      end
    end
  end
  for _, c in ipairs(cmds) do
    if not seen[c] then
      bad[#bad + 1] = ("%s: no section names pawl %s"):format(where, c)
    end
  end
  if opts.globals then
    if not global_sec then
      bad[#bad + 1] = where .. ": no section of global options"
    else
      local g = {}
      for _, o in ipairs(globals) do
        g[o] = true
        if not global_sec.items[o] then
          bad[#bad + 1] = ("%s: the global options lack %s"):format(where, o)
        end
      end
      for o in pairs(global_sec.items) do
        if not g[o] then
          bad[#bad + 1] = ("%s: the global options list %s, which `pawl " ..
                           "--help` does not"):format(where, o)
        end
      end
    end
  end
  table.sort(bad)
  return bad
end

local function man_pages()
  local list = {}
  for name in H.capture("ls " .. H.quote(SRC .. "/docs/man")):gmatch("[^\n]+") do
    if name:match("%.scd$") then list[#list + 1] = name end
  end
  return list
end

describe("pawl's help", function()
  local cmds, globals = general_help()
  local helps = {}

  it("lists the commands and the global options", function()
    assert.is_true(#cmds >= 20, "only " .. #cmds .. " commands")
    for _, c in ipairs({ "migrate", "enqueue", "run", "recurring", "top",
                         "bench", "queue", "limit", "cron", "help" }) do
      local found = false
      for _, x in ipairs(cmds) do found = found or x == c end
      assert(found, "pawl --help does not list " .. c)
    end
    assert.are.same({ "--db", "--create", "--db-mode", "--sync-full" }, globals)
  end)

  for _, c in ipairs(cmds) do
    it("pawl " .. c .. " --help and pawl help " .. c .. ": its own, on stdout, exit 0",
       function()
      local out, err, code = run({ c, "--help" })
      assert.are.equal(0, code, err)
      assert.are.equal("", err)
      assert.truthy(out:find("usage: pawl .-" .. c), out)
      local out2, err2, code2 = run({ "help", c })
      assert.are.equal(0, code2, err2)
      assert.are.equal(out, out2)
      -- -h is the same, and so is --help after arguments.
      assert.are.equal(out, (run({ c, "-h" })))
      helps[c] = help_options(out)
    end)

    it("pawl " .. c .. ": an unknown option is named, with where to look", function()
      local out, err, code = run({ c, "--no-such-option" })
      assert.are.equal(2, code, err)
      assert.are.equal("", out)
      assert.truthy(err:find("--no-such-option", 1, true), err)
      assert.truthy(err:find("pawl " .. c .. " --help", 1, true), err)
    end)
  end

  it("lists each option of a command once", function()
    for c, list in pairs(helps) do
      local seen = {}
      for _, o in ipairs(list) do
        assert(not seen[o], ("pawl %s --help lists %s twice"):format(c, o))
        seen[o] = true
      end
    end
  end)

  it("takes every option it lists (each is parsed, not refused as unknown)",
     function()
    -- Each option alone, without its value, on a database that does not
    -- exist (nothing is created, nothing runs): an option the parser knows
    -- is refused for its value or the database, never as unknown.
    local dir = H.capture("mktemp -d"):gsub("%s+$", "")
    local db = "sqlite:" .. dir .. "/no/such.db"
    local bad = {}
    for c, list in pairs(helps) do
      for _, o in ipairs(list) do
        local line = c == "bench" and { c, o } or { "--db", db, c, o }
        local words = {}
        for _, w in ipairs(line) do words[#words + 1] = H.quote(w) end
        local err = H.capture(("cd %s && timeout 60 %s %s 2>&1 </dev/null")
          :format(H.quote(dir), H.quote(H.bin), table.concat(words, " ")))
        if err:find("unknown option", 1, true) then
          bad[#bad + 1] = ("pawl %s %s: %s"):format(c, o, err)
        end
      end
    end
    assert.is_false(H.exists(dir .. "/no"))
    H.sh("rm -rf " .. H.quote(dir))
    assert(#bad == 0, table.concat(bad, "\n"))
  end)

  it("help with an unknown command names it (exit 2)", function()
    local out, err, code = run({ "help", "nosuch" })
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.truthy(err:find('"nosuch"', 1, true), err)
  end)

  describe("the check itself", function()
    local page = table.concat({
      "# Title", "", "## Global options", "", "- `--db URL`: the database", "",
      "## Commands", "", "### `pawl enqueue`", "", "```sh", "- `--not-an-item`",
      "```", "- `--queue Q`: the queue", "- `--key K`: a key", "",
      "### `pawl show`", "", "- `--json`: JSON", "" }, "\n")
    local fake_cmds = { "enqueue", "show" }
    local fake = { enqueue = { "--queue", "--key" }, show = { "--json" } }

    it("passes a page that lists the same options", function()
      assert.are.same({}, check(fake_cmds, fake, { "--db" },
                                sections(page, "md"), "page", { globals = true }))
    end)

    it("fails when the help lists an option the page does not", function()
      local more = { enqueue = { "--queue", "--key", "--priority" },
                     show = { "--json" } }
      local bad = check(fake_cmds, more, { "--db" }, sections(page, "md"), "page")
      assert.are.equal(1, #bad, table.concat(bad, "\n"))
      assert.truthy(bad[1]:find("lacks --priority", 1, true), bad[1])
    end)

    it("fails when the page lists an option the help does not", function()
      local fewer = { enqueue = { "--queue" }, show = { "--json" } }
      local bad = check(fake_cmds, fewer, { "--db" }, sections(page, "md"), "page")
      assert.are.equal(1, #bad, table.concat(bad, "\n"))
      assert.truthy(bad[1]:find("lists --key", 1, true), bad[1])
    end)

    it("fails on a command without a section, and on global options that differ",
       function()
      local bad = check({ "enqueue", "show", "jobs" }, fake, { "--db", "--create" },
                        sections(page, "md"), "page", { globals = true })
      assert.are.equal(2, #bad, table.concat(bad, "\n"))
      assert.truthy(table.concat(bad, "\n"):find("no section names pawl jobs", 1, true))
      assert.truthy(table.concat(bad, "\n"):find("lack --create", 1, true))
    end)

    it("reads a manual page's bold options and its headings", function()
      local scd = table.concat({ "PAWL-JOBS(1)", "", "# COMMANDS", "",
        "## pawl enqueue", "", "*--queue* _Q_", "\tthe queue", "",
        "*--key* _K_", "\ta key", "", "## pawl show", "", "*--json*", "" }, "\n")
      assert.are.same({}, check(fake_cmds, fake, {}, sections(scd, "scd"), "man"))
      local bad = check(fake_cmds, { enqueue = { "--queue" }, show = { "--json", "--raw" } },
                        {}, sections(scd, "scd"), "man")
      assert.are.equal(2, #bad, table.concat(bad, "\n"))
    end)
  end)

  it("docs/cli.md has a section per command listing exactly its options",
     function()
    local text = assert(H.read_file(SRC .. "/docs/cli.md"))
    local bad = check(cmds, helps, globals, sections(text, "md"), "docs/cli.md",
                      { globals = true })
    assert(#bad == 0, table.concat(bad, "\n"))
  end)

  it("the manual pages have a section per command listing exactly its options",
     function()
    local secs, pages = {}, man_pages()
    assert.is_true(#pages >= 5, "only " .. #pages .. " manual pages")
    for _, name in ipairs(pages) do
      local text = assert(H.read_file(SRC .. "/docs/man/" .. name))
      for _, s in ipairs(sections(text, "scd")) do
        if name ~= "pawl.1.scd" or s.global then
          s.title = name .. ": " .. s.title
          secs[#secs + 1] = s
        end
      end
    end
    local bad = check(cmds, helps, globals, secs, "docs/man", { globals = true })
    assert(#bad == 0, table.concat(bad, "\n"))
  end)

  it("pawl(1) names every command, and each page is in its SEE ALSO", function()
    local text = assert(H.read_file(SRC .. "/docs/man/pawl.1.scd"))
    local missing = {}
    for _, c in ipairs(cmds) do
      if not text:find("*" .. c .. "*", 1, true) then missing[#missing + 1] = c end
    end
    for _, name in ipairs(man_pages()) do
      local page, sec = name:match("^(.-)%.(%d)%.scd$")
      if page ~= "pawl" and not text:find("*" .. page .. "*(" .. sec .. ")", 1, true) then
        missing[#missing + 1] = page .. "(" .. sec .. ")"
      end
    end
    assert(#missing == 0, "docs/man/pawl.1.scd lacks: " .. table.concat(missing, " "))
  end)
end)
