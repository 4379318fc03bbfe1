/* admin_lua.c: the attached console's Lua state (see bridge.h, "the admin
 * console's Lua state").
 *
 * One state for the host, owned by the admin server's thread: the Lua
 * module on a handle of the host's (borrowed), lua/pawl/console.lua's
 * sessions (one per connection, in a registry table), and the functions
 * only the live host has (workers, reload, drain, resume_claiming, stop,
 * log_level), which call include/pawl.h on the handle that started the
 * host. Chunks run one at a time (the server's Lua thread is the only
 * caller).
 *
 * Chunks run in console.lua's curated environment (opts.curated): the
 * state's standard library is for the console's own code, and a chunk
 * reaches neither it nor the hook below.
 *
 * Limits. The state's allocator (pawl__lua_heap_alloc, the workers'
 * own) refuses to hold more than memory_max bytes: a chunk that builds a
 * huge value gets "not enough memory", and the host's memory stays
 * bounded. Each call into a session runs under a
 * count hook that checks the chunk's deadline every ADMIN_HOOK_COUNT
 * instructions (the checkhook LuaJIT checks hooks in compiled loops too)
 * and, every ADMIN_CHECK_MS, asks the server whether the client pressed
 * Ctrl-C or went away. Once tripped, the hook raises at every instruction
 * until the call has unwound to this file's lua_pcall (a chunk that
 * catches the error with pcall is stopped again at once), and the
 * session's own writes are dropped: the one line the client gets says why
 * the chunk stopped. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "bridge.h"
#include "alloc.h"
#include "buf.h"
#include "clock.h"

/* The Lua module built into libpawl (lua_module.c, under
 * PAWL_LUA_MODULE_IN_HOST), and lua/pawl/console.lua embedded. */
int pawl__lua_module_open(lua_State *L);
void pawl__lua_module_borrow(lua_State *L, pawl_t *p);
extern const char pawl__console_lua[];
extern const size_t pawl__console_lua_len;

/* Instructions between two looks at the clock. */
#define ADMIN_HOOK_COUNT 1000
/* How often the client is asked about while a chunk runs. */
#define ADMIN_CHECK_MS 20

/* Why a call was stopped. */
enum {
  ADMIN_RUNNING = 0,
  ADMIN_TIMEOUT,
  ADMIN_INTERRUPTED,
  ADMIN_GONE,
  ADMIN_STOPPING,
  ADMIN_NO_ANSWER
};

struct pawl__admin_lua {
  pawl__admin_config_t cfg;
  char *scripts_dir;
  lua_State *L;
  pawl__lua_heap_t heap;     /* the state's memory, capped at memory_max */
  int ref_sessions;          /* registry: session number -> session */
  int ref_console;           /* registry: the pawl.console module */
  int ref_host;              /* registry: the live functions' table */
  int next_session;
  /* The call running now. */
  int in_call;
  int64_t deadline;          /* monotonic ms */
  int64_t next_check;
  int tripped;               /* ADMIN_* */
};

/* The registry key of the state's owner, for the hook (no upvalues). */
static const char admin_owner_key = 0;

/* ---- the deadline ------------------------------------------------------------ */

static pawl__admin_lua_t *admin_of(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&admin_owner_key);
  lua_rawget(L, LUA_REGISTRYINDEX);
  pawl__admin_lua_t *a = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return a;
}

/* Why a call was stopped, as the client reads it. */
static void admin_why(int tripped, int64_t timeout_ms, char *msg, size_t len) {
  if (tripped == ADMIN_TIMEOUT)
    snprintf(msg, len,
             "the chunk ran longer than the console's limit of %g s and was "
             "stopped (the host goes on)",
             (double)timeout_ms / 1000.0);
  else if (tripped == ADMIN_NO_ANSWER)
    snprintf(msg, len,
             "no answer within the console's limit of %g s: nothing was "
             "changed",
             (double)timeout_ms / 1000.0);
  else
    snprintf(msg, len, "%s",
             tripped == ADMIN_INTERRUPTED ? "interrupted (Ctrl-C)"
             : tripped == ADMIN_STOPPING  ? "the host is stopping"
                                          : "the console went away");
}

/* [-0, +0, e] The count hook of every call into a session. */
static void admin_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  pawl__admin_lua_t *a = admin_of(L);
  if (!a || !a->in_call) return;
  if (!a->tripped) {
    int64_t now = pawl__mono_ms();
    if (now >= a->deadline) {
      a->tripped = ADMIN_TIMEOUT;
    } else if (now >= a->next_check) {
      a->next_check = now + ADMIN_CHECK_MS;
      int c = a->cfg.io.check(a->cfg.io.data);
      if (c == 1) a->tripped = ADMIN_INTERRUPTED;
      if (c == 2) a->tripped = ADMIN_GONE;
      if (c == 3) a->tripped = ADMIN_STOPPING;
    }
  }
  if (a->tripped) {
    /* From now on at every instruction: code that catches the error in a
     * loop (`while true do pcall(f) end`) runs only a few instructions
     * between two raises, never the thousand of the regular count. */
    lua_sethook(L, admin_hook, LUA_MASKCOUNT, 1);
    char msg[160];
    admin_why(a->tripped, a->cfg.timeout_ms, msg, sizeof msg);
    luaL_error(L, "%s", msg); /* copied onto the stack before unwinding */
  }
}

/* [-0, +1, m] debug.traceback as the message handler of our own calls. */
static int admin_traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
  return 1;
}

/* Calls session s's `method` with the `nargs` values on the stack top,
 * protected, under the deadline; leaves `nres` results. Returns 0, or -1
 * (nothing left): the error has been written to the client. */
static int admin_call(pawl__admin_lua_t *a, int s, const char *method,
                      int nargs, int nres) {
  lua_State *L = a->L;
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, admin_traceback);
  lua_rawgeti(L, LUA_REGISTRYINDEX, a->ref_sessions);
  lua_rawgeti(L, -1, s);
  lua_remove(L, -2);
  if (lua_isnil(L, -1)) {
    lua_settop(L, base);
    return -1;
  }
  lua_getfield(L, -1, method);
  lua_insert(L, -2); /* msgh, method, session */
  for (int i = 0; i < nargs; i++) lua_pushvalue(L, base + 1 + i);
  a->in_call = 1;
  a->tripped = ADMIN_RUNNING;
  int64_t now = pawl__mono_ms();
  a->deadline = now + a->cfg.timeout_ms;
  a->next_check = now + ADMIN_CHECK_MS;
  lua_sethook(L, admin_hook, LUA_MASKCOUNT, ADMIN_HOOK_COUNT);
  int rc = lua_pcall(L, nargs + 1, nres, base + 1);
  lua_sethook(L, NULL, 0, 0);
  a->in_call = 0;
  int tripped = a->tripped;
  a->tripped = ADMIN_RUNNING;
  if (rc != 0 || tripped) {
    char why[160];
    if (tripped) admin_why(tripped, a->cfg.timeout_ms, why, sizeof why);
    const char *msg = tripped ? why : lua_tostring(L, -1);
    char line[600];
    int n = snprintf(line, sizeof line, "error: %s\n",
                     msg ? msg : "(no message)");
    if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
    if (tripped != ADMIN_GONE) a->cfg.io.write(a->cfg.io.data, 1, line, (size_t)n);
    lua_settop(L, base);
    return -1;
  }
  lua_remove(L, base + 1); /* the handler */
  for (int i = 0; i < nargs; i++) lua_remove(L, base + 1);
  return 0;
}

/* ---- what sessions get -------------------------------------------------------- */

/* write(text) / write_err(text) [-0, +0, -] Upvalue 2: the stream. Dropped
 * once the call is stopped (its one error line says why). */
static int admin_write(lua_State *L) {
  pawl__admin_lua_t *a = lua_touserdata(L, lua_upvalueindex(1));
  int stream = (int)lua_tointeger(L, lua_upvalueindex(2));
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  if (!a->in_call || a->tripped) return 0;
  if (a->cfg.io.write(a->cfg.io.data, stream, s, n) != 0)
    a->tripped = ADMIN_GONE;
  return 0;
}

/* ask(question) [-0, +1, m] The operator's answer or nil. The wait
 * counts against the chunk's deadline (while a question waits, no other
 * console may run a chunk): unanswered by then, the chunk is stopped and
 * says so. */
static int admin_ask(lua_State *L) {
  pawl__admin_lua_t *a = lua_touserdata(L, lua_upvalueindex(1));
  const char *q = luaL_checkstring(L, 1);
  if (!a->in_call || a->tripped) {
    lua_pushnil(L);
    return 1;
  }
  char *answer = a->cfg.io.ask(a->cfg.io.data, q, a->deadline);
  if (!answer && !a->tripped && pawl__mono_ms() >= a->deadline) {
    a->tripped = ADMIN_NO_ANSWER;
    lua_sethook(L, admin_hook, LUA_MASKCOUNT, 1);
    char msg[160];
    admin_why(a->tripped, a->cfg.timeout_ms, msg, sizeof msg);
    return luaL_error(L, "%s", msg);
  }
  if (!answer) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushstring(L, answer); /* may raise (memory): the answer goes first */
  pawl__free(answer);
  return 1;
}

/* width() [-0, +1, -] Upvalue 2: the session's width, in a table. */
static int admin_width(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_rawgeti(L, -1, 1);
  return 1;
}

/* ---- the live host's functions (include/pawl.h, "the live host") ------------- */

static pawl_t *admin_host(lua_State *L) {
  return lua_touserdata(L, lua_upvalueindex(1));
}

/* [-0, +3, m] nil, message, code name. */
static int admin_fail(lua_State *L, pawl_t *p, int rc) {
  lua_pushnil(L);
  lua_pushstring(L, pawl_errmsg(p));
  lua_pushstring(L, pawl_err_name(rc));
  return 3;
}

/* workers() [-0, +1|3, m] A list: { worker, job, type, attempt,
 * running_ms } each (job nil when idle), with .queued and .draining. */
static int admin_workers(lua_State *L) {
  pawl_t *p = admin_host(L);
  pawl_worker_info_t *v = NULL;
  size_t n = 0;
  int64_t queued = 0;
  int draining = 0;
  int rc = pawl_workers(p, &v, &n, &queued, &draining);
  if (rc) return admin_fail(L, p, rc);
  /* Copied into a userdata first: nothing C-owned across a raise. */
  pawl_worker_info_t *copy = lua_newuserdata(L, (n ? n : 1) * sizeof *copy);
  if (n) memcpy(copy, v, n * sizeof *copy);
  pawl_workers_free(v);
  lua_createtable(L, (int)n, 2);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, copy[i].index);
    lua_setfield(L, -2, "worker");
    if (copy[i].busy) {
      char id[PAWL_ID_STRLEN];
      pawl_id_format(&copy[i].job, id);
      lua_pushstring(L, id);
      lua_setfield(L, -2, "job");
      lua_pushstring(L, copy[i].type);
      lua_setfield(L, -2, "type");
      lua_pushinteger(L, copy[i].attempt);
      lua_setfield(L, -2, "attempt");
      lua_pushnumber(L, (double)copy[i].running_ms);
      lua_setfield(L, -2, "running_ms");
    }
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_pushnumber(L, (double)queued);
  lua_setfield(L, -2, "queued");
  lua_pushboolean(L, draining);
  lua_setfield(L, -2, "draining");
  return 1;
}

/* reload() [-0, +1|3, m] { files = n, errors = { { type, error }... } } */
static int admin_reload(lua_State *L) {
  pawl_t *p = admin_host(L);
  pawl_script_error_t *e = NULL;
  size_t n = 0, files = 0;
  /* The loader's own limit on a script's top level bounds the wait. */
  int rc = pawl_reload(p, 60000, &e, &n, &files);
  if (rc) return admin_fail(L, p, rc);
  /* Into one buffer first: nothing C-owned across a raise. */
  pawl_buf_t b;
  pawl__buf_init(&b);
  for (size_t i = 0; i < n; i++) {
    pawl__buf_append(&b, e[i].type, strlen(e[i].type) + 1);
    pawl__buf_append(&b, e[i].error, strlen(e[i].error) + 1);
  }
  pawl_script_errors_free(e, n);
  if (b.oom) {
    pawl__buf_free(&b);
    return luaL_error(L, "out of memory");
  }
  lua_pushlstring(L, b.len ? b.data : "", b.len);
  pawl__buf_free(&b);
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  lua_createtable(L, 0, 2);
  lua_pushnumber(L, (double)files);
  lua_setfield(L, -2, "files");
  lua_createtable(L, (int)n, 0);
  const char *at = s;
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, at);
    lua_setfield(L, -2, "type");
    at += strlen(at) + 1;
    lua_pushstring(L, at);
    lua_setfield(L, -2, "error");
    at += strlen(at) + 1;
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "errors");
  (void)len;
  return 1;
}

/* drain() / resume_claiming() [-0, +1|3, m] true */
static int admin_drain(lua_State *L) {
  pawl_t *p = admin_host(L);
  int rc = pawl_drain(p);
  if (rc) return admin_fail(L, p, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int admin_resume(lua_State *L) {
  pawl_t *p = admin_host(L);
  int rc = pawl_resume_claiming(p);
  if (rc) return admin_fail(L, p, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* stop([grace_s]) [-0, +1|3, m] true. Without grace: the host's. */
static int admin_stop(lua_State *L) {
  pawl_t *p = admin_host(L);
  int rc;
  if (lua_isnoneornil(L, 1)) {
    pawl_stop(p, PAWL_STOP_GRACEFUL);
    rc = 0;
  } else {
    double g = luaL_checknumber(L, 1);
    /* Checked here too (the console checks first): a conversion must
     * never see a value out of range. */
    if (!(g >= 0 && g <= (double)PAWL_DELAY_MAX_MS / 1000.0))
      return luaL_error(L, "stop: grace must be 0..%f s",
                        (double)PAWL_DELAY_MAX_MS / 1000.0);
    rc = pawl_stop_grace(p, (int64_t)(g * 1000.0));
  }
  if (rc) return admin_fail(L, p, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* log_level([name]) [-0, +1|3, m] the level before, by name. */
static int admin_log_level(lua_State *L) {
  static const char *const names[] = {"debug", "info", "warn", "error", NULL};
  pawl_t *p = admin_host(L);
  int level = lua_isnoneornil(L, 1) ? -1 : luaL_checkoption(L, 1, NULL, names);
  int rc = pawl_log_level(p, level);
  if (rc < 0) return admin_fail(L, p, rc);
  lua_pushstring(L, names[rc]);
  return 1;
}

/* ---- the state ------------------------------------------------------------------ */

/* [-0, +0, e] Under lua_cpcall: libraries, the module, the console code,
 * the live functions, the session table. */
static int admin_setup(lua_State *L) {
  pawl__admin_lua_t *a = lua_touserdata(L, 1);
  luaL_openlibs(L);
  lua_pushlightuserdata(L, (void *)&admin_owner_key);
  lua_pushlightuserdata(L, a);
  lua_rawset(L, LUA_REGISTRYINDEX);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, pawl__lua_module_open);
  lua_setfield(L, -2, "pawl");
  if (luaL_loadbuffer(L, pawl__console_lua, pawl__console_lua_len,
                      "@lua/pawl/console.lua"))
    lua_error(L);
  lua_setfield(L, -2, "pawl.console");
  lua_pop(L, 2);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "pawl.console");
  lua_call(L, 1, 1);
  a->ref_console = luaL_ref(L, LUA_REGISTRYINDEX);
  static const luaL_Reg fns[] = {{"workers", admin_workers},
                                 {"reload", admin_reload},
                                 {"drain", admin_drain},
                                 {"resume_claiming", admin_resume},
                                 {"stop", admin_stop},
                                 {"log_level", admin_log_level},
                                 {NULL, NULL}};
  lua_createtable(L, 0, 6);
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushlightuserdata(L, a->cfg.host);
    lua_pushcclosure(L, f->func, 1);
    lua_setfield(L, -2, f->name);
  }
  a->ref_host = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  a->ref_sessions = luaL_ref(L, LUA_REGISTRYINDEX);
  /* The module's handle on the state's own connection, shared by the
   * sessions (one chunk at a time). Kept in the registry. */
  pawl__lua_module_borrow(L, a->cfg.db);
  lua_setfield(L, LUA_REGISTRYINDEX, "pawl.admin.db");
  return 0;
}

int pawl__admin_lua_open(const pawl__admin_config_t *cfg,
                         pawl__admin_lua_t **out, char *err, size_t errlen) {
  pawl__admin_lua_t *a = pawl__calloc(1, sizeof *a);
  if (!a || !(a->scripts_dir = pawl__strdup(cfg->scripts_dir))) {
    pawl__free(a);
    snprintf(err, errlen, "cannot create the console's Lua state: out of memory");
    return PAWL_ENOMEM;
  }
  a->cfg = *cfg;
  a->cfg.scripts_dir = a->scripts_dir;
  a->heap.cap = cfg->memory_max;
  a->heap.soft = SIZE_MAX; /* no collection asked: the chunk's own hook */
  a->L = lua_newstate(pawl__lua_heap_alloc, &a->heap);
  if (!a->L) {
    pawl__free(a->scripts_dir);
    pawl__free(a);
    snprintf(err, errlen, "cannot create the console's Lua state: out of memory");
    return PAWL_ENOMEM;
  }
  if (lua_cpcall(a->L, admin_setup, a) != 0) {
    snprintf(err, errlen, "cannot set up the console's Lua state: %s",
             lua_tostring(a->L, -1));
    lua_close(a->L);
    pawl__free(a->scripts_dir);
    pawl__free(a);
    return PAWL_ESTORE;
  }
  *out = a;
  return 0;
}

void pawl__admin_lua_close(pawl__admin_lua_t *a) {
  if (!a) return;
  lua_close(a->L);
  pawl__free(a->scripts_dir);
  pawl__free(a);
}

/* [-0, +0, e] Under lua_pcall: console.new{...} into sessions[n].
 * Upvalue-free: arguments a (light), n, json, interactive. */
static int admin_session_setup(lua_State *L) {
  pawl__admin_lua_t *a = lua_touserdata(L, 1);
  int n = (int)lua_tointeger(L, 2);
  int json = lua_toboolean(L, 3), interactive = lua_toboolean(L, 4);
  lua_rawgeti(L, LUA_REGISTRYINDEX, a->ref_console);
  lua_getfield(L, -1, "new");
  lua_createtable(L, 0, 12);
  lua_getfield(L, LUA_REGISTRYINDEX, "pawl.admin.db");
  lua_setfield(L, -2, "handle");
  lua_pushstring(L, pawl_node_id(a->cfg.host));
  lua_setfield(L, -2, "node");
  lua_rawgeti(L, LUA_REGISTRYINDEX, a->ref_host);
  lua_setfield(L, -2, "host");
  lua_pushstring(L, a->scripts_dir);
  lua_setfield(L, -2, "scripts");
  lua_pushboolean(L, json);
  lua_setfield(L, -2, "json");
  lua_pushboolean(L, interactive);
  lua_setfield(L, -2, "interactive");
  /* The chunks of a console attached to the host run in the curated
   * environment (lua/pawl/console.lua). */
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "curated");
  for (int stream = 0; stream < 2; stream++) {
    lua_pushlightuserdata(L, a);
    lua_pushinteger(L, stream);
    lua_pushcclosure(L, admin_write, 2);
    lua_setfield(L, -2, stream ? "write_err" : "write");
  }
  lua_pushlightuserdata(L, a);
  lua_pushcclosure(L, admin_ask, 1);
  lua_setfield(L, -2, "ask");
  /* The width lives in a table the closure holds: set per chunk. */
  lua_createtable(L, 1, 0);
  lua_pushinteger(L, 0);
  lua_rawseti(L, -2, 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "width_box");
  lua_pushcclosure(L, admin_width, 1);
  lua_setfield(L, -2, "width");
  lua_call(L, 1, 2);
  if (lua_isnil(L, -2)) lua_error(L);
  lua_pop(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, a->ref_sessions);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, n);
  return 0;
}

int pawl__admin_session_new(pawl__admin_lua_t *a, int json, int interactive) {
  lua_State *L = a->L;
  int n = ++a->next_session;
  lua_pushcfunction(L, admin_session_setup);
  lua_pushlightuserdata(L, a);
  lua_pushinteger(L, n);
  lua_pushboolean(L, json);
  lua_pushboolean(L, interactive);
  if (lua_pcall(L, 4, 0, 0) != 0) {
    char line[600];
    int k = snprintf(line, sizeof line, "error: cannot start a session: %s\n",
                     lua_tostring(L, -1));
    lua_pop(L, 1);
    a->in_call = 1; /* the client hears why */
    a->cfg.io.write(a->cfg.io.data, 1, line,
                    (size_t)(k < (int)sizeof line ? k : (int)sizeof line - 1));
    a->in_call = 0;
    return -1;
  }
  return n;
}

void pawl__admin_session_free(pawl__admin_lua_t *a, int s) {
  lua_State *L = a->L;
  admin_call(a, s, "close", 0, 0);
  lua_rawgeti(L, LUA_REGISTRYINDEX, a->ref_sessions);
  lua_pushnil(L);
  lua_rawseti(L, -2, s);
  lua_pop(L, 1);
  lua_gc(L, LUA_GCCOLLECT, 0);
}

void pawl__admin_session_width(pawl__admin_lua_t *a, int s, int width) {
  lua_State *L = a->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, a->ref_sessions);
  lua_rawgeti(L, -1, s);
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "opts");
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "width_box");
      if (lua_istable(L, -1)) {
        lua_pushinteger(L, width > 0 && width < 10000 ? width : 0);
        lua_rawseti(L, -2, 1);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
}

int pawl__admin_eval(pawl__admin_lua_t *a, int s, const char *chunk,
                     size_t len, const char *chunkname, int as_script) {
  lua_State *L = a->L;
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 8)) return 0;
  lua_pushlstring(L, chunk, len);
  lua_pushstring(L, chunkname);
  lua_pushboolean(L, as_script);
  int ok = admin_call(a, s, "eval", 3, 1) == 0 && lua_toboolean(L, -1);
  lua_settop(L, top);
  /* Between chunks, a step of the collector (a full collection each time
   * costs the host more than a small chunk does). LuaJIT does not collect
   * before it gives up on memory: the ceiling counts garbage not yet
   * collected too. */
  lua_gc(L, LUA_GCSTEP, 0);
  return ok;
}

int pawl__admin_incomplete(pawl__admin_lua_t *a, int s, const char *chunk,
                           size_t len) {
  lua_State *L = a->L;
  int top = lua_gettop(L);
  lua_pushlstring(L, chunk, len);
  int r = admin_call(a, s, "incomplete", 1, 1) == 0 && lua_toboolean(L, -1);
  lua_settop(L, top);
  return r;
}

char *pawl__admin_complete(pawl__admin_lua_t *a, int s, const char *line,
                           size_t len) {
  lua_State *L = a->L;
  int top = lua_gettop(L);
  lua_pushlstring(L, line, len);
  if (admin_call(a, s, "complete", 1, 2) != 0) return NULL;
  pawl_buf_t b;
  pawl__buf_init(&b);
  pawl__buf_printf(&b, "%lld\n", (long long)lua_tointeger(L, -2));
  if (lua_istable(L, -1)) {
    size_t n = lua_objlen(L, -1);
    for (size_t i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, (int)i);
      size_t k;
      const char *c = lua_tolstring(L, -1, &k);
      if (c && !memchr(c, '\n', k)) {
        pawl__buf_append(&b, c, k);
        pawl__buf_putc(&b, '\n');
      }
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
  char *out = b.oom ? NULL : pawl__buf_detach(&b);
  pawl__buf_free(&b);
  return out;
}

char *pawl__admin_trace(pawl__admin_lua_t *a, int s) {
  lua_State *L = a->L;
  int top = lua_gettop(L);
  if (admin_call(a, s, "trace", 0, 1) != 0) return NULL;
  const char *t = lua_tostring(L, -1);
  char *out = pawl__strdup(t ? t : "");
  lua_settop(L, top);
  return out;
}
