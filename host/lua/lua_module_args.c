/* lua_module_args.c: what every part of the Lua module shares (see
 * lua_module_int.h): the handle argument, failures as nil, message, code,
 * the boxes that own what the library returns, options read from Lua
 * tables with their bounds, and jobs turned into Lua tables. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bounds.h"
#include "lua_module_int.h"

/* ---- small helpers ------------------------------------------------------ */

/* [-0, +0, v] The open handle at `idx`; raises if it is closed. */
lpawl_handle_t *lpawl_check(lua_State *L, int idx) {
  lpawl_handle_t *h = luaL_checkudata(L, idx, LPAWL_HANDLE);
  if (!h->p) luaL_error(L, "pawl handle is closed");
  return h;
}

/* [-0, +3, m] nil, the handle's message, the code's name. */
int lpawl_fail(lua_State *L, pawl_t *p, int rc) {
  lua_pushnil(L);
  lua_pushstring(L, p ? pawl_errmsg(p) : pawl_strerror(rc));
  lua_pushstring(L, pawl_err_name(rc));
  return 3;
}

/* [-0, +3, m] nil, a message of our own, the code's name. */
int lpawl_fail_msg(lua_State *L, int rc, const char *msg) {
  lua_pushnil(L);
  lua_pushstring(L, msg);
  lua_pushstring(L, pawl_err_name(rc));
  return 3;
}

/* [-0, +1, m] A new box, empty. */
lpawl_box_t *lpawl_box_new(lua_State *L) {
  lpawl_box_t *b = lua_newuserdata(L, sizeof *b);
  memset(b, 0, sizeof *b);
  luaL_getmetatable(L, LPAWL_BOX);
  lua_setmetatable(L, -2);
  return b;
}

void lpawl_box_free(lpawl_box_t *b) {
  pawl_job_free(b->job);
  pawl_jobs_free(b->jobs, b->njobs);
  pawl_history_free(b->hist);
  pawl_logs_free(b->logs, b->nlogs);
  pawl_names_free(b->names);
  memset(b, 0, sizeof *b);
}

/* [-0, +0, -] __gc of a box. */
int lpawl_box_gc(lua_State *L) {
  lpawl_box_free(luaL_checkudata(L, 1, LPAWL_BOX));
  return 0;
}

/* [-0, +0, m] Records the value at the top in the anchor table at `anchor`
 * (a table on the caller's stack), so that a string pointer taken from it
 * stays valid for the rest of the call after the value is popped. */
void lpawl_anchor(lua_State *L, int anchor) {
  lua_pushvalue(L, -1);
  lua_pushboolean(L, 1);
  lua_rawset(L, anchor);
}

/* [-0, +0, v] Parses the job id argument at `idx`: 0 or PAWL_EINVAL. */
int lpawl_parse_id(lua_State *L, int idx, pawl_id_t *id) {
  const char *text = luaL_checkstring(L, idx);
  return pawl_id_parse(id, text);
}

/* [-0, +3, m] The failure of a bad id argument at `idx`. */
int lpawl_bad_id(lua_State *L, int idx) {
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
const char *lpawl_msg(lua_State *L, const char *prefix, const char *fmt,
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
void lpawl_check_keys(lua_State *L, int t, const char *const *names,
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
double lpawl_opt_int(lua_State *L, int t, const char *key, double dflt,
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
const char *lpawl_opt_str(lua_State *L, int t, const char *key,
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
int lpawl_opt_bool(lua_State *L, int t, const char *key, int argn,
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
const char *lpawl_json_arg(lua_State *L, int idx, int anchor, int argn,
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
const char *const *lpawl_opt_strings(lua_State *L, int t,
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

void lpawl_set_str(lua_State *L, const char *k, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

void lpawl_set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

/* Times: nil when unset (0). */
void lpawl_set_time(lua_State *L, const char *k, int64_t v) {
  if (v) lpawl_set_num(L, k, (double)v);
}

/* Text stored before pawl checked its JSON policy (json.h) may not decode
 * (a lone surrogate escape such as "\ud800"): a job must still be
 * readable, so a decode failure leaves the field out (its raw text stays in
 * <k>_json) and names it in `json_error`. The message is all we keep, so
 * this pcall needs no traceback handler. */
void lpawl_set_json(lua_State *L, const char *k, const char *v) {
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

void lpawl_push_id(lua_State *L, const pawl_id_t *id) {
  char text[PAWL_ID_STRLEN];
  pawl_id_format(id, text);
  lua_pushstring(L, text);
}

/* [-0, +1, m] A job as a table: every pawl_job_t field under its own name,
 * JSON fields decoded, plus the raw JSON text of payload, params, result
 * (and json_error if one could not be decoded). */
void lpawl_push_job(lua_State *L, const pawl_job_t *j) {
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
int lpawl_return_job(lua_State *L, lpawl_box_t *b) {
  lpawl_push_job(L, b->job);
  lpawl_box_free(b);
  return 1;
}
