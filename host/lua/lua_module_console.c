/* lua_module_console.c: what the module does differently in a console's
 * Lua state: the CLI's `pawl console` and the console attached to a
 * running host (admin_lua.c). Compiled into those two builds only
 * (CMakeLists.txt), never into pawl.so. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>

#include "lua_module_int.h"

/* [-0, +3, m] db:step in a console: refused. Only pawl.so runs jobs in the
 * program's Lua state (lua_module_step_so.c); a console's state is an
 * operator's, and the attached console's handle is the host's, which
 * runs the jobs itself. */
int lpawl_step_run(lua_State *L, lpawl_handle_t *h, double budget) {
  (void)h;
  (void)budget;
  return lpawl_fail_msg(L, PAWL_EINVAL,
                        "db:step: only the Lua module (pawl.so) runs jobs in "
                        "the program's Lua state");
}

/* [-0, +1, m] A handle userdata around `p`, the attached console's
 * connection (borrowed: db:close leaves it open, its clock is the host's,
 * and db:define and db:step refuse it). The module must have been opened
 * in L (its metatable). Unused by the CLI's console, which opens handles
 * with pawl.open. */
void lpawl_borrow(lua_State *L, pawl_t *p) {
  lpawl_handle_t *h = lua_newuserdata(L, sizeof *h);
  memset(h, 0, sizeof *h);
  luaL_getmetatable(L, LPAWL_HANDLE);
  lua_setmetatable(L, -2);
  h->p = p;
  h->borrowed = 1;
  h->types_ref = LUA_NOREF;
}
