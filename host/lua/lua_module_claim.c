/* lua_module_claim.c: a worker written in Lua, driving the lease protocol
 * itself (include/pawl.h, "claiming and finishing"): db:claim, db:finish
 * with the attempt's log lines, heartbeats and recovery, progress and
 * lease extension, when the next job is due; and what a job leaves
 * behind, read back: db:logs, db:history. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lua_module_int.h"

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
int lpawl_logs(lua_State *L) {
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
int lpawl_history(lua_State *L) {
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

void lpawl_claim_register(lua_State *L) {
  static const luaL_Reg meths[] = {
      {"claim", lpawl_claim},         {"finish", lpawl_finish},
      {"heartbeat", lpawl_heartbeat}, {"recover", lpawl_recover},
      {"progress", lpawl_progress},   {"extend", lpawl_extend},
      {"next_due", lpawl_next_due},   {"history", lpawl_history},
      {"logs", lpawl_logs},           {NULL, NULL}};
  luaL_register(L, NULL, meths);
}
