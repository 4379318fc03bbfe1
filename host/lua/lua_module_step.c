/* lua_module_step.c: step mode's Lua side (include/pawl.h,
 * pawl_step_start_lua): db:define registers job types whose code lives in
 * the calling Lua state, and db:step checks its arguments. What a step
 * then does depends on the build: pawl.so runs the jobs in the program's
 * Lua state (lua_module_step_so.c); the consoles refuse
 * (lua_module_console.c). The types also serve enqueue in every build:
 * a defined type's ordering_key and identity (lua_module.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bounds.h"
#include "lua_module_int.h"

/* [-0, +0, v] Raises for a borrowed handle (the attached console's): the
 * running host already runs the jobs, and step mode would bind its handle
 * to the console's thread. */
static void lpawl_check_not_host(lua_State *L, lpawl_handle_t *h,
                                 const char *what) {
  if (h->borrowed)
    luaL_error(L, "%s: this handle is the running host's, which runs the "
                  "jobs itself", what);
}

/* db:define(type, tbl_or_fn) [-0, +1, e] Registers a job type whose code
 * lives in this Lua state: a table as a script returns (run, and
 * optionally retry, sanitize, timeout, max_attempts, hooks, queue,
 * priority, redact), copied at the call, or a run function. Its jobs run
 * in db:step(), in this state, on the calling thread. The table's fields
 * are checked like a script's when the first job of the type runs (a job
 * of a type that fails the check fails for good, saying why). Returns
 * true. */
static int lpawl_define(lua_State *L) {
  lpawl_handle_t *h = lpawl_check(L, 1);
  lpawl_check_not_host(L, h, "db:define");
  size_t len;
  const char *type = luaL_checklstring(L, 2, &len);
  if (len == 0 || len > 200)
    return luaL_error(L, "db:define: the type must be 1..200 bytes (got %d)",
                      (int)len);
  int t = lua_type(L, 3);
  if (t == LUA_TTABLE) {
    lua_getfield(L, 3, "run");
    int has_run = lua_isfunction(L, -1);
    lua_pop(L, 1);
    if (!has_run)
      return luaL_error(L, "db:define: the table of type %s has no run "
                        "function", type);
    lua_newtable(L); /* the copy: a later change of the table does not
                        reach a type already checked */
    lua_pushnil(L);
    while (lua_next(L, 3)) {
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, -4);
    }
  } else if (t == LUA_TFUNCTION) {
    lua_pushvalue(L, 3);
  } else {
    return luaL_error(L, "db:define: a job type is a table or a run function "
                      "(got %s)", lua_typename(L, t));
  }
  if (h->types_ref == LUA_NOREF) {
    lua_newtable(L);
    h->types_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->types_ref);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, -3);
  lua_rawset(L, -3);
  lua_pop(L, 2);
  lua_pushboolean(L, 1);
  return 1;
}

/* db:step(budget_ms [, opts]) [-0, +1|3, e] Runs the jobs that are due,
 * in this Lua state, on the calling thread, for about budget_ms (plus at
 * most one job's run); returns how many ran (nil, message, code on an
 * error). The first call starts step mode (include/pawl.h,
 * pawl_step_start_lua) with `opts`: default_timeout_s (a job's timeout
 * when neither it nor its type sets one), log_level (0 debug .. 3 error, 4: nothing).
 * Types come from db:define; C types of the handle also run. Only this
 * thread may step the handle. Only pawl.so runs jobs: in a console db:step
 * returns nil, a message and PAWL_EINVAL (lua_module_console.c). */
static int lpawl_step(lua_State *L) {
  lpawl_handle_t *h = lpawl_check(L, 1);
  lpawl_check_not_host(L, h, "db:step");
  double budget = luaL_checknumber(L, 2);
  {
    char err[256];
    if (pawl__bounds_check("db:step: budget_ms", budget, 0,
                           (double)PAWL_DELAY_MAX_MS, 1, NULL, err,
                           sizeof err))
      return luaL_argerror(L, 2, err);
  }
  h->cur = L;
  return lpawl_step_run(L, h, budget);
}

void lpawl_step_register(lua_State *L) {
  static const luaL_Reg meths[] = {{"define", lpawl_define},
                                   {"step", lpawl_step},
                                   {NULL, NULL}};
  luaL_register(L, NULL, meths);
}
