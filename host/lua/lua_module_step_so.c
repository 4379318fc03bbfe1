/* lua_module_step_so.c: step mode run in the program's Lua state, which
 * only pawl.so may do: its LuaJIT is the program's (LÖVE's, nginx's, a
 * plain luajit's), so the jobs db:define registered run on the calling
 * thread, in that state, between the program's own work. Compiled into
 * pawl.so only (CMakeLists.txt); the consoles refuse db:step
 * (lua_module_console.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>

#include "lua_module_int.h"

/* [-0, +1|3, e] The first call starts step mode with the options at 3
 * (default_timeout_s, log_level; see db:step in lua_module_step.c); each
 * call runs the jobs that are due for about `budget` ms and returns how
 * many ran. */
int lpawl_step_run(lua_State *L, lpawl_handle_t *h, double budget) {
  static const char *const names[] = {"default_timeout_s", "log_level",
                                      NULL};
  if (!h->stepping) {
    pawl_host_opts_t ho;
    pawl_host_opts_init(&ho);
    ho.scripts_dir = ""; /* no scripts directory: the types are defined */
    if (!lua_isnoneornil(L, 3)) {
      luaL_checktype(L, 3, LUA_TTABLE);
      lpawl_check_keys(L, 3, names, 3, "", "step");
      ho.default_timeout_s = (int64_t)lpawl_opt_int(
          L, 3, "default_timeout_s", 0, 0, PAWL_TIMEOUT_MAX_S, 3, "");
      ho.log_level = (int)lpawl_opt_int(L, 3, "log_level", PAWL_LOG_INFO, 0,
                                        PAWL_LOG_ERROR + 1, 3, "");
    }
    if (h->types_ref == LUA_NOREF) {
      lua_newtable(L);
      h->types_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    int rc = pawl_step_start_lua(h->p, &ho, (void *const *)&h->cur,
                                 h->types_ref);
    if (rc) return lpawl_fail(L, h->p, rc);
    h->stepping = 1;
  }
  int n = pawl_step(h->p, (int64_t)budget);
  if (n < 0) return lpawl_fail(L, h->p, n);
  lua_pushinteger(L, n);
  return 1;
}
