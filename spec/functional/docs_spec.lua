-- docs_spec.lua: every example in README.md and docs/*.md that shows output
-- is run, and its output compared with what the page shows; every relative
-- link between the pages resolves.
--
-- The convention (docs/internals.md, "Examples that run", says the same for
-- writers):
--
-- * A fenced block whose info string starts with `sh` and that holds lines
--   beginning with "$ " is an example. Each "$ " line is a command (a line
--   ending in a backslash continues on the next); the lines after it, up to
--   the next "$ " line or the end of the block, are its expected output,
--   standard output and standard error together. The block's first line
--   must be a command. Blocks without "$ " lines only illustrate and are
--   not run.
-- * A fenced block whose info string has `file=PATH` (```lua file=scripts/
--   hello.lua) is written to PATH, relative to the page's directory, before
--   the commands after it run: that is how a page's job scripts and Lua
--   programs reach its commands. In README.md, such a block whose PATH is
--   a file of the repository (scripts/flaky_upload.lua) must be that file.
-- * Placeholders: "…" in an expected line matches any text within that
--   line (ids, times, node names); a line that is only "…" matches any
--   number of whole lines, none included. Trailing blanks are ignored.
-- * Each page runs in one bash session in a fresh temp dir, its blocks in
--   page order, so a variable set or a file written by one command is
--   there for the next: `$ id=$(pawl enqueue ...)` then `$ pawl show $id`.
--   `pawl` is the binary under test and `luajit` the build's LuaJIT (with
--   the Lua module on LUA_CPATH); PAWL_DB is sqlite:./pawl.db, HOME a
--   directory of the page's own, TZ UTC; standard input is empty. Exit
--   statuses are not checked: what a command prints is.
local H = require "cli_helper"

local SRC = assert(os.getenv("PAWL_SOURCE_DIR"), "PAWL_SOURCE_DIR")
local LUAJIT = assert(os.getenv("PAWL_LUAJIT"), "PAWL_LUAJIT")
local ELLIPSIS = "\226\128\166" -- "…" in UTF-8

local function read_lines(path)
  local text = assert(H.read_file(path), "cannot read " .. path)
  local lines = {}
  for l in (text .. "\n"):gmatch("(.-)\r?\n") do lines[#lines + 1] = l end
  if lines[#lines] == "" then lines[#lines] = nil end
  return lines
end

local function rstrip(s) return (s:gsub("%s+$", "")) end

-- The pages: README.md and every docs/*.md, by path relative to SRC.
local function pages()
  local list = { "README.md" }
  for name in H.capture("ls " .. H.quote(SRC .. "/docs")):gmatch("[^\n]+") do
    if name:match("%.md$") then list[#list + 1] = "docs/" .. name end
  end
  return list
end

-- Splits a page into its fenced blocks: { lang, file, first, lines }.
-- Fences may be indented (inside a list item); only column-0 fences hold
-- examples, but every fence is tracked so that code is never read as text.
local function blocks(lines)
  local out, cur = {}, nil
  for i, l in ipairs(lines) do
    if cur then
      if l:match("^%s*" .. cur.fence .. "%s*$") then
        out[#out + 1] = cur
        cur = nil
      else
        cur.lines[#cur.lines + 1] = l
      end
    else
      local indent, fence, info = l:match("^(%s*)(```+)(.*)$")
      if fence then
        cur = { fence = fence, first = i, lines = {}, info = info,
                indented = indent ~= "",
                lang = info:match("^%s*(%S+)") or "",
                file = info:match("file=(%S+)") }
      end
    end
  end
  assert(not cur, "unclosed code fence at line " .. (cur and cur.first or 0))
  return out
end

-- The examples of one page: a list of steps, each a file to write
-- { file, text, line } or a command { cmd, expect, line }.
local function examples(path, lines)
  local steps = {}
  for _, b in ipairs(blocks(lines)) do
    if not b.indented and b.file then
      steps[#steps + 1] = { file = b.file, line = b.first,
                            text = table.concat(b.lines, "\n") .. "\n" }
    elseif not b.indented and b.lang:match("^sh") then
      local has_prompt = false
      for _, l in ipairs(b.lines) do
        if l:match("^%$ ") then has_prompt = true end
      end
      if has_prompt then
        local cur, k = nil, 1
        while k <= #b.lines do
          local l = b.lines[k]
          if l:match("^%$ ") then
            cur = { cmd = l:sub(3), expect = {}, line = b.first + k }
            while cur.cmd:match("\\$") and k < #b.lines do
              k = k + 1
              cur.cmd = cur.cmd .. "\n" .. b.lines[k]
            end
            steps[#steps + 1] = cur
          else
            assert(cur, ("%s:%d: an example's first line must be a " ..
                         "command (\"$ ...\")"):format(path, b.first + k))
            cur.expect[#cur.expect + 1] = l
          end
          k = k + 1
        end
      end
    end
  end
  return steps
end

-- Does the expected line `e` (with "…" placeholders) match `a`?
local function line_matches(e, a)
  e, a = rstrip(e), rstrip(a)
  local parts = {}
  for piece in (e .. ELLIPSIS):gmatch("(.-)" .. ELLIPSIS) do
    parts[#parts + 1] = piece:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
  end
  return a:match("^" .. table.concat(parts, ".-") .. "$") ~= nil
end

-- Do the expected lines match the actual ones? A line that is only "…"
-- matches any number of lines.
local function lines_match(expect, actual)
  local function m(i, j)
    if i > #expect then return j > #actual end
    if rstrip(expect[i]) == ELLIPSIS then
      for k = j, #actual + 1 do
        if m(i + 1, k) then return true end
      end
      return false
    end
    return j <= #actual and line_matches(expect[i], actual[j]) and m(i + 1, j + 1)
  end
  return m(1, 1)
end

-- Runs a page's steps in one bash session in a fresh temp dir; returns the
-- output of each command, by step index.
local function run_page(steps)
  local root = H.capture("mktemp -d"):gsub("%s+$", "")
  local work, bin, home = root .. "/work", root .. "/bin", root .. "/home"
  assert(H.sh(("mkdir -p %s %s %s && ln -s %s %s/pawl && ln -s %s %s/luajit")
    :format(H.quote(work), H.quote(bin), H.quote(home), H.quote(H.bin),
            H.quote(bin), H.quote(LUAJIT), H.quote(bin))))
  local s = { "exec 2>&1 </dev/null", "cd " .. H.quote(work) }
  for i, st in ipairs(steps) do
    if st.file then
      s[#s + 1] = ("mkdir -p \"$(dirname %s)\" && cat > %s <<'DOCS_SPEC_EOF'\n%sDOCS_SPEC_EOF")
        :format(H.quote(st.file), H.quote(st.file), st.text)
    else
      -- The marker keeps the status of the command before it, so that an
      -- example's `echo $?` reads the command it follows.
      s[#s + 1] = ("docs_spec_rc=$?; printf '\\n@@DOCS-SPEC %d@@\\n'; " ..
                   "(exit $docs_spec_rc)"):format(i)
      s[#s + 1] = st.cmd
    end
  end
  s[#s + 1] = "printf '\\n@@DOCS-SPEC END@@\\n'"
  local script = root .. "/page.sh"
  H.write_file(script, table.concat(s, "\n") .. "\n")
  local env = ("env -u PAWL_HISTORY -u PAWL_TEST_FAULTS PATH=%s:\"$PATH\" " ..
               "HOME=%s PAWL_DB=sqlite:./pawl.db TZ=UTC LC_ALL=C.UTF-8 ")
              :format(H.quote(bin), H.quote(home))
  -- A hang guard for the whole page, far above its run time.
  local out = H.capture(env .. "timeout 600 bash " .. H.quote(script))
  H.sh("rm -rf " .. H.quote(root))
  local got, marks, init = {}, {}, 1
  while true do
    local b, e, idx = out:find("\n@@DOCS%-SPEC (%w+)@@\n", init)
    if not b then break end
    marks[#marks + 1] = { b = b, e = e, idx = idx }
    init = e
  end
  for k = 1, #marks - 1 do
    local text = out:sub(marks[k].e + 1, marks[k + 1].b - 1):gsub("\n$", "")
    local lines = {}
    if text ~= "" then
      for l in (text .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
    end
    got[tonumber(marks[k].idx)] = lines
  end
  return got, out
end

-- GitHub's anchor of a heading: lower case, punctuation dropped, blanks
-- turned into dashes (bytes beyond ASCII kept as they are).
local function slug(heading)
  local s = heading:gsub("`", ""):lower()
  s = s:gsub("[%p]", function(c)
    if c == "-" or c == "_" then return c end
    return ""
  end)
  return (s:gsub(" ", "-"))
end

local function anchors(lines)
  local set, seen = {}, {}
  local in_code = false
  for _, l in ipairs(lines) do
    if l:match("^%s*```") then in_code = not in_code
    elseif not in_code then
      local h = l:match("^#+%s+(.-)%s*$")
      if h then
        local a = slug(h)
        if seen[a] then
          seen[a] = seen[a] + 1
          a = a .. "-" .. seen[a]
        else
          seen[a] = 0
        end
        set[a] = true
      end
    end
  end
  return set
end

describe("docs", function()
  it("matches placeholders as the convention says", function()
    assert.is_true(lines_match({ "id: …" }, { "id: 01a2" }))
    assert.is_true(lines_match({ "a", ELLIPSIS, "z" }, { "a", "b", "c", "z" }))
    assert.is_true(lines_match({ "a", ELLIPSIS, "z" }, { "a", "z" }))
    assert.is_true(lines_match({ "x (…) y" }, { "x (a.b%) y  " }))
    assert.is_false(lines_match({ "a" }, { "b" }))
    assert.is_false(lines_match({ "a" }, { "a", "b" }))
    assert.is_false(lines_match({ "a", "b" }, { "a" }))
    assert.is_false(lines_match({ "id: …", "z" }, { "id: 1", "y" }))
    assert.is_false(lines_match({ "exit 0" }, { "exit 0 and more" }))
  end)

  local total = 0
  for _, page in ipairs(pages()) do
    it(page .. ": its examples print what the page shows", function()
      local steps = examples(page, read_lines(SRC .. "/" .. page))
      local ncmd = 0
      for _, st in ipairs(steps) do if st.cmd then ncmd = ncmd + 1 end end
      total = total + ncmd
      if ncmd == 0 then return end
      local got, raw = run_page(steps)
      local bad = {}
      for i, st in ipairs(steps) do
        if st.cmd then
          local actual = got[i]
          if not actual then
            bad[#bad + 1] = ("%s:%d: `%s` printed nothing we could find " ..
                             "(the session ended early?); whole output:\n%s")
                            :format(page, st.line, st.cmd, raw)
          elseif not lines_match(st.expect, actual) then
            bad[#bad + 1] = ("%s:%d: `%s`\n--- the page shows:\n%s\n" ..
                             "--- it printed:\n%s"):format(page, st.line,
              st.cmd, table.concat(st.expect, "\n"), table.concat(actual, "\n"))
          end
        end
      end
      assert(#bad == 0, table.concat(bad, "\n\n"))
    end)
  end

  it("ran examples (the count is printed)", function()
    -- busted runs the tests in order: by now every page has run.
    io.stderr:write(("docs_spec: %d example commands run\n"):format(total))
    assert.is_true(total >= 20, "only " .. total .. " example commands found")
  end)

  it("README's file blocks are the repository's files they name", function()
    -- The README shows scripts/ as it is: a block written to a path that
    -- the repository has must be that file, so that neither drifts.
    local bad = {}
    for _, st in ipairs(examples("README.md", read_lines(SRC .. "/README.md"))) do
      if st.file then
        local have = H.read_file(SRC .. "/" .. st.file)
        if have and have ~= st.text then
          bad[#bad + 1] = ("README.md:%d: the block differs from %s")
                          :format(st.line, st.file)
        end
      end
    end
    assert(#bad == 0, table.concat(bad, "\n"))
  end)

  it("every relative link resolves, anchors included", function()
    local bad = {}
    local cache = {}
    local function anchors_of(path)
      if cache[path] == nil then
        local f = H.read_file(SRC .. "/" .. path)
        cache[path] = f and anchors(read_lines(SRC .. "/" .. path)) or false
      end
      return cache[path]
    end
    for _, page in ipairs(pages()) do
      local dir = page:match("^(.*)/") or ""
      local in_code = false
      for n, l in ipairs(read_lines(SRC .. "/" .. page)) do
        if l:match("^%s*```") then in_code = not in_code
        elseif not in_code then
          local text = l:gsub("`[^`]*`", "")
          for target in text:gmatch("%]%(([^)%s]+)%)") do
            if not target:match("^%a[%w+.-]*:") then
              local file, anchor = target:match("^([^#]*)#?(.*)$")
              local path = file == "" and page or
                (dir == "" and file or dir .. "/" .. file)
              -- Normalise "a/../b" and "./".
              local parts = {}
              for p in path:gmatch("[^/]+") do
                if p == ".." then parts[#parts] = nil
                elseif p ~= "." then parts[#parts + 1] = p end
              end
              path = table.concat(parts, "/")
              if not H.exists(SRC .. "/" .. path) then
                bad[#bad + 1] = ("%s:%d: %s: no file %s"):format(page, n, target, path)
              elseif anchor ~= "" then
                local set = anchors_of(path)
                if not (set and set[anchor]) then
                  bad[#bad + 1] = ("%s:%d: %s: no heading #%s in %s")
                                  :format(page, n, target, anchor, path)
                end
              end
            end
          end
        end
      end
    end
    assert(#bad == 0, table.concat(bad, "\n"))
  end)
end)
