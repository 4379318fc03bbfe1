-- term_helper.lua: a program on a terminal, as a person sees it: tmux gives
-- it a pseudo-terminal of a given size, types keys into it and shows its
-- screen. Shared by console_spec.lua, console_attach_spec.lua and
-- top_spec.lua.
--
-- Nothing here waits for a time to pass: wait_for polls the screen until
-- it shows what it should (H.wait_until, whose cap is only a hang guard).
local H = require "host_helper"
local C = require "cli_helper"

local q = C.quote
local M = {}

local Term = {}
Term.__index = Term

-- tmux without the sanitizer runtime the ASan build preloads into specs.
local function tmux(sock, args)
  return C.capture("env -u LD_PRELOAD tmux -S " .. q(sock) .. " " .. args .. " 2>&1")
end

local nterms = 0

-- Runs the shell command `line` on a new terminal of opts.cols x opts.rows
-- (default 120 x 50), in a tmux server of its own (a socket in env's dir:
-- a new one never meets one shutting down). The pane stays after the
-- command ends (`; sleep 600` is the caller's), to show how it ended.
-- opts.scrollback: the screen includes the 1,000 lines scrolled off (a
-- console's transcript), not only what is visible.
function M.start(env, line, opts)
  opts = opts or {}
  nterms = nterms + 1
  local self = setmetatable({ sock = env:path("term" .. nterms .. ".sock"),
                              capture = opts.scrollback and "capture-pane -p -J -S -1000 -t 0"
                                        or "capture-pane -p -J -t 0" }, Term)
  tmux(self.sock, ("-f /dev/null new-session -d -x %d -y %d %s")
       :format(opts.cols or 120, opts.rows or 50, q(line)))
  return self
end

-- The shell words of argv, quoted.
function M.command(words)
  local out = {}
  for i, w in ipairs(words) do out[i] = q(w) end
  return table.concat(out, " ")
end

-- `s` as a Lua pattern that matches it as it is (ids hold "-").
function M.plain(s) return (s:gsub("%p", "%%%0")) end

function Term:screen() return tmux(self.sock, self.capture) end
-- Types text as it is (no key names).
function Term:type(text) tmux(self.sock, "send-keys -t 0 -l " .. q(text)) end
-- Sends tmux key names (Tab, Down, C-c, Enter, ...).
function Term:keys(...) tmux(self.sock, "send-keys -t 0 " .. table.concat({ ... }, " ")) end
-- Types a line and Enter.
function Term:line(text) self:type(text) self:keys("Enter") end
function Term:close() tmux(self.sock, "kill-server") end

-- Waits until the screen satisfies `test` (a Lua pattern, or a function of
-- the screen returning true); returns the screen. The error shows the last
-- screen.
function Term:wait_for(test, what)
  local screen
  local ok, err = pcall(H.wait_until, what or tostring(test), function()
    screen = self:screen()
    if type(test) == "function" then return test(screen) end
    return screen:find(test) ~= nil
  end)
  if not ok then error(tostring(err) .. "\nscreen:\n" .. (screen or ""), 2) end
  return screen
end

-- Waits until the screen shows `text` (plain text, or a Lua pattern when
-- `is_pattern`) at least `count` times (default 1); returns the screen.
function Term:wait_text(text, what, count, is_pattern)
  local pattern = is_pattern and text or M.plain(text)
  local screen
  local ok, err = pcall(H.wait_until, what or text, function()
    screen = self:screen()
    local n = 0
    for _ in screen:gmatch(pattern) do n = n + 1 end
    return n >= (count or 1)
  end)
  if not ok then error(tostring(err) .. "\nscreen:\n" .. (screen or ""), 2) end
  return screen
end

return M
