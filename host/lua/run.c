/* run.c: running one job in Lua, and its hooks.
 *
 * The per-job path: build the `job` table, ask pawl.worker for the type's
 * run function and a ctx, call run(job, ctx) under the job's deadline,
 * then turn the result or the error into an outcome (the sanitizer and
 * retry policy run here, in Lua, under a deadline of their own). The
 * runner hands the outcome to the completer; hooks run later, when the
 * outcome is stored, through pawl__lua_hooks(). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "alloc.h"
#include "bounds.h"
#include "fault.h"
#include "json.h"
#include "ljson.h"
#include "state.h"
#include "utf8.h"

/* ---- the job's values --------------------------------------------------- */

static void run_setnum(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

static void run_setstr(lua_State *L, const char *k, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

/* pawl__ljson_decode of the C string at arg 1 (a light userdata): the value and
 * nil, or nil and the reason. [-1, +2, m] */
static int run_decode(lua_State *L) {
  const char *s = lua_touserdata(L, 1);
  char err[256];
  if (pawl__ljson_decode(L, s, strlen(s), err, sizeof err) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushnil(L);
  return 2;
}

/* Decodes JSON text into field k of the job table on top of the stack.
 * Text the codec refuses (only a row stored before pawl checked its JSON
 * policy, json.h) is not handed over as something else: the field stays
 * nil and `_json_error` says why, which fails the job before it runs (see
 * W.prepare). [-0, +0, m] */
static void run_setjson(pawl__lua_t *w, const char *k, const char *json) {
  lua_State *L = w->L;
  if (!json) return;
  /* Protected: a large payload is where memory runs out, if anywhere. */
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_msgh);
  lua_pushcfunction(L, run_decode);
  lua_pushlightuserdata(L, (void *)json);
  /* Under the job's ceiling: its payload is the job's memory. */
  pawl__lua_heap_limit(w, 1);
  int rc = lua_pcall(L, 1, 2, -3);
  int over = w->heap_on && w->heap.refused;
  pawl__lua_heap_limit(w, 0);
  lua_remove(L, rc == 0 ? -3 : -2); /* the message handler */
  if (rc != 0 && over) {
    char mem[300];
    pawl__lua_memory_text(w, "the job", mem, sizeof mem);
    lua_pop(L, 1);
    lua_pushfstring(L, "%s (decoding its stored %s)", mem, k);
    lua_setfield(L, -2, "_json_error");
    return;
  }
  if (rc == 0 && !lua_isnil(L, -2)) {
    lua_pop(L, 1);
    lua_setfield(L, -2, k);
    return;
  }
  /* The reason is on top: after (nil, message), or alone after an error. */
  lua_pushfstring(L, "the stored %s cannot be read as JSON: %s", k,
                  lua_isstring(L, -1) ? lua_tostring(L, -1) : "out of memory");
  lua_setfield(L, rc == 0 ? -4 : -3, "_json_error");
  lua_pop(L, rc == 0 ? 2 : 1);
}

/* Pushes the `job` table. [-0, +1, m] */
static void run_push_job(pawl__lua_t *w, const pawl_job_t *j) {
  lua_State *L = w->L;
  char id[PAWL_ID_STRLEN];
  pawl_id_format(&j->id, id);
  lua_createtable(L, 0, 16);
  run_setstr(L, "id", id);
  run_setstr(L, "type", j->type);
  run_setstr(L, "queue", j->queue);
  run_setnum(L, "attempt", j->attempt);
  run_setnum(L, "max_attempts", j->max_attempts);
  /* Its generation in a line of jobs enqueued by jobs (max_depth). */
  run_setnum(L, "depth", j->depth);
  run_setnum(L, "priority", j->priority);
  run_setnum(L, "timeout_s", j->timeout_s);
  run_setnum(L, "created_at", (double)j->created_at / 1000.0);
  run_setnum(L, "run_at", (double)j->run_at / 1000.0);
  run_setstr(L, "correlation_id", j->correlation_id);
  run_setstr(L, "ordering_key", j->ordering_key);
  run_setstr(L, "enqueued_by", j->enqueued_by);
  run_setjson(w, "payload", j->payload);
  run_setjson(w, "params", j->params);
  if (j->tags && strcmp(j->tags, "[]") == 0) {
    lua_newtable(L); /* the common case, without a decode */
    lua_setfield(L, -2, "tags");
  } else {
    run_setjson(w, "tags", j->tags);
  }
}

/* Fills `o` from a failed attempt; the error value is on top of the stack
 * (popped). */
static void run_fail(pawl__lua_t *w, pawl__lua_outcome_t *o, int job_index) {
  lua_State *L = w->L;
  int err_index = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "failed");
  lua_remove(L, -2);
  lua_pushvalue(L, job_index);
  lua_pushvalue(L, err_index);
  int rc = pawl__lua_call(w, 2, 5, PAWL__LUA_STEP_TIMEOUT_S, NULL);
  if (rc != 0) {
    /* Only a bug in pawl.worker gets here; never store the raw error. */
    o->kind = PAWL_OUT_FAILED;
    o->error = pawl__strdup("the error could not be processed (the sanitizer or "
                      "retry step failed)");
    lua_pop(L, 1);
  } else {
    /* kind, error text, delay, whether a retry lets later jobs of its
     * ordering key pass (ordering = "skip_failed"), and the traceback. */
    const char *kind = lua_tostring(L, -5);
    double delay = lua_tonumber(L, -3);
    o->ordering_skip = lua_toboolean(L, -2);
    int again = kind && (strcmp(kind, "retry") == 0 ||
                         strcmp(kind, "snooze") == 0);
    o->kind = !again                      ? PAWL_OUT_FAILED
                  : strcmp(kind, "retry") == 0 ? PAWL_OUT_RETRY
                                               : PAWL_OUT_SNOOZE;
    {
      /* Valid UTF-8 without NUL, as every backend stores it. */
      size_t len = 0;
      const char *text = lua_tolstring(L, -4, &len);
      o->error = text ? pawl__utf8_scrub(text, len, NULL) : NULL;
      text = lua_tolstring(L, -1, &len);
      o->trace = text ? pawl__utf8_scrub(text, len, NULL) : NULL;
    }
    /* pawl.worker bounds the delay already; converting a double that is
     * not in range would be undefined, so check again here, and the sum
     * with now too. Out of range: the job fails, saying why. */
    char bad[256] = "";
    int64_t run_at = 0;
    if (again &&
        (pawl__bounds_check("the delay", delay, 0, PAWL_DELAY_MAX_MS / 1000.0, 0,
                      "seconds", bad, sizeof bad) ||
         pawl__bounds_add_time(pawl_now(w->cfg.p), (int64_t)ceil(delay * 1000.0),
                         &run_at))) {
      if (!bad[0])
        snprintf(bad, sizeof bad, "now plus the delay is past the latest run "
                                  "time");
      char *both = NULL;
      if (pawl__asprintf(&both, "%s%s%s", o->error ? o->error : "",
                   o->error ? "\n" : "", bad) < 0)
        both = NULL;
      pawl__free(o->error);
      o->error = both;
      o->kind = PAWL_OUT_FAILED;
    }
    o->run_at = run_at;
    lua_pop(L, 5);
  }
  lua_settop(L, err_index - 1);
}

/* Keeps {job, arg} in the registry for the hooks that will run once the
 * outcome is stored. [-0, +0, m] */
static void run_keep_for_hooks(pawl__lua_t *w, pawl__lua_outcome_t *o,
                                  int job_index, int arg_index, int hooks) {
  lua_State *L = w->L;
  o->hooks = hooks;
  if (!hooks) return;
  lua_createtable(L, 2, 0);
  lua_pushvalue(L, job_index);
  lua_rawseti(L, -2, 1);
  if (arg_index)
    lua_pushvalue(L, arg_index);
  else
    lua_pushnil(L);
  lua_rawseti(L, -2, 2);
  o->hook_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}


/* Takes the result's JSON text (top of the stack) as the outcome's result.
 * It must be what the store takes: the store's own validator (json.h)
 * checks it here, so that a result the store would refuse (invalid UTF-8,
 * nested too deep) fails this job like any error, with the retry policy,
 * instead of reaching the completer. Returns 0 (the text popped), or -1
 * with an error message in its place (also when out of memory: a success
 * is never stored without its result). [-1, +0|1, m] */
static int run_take_result(pawl__lua_t *w, pawl__lua_outcome_t *o) {
  lua_State *L = w->L;
  size_t len = 0;
  const char *json = lua_tolstring(L, -1, &len);
  char err[256];
  if (json && len > PAWL_PAYLOAD_MAX) {
    lua_pop(L, 1);
    snprintf(err, sizeof err, "the job's result is %zu bytes; at most %d "
             "(16 MiB): put the data elsewhere and return a reference to it",
             len, PAWL_PAYLOAD_MAX);
    lua_pushstring(L, err);
    return -1;
  }
  if (json && pawl__json_validate(json, len, err, sizeof err) != 0) {
    lua_pop(L, 1);
    lua_pushfstring(L, "the job's result could not be stored: %s", err);
    return -1;
  }
  if (json) {
    o->result = pawl__fault_hit(FAULT_RESULT_ALLOC) ? NULL : pawl__strndup(json, len);
    if (!o->result) {
      lua_pop(L, 1);
      lua_pushliteral(L, "the job's result could not be kept: out of memory");
      return -1;
    }
  }
  lua_pop(L, 1);
  return 0;
}
/* ---- running one job ---------------------------------------------------- */

/* Starts the job's context: the job table's job, no log lines yet. */
static void run_job_begin(pawl__lua_t *w, const pawl_job_t *job) {
  w->job = job;
  w->nlogs = 0;
  w->logs_cap = 0;
  w->logs = NULL;
  w->canceled = 0;
  w->cancel_checked = 0;
  w->progress_written = 0;
  pawl__lua_fan_begin(w, job, "run");
}

/* Ends it: the log lines go to the outcome, with a default error for a
 * failure that gave none. */
static void run_job_end(pawl__lua_t *w, pawl__lua_outcome_t *o) {
  if (!o->error && o->kind != PAWL_OUT_SUCCEEDED &&
      o->kind != PAWL_OUT_SNOOZE && o->kind != PAWL_OUT_RELEASE)
    o->error = pawl__strdup("(no error message)");
  o->logs = w->logs;
  o->nlogs = w->nlogs;
  w->logs = NULL;
  w->nlogs = w->logs_cap = 0;
  w->job = NULL;
  pawl__lua_fan_end(w);
}

/* prepare(job, seq) -> run, ctx, timeout, hooks
 *                   | nil, message, timeout, hooks
 * Leaves run, ctx (or nil, message) on the stack; *hooks and *timeout_s
 * receive the others. Returns lua_pcall's code (an error on the stack). */
static int run_prepare(pawl__lua_t *w, int job_index, uint64_t run_seq,
                       int *hooks, double *timeout_s) {
  lua_State *L = w->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "prepare");
  lua_remove(L, -2);
  lua_pushvalue(L, job_index);
  lua_pushnumber(L, (double)run_seq);
  int rc = pawl__lua_call(w, 2, 5, PAWL__LUA_STEP_TIMEOUT_S, NULL);
  if (rc == 0) {
    /* The type's ceiling, checked by pawl.worker when its script loaded
     * (PAWL_JOB_MEMORY_MIN..MAX); nil: the host's. */
    double mem = lua_tonumber(L, -1);
    if (mem >= (double)PAWL_JOB_MEMORY_MIN && mem <= (double)PAWL_JOB_MEMORY_MAX)
      w->budget = (int64_t)mem;
    *hooks = (int)lua_tointeger(L, -2);
    *timeout_s = lua_tonumber(L, -3);
    lua_pop(L, 3);
  }
  return rc;
}

/* The branches of the job's type that fire on its result (the
 * result at `result_index`), evaluated once, now, before the outcome is
 * written: the outcome carries their names. A predicate that raises is
 * logged on the job by pawl.worker and fires nothing; one that runs past
 * the step's deadline fires nothing either. [-0, +0, -] */
static void run_branches(pawl__lua_t *w, pawl__lua_outcome_t *o,
                         int job_index, int result_index, uint64_t seq) {
  lua_State *L = w->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "branches_json");
  lua_remove(L, -2);
  lua_pushvalue(L, job_index);
  lua_pushvalue(L, result_index);
  lua_pushnumber(L, (double)seq);
  w->run_seq = seq; /* ctx:log's lines of this run */
  int rc = pawl__lua_call(w, 3, 1, PAWL__LUA_STEP_TIMEOUT_S, NULL);
  w->run_seq = 0;
  if (rc == 0 && lua_type(L, -1) == LUA_TSTRING)
    o->branches = pawl__strdup(lua_tostring(L, -1));
  lua_pop(L, 1);
}

/* A run() that returned a value (on top): its JSON becomes the result, or
 * the job fails if it cannot be stored. */
static void run_succeeded(pawl__lua_t *w, pawl__lua_outcome_t *o,
                          int job_index, int hooks, uint64_t seq) {
  lua_State *L = w->L;
  if (lua_isnil(L, -1)) {
    /* No result to encode (the common no-op case). */
    o->kind = PAWL_OUT_SUCCEEDED;
    run_branches(w, o, job_index, lua_gettop(L), seq);
    run_keep_for_hooks(w, o, job_index, lua_gettop(L), hooks & 1);
    return;
  }
  int result_index = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "result_json");
  lua_remove(L, -2);
  lua_pushvalue(L, result_index);
  if (pawl__lua_call(w, 1, 1, PAWL__LUA_STEP_TIMEOUT_S, NULL) != 0) {
    lua_remove(L, result_index);
    run_fail(w, o, job_index);
  } else if (run_take_result(w, o) != 0) {
    lua_remove(L, result_index); /* leaves the message */
    run_fail(w, o, job_index);
  } else {
    o->kind = PAWL_OUT_SUCCEEDED;
    run_branches(w, o, job_index, result_index, seq);
    run_keep_for_hooks(w, o, job_index, result_index, hooks & 1);
  }
}

/* A run() that raised (the error on top; rc: lua_pcall's code, why: the
 * interrupt, if any): a release when the host's stop interrupted it,
 * else the sanitizer and the retry policy decide. */
static void run_raised(pawl__lua_t *w, pawl__lua_outcome_t *o, int job_index,
                       int rc, int why, double timeout, int hooks) {
  lua_State *L = w->L;
  if (why == PAWL__LUA_STOP) {
    /* The host is stopping and the grace period is over: the job goes
     * back to pending without using up an attempt, no hooks. */
    o->kind = PAWL_OUT_RELEASE;
    return;
  }
  if (why == PAWL__LUA_MEMORY) {
    lua_pop(L, 1);
    char msg[200];
    pawl__lua_memory_text(w, "the job", msg, sizeof msg);
    lua_pushstring(L, msg);
  } else if (why) {
    lua_pop(L, 1);
    char msg[64];
    snprintf(msg, sizeof msg, "job timed out after %g s", timeout);
    lua_pushstring(L, msg);
  } else if (rc == LUA_ERRMEM) {
    lua_pop(L, 1);
    lua_pushliteral(L, "out of memory in job code");
  }
  run_fail(w, o, job_index);
  int on = o->kind == PAWL_OUT_RETRY    ? (hooks & 2)
           : o->kind == PAWL_OUT_FAILED ? (hooks & 6)
                                        : 0;
  if (on) {
    lua_pushstring(L, o->error ? o->error : "");
    run_keep_for_hooks(w, o, job_index, lua_gettop(L), on);
    lua_pop(L, 1);
  }
}

/* The host's ceiling, for jobs whose type sets none. */
static int64_t run_default_memory(pawl__lua_t *w) {
  return w->cfg.opts && w->cfg.opts->job_memory > 0 ? w->cfg.opts->job_memory
                                                    : PAWL_JOB_MEMORY_DEFAULT;
}

/* How much garbage a job may leave in its state before the job's end
 * collects it: a full collection costs about a millisecond per few
 * megabytes the state holds, too much after every small job. */
#define RUN_SETTLE_SLACK ((size_t)16 << 20)

void pawl__lua_run(pawl__lua_t *w, const pawl_job_t *job,
                   pawl__lua_outcome_t *o) {
  lua_State *L = pawl__lua_enter(w);
  memset(o, 0, sizeof *o);
  o->hook_ref = LUA_NOREF;
  run_job_begin(w, job);
  int top = lua_gettop(L);
  /* The job's ceiling counts what the state holds above its resting size
   * (its scripts): the job table, its payload, what its code allocates,
   * and what earlier jobs left reachable; the host's ceiling until its
   * type's is known (prepare). */
  w->budget = run_default_memory(w);
  w->mem_base = w->rest;
  run_push_job(w, job);
  int job_index = lua_gettop(L);
  uint64_t run_seq = ++w->runs; /* names the run() call: ctx._seq */
  int hooks = 0;
  double timeout = 0;
  if (run_prepare(w, job_index, run_seq, &hooks, &timeout) != 0) {
    run_fail(w, o, job_index);
  } else if (lua_isnil(L, -2)) {
    lua_remove(L, -2); /* nil: leaves the message as the error */
    run_fail(w, o, job_index);
  } else {
    lua_pushvalue(L, job_index);
    lua_insert(L, -2); /* run, job, ctx */
    /* Garbage of earlier jobs counts against this one until collected:
     * collect it first when it could take much of the job's room. */
    if (w->heap_on && w->heap.used > w->rest + (size_t)w->budget / 2)
      lua_gc(L, LUA_GCCOLLECT, 0);
    int why = 0, rc;
    if (w->heap_on && w->heap.used > w->rest + (size_t)w->budget) {
      /* Over its ceiling before it starts (its payload, or what earlier
       * jobs left reachable): not run at all. */
      lua_pop(L, 3);
      lua_pushnil(L);
      rc = LUA_ERRMEM;
      why = PAWL__LUA_MEMORY;
    } else {
      w->run_seq = run_seq;
      rc = pawl__lua_call(w, 2, 1, timeout, &why);
      w->run_seq = 0;
    }
    /* The steps after the run (result, branches, sanitizer, retry
     * policy) may each grow the heap by the job's ceiling from where they
     * start, once the run's garbage is gone. */
    w->mem_base = 0;
    pawl__lua_settle(w, RUN_SETTLE_SLACK);
    pawl__lua_release_locks(w);
    if (rc == 0 && why == PAWL__LUA_MEMORY) {
      /* It caught the memory error and returned: passing the ceiling
       * fails the job all the same. */
      lua_pop(L, 1);
      lua_pushnil(L);
      rc = LUA_ERRMEM;
    }
    if (rc == 0)
      run_succeeded(w, o, job_index, hooks, run_seq);
    else
      run_raised(w, o, job_index, rc, why, timeout, hooks);
  }
  pawl__lua_step_close(w, o); /* restartable steps */
  lua_settop(L, top);
  w->mem_base = 0;
  w->budget = run_default_memory(w);
  pawl__lua_settle(w, RUN_SETTLE_SLACK);
  run_job_end(w, o);
}

void pawl__lua_outcome_free(pawl__lua_outcome_t *o) {
  pawl__free(o->result);
  pawl__free(o->branches);
  pawl__free(o->error);
  pawl__free(o->trace);
  for (size_t i = 0; i < o->nlogs; i++) {
    pawl__free((char *)o->logs[i].level);
    pawl__free((char *)o->logs[i].message);
    pawl__free((char *)o->logs[i].fields);
  }
  pawl__free(o->logs);
  memset(o, 0, sizeof *o);
}

/* ---- hooks -------------------------------------------------------------- */

/* How long the hooks of `type` may run: its script's timeout, else the
 * default one; and (w->budget) its memory, else the host's. */
static double run_hook_timeout(pawl__lua_t *w, const char *type) {
  lua_State *L = w->L;
  double timeout = w->cfg.opts ? (double)w->cfg.opts->default_timeout_s : 0;
  w->budget = run_default_memory(w);
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "hook_timeout");
  lua_remove(L, -2);
  lua_pushstring(L, type);
  if (pawl__lua_call(w, 1, 2, PAWL__LUA_STEP_TIMEOUT_S, NULL) == 0) {
    if (lua_tonumber(L, -2) > 0) timeout = lua_tonumber(L, -2);
    double mem = lua_tonumber(L, -1);
    if (mem >= (double)PAWL_JOB_MEMORY_MIN && mem <= (double)PAWL_JOB_MEMORY_MAX)
      w->budget = (int64_t)mem;
    lua_pop(L, 2);
  } else {
    lua_pop(L, 1);
  }
  return timeout;
}

static void run_hook(pawl__lua_t *w, const pawl_job_t *job, int hook_ref,
                         const char *name) {
  lua_State *L = w->L;
  double timeout = run_hook_timeout(w, job->type);
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "hook");
  lua_remove(L, -2);
  lua_pushstring(L, name);
  lua_rawgeti(L, LUA_REGISTRYINDEX, hook_ref);
  lua_rawgeti(L, -1, 1);
  lua_rawgeti(L, -2, 2);
  lua_remove(L, -3);
  int why = 0;
  /* A hook is job code too: its enqueues meet the job's limits, counted
   * apart from the run's, and its batches and chains are named by it. */
  pawl__lua_fan_begin(w, job, name);
  int rc = pawl__lua_call(w, 3, 1, timeout, &why);
  pawl__lua_fan_end(w);
  pawl__lua_release_locks(w);
  if ((rc != 0 || why == PAWL__LUA_MEMORY || !lua_isnil(L, -1)) && w->cfg.log) {
    char msg[200];
    if (why == PAWL__LUA_MEMORY) {
      pawl__lua_memory_text(w, "the hook", msg, sizeof msg);
      rc = rc ? rc : LUA_ERRMEM;
    } else {
      snprintf(msg, sizeof msg, "hook timed out after %g s", timeout);
    }
    log_line_t line;
    pawl__log_begin(&line, w->cfg.log, PAWL_LOG_WARN,
              "hook failed (the job's outcome stands)");
    pawl__log_id(&line, "job", &job->id);
    pawl__log_str(&line, "type", job->type);
    pawl__log_str(&line, "hook", name);
    pawl__log_str(&line, "error", rc == 0    ? lua_tostring(L, -1)
                            : why ? msg
                                        : "the hook was interrupted");
    pawl__log_end(&line);
  }
  lua_pop(L, 1);
  w->budget = run_default_memory(w);
}

void pawl__lua_hooks(pawl__lua_t *w, const pawl_job_t *job, int hooks,
                     int hook_ref, int stored) {
  pawl__lua_enter(w);
  w->hook_job = job;
  if (stored) {
    if (hooks & 1) run_hook(w, job, hook_ref, "on_success");
    if (hooks & 2) run_hook(w, job, hook_ref, "on_failure");
    if (hooks & 4) run_hook(w, job, hook_ref, "on_dead");
  }
  w->hook_job = NULL;
  luaL_unref(w->L, LUA_REGISTRYINDEX, hook_ref);
  if (hooks) pawl__lua_settle(w, RUN_SETTLE_SLACK);
}

/* ---- dead-letter alerts ------------------------------------------------- */

int pawl__lua_alert_settings(pawl__lua_t *w, int64_t *window_ms,
                             double *timeout_s) {
  lua_State *L = pawl__lua_enter(w);
  int top = lua_gettop(L);
  int has = 0;
  *window_ms = 0;
  *timeout_s = w->cfg.opts ? (double)w->cfg.opts->default_timeout_s : 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "alert_settings");
  lua_remove(L, -2);
  w->alert_memory = run_default_memory(w);
  if (pawl__lua_call(w, 0, 4, PAWL__LUA_STEP_TIMEOUT_S, NULL) == 0) {
    has = lua_toboolean(L, -4);
    double s = lua_tonumber(L, -3); /* checked by the load: 0..86400 */
    if (s > 0 && s <= 86400) *window_ms = (int64_t)(s * 1000);
    double t = lua_tonumber(L, -2); /* checked by the load */
    if (t > 0) *timeout_s = t;
    double mem = lua_tonumber(L, -1); /* _defaults.lua's memory, or nil */
    if (mem >= (double)PAWL_JOB_MEMORY_MIN && mem <= (double)PAWL_JOB_MEMORY_MAX)
      w->alert_memory = (int64_t)mem;
  }
  lua_settop(L, top);
  return has;
}

/* Sets t[k] = ms / 1000 (seconds, as pawl.now speaks) when ms > 0. */
static void run_alert_time(lua_State *L, const char *k, int64_t ms) {
  if (ms <= 0) return;
  lua_pushnumber(L, (double)ms / 1000.0);
  lua_setfield(L, -2, k);
}

int pawl__lua_alert(pawl__lua_t *w, const pawl__lua_alert_t *a,
                    double timeout) {
  lua_State *L = pawl__lua_enter(w);
  int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "alert");
  lua_remove(L, -2);
  lua_createtable(L, 0, 5); /* job */
  lua_pushstring(L, a->id);
  lua_setfield(L, -2, "id");
  lua_pushstring(L, a->type);
  lua_setfield(L, -2, "type");
  lua_pushstring(L, a->queue);
  lua_setfield(L, -2, "queue");
  lua_pushinteger(L, a->attempt);
  lua_setfield(L, -2, "attempt");
  if (a->node) {
    lua_pushstring(L, a->node);
    lua_setfield(L, -2, "node");
  }
  if (a->error)
    lua_pushstring(L, a->error);
  else
    lua_pushnil(L);
  lua_createtable(L, 0, 4); /* info */
  lua_pushnumber(L, (double)a->count);
  lua_setfield(L, -2, "count");
  lua_pushnumber(L, (double)a->suppressed);
  lua_setfield(L, -2, "suppressed");
  run_alert_time(L, "first_at", a->first_at);
  run_alert_time(L, "last_at", a->last_at);
  int why = 0;
  w->alerting = 1;
  w->budget = w->alert_memory > 0 ? w->alert_memory : run_default_memory(w);
  int rc = pawl__lua_call(w, 3, 1, timeout, &why);
  w->alerting = 0;
  pawl__lua_release_locks(w);
  int stopped = rc != 0 && why == PAWL__LUA_STOP;
  if ((rc != 0 || why == PAWL__LUA_MEMORY || !lua_isnil(L, -1)) && w->cfg.log) {
    char msg[64];
    snprintf(msg, sizeof msg, "hook timed out after %g s", timeout);
    log_line_t line;
    pawl__log_begin(&line, w->cfg.log, PAWL_LOG_WARN,
                    stopped ? "global on_dead hook cut short by the stop (it "
                              "runs again on the next host)"
                            : "global on_dead hook failed (the alert is not "
                              "retried)");
    pawl__log_str(&line, "job", a->id);
    pawl__log_str(&line, "type", a->type);
    char mem[200];
    if (why == PAWL__LUA_MEMORY)
      pawl__lua_memory_text(w, "the hook", mem, sizeof mem);
    pawl__log_str(&line, "error", why == PAWL__LUA_MEMORY ? mem
                                  : rc == 0 ? lua_tostring(L, -1)
                                  : why   ? msg
                                          : "the hook was interrupted");
    pawl__log_end(&line);
  }
  lua_settop(L, top);
  w->budget = run_default_memory(w);
  pawl__lua_settle(w, RUN_SETTLE_SLACK);
  return stopped;
}
