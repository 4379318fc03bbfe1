/* lua_module.c: `require "pawl"` for LuaJIT, written on include/pawl.h only
 * (and, of host/, the helpers of core/ and the JSON codec lua/ljson.c).
 *
 *   local pawl = require "pawl"
 *   local db = assert(pawl.open{ db = "sqlite:/tmp/x.db", now = 1000 })
 *   local id = db:enqueue("mail", { to = "a@b" }, { queue = "mail" })
 *   local jobs = db:claim(10, { queues = { "mail" } })
 *   db:finish{ { id = jobs[1].id, attempt = jobs[1].attempt,
 *                kind = "succeeded", result = { sent = true },
 *                logs = { { level = "info", message = "sent" } } } }
 *   for _, line in ipairs(db:logs(id)) do print(line.level, line.message) end
 *
 * Conventions, as in Lua's io library: an operation that fails returns nil,
 * a message (pawl_errmsg) and the code's name ("PAWL_ESTATE"); a wrong
 * argument (a type, an unknown option, a malformed table) raises.
 *
 * Raising: LuaJIT unwinds with its own machinery and skips C cleanup, so no
 * C allocation is ever held in a local variable across anything that can
 * raise. Scratch arrays are Lua userdata; strings built for a call are kept
 * in an "anchor" table on the stack; what the library returns is stored in a
 * "pawl.box" userdata whose __gc frees it, straight from the call, so that
 * an error while the result is turned into Lua tables (out of memory, a
 * decode error) still frees it.
 *
 * No mutable C statics: the JSON codec and everything else per state lives
 * in that state's registry, so one state per worker thread can load this. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "alloc.h"
#include "buf.h"
#include "ljson.h"
#include "redact.h"
#include "bounds.h"
#include "pawl.h"

#define LPAWL_HANDLE "pawl.handle"
#define LPAWL_BOX "pawl.box"
#define LPAWL_CJSON "pawl.cjson" /* registry: a private pawl.json (ljson.c) */

/* Largest integer a double holds exactly: ms timestamps are numbers. */
#define LPAWL_MAX_EXACT 9007199254740992.0

/* The userdata behind a handle. The clock reads `now` from here, so the
 * handle's clock can be frozen, moved and released from Lua. A userdata
 * never moves, so its address is a stable clock_data. */
typedef struct lpawl_handle {
  pawl_t *p;    /* NULL once closed */
  int frozen;   /* 1: the clock returns `now` */
  /* db:define / db:step: the job types (a registry reference to a table
   * name -> table or function; LUA_NOREF until the first define), step
   * mode started, and the lua_State calling now, which the library reads
   * at each step (pawl_step_start_lua). */
  int types_ref;
  int stepping;
  lua_State *cur;
  int64_t now;
  int borrowed; /* 1: a handle of the host's (the attached console's):
                   never closed from Lua, its clock the host's */
} lpawl_handle_t;

/* What the library returned, owned until freed by hand or by __gc. */
typedef struct lpawl_box {
  pawl_job_t *job;
  pawl_job_t **jobs;
  size_t njobs;
  pawl_history_t *hist;
  pawl_log_record_t *logs;
  size_t nlogs;
  char **names; /* db:type_redact */
} lpawl_box_t;

/* ---- small helpers ------------------------------------------------------ */

static int64_t lpawl_clock(void *data) {
  lpawl_handle_t *h = data;
  if (h->frozen) return h->now;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* [-0, +0, v] The open handle at `idx`; raises if it is closed. */
static lpawl_handle_t *lpawl_check(lua_State *L, int idx) {
  lpawl_handle_t *h = luaL_checkudata(L, idx, LPAWL_HANDLE);
  if (!h->p) luaL_error(L, "pawl handle is closed");
  return h;
}

/* [-0, +3, m] nil, the handle's message, the code's name. */
static int lpawl_fail(lua_State *L, pawl_t *p, int rc) {
  lua_pushnil(L);
  lua_pushstring(L, p ? pawl_errmsg(p) : pawl_strerror(rc));
  lua_pushstring(L, pawl_err_name(rc));
  return 3;
}

/* [-0, +3, m] nil, a message of our own, the code's name. */
static int lpawl_fail_msg(lua_State *L, int rc, const char *msg) {
  lua_pushnil(L);
  lua_pushstring(L, msg);
  lua_pushstring(L, pawl_err_name(rc));
  return 3;
}

/* [-0, +1, m] A new box, empty. */
static lpawl_box_t *lpawl_box_new(lua_State *L) {
  lpawl_box_t *b = lua_newuserdata(L, sizeof *b);
  memset(b, 0, sizeof *b);
  luaL_getmetatable(L, LPAWL_BOX);
  lua_setmetatable(L, -2);
  return b;
}

static void lpawl_box_free(lpawl_box_t *b) {
  pawl_job_free(b->job);
  pawl_jobs_free(b->jobs, b->njobs);
  pawl_history_free(b->hist);
  pawl_logs_free(b->logs, b->nlogs);
  pawl_names_free(b->names);
  memset(b, 0, sizeof *b);
}

/* [-0, +0, -] __gc of a box. */
static int lpawl_box_gc(lua_State *L) {
  lpawl_box_free(luaL_checkudata(L, 1, LPAWL_BOX));
  return 0;
}

/* [-0, +0, m] Records the value at the top in the anchor table at `anchor`
 * (a table on the caller's stack), so that a string pointer taken from it
 * stays valid for the rest of the call after the value is popped. */
static void lpawl_anchor(lua_State *L, int anchor) {
  lua_pushvalue(L, -1);
  lua_pushboolean(L, 1);
  lua_rawset(L, anchor);
}

/* [-0, +0, v] Parses the job id argument at `idx`: 0 or PAWL_EINVAL. */
static int lpawl_parse_id(lua_State *L, int idx, pawl_id_t *id) {
  const char *text = luaL_checkstring(L, idx);
  return pawl_id_parse(id, text);
}

/* [-0, +3, m] The failure of a bad id argument at `idx`. */
static int lpawl_bad_id(lua_State *L, int idx) {
  lua_pushnil(L);
  lua_pushfstring(L, "invalid job id \"%s\": expected a UUID", lua_tostring(L, idx));
  lua_pushstring(L, pawl_err_name(PAWL_EINVAL));
  return 3;
}

/* [-0, +1, e] pawl.json.encode(value at idx). */
static void lpawl_json_encode(lua_State *L, int idx) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  lua_getfield(L, LUA_REGISTRYINDEX, LPAWL_CJSON);
  lua_getfield(L, -1, "encode");
  lua_remove(L, -2);
  lua_pushvalue(L, idx);
  lua_call(L, 1, 1);
}

/* [-0, +1, m] The message "<prefix><fmt ...>" for an argument error
 * (lua_pushfstring's formats: %s %d %f %p %c %%). */
static const char *lpawl_msg(lua_State *L, const char *prefix, const char *fmt,
                             ...) {
  va_list ap;
  lua_pushstring(L, prefix);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_tostring(L, -1);
}

/* Raises unless every key of the table at `t` is one of `names`: an unknown
 * option is almost always a typo that would otherwise be silently ignored. */
static void lpawl_check_keys(lua_State *L, int t, const char *const *names,
                             int argn, const char *prefix, const char *what) {
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(L, argn,
                    lpawl_msg(L, prefix, "%s options must have string keys (got %s)",
                              what, luaL_typename(L, -1)));
    const char *key = lua_tostring(L, -1);
    int known = 0;
    for (const char *const *n = names; *n; n++)
      if (strcmp(*n, key) == 0) known = 1;
    if (!known)
      luaL_argerror(L, argn,
                    lpawl_msg(L, prefix, "unknown %s option \"%s\"", what, key));
  }
}

/* [-0, +0, e] t[key] as an integer in [min, max]; `dflt` when nil. */
static double lpawl_opt_int(lua_State *L, int t, const char *key, double dflt,
                            double min, double max, int argn,
                            const char *prefix) {
  lua_getfield(L, t, key);
  double v = dflt;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      luaL_argerror(L, argn, lpawl_msg(L, prefix, "option \"%s\" must be a number (got %s)",
                                       key, luaL_typename(L, -1)));
    v = lua_tonumber(L, -1);
    char what[80], err[256];
    snprintf(what, sizeof what, "option \"%s\"", key);
    if (pawl__bounds_check(what, v, min, max, 1, NULL, err, sizeof err))
      luaL_argerror(L, argn, lpawl_msg(L, prefix, "%s", err));
  }
  lua_pop(L, 1);
  return v;
}

/* [-0, +0, e] t[key] as a string kept alive by the anchor; NULL when nil. */
static const char *lpawl_opt_str(lua_State *L, int t, const char *key,
                                 int anchor, int argn, const char *prefix) {
  lua_getfield(L, t, key);
  const char *s = NULL;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(L, argn, lpawl_msg(L, prefix, "option \"%s\" must be a string (got %s)",
                                       key, luaL_typename(L, -1)));
    lpawl_anchor(L, anchor);
    s = lua_tostring(L, -1);
  }
  lua_pop(L, 1);
  return s;
}

/* [-0, +0, e] t[key] as a boolean (nil: false). */
static int lpawl_opt_bool(lua_State *L, int t, const char *key, int argn,
                          const char *prefix) {
  lua_getfield(L, t, key);
  int v = 0;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TBOOLEAN)
      luaL_argerror(L, argn, lpawl_msg(L, prefix, "option \"%s\" must be a boolean (got %s)",
                                       key, luaL_typename(L, -1)));
    v = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* [-0, +0, e] JSON text from the value at `idx`: a table is encoded, a
 * string is taken as JSON (the library checks it), nil gives NULL. */
static const char *lpawl_json_arg(lua_State *L, int idx, int anchor, int argn,
                                  const char *prefix, const char *what) {
  switch (lua_type(L, idx)) {
  case LUA_TNIL:
  case LUA_TNONE:
    return NULL;
  case LUA_TSTRING:
    lua_pushvalue(L, idx);
    break;
  case LUA_TTABLE:
    lpawl_json_encode(L, idx);
    break;
  default:
    luaL_argerror(L, argn, lpawl_msg(L, prefix, "%s must be a table, a JSON string or nil (got %s)",
                                     what, luaL_typename(L, idx)));
  }
  lpawl_anchor(L, anchor);
  const char *s = lua_tostring(L, -1);
  lua_pop(L, 1);
  return s;
}

/* [-0, +0, e] An array of strings at t[key] as a pointer array (a userdata
 * kept by the anchor). */
static const char *const *lpawl_opt_strings(lua_State *L, int t,
                                            const char *key, int anchor,
                                            size_t *n, int argn,
                                            const char *prefix) {
  *n = 0;
  lua_getfield(L, t, key);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return NULL;
  }
  if (lua_type(L, -1) != LUA_TTABLE)
    luaL_argerror(L, argn, lpawl_msg(L, prefix, "option \"%s\" must be an array of strings (got %s)",
                                     key, luaL_typename(L, -1)));
  int arr = lua_gettop(L);
  size_t len = lua_objlen(L, arr);
  if (len == 0) {
    lua_pop(L, 1);
    return NULL;
  }
  const char **v = lua_newuserdata(L, len * sizeof *v);
  lpawl_anchor(L, anchor);
  lua_pop(L, 1);
  for (size_t i = 0; i < len; i++) {
    lua_rawgeti(L, arr, (int)i + 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(L, argn, lpawl_msg(L, prefix, "option \"%s\" must be an array of strings (an item is %s)",
                                       key, luaL_typename(L, -1)));
    lpawl_anchor(L, anchor);
    v[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  *n = len;
  return v;
}

/* ---- jobs as Lua tables -------------------------------------------------- */

static void lpawl_set_str(lua_State *L, const char *k, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static void lpawl_set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

/* Times: nil when unset (0). */
static void lpawl_set_time(lua_State *L, const char *k, int64_t v) {
  if (v) lpawl_set_num(L, k, (double)v);
}

/* Text stored before pawl checked its JSON policy (json.h) may not decode
 * (a lone surrogate escape such as "\ud800"): a job must still be
 * readable, so a decode failure leaves the field out (its raw text stays in
 * <k>_json) and names it in `json_error`. The message is all we keep, so
 * this pcall needs no traceback handler. */
static void lpawl_set_json(lua_State *L, const char *k, const char *v) {
  if (!v) return;
  lua_getfield(L, LUA_REGISTRYINDEX, LPAWL_CJSON);
  lua_getfield(L, -1, "decode");
  lua_remove(L, -2);
  lua_pushstring(L, v);
  int rc = lua_pcall(L, 1, 1, 0);
  if (rc == 0) {
    lua_setfield(L, -2, k);
    return;
  }
  if (rc == LUA_ERRMEM) lua_error(L);
  lua_getfield(L, -2, "json_error");
  if (lua_isnil(L, -1))
    lua_pushfstring(L, "%s: %s", k, lua_tostring(L, -2));
  else
    lua_pushfstring(L, "%s; %s: %s", lua_tostring(L, -1), k, lua_tostring(L, -2));
  lua_setfield(L, -4, "json_error");
  lua_pop(L, 2);
}

static void lpawl_push_id(lua_State *L, const pawl_id_t *id) {
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  lua_pushstring(L, text);
}

/* [-0, +1, m] A job as a table: every pawl_job_t field under its own name,
 * JSON fields decoded, plus the raw JSON text of payload, params, result
 * (and json_error if one could not be decoded). */
static void lpawl_push_job(lua_State *L, const pawl_job_t *j) {
  lua_createtable(L, 0, 34);
  lpawl_push_id(L, &j->id);
  lua_setfield(L, -2, "id");
  lpawl_set_str(L, "type", j->type);
  lpawl_set_str(L, "queue", j->queue);
  lpawl_set_str(L, "state", pawl_state_name(j->state));
  if (j->state == PAWL_PAUSED)
    lpawl_set_str(L, "paused_from", pawl_state_name(j->paused_from));
  lpawl_set_num(L, "priority", j->priority);
  lpawl_set_json(L, "payload", j->payload);
  lpawl_set_str(L, "payload_json", j->payload);
  lpawl_set_json(L, "params", j->params);
  lpawl_set_str(L, "params_json", j->params);
  lpawl_set_json(L, "tags", j->tags ? j->tags : "[]");
  lpawl_set_time(L, "run_at", j->run_at);
  lpawl_set_num(L, "attempt", j->attempt);
  lpawl_set_num(L, "max_attempts", j->max_attempts);
  lpawl_set_num(L, "timeout_s", j->timeout_s);
  lpawl_set_str(L, "idempotency_key", j->idempotency_key);
  lpawl_set_str(L, "business_key", j->business_key);
  lpawl_set_str(L, "correlation_id", j->correlation_id);
  lpawl_set_str(L, "ordering_key", j->ordering_key);
  lpawl_set_str(L, "enqueued_by", j->enqueued_by);
  lpawl_set_time(L, "created_at", j->created_at);
  lpawl_set_time(L, "updated_at", j->updated_at);
  lpawl_set_time(L, "started_at", j->started_at);
  lpawl_set_time(L, "finished_at", j->finished_at);
  lpawl_set_str(L, "lease_owner", j->lease_owner);
  lpawl_set_time(L, "lease_expires", j->lease_expires);
  lpawl_set_str(L, "last_error", j->last_error);
  lpawl_set_json(L, "result", j->result);
  lpawl_set_str(L, "result_json", j->result);
  lpawl_set_num(L, "recoveries", j->recoveries);
  lpawl_set_num(L, "progress_done", j->progress_done);
  lpawl_set_num(L, "progress_total", j->progress_total);
  lpawl_set_num(L, "version", (double)j->version);
  lpawl_set_num(L, "depth", j->depth);
}

/* [-0, +1, e] The job in the box as a table, then frees it. */
static int lpawl_return_job(lua_State *L, lpawl_box_t *b) {
  lpawl_push_job(L, b->job);
  lpawl_box_free(b);
  return 1;
}

/* ---- module functions ---------------------------------------------------- */

/* pawl.id_new() [-0, +1, m] */
static int lpawl_id_new(lua_State *L) {
  pawl_id_t id;
  pawl_id_new(&id);
  lpawl_push_id(L, &id);
  return 1;
}

/* pawl.id_time(id) [-0, +1|3, m] */
static int lpawl_id_time(lua_State *L) {
  pawl_id_t id;
  if (lpawl_parse_id(L, 1, &id)) return lpawl_bad_id(L, 1);
  lua_pushnumber(L, (double)pawl_id_time_ms(&id));
  return 1;
}

/* pawl.open(opts) [-0, +1|3, e] */
static int lpawl_open(lua_State *L) {
  static const char *const names[] = {
      "db", "node_id", "principal", "lease_ms", "age_boost_ms", "sync_full",
      "busy_timeout_ms", "no_migrate", "now", "create", "file_mode", NULL};
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_newtable(L); /* 2: anchor */
  lpawl_check_keys(L, 1, names, 1, "", "open");
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = lpawl_opt_str(L, 1, "db", 2, 1, "");
  o.node_id = lpawl_opt_str(L, 1, "node_id", 2, 1, "");
  o.principal = lpawl_opt_str(L, 1, "principal", 2, 1, "");
  o.lease_ms = (int64_t)lpawl_opt_int(L, 1, "lease_ms", 0, 0, LPAWL_MAX_EXACT, 1, "");
  o.age_boost_ms = (int64_t)lpawl_opt_int(L, 1, "age_boost_ms", -1, -1,
                                          LPAWL_MAX_EXACT, 1, "");
  o.sync_full = lpawl_opt_bool(L, 1, "sync_full", 1, "");
  o.busy_timeout_ms = (int)lpawl_opt_int(L, 1, "busy_timeout_ms", 0, 0,
                                         INT32_MAX, 1, "");
  o.no_migrate = lpawl_opt_bool(L, 1, "no_migrate", 1, "");
  /* create: true unless given false, as in the C API. */
  lua_getfield(L, 1, "create");
  int has_create = !lua_isnil(L, -1);
  lua_pop(L, 1);
  if (has_create) o.create = lpawl_opt_bool(L, 1, "create", 1, "");
  o.file_mode = (unsigned)lpawl_opt_int(L, 1, "file_mode", 0, 0, 0777, 1, "");
  lua_getfield(L, 1, "now");
  int frozen = !lua_isnil(L, -1);
  lua_pop(L, 1);
  double now = lpawl_opt_int(L, 1, "now", 0, 0, LPAWL_MAX_EXACT, 1, "");

  lpawl_handle_t *h = lua_newuserdata(L, sizeof *h);
  memset(h, 0, sizeof *h);
  luaL_getmetatable(L, LPAWL_HANDLE);
  lua_setmetatable(L, -2);
  h->frozen = frozen;
  h->now = (int64_t)now;
  h->types_ref = LUA_NOREF;
  /* Always our clock: the handle can be frozen later with set_now(). */
  o.clock = lpawl_clock;
  o.clock_data = h;
  char err[512];
  int rc = pawl_open(&h->p, &o, err, sizeof err);
  if (rc) return lpawl_fail_msg(L, rc, err);
  return 1;
}

/* ---- handle methods ------------------------------------------------------ */

/* db:close() [-0, +0, -] Idempotent. In step mode (db:step) the hooks
 * of the last outcomes run here, in this state. */
static int lpawl_close(lua_State *L) {
  lpawl_handle_t *h = luaL_checkudata(L, 1, LPAWL_HANDLE);
  if (h->borrowed) return 0; /* the host's: it closes it */
  h->cur = L;
  pawl_close(h->p);
  h->p = NULL;
  luaL_unref(L, LUA_REGISTRYINDEX, h->types_ref);
  h->types_ref = LUA_NOREF;
  return 0;
}

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
 * thread may step the handle. */
static int lpawl_step(lua_State *L) {
  static const char *const names[] = {"default_timeout_s", "log_level",
                                      NULL};
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
#ifdef PAWL_LUA_MODULE
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
#else
  (void)names;
  (void)budget;
  return lpawl_fail_msg(L, PAWL_EINVAL,
                        "db:step: only the Lua module (pawl.so) runs jobs in "
                        "the program's Lua state");
#endif
}

/* __tostring [-0, +1, m] */
static int lpawl_tostring(lua_State *L) {
  lpawl_handle_t *h = luaL_checkudata(L, 1, LPAWL_HANDLE);
  if (h->p)
    lua_pushfstring(L, "pawl.handle (%s) %p", pawl_node_id(h->p), (void *)h);
  else
    lua_pushfstring(L, "pawl.handle (closed) %p", (void *)h);
  return 1;
}

/* db:node_id() [-0, +1, m] */
static int lpawl_node_id(lua_State *L) {
  lua_pushstring(L, pawl_node_id(lpawl_check(L, 1)->p));
  return 1;
}

/* db:now() [-0, +1, -] */
static int lpawl_now(lua_State *L) {
  lua_pushnumber(L, (double)pawl_now(lpawl_check(L, 1)->p));
  return 1;
}

/* db:set_now(ms|nil) [-0, +0, v] Freezes the clock at ms; nil releases it
 * back to the real clock. */
/* [-0, +0, v] Raises for a borrowed handle: its clock is the host's. */
static void lpawl_check_own_clock(lua_State *L, lpawl_handle_t *h) {
  if (h->borrowed)
    luaL_error(L, "this handle is the running host's: its clock is the "
                  "host's and cannot be set");
}

static int lpawl_set_now(lua_State *L) {
  lpawl_handle_t *h = lpawl_check(L, 1);
  lpawl_check_own_clock(L, h);
  if (lua_isnoneornil(L, 2)) {
    h->frozen = 0;
    return 0;
  }
  double v = luaL_checknumber(L, 2);
  luaL_argcheck(L, v == floor(v) && v >= 0 && v <= LPAWL_MAX_EXACT, 2,
                "expected a time in ms");
  h->now = (int64_t)v;
  h->frozen = 1;
  return 0;
}

/* db:advance(ms) [-0, +1, v] Moves the clock forward (freezing it at the
 * current time first if it was running) and returns the new time. */
static int lpawl_advance(lua_State *L) {
  lpawl_handle_t *h = lpawl_check(L, 1);
  lpawl_check_own_clock(L, h);
  double d = luaL_checknumber(L, 2);
  luaL_argcheck(L, d == floor(d) && fabs(d) <= LPAWL_MAX_EXACT, 2,
                "expected a whole number of ms");
  if (!h->frozen) {
    h->now = lpawl_clock(h);
    h->frozen = 1;
  }
  h->now += (int64_t)d;
  lua_pushnumber(L, (double)h->now);
  return 1;
}

/* db:schema_version() [-0, +2|3, m] current, latest */
static int lpawl_schema_version(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  int cur = 0, latest = 0;
  int rc = pawl_schema_version(p, &cur, &latest);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushinteger(L, cur);
  lua_pushinteger(L, latest);
  return 2;
}

static const char *const lpawl_enqueue_names[] = {
    "queue", "priority", "run_at", "delay_ms", "max_attempts", "timeout",
    "params", "tags", "key", "business_key", "return_existing",
    "correlation_id", "enqueued_by", "blocked", "ordering_key", "resource",
    "signal", "signal_timeout_ms", "after", "when", "identity", NULL};

/* [-0, +0, e] Dependencies: t.after, a job id or a list of them,
 * parsed into a userdata the anchor keeps; *n of them (NULL, 0: none). */
static const pawl_id_t *lpawl_opt_after(lua_State *L, int t, int anchor,
                                        size_t *n, int argn,
                                        const char *prefix) {
  *n = 0;
  lua_getfield(L, t, "after");
  int v = lua_gettop(L);
  if (lua_isnil(L, v)) {
    lua_pop(L, 1);
    return NULL;
  }
  int one = lua_type(L, v) == LUA_TSTRING;
  if (!one && lua_type(L, v) != LUA_TTABLE)
    luaL_argerror(L, argn, lpawl_msg(L, prefix, "option \"after\" must be a job id or a list of them (got %s)",
                                     luaL_typename(L, v)));
  size_t len = one ? 1 : lua_objlen(L, v);
  if (len > PAWL_AFTER_MAX)
    luaL_argerror(L, argn, lpawl_msg(L, prefix, "option \"after\" names %d jobs; at most %d",
                                     (int)len, PAWL_AFTER_MAX));
  pawl_id_t *ids = lua_newuserdata(L, (len ? len : 1) * sizeof *ids);
  lpawl_anchor(L, anchor);
  lua_pop(L, 1);
  for (size_t i = 0; i < len; i++) {
    if (one) lua_pushvalue(L, v);
    else lua_rawgeti(L, v, (int)i + 1);
    const char *text = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (!text || pawl_id_parse(&ids[i], text) != 0)
      luaL_argerror(L, argn, lpawl_msg(L, prefix, "option \"after\": %s is not a job id",
                                       text ? text : luaL_typename(L, -1)));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  *n = len;
  return ids;
}

/* [-0, +0, e] Reads enqueue options from the table at `t` (or nil). */
static void lpawl_read_enqueue_opts(lua_State *L, int t, int anchor,
                                    pawl_enqueue_opts_t *o, int argn,
                                    const char *prefix) {
  pawl_enqueue_opts_init(o);
  if (lua_isnoneornil(L, t)) return;
  if (lua_type(L, t) != LUA_TTABLE)
    luaL_argerror(L, argn, lpawl_msg(L, prefix, "options must be a table (got %s)",
                                     luaL_typename(L, t)));
  lpawl_check_keys(L, t, lpawl_enqueue_names, argn, prefix, "enqueue");
  o->queue = lpawl_opt_str(L, t, "queue", anchor, argn, prefix);
  /* Whole numbers that fit the C fields; pawl_enqueue() refuses what is
   * out of its range (with the range in the message). */
  o->priority = (int32_t)lpawl_opt_int(L, t, "priority", 0, INT32_MIN,
                                       INT32_MAX, argn, prefix);
  o->run_at = (int64_t)lpawl_opt_int(L, t, "run_at", 0, -LPAWL_MAX_EXACT,
                                     LPAWL_MAX_EXACT, argn, prefix);
  o->delay_ms = (int64_t)lpawl_opt_int(L, t, "delay_ms", 0, -LPAWL_MAX_EXACT,
                                       LPAWL_MAX_EXACT, argn, prefix);
  o->max_attempts = (int32_t)lpawl_opt_int(L, t, "max_attempts", 0, INT32_MIN,
                                           INT32_MAX, argn, prefix);
  o->timeout_s = (int32_t)lpawl_opt_int(L, t, "timeout", 0, INT32_MIN,
                                        INT32_MAX, argn, prefix);
  lua_getfield(L, t, "params");
  o->params = lpawl_json_arg(L, lua_gettop(L), anchor, argn, prefix, "params");
  lua_pop(L, 1);
  o->tags = lpawl_opt_strings(L, t, "tags", anchor, &o->ntags, argn, prefix);
  o->idempotency_key = lpawl_opt_str(L, t, "key", anchor, argn, prefix);
  o->business_key = lpawl_opt_str(L, t, "business_key", anchor, argn, prefix);
  o->return_existing = lpawl_opt_bool(L, t, "return_existing", argn, prefix);
  o->correlation_id = lpawl_opt_str(L, t, "correlation_id", anchor, argn, prefix);
  o->enqueued_by = lpawl_opt_str(L, t, "enqueued_by", anchor, argn, prefix);
  o->blocked = lpawl_opt_bool(L, t, "blocked", argn, prefix);
  o->ordering_key = lpawl_opt_str(L, t, "ordering_key", anchor, argn, prefix);
  o->resource = lpawl_opt_str(L, t, "resource", anchor, argn, prefix);
  o->signal = lpawl_opt_str(L, t, "signal", anchor, argn, prefix);
  o->signal_timeout_ms = (int64_t)lpawl_opt_int(
      L, t, "signal_timeout_ms", 0, -LPAWL_MAX_EXACT, LPAWL_MAX_EXACT, argn,
      prefix);
  o->after = lpawl_opt_after(L, t, anchor, &o->nafter, argn, prefix);
  o->when = lpawl_opt_str(L, t, "when", anchor, argn, prefix);
  o->identity = lpawl_opt_strings(L, t, "identity", anchor, &o->nidentity,
                                  argn, prefix);
}

/* [-0, +0, e] Per-key ordering: a job of a type this handle defined
 * (db:define) with an `ordering_key` and none in its options takes the
 * type's: its string, or what its function returns for the payload at
 * `payload` (a table, a JSON text, or nil for {}); nil is no key. The key
 * is anchored; pawl_enqueue() checks it. */
static void lpawl_type_ordering_key(lua_State *L, lpawl_handle_t *h,
                                    const char *type, int payload, int anchor,
                                    pawl_enqueue_opts_t *o, int argn,
                                    const char *prefix) {
  if (o->ordering_key || h->types_ref == LUA_NOREF) return;
  int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->types_ref);
  lua_getfield(L, -1, type);
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "ordering_key");
    if (lua_isfunction(L, -1)) {
      if (lua_type(L, payload) == LUA_TSTRING) {
        lua_getfield(L, LUA_REGISTRYINDEX, LPAWL_CJSON);
        lua_getfield(L, -1, "decode");
        lua_remove(L, -2);
        lua_pushvalue(L, payload);
        lua_call(L, 1, 1);
      } else if (lua_istable(L, payload)) {
        lua_pushvalue(L, payload);
      } else {
        lua_newtable(L);
      }
      lua_call(L, 1, 1);
    }
    if (lua_type(L, -1) == LUA_TSTRING) {
      lua_pushvalue(L, -1);
      lpawl_anchor(L, anchor);
      o->ordering_key = lua_tostring(L, -1);
    } else if (!lua_isnil(L, -1)) {
      luaL_argerror(L, argn, lpawl_msg(L, prefix, "ordering_key of type %s "
                                       "must be a string or nil (got %s)",
                                       type, luaL_typename(L, -1)));
    }
  }
  lua_settop(L, top);
}

/* [-0, +0, e] Job instances: a job of a type this handle
 * defined (db:define) with `identity` and none in its options takes the
 * type's identifying fields (anchored); pawl_enqueue() checks them. */
static void lpawl_type_identity(lua_State *L, lpawl_handle_t *h,
                                const char *type, int anchor,
                                pawl_enqueue_opts_t *o, int argn,
                                const char *prefix) {
  if (o->identity || h->types_ref == LUA_NOREF) return;
  int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->types_ref);
  lua_getfield(L, -1, type);
  if (lua_istable(L, -1))
    o->identity = lpawl_opt_strings(L, lua_gettop(L), "identity", anchor,
                                    &o->nidentity, argn, prefix);
  lua_settop(L, top);
}

static const char *lpawl_enq_status(int status) {
  switch (status) {
  case PAWL_ENQ_DUPLICATE: return "duplicate";
  case PAWL_ENQ_EXISTING: return "existing";
  case PAWL_ENQ_RESTARTED: return "restarted";
  default: return "new";
  }
}

/* db:enqueue(type, payload, opts) [-0, +2|3, e] id, status */
static int lpawl_enqueue(lua_State *L) {
  lpawl_handle_t *h = lpawl_check(L, 1);
  pawl_t *p = h->p;
  const char *type = luaL_checkstring(L, 2);
  lua_settop(L, 4);
  lua_newtable(L); /* 5: anchor */
  const char *payload = lpawl_json_arg(L, 3, 5, 3, "", "payload");
  pawl_enqueue_opts_t o;
  lpawl_read_enqueue_opts(L, 4, 5, &o, 4, "");
  lpawl_type_ordering_key(L, h, type, 3, 5, &o, 4, "");
  lpawl_type_identity(L, h, type, 5, &o, 4, "");
  pawl_id_t id;
  int status = 0;
  int rc = pawl_enqueue(p, type, payload, &o, &id, &status);
  if (rc) return lpawl_fail(L, p, rc);
  lpawl_push_id(L, &id);
  lua_pushstring(L, lpawl_enq_status(status));
  return 2;
}

/* db:enqueue_many{ {type, payload, opts}, ... } [-0, +2|3, e] ids, statuses
 * All or nothing: one transaction. */
static int lpawl_enqueue_items(lua_State *L, int chain) {
  lpawl_handle_t *h = lpawl_check(L, 1);
  pawl_t *p = h->p;
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_newtable(L); /* 3: anchor */
  size_t n = lua_objlen(L, 2);
  if (n == 0) {
    lua_newtable(L);
    lua_newtable(L);
    return 2;
  }
  /* Scratch arrays as userdata: freed by the collector even if we raise. */
  pawl_enqueue_item_t *items = lua_newuserdata(L, n * sizeof *items);
  pawl_enqueue_opts_t *opts = lua_newuserdata(L, n * sizeof *opts);
  pawl_id_t *ids = lua_newuserdata(L, n * sizeof *ids);
  int *statuses = lua_newuserdata(L, n * sizeof *statuses);
  for (size_t i = 0; i < n; i++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "job %zu: ", i + 1);
    lua_rawgeti(L, 2, (int)i + 1);
    int item = lua_gettop(L);
    if (lua_type(L, item) != LUA_TTABLE)
      luaL_argerror(L, 2, lpawl_msg(L, prefix, "expected a table {type, payload, opts} (got %s)",
                                    luaL_typename(L, item)));
    lua_rawgeti(L, item, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_argerror(L, 2, lpawl_msg(L, prefix, "type must be a string (got %s)",
                                    luaL_typename(L, -1)));
    items[i].type = lua_tostring(L, -1); /* anchored by the item table */
    lua_pop(L, 1);
    lua_rawgeti(L, item, 2);
    items[i].payload = lpawl_json_arg(L, lua_gettop(L), 3, 2, prefix, "payload");
    lua_pop(L, 1);
    lua_rawgeti(L, item, 3);
    lpawl_read_enqueue_opts(L, lua_gettop(L), 3, &opts[i], 2, prefix);
    lua_pop(L, 1);
    lua_rawgeti(L, item, 2);
    lpawl_type_ordering_key(L, h, items[i].type, lua_gettop(L), 3, &opts[i],
                            2, prefix);
    lua_pop(L, 1);
    items[i].opts = &opts[i];
    lua_pop(L, 1);
  }
  int rc = chain ? pawl_chain(p, items, n, ids, statuses)
               : pawl_enqueue_many(p, items, n, ids, statuses);
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, (int)n, 0);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lpawl_push_id(L, &ids[i]);
    lua_rawseti(L, -3, (int)i + 1);
    lua_pushstring(L, lpawl_enq_status(statuses[i]));
    lua_rawseti(L, -2, (int)i + 1);
  }
  return 2;
}

/* ---- batches (README "Batches") ------------------------------------------ */

/* [-0, +0, e] Reads {type, payload, opts} at `item` into *it and *o (the
 * strings anchored in `anchor`), as db:enqueue_many reads its items. */
static void lpawl_read_item(lua_State *L, lpawl_handle_t *h, int item,
                            int anchor, int argn, const char *prefix,
                            pawl_enqueue_item_t *it, pawl_enqueue_opts_t *o) {
  if (lua_type(L, item) != LUA_TTABLE)
    luaL_argerror(L, argn, lpawl_msg(L, prefix, "expected a table {type, "
                                     "payload, opts} (got %s)",
                                     luaL_typename(L, item)));
  lua_rawgeti(L, item, 1);
  if (lua_type(L, -1) != LUA_TSTRING)
    luaL_argerror(L, argn, lpawl_msg(L, prefix, "type must be a string "
                                     "(got %s)", luaL_typename(L, -1)));
  lpawl_anchor(L, anchor);
  it->type = lua_tostring(L, -1);
  lua_pop(L, 1);
  lua_rawgeti(L, item, 2);
  it->payload = lpawl_json_arg(L, lua_gettop(L), anchor, argn, prefix,
                               "payload");
  lua_pop(L, 1);
  lua_rawgeti(L, item, 3);
  lpawl_read_enqueue_opts(L, lua_gettop(L), anchor, o, argn, prefix);
  lua_pop(L, 1);
  lua_rawgeti(L, item, 2);
  lpawl_type_ordering_key(L, h, it->type, lua_gettop(L), anchor, o, argn,
                          prefix);
  lua_pop(L, 1);
  it->opts = o;
}

/* db:batch{ jobs = { {type, payload, opts}, ... }, on_success = {...},
 * on_failure = {...}, on_complete = {...}, enqueued_by = "..." }
 * [-0, +2|3, e] batch_id, ids. All or nothing: one transaction. */
static int lpawl_batch(lua_State *L) {
  static const char *const names[] = {"jobs", "on_success", "on_failure",
                                      "on_complete", "enqueued_by", NULL};
  static const char *const roles[] = {"on_success", "on_failure",
                                      "on_complete"};
  lpawl_handle_t *h = lpawl_check(L, 1);
  pawl_t *p = h->p;
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_newtable(L); /* 3: anchor */
  lpawl_check_keys(L, 2, names, 2, "", "batch");
  lua_getfield(L, 2, "jobs"); /* 4 */
  if (!lua_istable(L, 4))
    luaL_argerror(L, 2, "jobs must be a list of {type, payload, opts}");
  size_t n = lua_objlen(L, 4);
  pawl_enqueue_item_t *items =
      lua_newuserdata(L, (n ? n : 1) * sizeof *items);
  pawl_enqueue_opts_t *opts = lua_newuserdata(L, (n ? n : 1) * sizeof *opts);
  pawl_id_t *ids = lua_newuserdata(L, (n ? n : 1) * sizeof *ids);
  for (size_t i = 0; i < n; i++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "job %zu: ", i + 1);
    lua_rawgeti(L, 4, (int)i + 1);
    lpawl_read_item(L, h, lua_gettop(L), 3, 2, prefix, &items[i], &opts[i]);
    lua_pop(L, 1);
  }
  pawl_enqueue_item_t cbs[3];
  pawl_enqueue_opts_t cbo[3];
  pawl_batch_opts_t bo;
  pawl_batch_opts_init(&bo);
  const pawl_enqueue_item_t **slot[3] = {&bo.on_success, &bo.on_failure,
                                         &bo.on_complete};
  for (int r = 0; r < 3; r++) {
    lua_getfield(L, 2, roles[r]);
    if (!lua_isnil(L, -1)) {
      char prefix[32];
      snprintf(prefix, sizeof prefix, "%s: ", roles[r]);
      lpawl_read_item(L, h, lua_gettop(L), 3, 2, prefix, &cbs[r], &cbo[r]);
      *slot[r] = &cbs[r];
    }
    lua_pop(L, 1);
  }
  bo.enqueued_by = lpawl_opt_str(L, 2, "enqueued_by", 3, 2, "");
  pawl_id_t bid;
  int rc = pawl_batch_enqueue(p, items, n, &bo, &bid, ids);
  if (rc) return lpawl_fail(L, p, rc);
  lpawl_push_id(L, &bid);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lpawl_push_id(L, &ids[i]);
    lua_rawseti(L, -2, (int)i + 1);
  }
  return 2;
}

/* db:batch_get(id) [-0, +1|3, e] the batch's counters, children per state
 * (states.pending ...), callbacks ({id, fired_at} by role) and metrics. */
static int lpawl_batch_get(lua_State *L) {
  lpawl_handle_t *h = lpawl_check(L, 1);
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  pawl_batch_t b;
  int rc = pawl_batch_get(h->p, &id, &b);
  if (rc) return lpawl_fail(L, h->p, rc);
  lua_newtable(L);
  lpawl_push_id(L, &b.id);
  lua_setfield(L, -2, "id");
  lpawl_set_num(L, "total", (double)b.total);
  lpawl_set_num(L, "succeeded", (double)b.succeeded);
  lpawl_set_num(L, "failed", (double)b.failed);
  lpawl_set_num(L, "canceled", (double)b.canceled);
  lpawl_set_num(L, "ended", (double)(b.succeeded + b.failed + b.canceled));
  lpawl_set_time(L, "created_at", b.created_at);
  lpawl_set_time(L, "finished_at", b.finished_at);
  lpawl_set_num(L, "wall_ms", (double)b.wall_ms);
  lpawl_set_num(L, "exec_ms", (double)b.exec_ms);
  lpawl_set_num(L, "overhead_ms", (double)b.overhead_ms);
  lua_newtable(L);
  for (int s = 0; s < PAWL_STATE_COUNT; s++)
    lpawl_set_num(L, pawl_state_name(s), (double)b.states[s]);
  lua_setfield(L, -2, "states");
  lua_newtable(L);
  for (int r = 0; r < 3; r++) {
    if (!b.callbacks[r].set) continue;
    lua_newtable(L);
    lpawl_push_id(L, &b.callbacks[r].id);
    lua_setfield(L, -2, "id");
    lpawl_set_time(L, "fired_at", b.callbacks[r].fired_at);
    lua_setfield(L, -2, pawl_batch_role_name(r + 1));
  }
  lua_setfield(L, -2, "callbacks");
  return 1;
}

/* db:job_batch(id) [-0, +2|3, e] the batch of job `id` and its role
 * ("child", "on_success", ...). */
static int lpawl_job_batch(lua_State *L) {
  lpawl_handle_t *h = lpawl_check(L, 1);
  pawl_id_t id, bid;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  int role;
  int rc = pawl_job_batch(h->p, &id, &bid, &role);
  if (rc) return lpawl_fail(L, h->p, rc);
  lpawl_push_id(L, &bid);
  lua_pushstring(L, pawl_batch_role_name(role));
  return 2;
}
static int lpawl_enqueue_many(lua_State *L) {
  return lpawl_enqueue_items(L, 0);
}

/* db:chain{ {type, payload, opts}, ... } -> ids, statuses [-0, +2|3, e]:
 * as db:enqueue_many, each job after the one before it
 * succeeds (pawl_chain()). */
static int lpawl_chain(lua_State *L) { return lpawl_enqueue_items(L, 1); }

/* db:get(id) [-0, +1|3, e] */
static int lpawl_get(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  lpawl_box_t *b = lpawl_box_new(L);
  int rc = pawl_get(p, &id, &b->job);
  if (rc) return lpawl_fail(L, p, rc);
  return lpawl_return_job(L, b);
}

/* pawl_list() calls back into C with borrowed jobs while a statement is
 * open: raising there would skip the store's cleanup. Each job is turned
 * into a table under lua_cpcall, and an error stops the walk and is raised
 * once pawl_list() has returned. */
typedef struct lpawl_list_ctx {
  lua_State *L;
  const pawl_job_t *job;
  int ref; /* registry ref of the result array */
  int n;
  int failed;
} lpawl_list_ctx_t;

/* [-0, +0, e] Under lua_cpcall: appends ctx->job to the result array. */
static int lpawl_list_push(lua_State *L) {
  lpawl_list_ctx_t *ctx = lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->ref);
  lpawl_push_job(L, ctx->job);
  lua_rawseti(L, -2, ++ctx->n);
  return 0;
}

static int lpawl_list_cb(const pawl_job_t *job, void *data) {
  lpawl_list_ctx_t *ctx = data;
  ctx->job = job;
  if (lua_cpcall(ctx->L, lpawl_list_push, ctx) != 0) {
    ctx->failed = 1; /* the error object stays on the stack */
    return 1;
  }
  return 0;
}

typedef int (*lpawl_action_fn)(pawl_t *, const pawl_id_t *, const char *,
                               pawl_job_t **);

/* [-0, +1|3, e] One operator action: (id, reason) -> job. */
static int lpawl_action(lua_State *L, lpawl_action_fn fn) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  const char *reason = luaL_optstring(L, 3, NULL);
  lpawl_box_t *b = lpawl_box_new(L);
  int rc = fn(p, &id, reason, &b->job);
  if (rc) return lpawl_fail(L, p, rc);
  return lpawl_return_job(L, b);
}

/* db:cancel(id, reason) [-0, +1|3, e] */
static int lpawl_cancel(lua_State *L) { return lpawl_action(L, pawl_cancel); }
/* db:pause(id, reason) [-0, +1|3, e] */
static int lpawl_pause(lua_State *L) { return lpawl_action(L, pawl_pause); }
/* db:resume(id, reason) [-0, +1|3, e] */
static int lpawl_resume(lua_State *L) { return lpawl_action(L, pawl_resume); }
/* db:retry(id, reason) [-0, +1|3, e] */
static int lpawl_retry(lua_State *L) { return lpawl_action(L, pawl_retry); }

/* db:claim(n, { queues = {...}, lease_ms = }) [-0, +1|3, e] jobs */
static int lpawl_claim(lua_State *L) {
  static const char *const names[] = {"queues", "lease_ms", NULL};
  pawl_t *p = lpawl_check(L, 1)->p;
  double max = luaL_optnumber(L, 2, 1);
  luaL_argcheck(L, max == floor(max) && max >= 0 && max <= INT32_MAX, 2,
                "expected a count of jobs");
  lua_settop(L, 3);
  lua_newtable(L); /* 4: anchor */
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  if (!lua_isnil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lpawl_check_keys(L, 3, names, 3, "", "claim");
    co.queues = lpawl_opt_strings(L, 3, "queues", 4, &co.nqueues, 3, "");
    co.lease_ms = (int64_t)lpawl_opt_int(L, 3, "lease_ms", 0, 0,
                                         LPAWL_MAX_EXACT, 3, "");
  }
  lpawl_box_t *b = lpawl_box_new(L);
  int rc = pawl_claim(p, &co, (size_t)max, &b->jobs, &b->njobs);
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, (int)b->njobs, 0);
  for (size_t i = 0; i < b->njobs; i++) {
    lpawl_push_job(L, b->jobs[i]);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lpawl_box_free(b);
  return 1;
}

/* [-0, +0, e] The log lines at t.logs of outcome `i` (the outcome table
 * at `t`): { {at =, level =, message =, fields = table|JSON}, ... }. `at`
 * defaults to `now`. The array is a userdata kept by the anchor. */
static void lpawl_read_logs(lua_State *L, int t, int anchor, size_t i,
                            int64_t now, pawl_outcome_t *o) {
  static const char *const names[] = {"at", "level", "message", "fields",
                                      NULL};
  char prefix[64];
  snprintf(prefix, sizeof prefix, "outcome %zu: ", i);
  lua_getfield(L, t, "logs");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  if (lua_type(L, -1) != LUA_TTABLE)
    luaL_argerror(L, 2, lpawl_msg(L, prefix, "logs must be an array of tables (got %s)",
                                  luaL_typename(L, -1)));
  int arr = lua_gettop(L);
  size_t n = lua_objlen(L, arr);
  if (n == 0) {
    lua_pop(L, 1);
    return;
  }
  pawl_log_entry_t *lines = lua_newuserdata(L, n * sizeof *lines);
  memset(lines, 0, n * sizeof *lines);
  lpawl_anchor(L, anchor);
  lua_pop(L, 1);
  for (size_t k = 0; k < n; k++) {
    snprintf(prefix, sizeof prefix, "outcome %zu: log line %zu: ", i, k + 1);
    lua_rawgeti(L, arr, (int)k + 1);
    int e = lua_gettop(L);
    if (lua_type(L, e) != LUA_TTABLE)
      luaL_argerror(L, 2, lpawl_msg(L, prefix, "expected a table (got %s)",
                                    luaL_typename(L, e)));
    lpawl_check_keys(L, e, names, 2, prefix, "log");
    pawl_log_entry_t *l = &lines[k];
    l->at = (int64_t)lpawl_opt_int(L, e, "at", (double)now, -LPAWL_MAX_EXACT,
                                   LPAWL_MAX_EXACT, 2, prefix);
    l->level = lpawl_opt_str(L, e, "level", anchor, 2, prefix);
    if (!l->level) luaL_argerror(L, 2, lpawl_msg(L, prefix, "level is required"));
    l->message = lpawl_opt_str(L, e, "message", anchor, 2, prefix);
    if (!l->message)
      luaL_argerror(L, 2, lpawl_msg(L, prefix, "message is required"));
    lua_getfield(L, e, "fields");
    l->fields = lpawl_json_arg(L, lua_gettop(L), anchor, 2, prefix, "fields");
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  o->logs = lines;
  o->nlogs = n;
}

/* db:finish{ {id =, attempt =, kind =, result =, error =, run_at =,
 *             logs = { {at =, level =, message =, fields =}, ... }}, ... }
 * [-0, +1|3, e] An array with true, or the code's name (PAWL_ELEASE), per
 * outcome; nil, message, code if the transaction failed. The log lines are
 * stored with their outcome, also when it is refused as stale. */
static int lpawl_finish(lua_State *L) {
  static const char *const names[] = {"id", "attempt", "kind", "result",
                                      "error", "run_at", "logs", NULL};
  static const struct {
    const char *name;
    pawl_outcome_kind_t kind;
  } kinds[] = {{"succeeded", PAWL_OUT_SUCCEEDED}, {"failed", PAWL_OUT_FAILED},
               {"retry", PAWL_OUT_RETRY},         {"snooze", PAWL_OUT_SNOOZE},
               {"release", PAWL_OUT_RELEASE}};
  pawl_t *p = lpawl_check(L, 1)->p;
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_newtable(L); /* 3: anchor */
  size_t n = lua_objlen(L, 2);
  if (n == 0) {
    lua_newtable(L);
    return 1;
  }
  pawl_outcome_t *outs = lua_newuserdata(L, n * sizeof *outs);
  int *rcs = lua_newuserdata(L, n * sizeof *rcs);
  memset(outs, 0, n * sizeof *outs);
  int64_t now = pawl_now(p);
  for (size_t i = 0; i < n; i++) {
    char prefix[40];
    snprintf(prefix, sizeof prefix, "outcome %zu: ", i + 1);
    lua_rawgeti(L, 2, (int)i + 1);
    int t = lua_gettop(L);
    if (lua_type(L, t) != LUA_TTABLE)
      luaL_argerror(L, 2, lpawl_msg(L, prefix, "expected a table (got %s)",
                                    luaL_typename(L, t)));
    lpawl_check_keys(L, t, names, 2, prefix, "finish");
    pawl_outcome_t *o = &outs[i];
    const char *id = lpawl_opt_str(L, t, "id", 3, 2, prefix);
    if (!id || pawl_id_parse(&o->id, id)) {
      lua_pushfstring(L, "%sinvalid job id \"%s\"", prefix, id ? id : "(nil)");
      return lpawl_fail_msg(L, PAWL_EINVAL, lua_tostring(L, -1));
    }
    lua_getfield(L, t, "attempt");
    if (lua_isnil(L, -1))
      luaL_argerror(L, 2, lpawl_msg(L, prefix, "attempt is required"));
    lua_pop(L, 1);
    o->attempt = (int32_t)lpawl_opt_int(L, t, "attempt", 0, INT32_MIN,
                                        INT32_MAX, 2, prefix);
    const char *kind = lpawl_opt_str(L, t, "kind", 3, 2, prefix);
    size_t k = 0, nk = sizeof kinds / sizeof kinds[0];
    while (kind && k < nk && strcmp(kinds[k].name, kind) != 0) k++;
    if (!kind || k == nk)
      luaL_argerror(L, 2, lpawl_msg(L, prefix,
                                    "kind must be succeeded, failed, retry, "
                                    "snooze or release (got %s)",
                                    kind ? kind : "nil"));
    o->kind = kinds[k].kind;
    lua_getfield(L, t, "result");
    o->result = lpawl_json_arg(L, lua_gettop(L), 3, 2, prefix, "result");
    lua_pop(L, 1);
    o->error = lpawl_opt_str(L, t, "error", 3, 2, prefix);
    o->run_at = (int64_t)lpawl_opt_int(L, t, "run_at", (double)now,
                                       -LPAWL_MAX_EXACT, LPAWL_MAX_EXACT, 2,
                                       prefix);
    lpawl_read_logs(L, t, 3, i + 1, now, o);
    lua_pop(L, 1);
  }
  int rc = pawl_finish(p, outs, n, rcs);
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    if (rcs[i] == 0)
      lua_pushboolean(L, 1);
    else
      lua_pushstring(L, pawl_err_name(rcs[i]));
    lua_rawseti(L, -2, (int)i + 1);
  }
  return 1;
}

/* db:heartbeat() [-0, +1|3, m] leases extended */
static int lpawl_heartbeat(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  size_t n = 0;
  int rc = pawl_heartbeat(p, &n);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushnumber(L, (double)n);
  return 1;
}

/* db:recover() [-0, +1|3, m] jobs taken back */
static int lpawl_recover(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  size_t n = 0;
  int rc = pawl_recover(p, &n);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushnumber(L, (double)n);
  return 1;
}

/* [-0, +0, v] The attempt argument at `idx`: a whole number in int32. */
static int32_t lpawl_check_attempt(lua_State *L, int idx) {
  double v = luaL_checknumber(L, idx);
  luaL_argcheck(L, v == floor(v) && v >= INT32_MIN && v <= INT32_MAX, idx,
                "expected an attempt number");
  return (int32_t)v;
}

/* db:progress(id, attempt, done, total) [-0, +1|3, e] true
 * Records the progress of an attempt this handle holds (total: 0 or nil
 * for unknown). Not a transition: the version does not change. */
static int lpawl_progress(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  int32_t attempt = lpawl_check_attempt(L, 3);
  double done = luaL_checknumber(L, 4);
  double total = luaL_optnumber(L, 5, 0);
  int rc = pawl_progress(p, &id, attempt, done, total);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* db:extend(id, attempt) [-0, +1|3, e] held
 * Extends the lease of one attempt by the handle's lease; false if the
 * attempt is no longer this handle's. */
static int lpawl_extend(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  int32_t attempt = lpawl_check_attempt(L, 3);
  int held = 0;
  int rc = pawl_extend(p, &id, attempt, &held);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushboolean(L, held);
  return 1;
}

/* db:next_due{ queues = {...} } [-0, +1|3, e] run_at
 * The earliest run_at among pending jobs (of those queues), 0 if none. */
static int lpawl_next_due(lua_State *L) {
  static const char *const names[] = {"queues", NULL};
  pawl_t *p = lpawl_check(L, 1)->p;
  lua_settop(L, 2);
  lua_newtable(L); /* 3: anchor */
  pawl_claim_opts_t co;
  memset(&co, 0, sizeof co);
  if (!lua_isnil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lpawl_check_keys(L, 2, names, 2, "", "next_due");
    co.queues = lpawl_opt_strings(L, 2, "queues", 3, &co.nqueues, 2, "");
  }
  int64_t at = 0;
  int rc = pawl_next_due(p, &co, &at);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushnumber(L, (double)at);
  return 1;
}

/* db:logs(id) [-0, +1|3, e] { {attempt =, at =, level =, message =,
 * fields =}, ... } oldest first; fields decoded (raw text in fields_json). */
static int lpawl_logs(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  lpawl_box_t *b = lpawl_box_new(L);
  int rc = pawl_logs(p, &id, &b->logs, &b->nlogs);
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, (int)b->nlogs, 0);
  for (size_t i = 0; i < b->nlogs; i++) {
    const pawl_log_record_t *r = &b->logs[i];
    lua_createtable(L, 0, 6);
    lpawl_set_num(L, "attempt", r->attempt);
    lpawl_set_num(L, "at", (double)r->at);
    lpawl_set_str(L, "level", r->level);
    lpawl_set_str(L, "message", r->message);
    lpawl_set_json(L, "fields", r->fields);
    lpawl_set_str(L, "fields_json", r->fields);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lpawl_box_free(b);
  return 1;
}

/* db:history(id) [-0, +1|3, e] { attempts = {...}, events = {...} } */
static int lpawl_history(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  lpawl_box_t *b = lpawl_box_new(L);
  int rc = pawl_history(p, &id, &b->hist);
  if (rc) return lpawl_fail(L, p, rc);
  const pawl_history_t *h = b->hist;
  lua_createtable(L, 0, 2);
  lua_createtable(L, (int)h->nattempts, 0);
  for (size_t i = 0; i < h->nattempts; i++) {
    const pawl_attempt_t *a = &h->attempts[i];
    lua_createtable(L, 0, 7);
    lpawl_set_num(L, "attempt", a->attempt);
    lpawl_set_str(L, "node", a->node);
    lpawl_set_time(L, "scheduled_at", a->scheduled_at);
    lpawl_set_time(L, "started_at", a->started_at);
    lpawl_set_time(L, "ended_at", a->ended_at);
    lpawl_set_str(L, "outcome", a->outcome);
    lpawl_set_str(L, "error", a->error);
    lpawl_set_str(L, "trace", a->trace);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "attempts");
  lua_createtable(L, (int)h->nevents, 0);
  for (size_t i = 0; i < h->nevents; i++) {
    const pawl_event_t *e = &h->events[i];
    lua_createtable(L, 0, 6);
    lpawl_set_num(L, "at", (double)e->at);
    lpawl_set_str(L, "from", e->from_state < 0 ? "enqueued"
                                               : pawl_state_name(e->from_state));
    lpawl_set_str(L, "to", pawl_state_name(e->to_state));
    lpawl_set_str(L, "actor", e->actor);
    lpawl_set_str(L, "reason", e->reason);
    lpawl_set_num(L, "attempt", e->attempt);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "events");
  lpawl_box_free(b);
  return 1;
}

/* ---- signals and replace ------------------------------------------------- */

/* db:signal(key, decision, payload) [-0, +2|3, e] job_id, "delivered" |
 * "already" */
static int lpawl_signal(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  const char *key = luaL_checkstring(L, 2);
  const char *decision = luaL_checkstring(L, 3);
  lua_settop(L, 4);
  lua_newtable(L); /* 5: anchor */
  const char *payload = lpawl_json_arg(L, 4, 5, 4, "", "payload");
  pawl_id_t id;
  int status = 0;
  int rc = pawl_signal(p, key, decision, payload, &id, &status);
  if (rc) return lpawl_fail(L, p, rc);
  lpawl_push_id(L, &id);
  lua_pushstring(L, status == PAWL_SIG_ALREADY ? "already" : "delivered");
  return 2;
}

/* db:signal_of(id) [-0, +1|3, e] {key, state, decision, payload, at, by,
 * timeout_at} (times in ms), or nil when the job has none */
static int lpawl_signal_of(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  pawl_signal_info_t *sig = NULL;
  int rc = pawl_signal_get(p, &id, &sig);
  if (rc == PAWL_ENOTFOUND) {
    lua_pushnil(L);
    return 1;
  }
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, 0, 9);
  lpawl_set_str(L, "key", sig->key);
  lpawl_set_str(L, "state", sig->state == PAWL_SIGNAL_DELIVERED ? "delivered"
                            : sig->state == PAWL_SIGNAL_EXPIRED ? "expired"
                                                                : "waiting");
  lpawl_set_time(L, "created_at", sig->created_at);
  lpawl_set_time(L, "timeout_at", sig->timeout_at);
  lpawl_set_str(L, "decision", sig->decision);
  lpawl_set_json(L, "payload", sig->payload);
  lpawl_set_time(L, "at", sig->delivered_at);
  lpawl_set_str(L, "by", sig->delivered_by);
  pawl_signal_free(sig);
  return 1;
}

/* db:replace(id, { payload, params, queue, priority, run_at, delay_ms,
 * max_attempts, timeout, reason }) [-0, +1|3, e] the replacement's id */
static int lpawl_replace(lua_State *L) {
  static const char *const names[] = {
      "payload", "params", "queue", "priority", "run_at", "delay_ms",
      "max_attempts", "timeout", "reason", NULL};
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  lua_settop(L, 3);
  lua_newtable(L); /* 4: anchor */
  pawl_replace_opts_t o;
  pawl_replace_opts_init(&o);
  if (!lua_isnil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lpawl_check_keys(L, 3, names, 3, "", "replace");
    lua_getfield(L, 3, "payload");
    if (!lua_isnil(L, -1))
      o.payload = lpawl_json_arg(L, lua_gettop(L), 4, 3, "", "payload");
    lua_pop(L, 1);
    lua_getfield(L, 3, "params");
    if (!lua_isnil(L, -1))
      o.params = lpawl_json_arg(L, lua_gettop(L), 4, 3, "", "params");
    lua_pop(L, 1);
    o.queue = lpawl_opt_str(L, 3, "queue", 4, 3, "");
    lua_getfield(L, 3, "priority");
    o.set_priority = !lua_isnil(L, -1);
    lua_pop(L, 1);
    o.priority = (int32_t)lpawl_opt_int(L, 3, "priority", 0, INT32_MIN,
                                        INT32_MAX, 3, "");
    o.run_at = (int64_t)lpawl_opt_int(L, 3, "run_at", 0, -LPAWL_MAX_EXACT,
                                      LPAWL_MAX_EXACT, 3, "");
    o.delay_ms = (int64_t)lpawl_opt_int(L, 3, "delay_ms", 0, -LPAWL_MAX_EXACT,
                                        LPAWL_MAX_EXACT, 3, "");
    o.max_attempts = (int32_t)lpawl_opt_int(L, 3, "max_attempts", 0,
                                            INT32_MIN, INT32_MAX, 3, "");
    o.timeout_s = (int32_t)lpawl_opt_int(L, 3, "timeout", 0, INT32_MIN,
                                         INT32_MAX, 3, "");
    o.reason = lpawl_opt_str(L, 3, "reason", 4, 3, "");
  }
  pawl_id_t nid;
  int rc = pawl_replace(p, &id, &o, &nid);
  if (rc) return lpawl_fail(L, p, rc);
  lpawl_push_id(L, &nid);
  return 1;
}

/* db:links(id) [-0, +1|3, e] { superseded_by = id?, supersedes = id? } */
static int lpawl_links(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  pawl_replace_links_t l;
  int rc = pawl_replace_links(p, &id, &l);
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, 0, 2);
  if (l.has_superseded_by) {
    lpawl_push_id(L, &l.superseded_by);
    lua_setfield(L, -2, "superseded_by");
  }
  if (l.has_supersedes) {
    lpawl_push_id(L, &l.supersedes);
    lua_setfield(L, -2, "supersedes");
  }
  return 1;
}

/* [-0, +0, m] Adds the admin section's methods (methods = 1) or module
 * functions to the table at the top (defined at the end of this file). */
static void lpawl_admin_register(lua_State *L, int methods);

/* ---- registration -------------------------------------------------------- */

static const luaL_Reg lpawl_funcs[] = {
    {"open", lpawl_open},
    {"id_new", lpawl_id_new},
    {"id_time", lpawl_id_time},
    {NULL, NULL}};

static const luaL_Reg lpawl_methods[] = {
    {"enqueue", lpawl_enqueue},
    {"enqueue_many", lpawl_enqueue_many},
    {"batch", lpawl_batch},
    {"batch_get", lpawl_batch_get},
    {"job_batch", lpawl_job_batch},
    {"chain", lpawl_chain},
    {"get", lpawl_get},
    {"cancel", lpawl_cancel},
    {"pause", lpawl_pause},
    {"resume", lpawl_resume},
    {"retry", lpawl_retry},
    {"claim", lpawl_claim},
    {"finish", lpawl_finish},
    {"heartbeat", lpawl_heartbeat},
    {"recover", lpawl_recover},
    {"progress", lpawl_progress},
    {"extend", lpawl_extend},
    {"next_due", lpawl_next_due},
    {"history", lpawl_history},
    {"logs", lpawl_logs},
    {"now", lpawl_now},
    {"set_now", lpawl_set_now},
    {"advance", lpawl_advance},
    {"node_id", lpawl_node_id},
    {"schema_version", lpawl_schema_version},
    {"close", lpawl_close},
    {"define", lpawl_define},
    {"step", lpawl_step},
    {"signal", lpawl_signal},
    {"signal_of", lpawl_signal_of},
    {"replace", lpawl_replace},
    {"links", lpawl_links},
    {NULL, NULL}};

static const luaL_Reg lpawl_meta[] = {
    {"__gc", lpawl_close},
    {"__tostring", lpawl_tostring},
    {NULL, NULL}};

/* The module is built twice: as `require "pawl"` (luaopen_pawl: the
 * pawl.so module, and the CLI's console), and into libpawl for the
 * attached console's Lua state (PAWL_LUA_MODULE_IN_HOST), under pawl__
 * names so that a program that links both never sees two definitions.
 * There it also wraps a handle of the host's (borrowed, never closed from
 * Lua). admin_lua.c declares these two. */
#ifdef PAWL_LUA_MODULE_IN_HOST
#define LPAWL_OPEN pawl__lua_module_open
int pawl__lua_module_open(lua_State *L);
void pawl__lua_module_borrow(lua_State *L, pawl_t *p);

/* [-0, +1, m] A handle userdata around `p` (borrowed). The module must
 * have been opened in L (its metatable). */
void pawl__lua_module_borrow(lua_State *L, pawl_t *p) {
  lpawl_handle_t *h = lua_newuserdata(L, sizeof *h);
  memset(h, 0, sizeof *h);
  luaL_getmetatable(L, LPAWL_HANDLE);
  lua_setmetatable(L, -2);
  h->p = p;
  h->borrowed = 1;
  h->types_ref = LUA_NOREF;
}
#else
#define LPAWL_OPEN luaopen_pawl
__attribute__((visibility("default"))) int luaopen_pawl(lua_State *L);
#endif

/* require "pawl" [-0, +1, e] */
int LPAWL_OPEN(lua_State *L) {
  /* pawl's JSON codec (host/lua/ljson.c), the one job code uses: an empty
   * array read from a job stays an array when it is enqueued again. A
   * private table, so that a script cannot change what we store. */
  pawl__ljson_open(L);
  lua_setfield(L, LUA_REGISTRYINDEX, LPAWL_CJSON);

  luaL_newmetatable(L, LPAWL_BOX);
  lua_pushcfunction(L, lpawl_box_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);

  luaL_newmetatable(L, LPAWL_HANDLE);
  luaL_register(L, NULL, lpawl_meta);
  lua_newtable(L);
  luaL_register(L, NULL, lpawl_methods);
  lpawl_admin_register(L, 1); /* the admin section's methods */
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);

  lua_newtable(L);
  luaL_register(L, NULL, lpawl_funcs);
  lpawl_admin_register(L, 0); /* the admin section's functions */
  lua_pushliteral(L, PAWL_VERSION);
  lua_setfield(L, -2, "VERSION");
  lua_createtable(L, PAWL_STATE_COUNT, 0);
  for (int i = 0; i < PAWL_STATE_COUNT; i++) {
    lua_pushstring(L, pawl_state_name(i));
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "states");
  /* pawl.json: the codec job code has (null, array, encode, decode). */
  pawl__ljson_open(L);
  lua_setfield(L, -2, "json");
  return 1;
}

/* ---- administration (include/pawl.h "administration") --------------------
 *
 *   db:jobs{ state =, queue =, type =, tag =, older_than =, limit = }
 *   db:job(id)               the job with attempts, events and logs
 *   db:retry(id | filter, reason)   also cancel, pause, resume: a filter
 *                            moves every matching job and returns
 *                            changed, skipped, refused
 *   db:count(action, filter) how many a bulk action would move now
 *   db:stats(), db:nodes(), db:locks()
 *   pawl.scripts(dir)        the job types in a scripts directory
 *   pawl.duration(text)      "15m" -> 900000 (ms)
 *
 * older_than is a duration: a number of seconds or a text like "2h". */

static const char *const lpawl_filter_names[] = {
    "state", "queue", "type", "tag", "older_than", "limit", NULL};

/* [-0, +0, e] The filter table at `t` into *f (strings kept by the anchor).
 * `what` names the function in messages. Raises on a malformed filter. */
static void lpawl_read_filter(lua_State *L, int t, int anchor, pawl_filter_t *f,
                              int argn, const char *what) {
  pawl_filter_init(f);
  if (lua_isnoneornil(L, t)) return;
  luaL_checktype(L, t, LUA_TTABLE);
  lpawl_check_keys(L, t, lpawl_filter_names, argn, "", what);
  const char *state = lpawl_opt_str(L, t, "state", anchor, argn, "");
  if (state) {
    f->state = pawl_state_parse(state);
    if (f->state < 0)
      luaL_argerror(L, argn,
                    lua_pushfstring(L,
                                    "unknown state \"%s\" (expected pending, "
                                    "running, succeeded, failed, canceled, "
                                    "paused or blocked)",
                                    state));
  }
  f->queue = lpawl_opt_str(L, t, "queue", anchor, argn, "");
  f->type = lpawl_opt_str(L, t, "type", anchor, argn, "");
  f->tag = lpawl_opt_str(L, t, "tag", anchor, argn, "");
  f->limit = (int)lpawl_opt_int(L, t, "limit", 0, 0, INT32_MAX, argn, "");
  lua_getfield(L, t, "older_than");
  if (lua_type(L, -1) == LUA_TSTRING) {
    char err[256];
    if (pawl_duration_parse(lua_tostring(L, -1), &f->older_than_ms, err,
                            sizeof err))
      luaL_argerror(L, argn, lua_pushfstring(L, "older_than: %s", err));
  } else if (lua_type(L, -1) == LUA_TNUMBER) {
    char err[256];
    double secs = lua_tonumber(L, -1);
    if (pawl__bounds_check("older_than", secs, 0, PAWL_DELAY_MAX_MS / 1000.0, 0,
                     "seconds", err, sizeof err))
      luaL_argerror(L, argn, lua_pushfstring(L, "%s", err));
    double v = secs * 1000;
    if (v != floor(v))
      luaL_argerror(L, argn,
                    "older_than: seconds with at most millisecond precision");
    f->older_than_ms = (int64_t)v;
  } else if (!lua_isnil(L, -1)) {
    luaL_argerror(L, argn,
                  lua_pushfstring(L,
                                  "older_than must be a duration like \"2h\" "
                                  "or a number of seconds (got %s)",
                                  luaL_typename(L, -1)));
  }
  lua_pop(L, 1);
}

/* db:jobs{state=, queue=, type=, tag=, older_than=, limit=} [-0, +1|3, e]
 * the matching jobs, newest first. */
static int lpawl_adm_jobs(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  lua_settop(L, 2);
  lua_newtable(L); /* 3: anchor */
  pawl_filter_t f;
  lpawl_read_filter(L, 2, 3, &f, 2, "jobs");
  lua_newtable(L);
  lpawl_list_ctx_t ctx = {L, NULL, LUA_NOREF, 0, 0};
  ctx.ref = luaL_ref(L, LUA_REGISTRYINDEX);
  int rc = pawl_list(p, &f, lpawl_list_cb, &ctx);
  if (ctx.failed) {
    luaL_unref(L, LUA_REGISTRYINDEX, ctx.ref);
    return lua_error(L);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, ctx.ref);
  luaL_unref(L, LUA_REGISTRYINDEX, ctx.ref);
  if (rc) return lpawl_fail(L, p, rc);
  return 1;
}

/* [-0, +0, v] The action named by the string at `idx`. */
static pawl_action_t lpawl_check_action(lua_State *L, int idx) {
  const char *name = luaL_checkstring(L, idx);
  for (int a = 0; a <= PAWL_ACTION_RETRY; a++)
    if (strcmp(name, pawl_action_name(a)) == 0) return (pawl_action_t)a;
  luaL_argerror(L, idx,
                lua_pushfstring(L,
                                "unknown action \"%s\" (expected cancel, "
                                "pause, resume or retry)",
                                name));
  return PAWL_ACTION_CANCEL;
}

/* [-0, +3|3, e] A bulk action: (filter, reason) -> changed, skipped,
 * refused. */
static int lpawl_adm_bulk(lua_State *L, pawl_action_t action) {
  pawl_t *p = lpawl_check(L, 1)->p;
  const char *reason = luaL_optstring(L, 3, NULL);
  lua_settop(L, 3);
  lua_newtable(L); /* 4: anchor */
  pawl_filter_t f;
  lpawl_read_filter(L, 2, 4, &f, 2, pawl_action_name(action));
  pawl_bulk_result_t r = {0, 0, 0};
  int rc = pawl_bulk(p, action, &f, reason, &r);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushnumber(L, (double)r.changed);
  lua_pushnumber(L, (double)r.skipped);
  lua_pushnumber(L, (double)r.refused);
  return 3;
}

/* db:cancel/pause/resume/retry(id | filter, reason): the single-job form
 * above, or the bulk form. */
static int lpawl_adm_cancel(lua_State *L) {
  return lua_istable(L, 2) ? lpawl_adm_bulk(L, PAWL_ACTION_CANCEL)
                           : lpawl_cancel(L);
}
static int lpawl_adm_pause(lua_State *L) {
  return lua_istable(L, 2) ? lpawl_adm_bulk(L, PAWL_ACTION_PAUSE)
                           : lpawl_pause(L);
}
static int lpawl_adm_resume(lua_State *L) {
  return lua_istable(L, 2) ? lpawl_adm_bulk(L, PAWL_ACTION_RESUME)
                           : lpawl_resume(L);
}
static int lpawl_adm_retry(lua_State *L) {
  return lua_istable(L, 2) ? lpawl_adm_bulk(L, PAWL_ACTION_RETRY)
                           : lpawl_retry(L);
}

/* db:count(action, filter) [-0, +1|3, e] */
static int lpawl_adm_count(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_action_t action = lpawl_check_action(L, 2);
  lua_settop(L, 3);
  lua_newtable(L); /* 4: anchor */
  pawl_filter_t f;
  lpawl_read_filter(L, 3, 4, &f, 3, "count");
  int64_t n = 0;
  int rc = pawl_bulk_count(p, action, &f, &n);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushnumber(L, (double)n);
  return 1;
}

/* db:job(id) [-0, +1|3, e] db:get(id) with attempts, events (as
 * db:history) and logs (as db:logs). Three reads: a job changing
 * meanwhile may show its history a step ahead of its row. */
static int lpawl_adm_job(lua_State *L) {
  lpawl_check(L, 1);
  lua_settop(L, 2);
  lua_pushcfunction(L, lpawl_get);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 2, 3);
  if (lua_isnil(L, -3)) return 3;
  lua_pop(L, 2); /* 3: the job */
  lua_pushcfunction(L, lpawl_history);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 2, 3);
  if (lua_isnil(L, -3)) return 3;
  lua_pop(L, 2); /* 4: history */
  lua_getfield(L, 4, "attempts");
  lua_setfield(L, 3, "attempts");
  lua_getfield(L, 4, "events");
  lua_setfield(L, 3, "events");
  lua_pushcfunction(L, lpawl_logs);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 2, 3);
  if (lua_isnil(L, -3)) return 3;
  lua_pop(L, 2);
  lua_setfield(L, 3, "logs");
  lua_settop(L, 3);
  return 1;
}

/* [-0, +1, m] One queue's (or every queue's) statistics as a table. */
static void lpawl_push_qstats(lua_State *L, const pawl_queue_stats_t *q) {
  lua_createtable(L, 0, 10);
  lpawl_set_str(L, "queue", q->queue);
  lua_createtable(L, 0, PAWL_STATE_COUNT);
  for (int i = 0; i < PAWL_STATE_COUNT; i++) {
    lua_pushnumber(L, (double)q->count[i]);
    lua_setfield(L, -2, pawl_state_name(i));
  }
  lua_setfield(L, -2, "counts");
  lpawl_set_num(L, "finished_1m", (double)q->finished_1m);
  lpawl_set_num(L, "finished_5m", (double)q->finished_5m);
  lpawl_set_num(L, "finished_15m", (double)q->finished_15m);
  lpawl_set_num(L, "failed_1m", (double)q->failed_1m);
  lpawl_set_num(L, "failed_5m", (double)q->failed_5m);
  lpawl_set_num(L, "failed_15m", (double)q->failed_15m);
  lpawl_set_num(L, "oldest_due_ms", (double)q->oldest_due_ms);
}

/* What the library returned for the admin reads, freed by __gc (the
 * LPAWL_BOX rule: nothing held in a C local across a raise). */
typedef struct lpawl_adm_box {
  char **names;
  size_t nnames;
  pawl_stats_t *stats;
  pawl_node_info_t *nodes;
  size_t nnodes;
  pawl_lock_info_t *locks;
  size_t nlocks;
  pawl_recurring_t *recs;  /* recurring definitions */
  size_t nrecs;
  pawl_queue_info_t *queues; /* db:queues() */
  size_t nqueues;
  pawl_limit_t *limits;
  size_t nlimits;
  char *top;                 /* db:top_snapshot() */
  pawl_retention_t *retention;    /* db:cleanup */
  pawl_cleanup_result_t *cleanup;
} lpawl_adm_box_t;

#define LPAWL_ADM_BOX "pawl.admin_box"

static void lpawl_adm_box_free(lpawl_adm_box_t *b) {
  for (size_t i = 0; i < b->nnames; i++) pawl__free(b->names[i]);
  pawl__free(b->names);
  pawl_stats_free(b->stats);
  pawl_nodes_free(b->nodes, b->nnodes);
  pawl_locks_free(b->locks, b->nlocks);
  pawl_recurring_free(b->recs, b->nrecs);
  pawl_queues_free(b->queues, b->nqueues);
  pawl_limits_free(b->limits, b->nlimits);
  pawl_top_snapshot_free(b->top);
  pawl_retention_free(b->retention);
  pawl_cleanup_free(b->cleanup);
  memset(b, 0, sizeof *b);
}

/* [-0, +0, -] __gc */
static int lpawl_adm_box_gc(lua_State *L) {
  lpawl_adm_box_free(luaL_checkudata(L, 1, LPAWL_ADM_BOX));
  return 0;
}

/* [-0, +1, m] */
static lpawl_adm_box_t *lpawl_adm_box_new(lua_State *L) {
  lpawl_adm_box_t *b = lua_newuserdata(L, sizeof *b);
  memset(b, 0, sizeof *b);
  if (luaL_newmetatable(L, LPAWL_ADM_BOX)) {
    lua_pushcfunction(L, lpawl_adm_box_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return b;
}

/* db:stats() [-0, +1|3, e] { at =, counts = {pending = n, ...},
 * finished_1m =, ..., failed_15m =, oldest_due_ms =, queues = { {queue =,
 * counts =, ...}, ... } } */
static int lpawl_adm_stats(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  lpawl_adm_box_t *b = lpawl_adm_box_new(L);
  int rc = pawl_stats(p, &b->stats);
  if (rc) return lpawl_fail(L, p, rc);
  lpawl_push_qstats(L, &b->stats->all);
  lpawl_set_num(L, "at", (double)b->stats->at);
  lua_createtable(L, (int)b->stats->nqueues, 0);
  for (size_t i = 0; i < b->stats->nqueues; i++) {
    lpawl_push_qstats(L, &b->stats->queues[i]);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "queues");
  lpawl_adm_box_free(b);
  return 1;
}

/* db:nodes() [-0, +1|3, e] { {id =, incarnation =, version =, queues =
 * {...} (empty: all), started_at =, last_beat =, running =, state =, stopped_at = (when
 * stopped)}, ... } */
static int lpawl_adm_nodes(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  lpawl_adm_box_t *b = lpawl_adm_box_new(L);
  int rc = pawl_nodes(p, &b->nodes, &b->nnodes);
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, (int)b->nnodes, 0);
  for (size_t i = 0; i < b->nnodes; i++) {
    const pawl_node_info_t *n = &b->nodes[i];
    lua_createtable(L, 0, 7);
    lpawl_set_str(L, "id", n->id);
    lpawl_push_id(L, &n->incarnation);
    lua_setfield(L, -2, "incarnation");
    lpawl_set_str(L, "version", n->version);
    lua_newtable(L);
    int k = 0;
    for (const char *q = n->queues; *q;) {
      const char *end = strchr(q, ',');
      size_t len = end ? (size_t)(end - q) : strlen(q);
      if (len) {
        lua_pushlstring(L, q, len);
        lua_rawseti(L, -2, ++k);
      }
      q += len + (end ? 1 : 0);
    }
    lua_setfield(L, -2, "queues");
    lpawl_set_time(L, "started_at", n->started_at);
    lpawl_set_time(L, "last_beat", n->last_beat);
    lpawl_set_num(L, "running", (double)n->running);
    lpawl_set_str(L, "state", n->state);
    if (n->stopped_at) lpawl_set_time(L, "stopped_at", n->stopped_at);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lpawl_adm_box_free(b);
  return 1;
}

/* db:locks() [-0, +1|3, e] { {name =, owner =, acquired_at =, expires_at =,
 * expired = bool}, ... } */
static int lpawl_adm_locks(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  lpawl_adm_box_t *b = lpawl_adm_box_new(L);
  int rc = pawl_locks(p, &b->locks, &b->nlocks);
  if (rc) return lpawl_fail(L, p, rc);
  int64_t now = pawl_now(p);
  lua_createtable(L, (int)b->nlocks, 0);
  for (size_t i = 0; i < b->nlocks; i++) {
    const pawl_lock_info_t *l = &b->locks[i];
    lua_createtable(L, 0, 5);
    lpawl_set_str(L, "name", l->name);
    lpawl_set_str(L, "owner", l->owner);
    lpawl_set_time(L, "acquired_at", l->acquired_at);
    lpawl_set_time(L, "expires_at", l->expires_at);
    lua_pushboolean(L, l->expires_at <= now);
    lua_setfield(L, -2, "expired");
    lua_rawseti(L, -2, (int)i + 1);
  }
  lpawl_adm_box_free(b);
  return 1;
}

/* ---- queues (include/pawl.h "queues") -------------------------------------
 *
 *   db:queues()                 { {queue =, paused =, paused_at =,
 *                                 paused_by =, reason =, counts = {...},
 *                                 oldest_due_ms =, age_boost_ms = (nil: the
 *                                 database's), effective_age_boost_ms =}, ...}
 *   db:queue_pause(q [, reason])  true if it was not paused, else false
 *   db:queue_resume(q)          true if it was paused, else false
 *   db:queue_set(q, {age_boost = ms | "60s" | 0 | "database"})  true */

/* db:queues() [-0, +1|3, e] */
/* db:top_snapshot{running =, dead =, minutes =} [-0, +1|3, e]: what
 * `pawl top` shows, as JSON text (include/pawl.h, pawl_top_snapshot()):
 * the same text a console attached to a host sends back to `pawl top
 * --connect`. */
static int lpawl_adm_top(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_top_opts_t o;
  pawl_top_opts_init(&o);
  if (!lua_isnoneornil(L, 2)) {
    static const char *const names[] = {"running", "dead", "minutes", NULL};
    luaL_checktype(L, 2, LUA_TTABLE);
    lpawl_check_keys(L, 2, names, 2, "", "top_snapshot");
    o.running = (int)lpawl_opt_int(L, 2, "running", o.running, 0, 1000, 2, "");
    o.dead = (int)lpawl_opt_int(L, 2, "dead", o.dead, 0, 1000, 2, "");
    o.minutes = (int)lpawl_opt_int(L, 2, "minutes", o.minutes, 1, 30, 2, "");
  }
  lpawl_adm_box_t *b = lpawl_adm_box_new(L);
  int rc = pawl_top_snapshot(p, &o, &b->top);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushstring(L, b->top);
  lpawl_adm_box_free(b);
  return 1;
}

static int lpawl_adm_queues(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  lpawl_adm_box_t *b = lpawl_adm_box_new(L);
  int rc = pawl_queues(p, &b->queues, &b->nqueues);
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, (int)b->nqueues, 0);
  for (size_t i = 0; i < b->nqueues; i++) {
    const pawl_queue_info_t *q = &b->queues[i];
    lua_createtable(L, 0, 10);
    lpawl_set_str(L, "queue", q->name);
    lua_pushboolean(L, q->paused);
    lua_setfield(L, -2, "paused");
    lpawl_set_time(L, "paused_at", q->paused_at);
    lpawl_set_str(L, "paused_by", q->paused_by);
    lpawl_set_str(L, "reason", q->reason);
    lua_createtable(L, 0, PAWL_STATE_COUNT);
    for (int s = 0; s < PAWL_STATE_COUNT; s++) {
      lua_pushnumber(L, (double)q->count[s]);
      lua_setfield(L, -2, pawl_state_name(s));
    }
    lua_setfield(L, -2, "counts");
    lpawl_set_num(L, "oldest_due_ms", (double)q->oldest_due_ms);
    if (q->age_boost_ms >= 0)
      lpawl_set_num(L, "age_boost_ms", (double)q->age_boost_ms);
    lpawl_set_num(L, "effective_age_boost_ms", (double)q->effective_age_boost_ms);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lpawl_adm_box_free(b);
  return 1;
}

/* db:queue_pause(q [, reason]) [-0, +1|3, e] */
static int lpawl_adm_queue_pause(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  const char *q = luaL_checkstring(L, 2);
  const char *reason = luaL_optstring(L, 3, NULL);
  int changed = 0;
  int rc = pawl_queue_pause(p, q, reason, &changed);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushboolean(L, changed);
  return 1;
}

/* db:queue_resume(q) [-0, +1|3, e] */
static int lpawl_adm_queue_resume(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  const char *q = luaL_checkstring(L, 2);
  int changed = 0;
  int rc = pawl_queue_resume(p, q, &changed);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushboolean(L, changed);
  return 1;
}

/* db:queue_set(q, {age_boost = ...}) [-0, +1|3, e] age_boost: a whole
 * number of ms (-1: the database's), a duration ("60s", "15m", "0"), or
 * "database". Raises on a malformed option, as the other methods do; a
 * value out of range is refused by the library (nil, message, code). */
static int lpawl_adm_queue_set(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  const char *q = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  static const char *const names[] = {"age_boost", NULL};
  lpawl_check_keys(L, 3, names, 3, "", "queue_set");
  lua_getfield(L, 3, "age_boost");
  int64_t ms = 0;
  if (lua_type(L, -1) == LUA_TNUMBER) {
    char err[256];
    double v = lua_tonumber(L, -1);
    if (pawl__bounds_check("age_boost", v, -1, (double)PAWL_AGE_BOOST_MAX_MS,
                           1, "ms", err, sizeof err))
      return lpawl_fail_msg(L, PAWL_EINVAL, err);
    ms = (int64_t)v;
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    const char *text = lua_tostring(L, -1);
    char err[256];
    if (strcmp(text, "database") == 0)
      ms = -1;
    else if (pawl_duration_parse(text, &ms, err, sizeof err))
      return lpawl_fail_msg(L, PAWL_EINVAL, err);
  } else {
    return luaL_argerror(
        L, 3,
        lua_pushfstring(L,
                        "option \"age_boost\" must be a number of ms or a "
                        "duration (got %s)",
                        luaL_typename(L, -1)));
  }
  lua_pop(L, 1);
  int rc = pawl_queue_set_age_boost(p, q, ms);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* Limits (include/pawl.h, "resource and rate limits"). */

/* db:limits() [-0, +1|3, e] { {name =, max_running =, rate =,
 * rate_window_ms =, running =, window_start =, window_count =,
 * updated_at =}, ... } by name; max_running and rate nil when not set. */
static int lpawl_adm_limits(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  lpawl_adm_box_t *b = lpawl_adm_box_new(L);
  int rc = pawl_limits(p, &b->limits, &b->nlimits);
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, (int)b->nlimits, 0);
  for (size_t i = 0; i < b->nlimits; i++) {
    const pawl_limit_t *l = &b->limits[i];
    lua_createtable(L, 0, 8);
    lpawl_set_str(L, "name", l->name);
    if (l->max_running) lpawl_set_num(L, "max_running", (double)l->max_running);
    if (l->rate) {
      lpawl_set_num(L, "rate", (double)l->rate);
      lpawl_set_num(L, "rate_window_ms", (double)l->rate_window_ms);
      lpawl_set_time(L, "window_start", l->window_start);
      lpawl_set_num(L, "window_count", (double)l->window_count);
    }
    lpawl_set_num(L, "running", (double)l->running);
    lpawl_set_time(L, "updated_at", l->updated_at);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lpawl_adm_box_free(b);
  return 1;
}

/* db:limit_set(name, { max_running = N, rate = "N/DUR" | N,
 * window_ms = MS }) [-0, +1|3, e] true. A rate as a number needs
 * window_ms; as a string it carries its window ("100/60s"). */
static int lpawl_adm_limit_set(lua_State *L) {
  static const char *const names[] = {"max_running", "rate", "window_ms",
                                      NULL};
  pawl_t *p = lpawl_check(L, 1)->p;
  const char *name = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  lpawl_check_keys(L, 3, names, 3, "", "limit_set");
  int64_t max = (int64_t)lpawl_opt_int(L, 3, "max_running", 0, 0,
                                       PAWL_LIMIT_MAX, 3, "");
  int64_t rate = 0, window = (int64_t)lpawl_opt_int(
                        L, 3, "window_ms", 0, 0, PAWL_LIMIT_WINDOW_MAX_MS, 3, "");
  lua_getfield(L, 3, "rate");
  if (lua_type(L, -1) == LUA_TSTRING) {
    char err[256];
    if (window)
      return luaL_argerror(L, 3, "rate \"N/DUR\" carries its window: no "
                                 "window_ms with it");
    if (pawl_rate_parse(lua_tostring(L, -1), &rate, &window, err, sizeof err))
      return luaL_argerror(L, 3, lua_pushfstring(L, "%s", err));
  } else if (!lua_isnil(L, -1)) {
    rate = (int64_t)lpawl_opt_int(L, 3, "rate", 0, 1, PAWL_LIMIT_MAX, 3, "");
  }
  lua_pop(L, 1);
  int rc = pawl_limit_set(p, name, max, rate, window);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* db:limit_rm(name) [-0, +1|3, e] true */
static int lpawl_adm_limit_rm(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  int rc = pawl_limit_remove(p, luaL_checkstring(L, 2));
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* db:cleanup{ retain = POLICY, state = S, older_than = DUR | MS,
 * dry_run = bool } [-0, +1|3, e] { removed =, scanned =, archived =,
 * dry_run =, by = { {state =, queue =, type =, count =}, ... } }: retention
 * now (pawl_cleanup()). POLICY as `pawl run --retain` takes it
 * (pawl_retention_parse; nil: the defaults); older_than: a duration text
 * or milliseconds, one age for every state. Bad options raise; a failed
 * cleanup returns nil, message, code. */
static int lpawl_adm_cleanup(lua_State *L) {
  static const char *const names[] = {"retain", "state", "older_than",
                                      "dry_run", NULL};
  pawl_t *p = lpawl_check(L, 1)->p;
  if (lua_isnoneornil(L, 2)) {
    lua_settop(L, 1);
    lua_newtable(L);
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  lpawl_check_keys(L, 2, names, 2, "", "cleanup");
  pawl_cleanup_opts_t o;
  pawl_cleanup_opts_init(&o);
  const char *retain = lpawl_opt_str(L, 2, "retain", 2, 2, "");
  const char *state = lpawl_opt_str(L, 2, "state", 2, 2, "");
  o.dry_run = lpawl_opt_bool(L, 2, "dry_run", 2, "");
  lua_getfield(L, 2, "older_than");
  if (lua_type(L, -1) == LUA_TSTRING) {
    char err[256];
    if (pawl_duration_parse(lua_tostring(L, -1), &o.older_than_ms, err,
                            sizeof err))
      return luaL_argerror(L, 2, lua_pushfstring(L, "older_than: %s", err));
  } else if (!lua_isnil(L, -1)) {
    o.older_than_ms = (int64_t)lpawl_opt_int(L, 2, "older_than", -1, 0,
                                             (double)PAWL_DELAY_MAX_MS, 2, "");
  }
  lua_pop(L, 1);
  if (state) {
    o.state = pawl_state_parse(state);
    if (o.state < 0)
      return luaL_argerror(L, 2, lua_pushfstring(L, "unknown state \"%s\"",
                                                 state));
  }
  lpawl_adm_box_t *b = lpawl_adm_box_new(L);
  if (retain) {
    char err[512];
    if (pawl_retention_parse(retain, &b->retention, err, sizeof err))
      return luaL_argerror(L, 2, lua_pushfstring(L, "retain: %s", err));
  }
  o.policy = b->retention;
  int rc = pawl_cleanup(p, &o, &b->cleanup);
  if (rc) return lpawl_fail(L, p, rc);
  const pawl_cleanup_result_t *r = b->cleanup;
  lua_createtable(L, 0, 5);
  lpawl_set_num(L, "removed", (double)r->removed);
  lpawl_set_num(L, "scanned", (double)r->scanned);
  lua_pushboolean(L, r->archived);
  lua_setfield(L, -2, "archived");
  lua_pushboolean(L, r->dry_run);
  lua_setfield(L, -2, "dry_run");
  lua_createtable(L, (int)r->nrows, 0);
  for (size_t i = 0; i < r->nrows; i++) {
    lua_createtable(L, 0, 4);
    lpawl_set_str(L, "state", pawl_state_name(r->rows[i].state));
    lpawl_set_str(L, "queue", r->rows[i].queue);
    lpawl_set_str(L, "type", r->rows[i].type);
    lpawl_set_num(L, "count", (double)r->rows[i].count);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "by");
  lpawl_adm_box_free(b);
  return 1;
}

/* pawl.duration(text) [-0, +1|2, m] ms, or nil and a message. */
static int lpawl_adm_duration(lua_State *L) {
  const char *text = luaL_checkstring(L, 1);
  int64_t ms = 0;
  char err[256];
  if (pawl_duration_parse(text, &ms, err, sizeof err)) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushnumber(L, (double)ms);
  return 1;
}

/* Whether a directory entry names a job script: "NAME.lua", not
 * "_defaults.lua" nor a hidden file. */
static int lpawl_adm_is_script(const char *name, size_t *typelen) {
  size_t n = strlen(name);
  if (n <= 4 || strcmp(name + n - 4, ".lua") != 0) return 0;
  if (name[0] == '_' || name[0] == '.') return 0;
  *typelen = n - 4;
  return 1;
}

static int lpawl_adm_strcmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* pawl.scripts(dir) [-0, +1|3, e] { {type =, queue =, priority =,
 * max_attempts =, timeout =, applies_max_attempts =, applies_timeout =,
 * error =}, ... } by type: what each script in `dir` sets, loaded the way
 * `pawl run` loads it (pawl_script_info), with the max_attempts and
 * timeout its jobs that set none run with, or why it does not load. */
static int lpawl_adm_scripts(lua_State *L) {
  const char *dir = luaL_optstring(L, 1, "./scripts");
  lua_settop(L, 1);
  lpawl_adm_box_t *b = lpawl_adm_box_new(L); /* 2: owns the names */
  DIR *d = opendir(dir);
  if (!d) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot read scripts directory %s: %s", dir,
                    strerror(errno));
    lua_pushstring(L, pawl_err_name(PAWL_EIO));
    return 3;
  }
  size_t cap = 0;
  struct dirent *e;
  int oom = 0;
  while (!oom && (e = readdir(d)) != NULL) {
    size_t len;
    if (!lpawl_adm_is_script(e->d_name, &len)) continue;
    if (b->nnames == cap) {
      cap = cap ? cap * 2 : 16;
      char **grown = pawl__realloc(b->names, cap * sizeof *grown);
      if (!grown) {
        oom = 1;
        break;
      }
      b->names = grown;
    }
    if (!(b->names[b->nnames] = pawl__strndup(e->d_name, len))) oom = 1;
    else b->nnames++;
  }
  closedir(d);
  if (oom) return luaL_error(L, "out of memory"); /* the box frees them */
  size_t n = b->nnames;
  char **names = b->names;
  if (n > 1) qsort(names, n, sizeof *names, lpawl_adm_strcmp);
  lua_createtable(L, (int)n, 0); /* 3: the result */
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, names[i]);
    const char *type = lua_tostring(L, -1);
    pawl_script_info_t info;
    char err[1024];
    int rc = pawl_script_info(dir, type, &info, err, sizeof err);
    lua_createtable(L, 0, 6);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "type");
    if (rc) {
      lua_pushstring(L, rc == PAWL_ENOTFOUND ? "no script" : err);
      lua_setfield(L, -2, "error");
    } else {
      if (info.queue[0]) lpawl_set_str(L, "queue", info.queue);
      if (info.has_priority) lpawl_set_num(L, "priority", info.priority);
      if (info.max_attempts) lpawl_set_num(L, "max_attempts", info.max_attempts);
      if (info.timeout_s) lpawl_set_num(L, "timeout", info.timeout_s);
      if (info.resource[0]) lpawl_set_str(L, "resource", info.resource);
      /* What applies to its jobs that set none (defaults included). */
      lpawl_set_num(L, "applies_max_attempts", info.applied_max_attempts);
      lpawl_set_num(L, "applies_timeout", info.applied_timeout_s);
    }
    lua_rawseti(L, 3, (int)i + 1);
    lua_pop(L, 1);
  }
  return 1;
}

/* ---- recurring definitions -----------------------------------------------
 *
 * db:recurring_list() -> { {name=, cron=, tz=, misfire=, ...}, ... }
 * db:recurring_add(name, opts), db:recurring_set(name, opts) (only the
 * keys given change; `cron` is the expression), db:recurring_pause(name),
 * db:recurring_resume(name), db:recurring_trigger(name) -> job id,
 * db:recurring_rm(name). Each returns true (or the id), or nil, a message
 * and the code's name, as the other methods do. */

static const char *const lpawl_rec_keys[] = {
    "cron", "tz", "misfire", "catch_up_limit", "type", "payload", "queue",
    "priority", "max_attempts", "timeout", NULL};

/* [-0, +0, e] opts at `t` into *o; *fields: the keys given. */
static void lpawl_rec_opts(lua_State *L, int t, int anchor,
                           pawl_recurring_opts_t *o, unsigned *fields,
                           const char *prefix) {
  pawl_recurring_opts_init(o);
  *fields = 0;
  if (lua_isnoneornil(L, t)) return;
  luaL_checktype(L, t, LUA_TTABLE);
  lpawl_check_keys(L, t, lpawl_rec_keys, 3, prefix, "recurring");
  static const struct {
    const char *key;
    unsigned bit;
  } bits[] = {{"cron", PAWL_REC_EXPR},           {"tz", PAWL_REC_TZ},
              {"misfire", PAWL_REC_MISFIRE},
              {"catch_up_limit", PAWL_REC_CATCH_UP_LIMIT},
              {"type", PAWL_REC_TYPE},           {"payload", PAWL_REC_PAYLOAD},
              {"queue", PAWL_REC_QUEUE},         {"priority", PAWL_REC_PRIORITY},
              {"max_attempts", PAWL_REC_MAX_ATTEMPTS},
              {"timeout", PAWL_REC_TIMEOUT}};
  for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
    lua_getfield(L, t, bits[i].key);
    if (!lua_isnil(L, -1)) *fields |= bits[i].bit;
    lua_pop(L, 1);
  }
  o->expr = lpawl_opt_str(L, t, "cron", anchor, 3, prefix);
  o->tz = lpawl_opt_str(L, t, "tz", anchor, 3, prefix);
  const char *m = lpawl_opt_str(L, t, "misfire", anchor, 3, prefix);
  if (m && (o->misfire = pawl_misfire_parse(m)) < 0)
    luaL_argerror(L, 3, lpawl_msg(L, prefix, "misfire must be run_once, "
                                  "catch_up or skip (got \"%s\")", m));
  o->catch_up_limit = (int32_t)lpawl_opt_int(
      L, t, "catch_up_limit", 0, 1, PAWL_CATCH_UP_LIMIT_MAX, 3, prefix);
  o->type = lpawl_opt_str(L, t, "type", anchor, 3, prefix);
  lua_getfield(L, t, "payload");
  int pi = lua_gettop(L);
  o->payload = lpawl_json_arg(L, pi, anchor, 3, prefix, "payload");
  lua_pop(L, 1);
  o->queue = lpawl_opt_str(L, t, "queue", anchor, 3, prefix);
  o->priority = (int32_t)lpawl_opt_int(L, t, "priority", 0, PAWL_PRIORITY_MIN,
                                       PAWL_PRIORITY_MAX, 3, prefix);
  o->max_attempts = (int32_t)lpawl_opt_int(L, t, "max_attempts", 0, 0,
                                           PAWL_ATTEMPTS_MAX, 3, prefix);
  o->timeout_s = (int32_t)lpawl_opt_int(L, t, "timeout", 0, 0,
                                        PAWL_TIMEOUT_MAX_S, 3, prefix);
}

/* [-0, +1, m] One definition as a table. */
static void lpawl_push_rec(lua_State *L, const pawl_recurring_t *d) {
  lua_createtable(L, 0, 20);
  lpawl_set_str(L, "name", d->name);
  lpawl_set_str(L, "cron", d->expr);
  lpawl_set_str(L, "tz", d->tz);
  lpawl_set_str(L, "misfire", pawl_misfire_name(d->misfire));
  lpawl_set_num(L, "catch_up_limit", d->catch_up_limit);
  lpawl_set_str(L, "type", d->type);
  lpawl_set_json(L, "payload", d->payload);
  lpawl_set_str(L, "queue", d->queue);
  lpawl_set_num(L, "priority", d->priority);
  if (d->max_attempts) lpawl_set_num(L, "max_attempts", d->max_attempts);
  if (d->timeout_s) lpawl_set_num(L, "timeout", d->timeout_s);
  lua_pushboolean(L, d->paused);
  lua_setfield(L, -2, "paused");
  lua_pushboolean(L, d->enabled);
  lua_setfield(L, -2, "enabled");
  lpawl_set_str(L, "source", d->from_script ? "script" : "operator");
  lpawl_set_str(L, "script", d->script);
  lpawl_set_str(L, "load_error", d->load_error);
  lpawl_set_time(L, "next_fire_at", d->next_fire_at);
  lpawl_set_time(L, "last_fire_at", d->last_fire_at);
  if (d->has_last_job) {
    lpawl_push_id(L, &d->last_job_id);
    lua_setfield(L, -2, "last_job");
  }
}

/* db:recurring_list() [-0, +1|3, m] */
static int lpawl_rec_list(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  lpawl_adm_box_t *b = lpawl_adm_box_new(L);
  int rc = pawl_recurring_list(p, &b->recs, &b->nrecs);
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, (int)b->nrecs, 0);
  for (size_t i = 0; i < b->nrecs; i++) {
    lpawl_push_rec(L, &b->recs[i]);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lpawl_adm_box_free(b);
  return 1;
}

/* db:recurring_add(name, opts), db:recurring_set(name, opts)
 * [-0, +1|3, e] true */
static int lpawl_rec_write(lua_State *L, int add) {
  pawl_t *p = lpawl_check(L, 1)->p;
  const char *name = luaL_checkstring(L, 2);
  lua_settop(L, 3);
  lua_newtable(L); /* 4: anchor */
  pawl_recurring_opts_t o;
  unsigned fields;
  lpawl_rec_opts(L, 3, 4, &o, &fields, add ? "recurring_add: " : "recurring_set: ");
  int rc = add ? pawl_recurring_add(p, name, &o)
               : pawl_recurring_set(p, name, &o, fields);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int lpawl_rec_add(lua_State *L) { return lpawl_rec_write(L, 1); }
static int lpawl_rec_set(lua_State *L) { return lpawl_rec_write(L, 0); }

/* db:recurring_pause|resume|rm(name) [-0, +1|3, m] true */
static int lpawl_rec_simple(lua_State *L, int (*fn)(pawl_t *, const char *)) {
  pawl_t *p = lpawl_check(L, 1)->p;
  const char *name = luaL_checkstring(L, 2);
  int rc = fn(p, name);
  if (rc) return lpawl_fail(L, p, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int lpawl_rec_pause(lua_State *L) {
  return lpawl_rec_simple(L, pawl_recurring_pause);
}
static int lpawl_rec_resume(lua_State *L) {
  return lpawl_rec_simple(L, pawl_recurring_resume);
}
static int lpawl_rec_rm(lua_State *L) {
  return lpawl_rec_simple(L, pawl_recurring_remove);
}

/* db:recurring_trigger(name) [-0, +1|3, m] the new job's id */
static int lpawl_rec_trigger(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  const char *name = luaL_checkstring(L, 2);
  pawl_id_t id;
  int rc = pawl_recurring_trigger(p, name, &id);
  if (rc) return lpawl_fail(L, p, rc);
  lpawl_push_id(L, &id);
  return 1;
}

/* ---- redaction in admin views --------------------------------------------- */

/* db:type_redact(type) [-0, +1|3, e] The `redact` names the hosts recorded
 * for job type `type` (pawl_types): an array, empty when none. */
static int lpawl_adm_type_redact(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  const char *type = luaL_checkstring(L, 2);
  lpawl_box_t *b = lpawl_box_new(L);
  size_t n = 0;
  int rc = pawl_type_redact(p, type, &b->names, &n);
  if (rc) return lpawl_fail(L, p, rc);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, b->names[i]);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lpawl_box_free(b);
  return 1;
}

typedef struct lpawl_redacted {
  pawl_buf_t *buf;
} lpawl_redacted_t;

/* [-1, +1, m] Protected body: pushes the buffer's text. */
static int lpawl_push_buf(lua_State *L) {
  lpawl_redacted_t *r = lua_touserdata(L, 1);
  lua_pushlstring(L, pawl__buf_cstr(r->buf), r->buf->len);
  return 1;
}

/* pawl.redact_json(json, names) [-0, +1, e] `json` as admin views show it
 * (redact.h): the value of every member whose key contains a secret word
 * (password, token, key, ...), or is one of `names` (an array of strings,
 * may be nil), replaced by "<redacted>". Text that is not JSON comes back
 * as one redacted value, never as itself. */
static int lpawl_redact_json(lua_State *L) {
  size_t len;
  const char *json = luaL_checklstring(L, 1, &len);
  size_t n = 0;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    n = lua_objlen(L, 2);
  }
  if (n > 4096) return luaL_argerror(L, 2, "at most 4096 names");
  /* The pointers in a userdata (collected with it); the strings stay in
   * the table, which the caller holds for the call. */
  const char **names = lua_newuserdata(L, (n ? n : 1) * sizeof *names);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 2, (int)i + 1);
    /* Strings only: lua_tostring would make a number a new string, which
     * nothing holds once popped. */
    if (lua_type(L, -1) != LUA_TSTRING)
      return luaL_argerror(L, 2, "names must be strings");
    names[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  pawl_buf_t buf;
  pawl__buf_init(&buf);
  int rc = pawl__redact_json(json, len, names, n, &buf, NULL, 0);
  if (rc == -1) {
    pawl__buf_reset(&buf);
    pawl__buf_puts(&buf, REDACT_JSON_MARK);
  }
  if (rc == -2 || buf.oom) {
    pawl__buf_free(&buf);
    return luaL_error(L, "not enough memory");
  }
  /* Pushed under a protected call: the buffer is freed whatever happens
   * (lua_cpcall would drop the result). */
  lpawl_redacted_t r = {&buf};
  lua_pushcfunction(L, lpawl_push_buf);
  lua_pushlightuserdata(L, &r);
  int perr = lua_pcall(L, 1, 1, 0);
  pawl__buf_free(&buf);
  if (perr) return lua_error(L);
  return 1;
}

static void lpawl_admin_register(lua_State *L, int methods) {
  static const luaL_Reg funcs[] = {{"duration", lpawl_adm_duration},
                                   {"scripts", lpawl_adm_scripts},
                                   {"redact_json", lpawl_redact_json},
                                   {NULL, NULL}};
  static const luaL_Reg meths[] = {
      {"jobs", lpawl_adm_jobs},     {"job", lpawl_adm_job},
      {"cancel", lpawl_adm_cancel}, {"pause", lpawl_adm_pause},
      {"resume", lpawl_adm_resume}, {"retry", lpawl_adm_retry},
      {"count", lpawl_adm_count},   {"stats", lpawl_adm_stats},
      {"nodes", lpawl_adm_nodes},   {"locks", lpawl_adm_locks},
      {"recurring_list", lpawl_rec_list},
      {"recurring_add", lpawl_rec_add},
      {"recurring_set", lpawl_rec_set},
      {"recurring_pause", lpawl_rec_pause},
      {"recurring_resume", lpawl_rec_resume},
      {"recurring_trigger", lpawl_rec_trigger},
      {"recurring_rm", lpawl_rec_rm},
      {"top_snapshot", lpawl_adm_top},
      {"queues", lpawl_adm_queues}, {"queue_pause", lpawl_adm_queue_pause},
      {"queue_resume", lpawl_adm_queue_resume},
      {"queue_set", lpawl_adm_queue_set},
      {"limits", lpawl_adm_limits}, {"limit_set", lpawl_adm_limit_set},
      {"limit_rm", lpawl_adm_limit_rm},
      {"type_redact", lpawl_adm_type_redact},
      {"cleanup", lpawl_adm_cleanup}, /* retention */
      {NULL, NULL}};
  luaL_register(L, NULL, methods ? meths : funcs);
}
