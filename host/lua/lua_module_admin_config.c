/* lua_module_admin_config.c: what operators set through the module, and
 * what stays set: queues (pause, resume, age boost; include/pawl.h
 * "queues"), resource and rate limits, recurring definitions, and
 * retention run now (db:cleanup). The views and actions on jobs are in
 * lua_module_admin.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <string.h>

#include "bounds.h"
#include "lua_module_int.h"

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

void lpawl_admin_config_register(lua_State *L) {
  static const luaL_Reg meths[] = {
      {"queues", lpawl_adm_queues},
      {"queue_pause", lpawl_adm_queue_pause},
      {"queue_resume", lpawl_adm_queue_resume},
      {"queue_set", lpawl_adm_queue_set},
      {"limits", lpawl_adm_limits},
      {"limit_set", lpawl_adm_limit_set},
      {"limit_rm", lpawl_adm_limit_rm},
      {"cleanup", lpawl_adm_cleanup}, /* retention */
      {"recurring_list", lpawl_rec_list},
      {"recurring_add", lpawl_rec_add},
      {"recurring_set", lpawl_rec_set},
      {"recurring_pause", lpawl_rec_pause},
      {"recurring_resume", lpawl_rec_resume},
      {"recurring_trigger", lpawl_rec_trigger},
      {"recurring_rm", lpawl_rec_rm},
      {NULL, NULL}};
  luaL_register(L, NULL, meths);
}
