-- conf.lua: the game runs headless, as the tests run it: no window, no
-- graphics, no audio. love.update still runs every frame (love.run calls
-- it whatever modules are on); love.draw is called only with a window.
-- To watch it, set t.window and the window and graphics modules back on.
function love.conf(t)
  t.identity = "pawl_love_example"
  t.version = "11.4"
  t.window = false
  local off = { "audio", "data", "font", "graphics", "image", "joystick",
                "keyboard", "math", "mouse", "physics", "sound", "system",
                "thread", "touch", "video", "window" }
  for _, m in ipairs(off) do t.modules[m] = false end
end
