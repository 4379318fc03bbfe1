/* host_batch.c: host.batch, job code's pawl.batch (docs/flows.md
 * "Batches"): the children and callbacks lua/pawl/worker.lua normalized,
 * enqueued as one batch through pawl_batch_enqueue() on the state's handle.
 * Scratch arrays are userdata (collected even if Lua raises), strings are
 * the entries' own (anchored by the argument tables). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "bounds.h"
#include "state.h"

/* An entry's field `i` as a string, or NULL for nil; a non-string is an
 * error put in err. [-0, +0, -] */
static const char *hb_str(lua_State *L, int e, int i, const char *what,
                          char *err, size_t errlen) {
  lua_rawgeti(L, e, i);
  const char *s = NULL;
  size_t len = 0;
  if (lua_type(L, -1) == LUA_TSTRING) {
    s = lua_tolstring(L, -1, &len); /* anchored by the entry */
    /* C would read it up to the NUL: a different string (host_fns.c). */
    if (strlen(s) != len && !err[0])
      snprintf(err, errlen, "%s contains a NUL byte", what);
  } else if (!lua_isnil(L, -1))
    snprintf(err, errlen, "%s must be a string (got %s)", what,
             luaL_typename(L, -1));
  lua_pop(L, 1);
  return s;
}

/* An entry's field `i` as a bounded number (0 for nil). [-0, +0, -] */
static double hb_num(lua_State *L, int e, int i, const char *what, double min,
                     double max, int whole, const char *unit, char *err,
                     size_t errlen) {
  lua_rawgeti(L, e, i);
  double v = 0;
  if (lua_type(L, -1) == LUA_TNUMBER) {
    v = lua_tonumber(L, -1);
    if (pawl__bounds_check(what, v, min, max, whole, unit, err, errlen)) v = 0;
  } else if (!lua_isnil(L, -1)) {
    snprintf(err, errlen, "%s must be a number (got %s)", what,
             luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  return v;
}

/* Reads entry `e` ({type, payload_json, queue, priority, delay_s, run_at_s,
 * max_attempts, timeout_s, correlation_id, tags, params_json, resource,
 * signal, signal_timeout_s, after (a list of job ids), when}) into *it and
 * *o. The parents' ids go into a userdata anchored as the tags are. Tags go into a userdata anchored in the table at `anchor`. 0, or -1
 * with err set. [-0, +0, m] */
static int hb_entry(lua_State *L, int e, int anchor, pawl_enqueue_item_t *it,
                    pawl_enqueue_opts_t *o, char *err, size_t errlen) {
  err[0] = 0;
  pawl_enqueue_opts_init(o);
  if (lua_type(L, e) != LUA_TTABLE) {
    snprintf(err, errlen, "expected a table (got %s)", luaL_typename(L, e));
    return -1;
  }
  it->type = hb_str(L, e, 1, "type", err, errlen);
  it->payload = hb_str(L, e, 2, "payload", err, errlen);
  o->queue = hb_str(L, e, 3, "queue", err, errlen);
  double prio = hb_num(L, e, 4, "priority", PAWL_PRIORITY_MIN,
                       PAWL_PRIORITY_MAX, 1, NULL, err, errlen);
  double delay = hb_num(L, e, 5, "delay", 0, PAWL_DELAY_MAX_MS / 1000.0, 0,
                        "seconds", err, errlen);
  double run_at = hb_num(L, e, 6, "run_at", 0, PAWL_TIME_MAX_MS / 1000.0, 0,
                         "seconds since the epoch", err, errlen);
  double attempts = hb_num(L, e, 7, "max_attempts", 1, PAWL_ATTEMPTS_MAX, 1,
                           NULL, err, errlen);
  double timeout = hb_num(L, e, 8, "timeout", 0, PAWL_TIMEOUT_MAX_S, 1,
                          "seconds", err, errlen);
  o->correlation_id = hb_str(L, e, 9, "correlation_id", err, errlen);
  o->params = hb_str(L, e, 11, "params", err, errlen);
  o->resource = hb_str(L, e, 12, "resource", err, errlen); /* limits */
  o->signal = hb_str(L, e, 13, "signal", err, errlen);     /* signals */
  double sig_timeout = hb_num(L, e, 14, "signal_timeout", 0,
                              PAWL_DELAY_MAX_MS / 1000.0, 0, "seconds", err,
                              errlen);
  if (err[0]) return -1;
  o->signal_timeout_ms = (int64_t)ceil(sig_timeout * 1000.0);
  /* Dependencies: a child may wait for jobs outside the batch
   * (a callback may not: pawl_batch_enqueue() refuses it). */
  o->when = hb_str(L, e, 16, "when", err, errlen);
  if (err[0]) return -1;
  lua_rawgeti(L, e, 15);
  if (lua_istable(L, -1)) {
    size_t n = lua_objlen(L, -1);
    if (n > PAWL_AFTER_MAX) {
      lua_pop(L, 1);
      snprintf(err, errlen, "after names %zu jobs; at most %d", n,
               PAWL_AFTER_MAX);
      return -1;
    }
    pawl_id_t *after = lua_newuserdata(L, (n ? n : 1) * sizeof *after);
    lua_pushboolean(L, 1);
    lua_rawset(L, anchor);
    for (size_t i = 0; i < n; i++) {
      lua_rawgeti(L, -1, (int)i + 1);
      const char *t =
          lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
      int bad = !t || pawl_id_parse(&after[i], t) != 0;
      if (bad)
        snprintf(err, errlen, "after: %s%.60s%s is not a job id",
                 t ? "\"" : "", t ? t : luaL_typename(L, -1), t ? "\"" : "");
      lua_pop(L, 1);
      if (bad) {
        lua_pop(L, 1);
        return -1;
      }
    }
    o->after = after;
    o->nafter = n;
  } else if (!lua_isnil(L, -1)) {
    snprintf(err, errlen, "after must be a list of job ids (got %s)",
             luaL_typename(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  lua_pop(L, 1);
  if (!it->type) {
    snprintf(err, errlen, "type must be a string");
    return -1;
  }
  o->priority = (int32_t)prio;
  o->delay_ms = (int64_t)ceil(delay * 1000.0);
  o->run_at = (int64_t)ceil(run_at * 1000.0);
  o->max_attempts = (int32_t)attempts;
  o->timeout_s = (int32_t)timeout;
  it->opts = o;
  lua_rawgeti(L, e, 10);
  if (lua_istable(L, -1)) {
    size_t n = lua_objlen(L, -1);
    if (n > 64) {
      lua_pop(L, 1);
      snprintf(err, errlen, "at most 64 tags (got %zu)", n);
      return -1;
    }
    const char **tags = lua_newuserdata(L, (n ? n : 1) * sizeof *tags);
    lua_pushvalue(L, -1);
    lua_pushboolean(L, 1);
    lua_rawset(L, anchor);
    lua_pop(L, 1);
    for (size_t i = 0; i < n; i++) {
      lua_rawgeti(L, -1, (int)i + 1);
      size_t len = 0;
      tags[i] = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len)
                                               : NULL;
      lua_pop(L, 1); /* still referenced by the tags table */
      if (!tags[i]) {
        lua_pop(L, 1);
        snprintf(err, errlen, "tags must be strings");
        return -1;
      }
      if (strlen(tags[i]) != len) {
        lua_pop(L, 1);
        snprintf(err, errlen, "tag %zu contains a NUL byte", i + 1);
        return -1;
      }
    }
    o->tags = tags;
    o->ntags = n;
  } else if (!lua_isnil(L, -1)) {
    snprintf(err, errlen, "tags must be a list (got %s)", luaL_typename(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  lua_pop(L, 1);
  return 0;
}

/* host.batch(children, callbacks, max_children, max_batch, max_depth,
 *            key) -> batch_id, ids, status | nil, message
 * children: a list of entries (hb_entry()); callbacks: a table with
 * on_success, on_failure, on_complete entries (each may be nil). Children
 * and callbacks enqueued by a job say so and share its correlation id, as
 * pawl.enqueue's do. The limits as host.enqueue's (pawl__lua_fanout()).
 * A batch made by a job has an identity (pawl__lua_fan_ident(): the
 * job's id and the call's ordinal in its run, or `key`, the script's), so
 * that a rerun of the job (after a crash, a retry) finds the batch it
 * made: status "duplicate", its id and its children's. [-6, +3|2, e] */
int pawl__lua_host_batch(lua_State *L) {
  pawl__lua_t *w = (pawl__lua_t *)lua_touserdata(L, lua_upvalueindex(1));
  if (w->loading || !w->cfg.p)
    return luaL_error(L, "pawl.batch cannot be used while scripts load");
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 6);
  size_t n = lua_objlen(L, 1);
  char err[600];
  if (n == 0 || n > PAWL_BATCH_MAX) {
    lua_pushnil(L);
    lua_pushfstring(L, "a batch has %d jobs; it must have 1..%d", (int)n,
                    PAWL_BATCH_MAX);
    return 2;
  }
  int32_t depth = 0;
  if (pawl__lua_fanout(L, w, 3, n, 1, "pawl.batch", &depth, err,
                       sizeof err)) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  char ident[600];
  size_t keylen = 0;
  const char *key = lua_isnoneornil(L, 6) ? NULL : luaL_checklstring(L, 6, &keylen);
  if (key && strlen(key) != keylen) { /* C would read its prefix */
    lua_pushnil(L);
    lua_pushliteral(L, "key contains a NUL byte");
    return 2;
  }
  pawl__lua_fan_ident(w, key, ident, sizeof ident);
  lua_settop(L, 2);
  lua_newtable(L); /* 3: anchor */
  pawl_enqueue_item_t *items = lua_newuserdata(L, n * sizeof *items);
  pawl_enqueue_opts_t *opts = lua_newuserdata(L, n * sizeof *opts);
  pawl_id_t *ids = lua_newuserdata(L, n * sizeof *ids);
  char by[PAWL_ID_STRLEN + 8] = "job", parent[PAWL_ID_STRLEN];
  const char *corr = NULL;
  const pawl_job_t *j = w->job ? w->job : w->hook_job; /* a hook's too */
  if (j) {
    pawl_id_format(&j->id, parent);
    snprintf(by, sizeof by, "job:%s", parent);
    corr = j->correlation_id ? j->correlation_id : parent;
  }
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 1, (int)i + 1);
    int rc = hb_entry(L, lua_gettop(L), 3, &items[i], &opts[i], err,
                      sizeof err);
    lua_pop(L, 1); /* the entry stays referenced by the list */
    if (rc) {
      lua_pushnil(L);
      lua_pushfstring(L, "job %d: %s", (int)i + 1, err);
      return 2;
    }
    if (j) {
      opts[i].enqueued_by = by;
      if (!opts[i].correlation_id) opts[i].correlation_id = corr;
    }
    opts[i].depth = depth;
  }
  static const char *const roles[3] = {"on_success", "on_failure",
                                       "on_complete"};
  pawl_enqueue_item_t cbs[3];
  pawl_enqueue_opts_t cbo[3];
  pawl_batch_opts_t bo;
  pawl_batch_opts_init(&bo);
  const pawl_enqueue_item_t **slot[3] = {&bo.on_success, &bo.on_failure,
                                         &bo.on_complete};
  for (int r = 0; r < 3; r++) {
    lua_getfield(L, 2, roles[r]);
    if (!lua_isnil(L, -1)) {
      int rc = hb_entry(L, lua_gettop(L), 3, &cbs[r], &cbo[r], err,
                        sizeof err);
      if (rc) {
        lua_pushnil(L);
        lua_pushfstring(L, "%s: %s", roles[r], err);
        return 2;
      }
      if (j) {
        cbo[r].enqueued_by = by;
        if (!cbo[r].correlation_id) cbo[r].correlation_id = corr;
      }
      cbo[r].depth = depth;
      *slot[r] = &cbs[r];
    }
    lua_pop(L, 1); /* still referenced by the callbacks table */
  }
  if (pawl__lua_fan_edges(w, opts, n, "pawl.batch", err, sizeof err)) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  if (j) bo.enqueued_by = by;
  int status = PAWL_ENQ_NEW;
  if (ident[0]) {
    bo.key = ident;
    bo.status = &status;
  }
  pawl_id_t bid;
  if (pawl_batch_enqueue(w->cfg.p, items, n, &bo, &bid, ids) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, pawl_errmsg(w->cfg.p));
    return 2;
  }
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&bid, text);
  lua_pushstring(L, text);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    pawl_id_format(&ids[i], text);
    lua_pushstring(L, text);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_pushstring(L, status == PAWL_ENQ_DUPLICATE ? "duplicate" : "new");
  return 3;
}
