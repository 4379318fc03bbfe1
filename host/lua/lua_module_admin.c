/* lua_module_admin.c: what operators read and do through the module
 * (include/pawl.h, "administration"): jobs by filter, one job in full,
 * cancel/pause/resume/retry of one job or of every job a filter matches,
 * stats, nodes, locks, `pawl top`'s snapshot, the scripts of a directory,
 * durations, and redaction as the admin views apply it. What operators
 * set (queues, limits, recurring definitions, retention) is in
 * lua_module_admin_config.c. The console runs on these. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bounds.h"
#include "buf.h"
#include "redact.h"
#include "lua_module_int.h"

/* ---- administration (include/pawl.h "administration") --------------------
 *
 *   db:jobs{ state =, queue =, type =, tag =, older_than =, limit = }
 *   db:job(id)               the job with attempts, events and logs
 *   db:retry(id | filter, reason)   also cancel, pause, resume: a filter
 *                            moves every matching job and returns
 *                            changed, skipped, refused
 *   db:count(action, filter) how many a bulk action would move now
 *   db:stats(), db:nodes(), db:locks(), db:top_snapshot()
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

/* Frees what the box holds (the box itself is the collector's). */
void lpawl_adm_box_free(lpawl_adm_box_t *b) {
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
lpawl_adm_box_t *lpawl_adm_box_new(lua_State *L) {
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

void lpawl_admin_register(lua_State *L, int methods) {
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
      {"top_snapshot", lpawl_adm_top},
      {"type_redact", lpawl_adm_type_redact},
      {NULL, NULL}};
  luaL_register(L, NULL, methods ? meths : funcs);
}
