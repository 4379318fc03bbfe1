/* lua_module.c: `require "pawl"` for LuaJIT, written on include/pawl.h only
 * (and, of host/, the helpers of core/ and the JSON codec lua/ljson.c).
 * This file: the handle (pawl.open, its clock), enqueue, batches, get,
 * signals and replace, and the module's tables (luaopen_pawl); the other
 * parts are listed in lua_module_int.h.
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
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ljson.h"
#include "lua_module_int.h"

/* ---- the handle's clock ------------------------------------------------- */

/* The clock the library reads (pawl_options_t.clock): the handle's own,
 * so that db:set_now and db:advance can freeze and move it. */
static int64_t lpawl_clock(void *data) {
  lpawl_handle_t *h = data;
  if (h->frozen) return h->now;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

/* ---- batches (docs/flows.md "Batches") --------------------------------- */

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
int lpawl_get(lua_State *L) {
  pawl_t *p = lpawl_check(L, 1)->p;
  pawl_id_t id;
  if (lpawl_parse_id(L, 2, &id)) return lpawl_bad_id(L, 2);
  lpawl_box_t *b = lpawl_box_new(L);
  int rc = pawl_get(p, &id, &b->job);
  if (rc) return lpawl_fail(L, p, rc);
  return lpawl_return_job(L, b);
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
    {"now", lpawl_now},
    {"set_now", lpawl_set_now},
    {"advance", lpawl_advance},
    {"node_id", lpawl_node_id},
    {"schema_version", lpawl_schema_version},
    {"close", lpawl_close},
    {"signal", lpawl_signal},
    {"signal_of", lpawl_signal_of},
    {"replace", lpawl_replace},
    {"links", lpawl_links},
    {NULL, NULL}};

static const luaL_Reg lpawl_meta[] = {
    {"__gc", lpawl_close},
    {"__tostring", lpawl_tostring},
    {NULL, NULL}};

/* require "pawl" [-0, +1, e] The module's table, and the metatables of
 * handles and boxes. Built into libpawl this is pawl__lua_module_open, for
 * the attached console's state (lua_module_int.h). */
int luaopen_pawl(lua_State *L) {
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
  lpawl_step_register(L);         /* db:define, db:step */
  lpawl_claim_register(L);        /* claim, finish, logs, history, ... */
  lpawl_admin_register(L, 1);     /* the admin section's methods */
  lpawl_admin_config_register(L); /* queues, limits, recurring, cleanup */
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
