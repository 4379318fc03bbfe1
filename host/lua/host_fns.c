/* host_fns.c: the pawl.host functions: job code's view of the host (its
 * log, progress, cancellation, enqueue, locks, the clock), called from Lua
 * through lua/pawl/worker.lua. Each is a C closure whose upvalue is the
 * state's pawl__lua_t; each acts on the state's handle (cfg.p) only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "alloc.h"
#include "cron.h"
#include "tz.h"
#include "bounds.h"
#include "clock.h"
#include "json.h"
#include "redact.h"
#include "state.h"
#include "utf8.h"
#include "weburl.h"

/* ctx:log lines kept per attempt; more are counted, not stored. */
#define WORKER_MAX_LOGS 1000

/* The host log's budget for one job's lines (ctx:log, print): a burst of
 * HOST_LOG_BURST lines, then HOST_LOG_RATE a second; the lines past it are
 * dropped and counted, and the next line written (or the end of the run)
 * says how many ("N lines of job ID suppressed"). */
#define HOST_LOG_BURST 200.0
#define HOST_LOG_RATE 20.0

/* ---- fan-out and the host log's budget ------------------------------------ */

void pawl__lua_fan_begin(pawl__lua_t *w, const pawl_job_t *job,
                         const char *phase) {
  w->fan_job = job;
  w->fan_phase = phase;
  w->fan_children = 0;
  w->fan_calls = 0;
  w->log_tokens = HOST_LOG_BURST;
  w->log_refilled = pawl__mono_ms();
  w->log_dropped = 0;
}

/* The line that says how many of the job's lines were dropped. */
static void host_fn_log_dropped(pawl__lua_t *w) {
  if (!w->log_dropped || !w->cfg.log) return;
  log_line_t line;
  char msg[160], id[PAWL_ID_STRLEN] = "?";
  if (w->fan_job) pawl_id_format(&w->fan_job->id, id);
  snprintf(msg, sizeof msg, "%lld lines of job %s suppressed (more than %g "
           "a second after a burst of %g)", (long long)w->log_dropped, id,
           HOST_LOG_RATE, HOST_LOG_BURST);
  pawl__log_begin(&line, w->cfg.log, PAWL_LOG_WARN, msg);
  if (w->fan_job) pawl__log_id(&line, "job", &w->fan_job->id);
  pawl__log_int(&line, "suppressed", w->log_dropped);
  pawl__log_end(&line);
  w->log_dropped = 0;
}

void pawl__lua_fan_end(pawl__lua_t *w) {
  host_fn_log_dropped(w);
  w->fan_job = NULL;
  w->fan_phase = NULL;
}

/* Whether the job's next line may go to the host log (a token of the
 * budget); a line that may not is counted. Outside a job's run or hook
 * (a script's top level) nothing is limited. */
static int host_fn_log_allowed(pawl__lua_t *w) {
  if (!w->fan_job) return 1;
  int64_t now = pawl__mono_ms();
  w->log_tokens += (double)(now - w->log_refilled) * HOST_LOG_RATE / 1000.0;
  if (w->log_tokens > HOST_LOG_BURST) w->log_tokens = HOST_LOG_BURST;
  w->log_refilled = now;
  if (w->log_tokens < 1.0) {
    w->log_dropped++;
    return 0;
  }
  w->log_tokens -= 1.0;
  host_fn_log_dropped(w);
  return 1;
}

/* One limit at stack index i: nil for `dflt`, else a whole number within
 * [min, max] (the script's checker said so; C does not trust it). */
static int64_t host_fn_limit(lua_State *L, int i, const char *what,
                             int64_t dflt, int64_t min, int64_t max) {
  if (lua_isnoneornil(L, i)) return dflt;
  double v = luaL_checknumber(L, i);
  char err[200];
  if (pawl__bounds_check(what, v, (double)min, (double)max, 1, NULL, err,
                         sizeof err))
    luaL_error(L, "%s", err);
  return (int64_t)v;
}

int pawl__lua_fanout(lua_State *L, pawl__lua_t *w, int arg, size_t n,
                     int per_call, const char *fname, int32_t *depth,
                     char *err, size_t errlen) {
  int64_t max_children = host_fn_limit(L, arg, "max_children",
                                       PAWL_CHILDREN_DEFAULT, 0,
                                       PAWL_CHILDREN_MAX);
  int64_t max_batch = host_fn_limit(L, arg + 1, "max_batch",
                                    PAWL_FANOUT_BATCH_DEFAULT, 1,
                                    PAWL_FANOUT_BATCH_MAX);
  int64_t max_depth = host_fn_limit(L, arg + 2, "max_depth",
                                    PAWL_DEPTH_DEFAULT, 0, PAWL_DEPTH_MAX);
  *depth = 0;
  const pawl_job_t *job = w->fan_job;
  if (!job) return 0;
  const char *how = "in the job type's script or in _defaults.lua";
  if ((int64_t)job->depth + 1 > max_depth) {
    snprintf(err, errlen,
             "job type %s runs at depth %d of a line of jobs enqueued by "
             "jobs, and max_depth is %lld: its jobs may enqueue no more "
             "(raise max_depth %s, at most %d)",
             job->type, (int)job->depth, (long long)max_depth, how,
             PAWL_DEPTH_MAX);
    return -1;
  }
  if (per_call && (int64_t)n > max_batch) {
    snprintf(err, errlen,
             "%zu jobs in one %s call; max_batch is %lld for job type %s: "
             "split them into calls of at most %lld jobs, or raise max_batch "
             "%s (at most %d)",
             n, fname, (long long)max_batch, job->type, (long long)max_batch,
             how, PAWL_FANOUT_BATCH_MAX);
    return -1;
  }
  if (w->fan_children + (int64_t)n > max_children) {
    snprintf(err, errlen,
             "this attempt of job %s enqueued %lld jobs and asks for %zu "
             "more; max_children is %lld for job type %s (raise max_children "
             "%s, at most %d)",
             job->type, (long long)w->fan_children, n,
             (long long)max_children, job->type, how, PAWL_CHILDREN_MAX);
    return -1;
  }
  w->fan_children += (int64_t)n;
  *depth = job->depth + 1;
  return 0;
}

int pawl__lua_fan_edges(const pawl__lua_t *w, const pawl_enqueue_opts_t *opts,
                        size_t n, const char *fname, char *err,
                        size_t errlen) {
  if (!w->fan_job) return 0;
  size_t edges = 0;
  for (size_t i = 0; i < n; i++) edges += opts[i].nafter;
  if (edges <= PAWL_AFTER_MAX) return 0;
  snprintf(err, errlen,
           "the jobs of one %s call wait for %zu parents in all (after); at "
           "most %d: split the call",
           fname, edges, PAWL_AFTER_MAX);
  return -1;
}

void pawl__lua_fan_ident(pawl__lua_t *w, const char *key, char *out,
                         size_t outlen) {
  out[0] = 0;
  if (!w->fan_job) return;
  char id[PAWL_ID_STRLEN];
  pawl_id_format(&w->fan_job->id, id);
  w->fan_calls++;
  if (key)
    snprintf(out, outlen, "job:%s/key/%s", id, key);
  else
    snprintf(out, outlen, "job:%s/%s/%u", id, w->fan_phase, w->fan_calls);
}

/* ---- the functions ------------------------------------------------------ */

static pawl__lua_t *host_fn_worker(lua_State *L) {
  return (pawl__lua_t *)lua_touserdata(L, lua_upvalueindex(1));
}

/* The running job, if `seq` (ctx._seq) is its run call. */
static const pawl_job_t *host_fn_job(lua_State *L, pawl__lua_t *w, int arg) {
  uint64_t seq = (uint64_t)luaL_checknumber(L, arg);
  if (!w->job || seq != w->run_seq)
    luaL_error(L, "ctx used outside its job (the job has ended)");
  return w->job;
}

/* Functions that act on the database refuse while a script's top level
 * runs: a load state may have no connection (the loader's, pawl enqueue's),
 * and every worker loads every script. */
static void host_fn_no_load(lua_State *L, pawl__lua_t *w, const char *what) {
  if (w->loading || !w->cfg.p)
    luaL_error(L, "%s cannot be used while scripts load", what);
}

/* host.log(seq, level, message, fields_json) -> nil | why [-4, +0|1, e]
 * The message and the fields are made valid UTF-8 without NUL (what every
 * backend stores) before they are logged or kept. Fields that are not a
 * JSON object the store takes are refused: nothing is logged, and the
 * returned message says why (ctx:log raises it in the job). */
static int host_fn_log(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  const pawl_job_t *job = host_fn_job(L, w, 1);
  const char *level = luaL_checkstring(L, 2);
  size_t msg_len = 0, fields_len = 0;
  const char *msg_in = luaL_checklstring(L, 3, &msg_len);
  const char *fields_in =
      lua_isnoneornil(L, 4) ? NULL : luaL_checklstring(L, 4, &fields_len);
  /* The caps every log line meets (pawl_finish() refuses a longer one):
   * refused here, where the job can be told. */
  if (msg_len > PAWL_LOG_MESSAGE_MAX) {
    lua_pushfstring(L, "the message is %d bytes; at most %d", (int)msg_len,
                    PAWL_LOG_MESSAGE_MAX);
    return 1;
  }
  if (fields_len > PAWL_LOG_FIELDS_MAX) {
    lua_pushfstring(L, "the fields are %d bytes of JSON; at most %d",
                    (int)fields_len, PAWL_LOG_FIELDS_MAX);
    return 1;
  }
  if (w->nlogs < WORKER_MAX_LOGS && w->nlogs == w->logs_cap) {
    size_t cap = w->logs_cap ? w->logs_cap * 2 : 8;
    void *p = pawl__realloc(w->logs, cap * sizeof *w->logs);
    if (!p) return luaL_error(L, "out of memory");
    w->logs = p;
    w->logs_cap = cap;
  }
  /* Nothing below raises until these are kept or freed. */
  char *lvl = pawl__strdup(level);
  char *msg = pawl__utf8_scrub(msg_in, msg_len, NULL);
  char *fields = fields_in ? pawl__utf8_scrub(fields_in, fields_len, &fields_len) : NULL;
  if (!lvl || !msg || (fields_in && !fields)) {
    pawl__free(lvl);
    pawl__free(msg);
    pawl__free(fields);
    return luaL_error(L, "out of memory");
  }
  if (fields) {
    char err[200];
    pawl__utf8_json_no_nul(fields);
    int bad = pawl__json_validate(fields, fields_len, err, sizeof err) != 0;
    if (bad || !pawl__json_is_object(fields, fields_len)) {
      pawl__free(lvl);
      pawl__free(msg);
      pawl__free(fields);
      if (bad)
        lua_pushfstring(L, "fields cannot be stored: %s", err);
      else
        lua_pushliteral(L, "fields must be a table of named values (a JSON "
                           "object), not a list");
      return 1;
    }
  }
  int lv = pawl__log_level_parse(level);
  if (host_fn_log_allowed(w)) {
    log_line_t line;
    pawl__log_begin(&line, w->cfg.log, lv < 0 ? PAWL_LOG_INFO : lv, msg);
    pawl__log_id(&line, "job", &job->id);
    pawl__log_str(&line, "type", job->type);
    pawl__log_int(&line, "attempt", job->attempt);
    pawl__log_str(&line, "fields", fields);
    pawl__log_end(&line);
  }
  if (w->nlogs >= WORKER_MAX_LOGS) {
    pawl__free(lvl);
    pawl__free(msg);
    pawl__free(fields);
    return 0;
  }
  pawl_log_entry_t *e = &w->logs[w->nlogs++];
  e->at = pawl_now(w->cfg.p);
  e->level = lvl;
  e->message = msg;
  e->fields = fields;
  return 0;
}

/* host.progress(seq, done, total) [-3, +0, e] */
static int host_fn_progress(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  const pawl_job_t *job = host_fn_job(L, w, 1);
  double done = luaL_checknumber(L, 2), total = luaL_checknumber(L, 3);
  if (!isfinite(done) || !isfinite(total) || done < 0 || total < 0)
    return luaL_error(L, "ctx:progress: done and total must be finite and "
                         "not negative (got %s of %s)",
                      lua_tostring(L, 2), lua_tostring(L, 3));
  /* Progress is for people watching: at most ten writes a second, and
   * always the final one. */
  int64_t now = pawl__mono_ms();
  if (now - w->progress_written < 100 && !(total > 0 && done >= total)) return 0;
  w->progress_written = now;
  pawl_progress(w->cfg.p, &job->id, job->attempt, done, total);
  return 0;
}

/* host.canceled(seq) -> bool [-1, +1, e] */
static int host_fn_canceled(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  const pawl_job_t *job = host_fn_job(L, w, 1);
  int64_t now = pawl__mono_ms();
  /* A job loop may ask every iteration: look at most every 100 ms. */
  if (!w->canceled && now - w->cancel_checked >= 100) {
    w->cancel_checked = now;
    pawl_job_t *cur = NULL;
    if (pawl_get(w->cfg.p, &job->id, &cur) == 0) {
      w->canceled = cur->state == PAWL_CANCELED;
      pawl_job_free(cur);
    }
  }
  lua_pushboolean(L, w->canceled);
  return 1;
}

/* host.heartbeat(seq) -> held [-1, +1, e] */
static int host_fn_heartbeat(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  const pawl_job_t *job = host_fn_job(L, w, 1);
  int held = 0;
  if (pawl_extend(w->cfg.p, &job->id, job->attempt, &held) != 0)
    return luaL_error(L, "ctx:heartbeat: %s", pawl_errmsg(w->cfg.p));
  lua_pushboolean(L, held);
  return 1;
}

/* String argument `i` that job code hands to the store, or NULL for nil
 * (when `opt`). C reads a string up to its first NUL, so one with a NUL
 * inside would be taken for its prefix (two lock names, two keys that
 * differ after the NUL, would be one): refused, naming `what`, in err
 * (the first problem only; the caller checks err[0]). Raises on a value
 * of the wrong type, as luaL_checkstring does. [-0, +0, e] */
static const char *host_fn_str(lua_State *L, int i, const char *what, int opt,
                               char *err, size_t errlen) {
  if (opt && lua_isnoneornil(L, i)) return NULL;
  size_t len;
  const char *s = luaL_checklstring(L, i, &len);
  if (strlen(s) != len && !err[0])
    snprintf(err, errlen, "%s contains a NUL byte", what);
  return s;
}

#define host_fn_optstr(L, i, what) host_fn_str(L, i, what, 1, err, errlen)

/* Makes the handle act as the job that runs now, or whose hooks run now,
 * with `grants` (PAWL__LUA_GRANT_*), until host_fn_act_end(): its id and
 * type name it in what it changes, and it owns the jobs enqueued by
 * "job:<id>". Code running for no job (the global on_dead hook) owns
 * nothing. Raises (before anything is set) when the owner gave no act_as.
 * Nothing may raise between this and host_fn_act_end(). */
typedef struct host_fn_actor {
  char name[PAWL_ID_STRLEN + 220];
  char owner[PAWL_ID_STRLEN + 8];
} host_fn_actor_t;

static void host_fn_act(lua_State *L, pawl__lua_t *w, host_fn_actor_t *b,
                        int grants) {
  if (!w->cfg.act_as)
    luaL_error(L, "job code cannot act on jobs here (no host)");
  const pawl_job_t *j = w->job ? w->job : w->hook_job;
  if (j) {
    char text[PAWL_ID_STRLEN];
    pawl_id_format(&j->id, text);
    snprintf(b->owner, sizeof b->owner, "job:%s", text);
    snprintf(b->name, sizeof b->name, "job:%s (%.200s)", text, j->type);
  } else {
    b->owner[0] = 0; /* owns nothing (pawl__store_owner_check) */
    snprintf(b->name, sizeof b->name, "job code");
  }
  w->cfg.act_as(w->cfg.data, b->name, b->owner, grants);
}

static void host_fn_act_end(pawl__lua_t *w) {
  w->cfg.act_as(w->cfg.data, NULL, NULL, 0);
}

/* The message of a refused call: the store's (naming the job and who
 * enqueued it), and for PAWL_EPERM the grant that would allow it. */
static void host_fn_push_error(lua_State *L, pawl__lua_t *w, int rc,
                               const char *grant) {
  if (rc == PAWL_EPERM && grant)
    lua_pushfstring(L, "%s; acting on a job this job did not enqueue needs "
                       "the grant \"%s\" (allow = { \"%s\" } in the script, "
                       "granted by the operator with pawl run --allow-%s or "
                       "allow = { \"%s\" } in _defaults.lua)",
                    pawl_errmsg(w->cfg.p), grant, grant, grant, grant);
  else
    lua_pushstring(L, pawl_errmsg(w->cfg.p));
}

/* The optional number argument `i` of a pawl.* call, bounded before it is
 * converted: *out is 0 when it is nil. Returns 0, or -1 with the message
 * (naming the value and its range) in err. [-0, +0, -] */
static int host_fn_optnum(lua_State *L, int i, const char *what, double min,
                          double max, int whole, const char *unit, double *out,
                          char *err, size_t errlen) {
  *out = 0;
  if (lua_isnoneornil(L, i)) return 0;
  if (lua_type(L, i) != LUA_TNUMBER) {
    snprintf(err, errlen, "%s must be a number (got %s)", what,
             luaL_typename(L, i));
    return -1;
  }
  double v = lua_tonumber(L, i);
  if (pawl__bounds_check(what, v, min, max, whole, unit, err, errlen)) return -1;
  *out = v;
  return 0;
}

/* The arguments of one enqueue, at stack indices base .. base + 21: type,
 * payload_json, queue, priority, delay_s, run_at_s, max_attempts,
 * timeout_s, key, business_key, return_existing, correlation_id,
 * tags_json, params_json, blocked, ordering_key, resource,
 * signal, signal_timeout_s (signals), after (a list of job ids:
 * dependencies), when, identity (the target script's
 * identifying fields, a list of strings: job instances). Strings are
 * borrowed from the values (the caller keeps them referenced); what the options need besides (the decoded tags, the
 * parsed ids) is kept in the table at index `anchor`. `by`: the enqueuer's
 * name, PAWL_ID_STRLEN + 8 bytes the caller keeps. Returns 0, or -1 with
 * the reason in err; raises on values of the wrong type. [-0, +0, e] */
static int host_fn_read_enqueue(lua_State *L, pawl__lua_t *w, int base,
                                int anchor, const char **type,
                                const char **payload, pawl_enqueue_opts_t *o,
                                char *by, char *err, size_t errlen) {
#define ARG(k) (base + (k) - 1)
  err[0] = 0;
  *type = host_fn_str(L, ARG(1), "job type", 0, err, errlen);
  *payload = host_fn_str(L, ARG(2), "payload", 0, err, errlen);
  pawl_enqueue_opts_init(o);
  o->queue = host_fn_optstr(L, ARG(3), "queue");
  /* Numbers are bounded here, before any conversion: the API refuses what
   * is out of range too, but a double from Lua may not even fit the C
   * type it is converted to. Delays and times are seconds, ms resolution,
   * never earlier than asked. */
  double prio, delay, run_at, attempts, timeout;
  if (host_fn_optnum(L, ARG(4), "priority", PAWL_PRIORITY_MIN,
                     PAWL_PRIORITY_MAX, 1, NULL, &prio, err, errlen) ||
      host_fn_optnum(L, ARG(5), "delay", 0, PAWL_DELAY_MAX_MS / 1000.0, 0,
                     "seconds", &delay, err, errlen) ||
      host_fn_optnum(L, ARG(6), "run_at", 0, PAWL_TIME_MAX_MS / 1000.0, 0,
                     "seconds since the epoch", &run_at, err, errlen) ||
      host_fn_optnum(L, ARG(7), "max_attempts", 1, PAWL_ATTEMPTS_MAX, 1, NULL,
                     &attempts, err, errlen) ||
      host_fn_optnum(L, ARG(8), "timeout", 0, PAWL_TIMEOUT_MAX_S, 1, "seconds",
                     &timeout, err, errlen))
    return -1;
  o->priority = (int32_t)prio;
  o->delay_ms = (int64_t)ceil(delay * 1000.0);
  o->run_at = (int64_t)ceil(run_at * 1000.0);
  o->max_attempts = (int32_t)attempts;
  o->timeout_s = (int32_t)timeout;
  o->idempotency_key = host_fn_optstr(L, ARG(9), "key");
  o->business_key = host_fn_optstr(L, ARG(10), "business_key");
  o->return_existing = lua_toboolean(L, ARG(11));
  o->correlation_id = host_fn_optstr(L, ARG(12), "correlation_id");
  const char *tags_json = host_fn_optstr(L, ARG(13), "tags");
  o->params = host_fn_optstr(L, ARG(14), "params");
  o->blocked = lua_toboolean(L, ARG(15));
  o->ordering_key = host_fn_optstr(L, ARG(16), "ordering_key");
  o->resource = host_fn_optstr(L, ARG(17), "resource");
  o->signal = host_fn_optstr(L, ARG(18), "signal");
  double sig_timeout;
  if (host_fn_optnum(L, ARG(19), "signal_timeout", 0,
                     PAWL_DELAY_MAX_MS / 1000.0, 0, "seconds", &sig_timeout,
                     err, errlen))
    return -1;
  o->signal_timeout_ms = (int64_t)ceil(sig_timeout * 1000.0);
  o->when = host_fn_optstr(L, ARG(21), "when");
  if (err[0]) return -1;
  /* Identifying fields (job instances): strings of the list at ARG(22),
   * which the caller keeps referenced; the array of pointers is a
   * userdata the anchor holds. pawl.worker checked them. */
  if (lua_istable(L, ARG(22))) {
    size_t n = lua_objlen(L, ARG(22));
    if (n > 16) return luaL_error(L, "at most 16 identity fields");
    const char **identity = lua_newuserdata(L, (n ? n : 1) * sizeof *identity);
    lua_rawseti(L, anchor, (int)lua_objlen(L, anchor) + 1);
    for (size_t i = 0; i < n; i++) {
      lua_rawgeti(L, ARG(22), (int)i + 1);
      size_t len = 0;
      identity[i] = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len)
                                                   : NULL;
      lua_pop(L, 1); /* a string: still referenced by the list */
      if (!identity[i]) return luaL_error(L, "identity fields must be strings");
      if (strlen(identity[i]) != len)
        return luaL_error(L, "an identity field contains a NUL byte");
    }
    o->identity = identity;
    o->nidentity = n;
  }
  /* Tags arrive as a JSON array from the Lua side: decode them back into
   * strings, the table anchored. */
  if (tags_json) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_decode);
    lua_pushstring(L, tags_json);
    lua_call(L, 1, 1);
    if (!lua_istable(L, -1)) return luaL_error(L, "tags must be a list");
    size_t n = lua_objlen(L, -1);
    if (n > 64) return luaL_error(L, "at most 64 tags");
    const char **tags = lua_newuserdata(L, (n ? n : 1) * sizeof *tags);
    lua_rawseti(L, anchor, (int)lua_objlen(L, anchor) + 1);
    for (size_t i = 0; i < n; i++) {
      lua_rawgeti(L, -1, (int)i + 1);
      size_t len = 0;
      tags[i] = lua_tolstring(L, -1, &len);
      if (!tags[i]) return luaL_error(L, "tags must be strings");
      if (strlen(tags[i]) != len) {
        snprintf(err, errlen, "tag %d contains a NUL byte", (int)i + 1);
        return -1;
      }
      lua_pop(L, 1); /* still referenced by the table */
    }
    lua_rawseti(L, anchor, (int)lua_objlen(L, anchor) + 1);
    o->tags = tags;
    o->ntags = n;
  }
  /* Dependencies: the parents' ids, parsed into memory the
   * anchor holds (collected with it, also when this raises). */
  if (!lua_isnoneornil(L, ARG(20))) {
    luaL_checktype(L, ARG(20), LUA_TTABLE);
    size_t n = lua_objlen(L, ARG(20));
    if (n > PAWL_AFTER_MAX) {
      snprintf(err, errlen, "after names %zu jobs; at most %d", n,
               PAWL_AFTER_MAX);
      return -1;
    }
    pawl_id_t *ids = lua_newuserdata(L, (n ? n : 1) * sizeof *ids);
    lua_rawseti(L, anchor, (int)lua_objlen(L, anchor) + 1);
    for (size_t i = 0; i < n; i++) {
      lua_rawgeti(L, ARG(20), (int)i + 1);
      const char *text = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1)
                                                        : NULL;
      int bad = !text || pawl_id_parse(&ids[i], text) != 0;
      if (bad)
        snprintf(err, errlen, "after: %s%.60s%s is not a job id",
                 text ? "\"" : "", text ? text : luaL_typename(L, -1),
                 text ? "\"" : "");
      lua_pop(L, 1);
      if (bad) return -1;
    }
    o->after = ids;
    o->nafter = n;
  }
  /* Jobs enqueued by a job say so, and share its correlation id (its own
   * id when it has none), so a chain of jobs can be followed. */
  const pawl_job_t *j = w->job ? w->job : w->hook_job; /* a hook's too */
  if (j) {
    char parent[PAWL_ID_STRLEN];
    pawl_id_format(&j->id, parent);
    snprintf(by, PAWL_ID_STRLEN + 8, "job:%s", parent);
    o->enqueued_by = by;
    if (!o->correlation_id) {
      if (j->correlation_id) {
        o->correlation_id = j->correlation_id;
      } else {
        lua_pushstring(L, parent); /* anchored: the id outlives this */
        o->correlation_id = lua_tostring(L, -1);
        lua_rawseti(L, anchor, (int)lua_objlen(L, anchor) + 1);
      }
    }
  }
  return 0;
#undef ARG
}

static const char *host_fn_status(int status) {
  return status == PAWL_ENQ_NEW         ? "new"
         : status == PAWL_ENQ_DUPLICATE ? "duplicate"
         : status == PAWL_ENQ_RESTARTED ? "restarted" /* identity */
                                        : "existing";
}

/* host.enqueue(type, payload_json, queue, priority, delay_s, run_at_s,
 *              max_attempts, timeout_s, key, business_key, return_existing,
 *              correlation_id, tags_json, params_json, blocked,
 *              ordering_key, resource, signal, signal_timeout_s,
 *              after, when, identity, max_children, max_batch, max_depth,
 *              may_restart)
 *   -> id, status | nil, message [-26, +2, e]
 * max_*: the running job's script's fan-out limits (nil: the defaults),
 * pawl__lua_fanout(); may_restart: the script may restart a dead job
 * instance it did not enqueue. */
static int host_fn_enqueue(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  host_fn_no_load(L, w, "pawl.enqueue");
  lua_settop(L, 26);
  int may_restart = lua_toboolean(L, 26);
  lua_newtable(L); /* the anchor, at 27 */
  char err[400], by[PAWL_ID_STRLEN + 8];
  const char *type, *payload;
  pawl_enqueue_opts_t o;
  int32_t depth = 0;
  if (host_fn_read_enqueue(L, w, 1, 27, &type, &payload, &o, by, err,
                           sizeof err) ||
      pawl__lua_fanout(L, w, 23, 1, 0, "pawl.enqueue", &depth, err,
                       sizeof err)) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  o.depth = depth;
  pawl_id_t id;
  int status = 0;
  /* Nothing raises between these two: the handle acts as the job for
   * this call only (restarting a dead instance is acting on its job). */
  host_fn_actor_t actor;
  host_fn_act(L, w, &actor, may_restart ? PAWL__LUA_GRANT_RESTART : 0);
  int rc = pawl_enqueue(w->cfg.p, type, payload, &o, &id, &status);
  host_fn_act_end(w);
  if (rc != 0) {
    lua_pushnil(L);
    host_fn_push_error(L, w, rc, "restart");
    return 2;
  }
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&id, text);
  lua_pushstring(L, text);
  lua_pushstring(L, host_fn_status(status));
  return 2;
}

/* ---- signals and replace ----------------------------------------------- */

static const char *host_fn_signal_state(int state) {
  return state == PAWL_SIGNAL_DELIVERED ? "delivered"
         : state == PAWL_SIGNAL_EXPIRED ? "expired"
                                        : "waiting";
}

/* host.signal_of() -> {key, state, decision, payload, at, by,
 * timeout_at} | nil: the running job's signal (job.signal), times in
 * seconds, the payload decoded. [-0, +1, e] */
static int host_fn_signal_of(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  host_fn_no_load(L, w, "job.signal");
  /* The job that runs (or whose hook runs), never an id job code could
   * have put in its table. */
  const pawl_job_t *j = w->job ? w->job : w->hook_job;
  if (!j) return luaL_error(L, "job.signal: no job is running");
  pawl_signal_info_t *sig = NULL;
  int rc = pawl_signal_get(w->cfg.p, &j->id, &sig);
  if (rc == PAWL_ENOTFOUND) {
    lua_pushnil(L);
    return 1;
  }
  if (rc) return luaL_error(L, "job.signal: %s", pawl_errmsg(w->cfg.p));
  /* Nothing below raises but out of memory; the copy is freed first. */
  lua_createtable(L, 0, 8);
  lua_pushstring(L, sig->key);
  lua_setfield(L, -2, "key");
  lua_pushstring(L, host_fn_signal_state(sig->state));
  lua_setfield(L, -2, "state");
  if (sig->timeout_at) {
    lua_pushnumber(L, (double)sig->timeout_at / 1000.0);
    lua_setfield(L, -2, "timeout_at");
  }
  if (sig->decision) {
    lua_pushstring(L, sig->decision);
    lua_setfield(L, -2, "decision");
    lua_pushnumber(L, (double)sig->delivered_at / 1000.0);
    lua_setfield(L, -2, "at");
  }
  if (sig->delivered_by) {
    lua_pushstring(L, sig->delivered_by);
    lua_setfield(L, -2, "by");
  }
  int has_payload = sig->payload != NULL;
  if (has_payload) lua_pushstring(L, sig->payload);
  pawl_signal_free(sig);
  if (has_payload) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_decode);
    lua_insert(L, -2);
    lua_call(L, 1, 1);
    lua_setfield(L, -2, "payload");
  }
  return 1;
}

/* host.signal(key, decision, payload_json, granted) -> job_id,
 * "delivered" | "already" | nil, message. Without `granted` (the script's
 * "signal" capability) only a job this job enqueued. [-4, +2, e] */
static int host_fn_signal(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  host_fn_no_load(L, w, "pawl.signal");
  char err[200] = "";
  size_t errlen = sizeof err;
  const char *key = host_fn_str(L, 1, "key", 0, err, errlen);
  const char *decision = host_fn_str(L, 2, "decision", 0, err, errlen);
  const char *payload = host_fn_optstr(L, 3, "payload");
  int granted = lua_toboolean(L, 4);
  if (err[0]) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  pawl_id_t id;
  int status = 0;
  host_fn_actor_t actor;
  host_fn_act(L, w, &actor, granted ? PAWL__LUA_GRANT_SIGNAL : 0);
  int rc = pawl_signal(w->cfg.p, key, decision, payload, &id, &status);
  host_fn_act_end(w);
  if (rc != 0) {
    lua_pushnil(L);
    host_fn_push_error(L, w, rc, "signal");
    return 2;
  }
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&id, text);
  lua_pushstring(L, text);
  lua_pushstring(L, status == PAWL_SIG_ALREADY ? "already" : "delivered");
  return 2;
}

/* host.replace(id, payload_json, params_json, queue, priority, delay_s,
 *              run_at_s, max_attempts, timeout_s, reason, granted)
 *   -> new_id | nil, message. Without `granted` (the script's "replace"
 * capability) only a job this job enqueued. [-11, +1|2, e] */
static int host_fn_replace(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  host_fn_no_load(L, w, "pawl.replace");
  pawl_id_t id;
  const char *text_id = luaL_checkstring(L, 1);
  char err[256] = "";
  size_t errlen = sizeof err;
  if (pawl_id_parse(&id, text_id) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "not a job id: %s", text_id);
    return 2;
  }
  pawl_replace_opts_t o;
  pawl_replace_opts_init(&o);
  o.payload = host_fn_optstr(L, 2, "payload");
  o.params = host_fn_optstr(L, 3, "params");
  o.queue = host_fn_optstr(L, 4, "queue");
  o.reason = host_fn_optstr(L, 10, "reason");
  int granted = lua_toboolean(L, 11);
  if (err[0]) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  double prio, delay, run_at, attempts, timeout;
  if (host_fn_optnum(L, 5, "priority", PAWL_PRIORITY_MIN, PAWL_PRIORITY_MAX, 1,
                     NULL, &prio, err, sizeof err) ||
      host_fn_optnum(L, 6, "delay", 0, PAWL_DELAY_MAX_MS / 1000.0, 0,
                     "seconds", &delay, err, sizeof err) ||
      host_fn_optnum(L, 7, "run_at", 0, PAWL_TIME_MAX_MS / 1000.0, 0,
                     "seconds since the epoch", &run_at, err, sizeof err) ||
      host_fn_optnum(L, 8, "max_attempts", 1, PAWL_ATTEMPTS_MAX, 1, NULL,
                     &attempts, err, sizeof err) ||
      host_fn_optnum(L, 9, "timeout", 0, PAWL_TIMEOUT_MAX_S, 1, "seconds",
                     &timeout, err, sizeof err)) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  o.set_priority = !lua_isnoneornil(L, 5);
  o.priority = (int32_t)prio;
  o.delay_ms = (int64_t)ceil(delay * 1000.0);
  o.run_at = (int64_t)ceil(run_at * 1000.0);
  o.max_attempts = (int32_t)attempts;
  o.timeout_s = (int32_t)timeout;
  pawl_id_t nid;
  host_fn_actor_t actor;
  host_fn_act(L, w, &actor, granted ? PAWL__LUA_GRANT_REPLACE : 0);
  int rc = pawl_replace(w->cfg.p, &id, &o, &nid);
  host_fn_act_end(w);
  if (rc != 0) {
    lua_pushnil(L);
    host_fn_push_error(L, w, rc, "replace");
    return 2;
  }
  char text[PAWL_ID_STRLEN];
  pawl_id_format(&nid, text);
  lua_pushstring(L, text);
  return 1;
}

/* host.chain(steps, max_children, max_batch, max_depth, key)
 *   -> ids, status | nil, message [-5, +2, e]
 * steps: a list of argument lists, each as host.enqueue takes them; the
 * steps go in one transaction, each after the one before it succeeds
 * (pawl_chain()). ids: their ids, in order. The limits as host.enqueue's.
 * A chain made by a job has an identity (pawl__lua_fan_ident(); `key`,
 * the script's, or nil): each step without a key of its own gets the
 * idempotency key IDENTITY/STEP, so a rerun of the job finds the chain it
 * made (status "duplicate") instead of making another. */
static int host_fn_chain(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  host_fn_no_load(L, w, "pawl.chain");
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 5);
  char ferr[400] = "";
  const char *key = host_fn_str(L, 5, "key", 1, ferr, sizeof ferr);
  if (ferr[0]) {
    lua_pushnil(L);
    lua_pushstring(L, ferr);
    return 2;
  }
  size_t n = lua_objlen(L, 1);
  if (n < 1 || n > 1000) {
    lua_pushnil(L);
    lua_pushfstring(L, "a chain has 1..1000 steps (got %d)", (int)n);
    return 2;
  }
  int32_t depth = 0;
  if (pawl__lua_fanout(L, w, 2, n, 1, "pawl.chain", &depth, ferr,
                       sizeof ferr)) {
    lua_pushnil(L);
    lua_pushstring(L, ferr);
    return 2;
  }
  char ident[600];
  pawl__lua_fan_ident(w, key, ident, sizeof ident);
  lua_settop(L, 1);
  lua_newtable(L); /* the anchor, at 2 */
  pawl_enqueue_item_t *items = lua_newuserdata(L, n * sizeof *items);
  lua_rawseti(L, 2, 1);
  pawl_enqueue_opts_t *opts = lua_newuserdata(L, n * sizeof *opts);
  lua_rawseti(L, 2, 2);
  pawl_id_t *ids = lua_newuserdata(L, n * sizeof *ids);
  lua_rawseti(L, 2, 3);
  char (*by)[PAWL_ID_STRLEN + 8] = lua_newuserdata(L, n * sizeof *by);
  lua_rawseti(L, 2, 4);
  int *statuses = lua_newuserdata(L, n * sizeof *statuses);
  lua_rawseti(L, 2, 5);
  char (*keys)[sizeof ident + 16] =
      ident[0] ? lua_newuserdata(L, n * sizeof *keys) : NULL;
  if (keys) lua_rawseti(L, 2, 6);
  luaL_checkstack(L, 32, "pawl.chain");
  char err[256];
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 1, (int)i + 1); /* the step's list, at 3 */
    luaL_checktype(L, 3, LUA_TTABLE);
    for (int k = 1; k <= 22; k++) lua_rawgeti(L, 3, k);
    /* Strings stay referenced by the step's list, which `steps` holds. */
    int bad = host_fn_read_enqueue(L, w, 4, 2, &items[i].type,
                                   &items[i].payload, &opts[i], by[i], err,
                                   sizeof err);
    lua_settop(L, 2);
    if (bad) {
      lua_pushnil(L);
      lua_pushfstring(L, "step %d: %s", (int)i + 1, err);
      return 2;
    }
    items[i].opts = &opts[i];
    opts[i].depth = depth;
    if (keys && !opts[i].idempotency_key) {
      snprintf(keys[i], sizeof keys[i], "%s/%zu", ident, i + 1);
      opts[i].idempotency_key = keys[i];
    }
  }
  if (pawl__lua_fan_edges(w, opts, n, "pawl.chain", err, sizeof err)) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  host_fn_actor_t actor;
  host_fn_act(L, w, &actor, 0);
  int rc = pawl_chain(w->cfg.p, items, n, ids, statuses);
  host_fn_act_end(w);
  if (rc != 0) {
    lua_pushnil(L);
    lua_pushstring(L, pawl_errmsg(w->cfg.p));
    return 2;
  }
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    char text[PAWL_ID_STRLEN];
    pawl_id_format(&ids[i], text);
    lua_pushstring(L, text);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_pushstring(L, host_fn_status(statuses[0]));
  return 2;
}

/* host.now() -> seconds since the epoch: the store's clock, or this
 * machine's where there is no store (loading a script for pawl enqueue).
 * [-0, +1, -] */
static int host_fn_now(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  if (!w->cfg.p) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    lua_pushnumber(L, (double)ts.tv_sec + (double)(ts.tv_nsec / 1000000) / 1e3);
    return 1;
  }
  lua_pushnumber(L, (double)pawl_now(w->cfg.p) / 1000.0);
  return 1;
}

/* host.time() -> wall-clock seconds with microseconds (for measuring;
 * scheduling uses host.now, the store's clock) [-0, +1, -] */
static int host_fn_time(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushnumber(L, (double)ts.tv_sec + (double)(ts.tv_nsec / 1000) / 1e6);
  return 1;
}

/* host.print(text): a log line; dropped where there is no host log
 * (loading a script for pawl enqueue). [-1, +0, e] */
static int host_fn_print(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  if (!w->cfg.log) return 0;
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  /* A print is a log line: the message cap holds, and the job's budget. */
  if (len > PAWL_LOG_MESSAGE_MAX)
    return luaL_error(L, "print: the text is %d bytes; at most %d", (int)len,
                      PAWL_LOG_MESSAGE_MAX);
  if (!host_fn_log_allowed(w)) return 0;
  log_line_t line;
  pawl__log_begin(&line, w->cfg.log, PAWL_LOG_INFO, "print");
  if (w->job) {
    pawl__log_id(&line, "job", &w->job->id);
    pawl__log_str(&line, "type", w->job->type);
  }
  pawl__log_str(&line, "text", text);
  pawl__log_end(&line);
  return 0;
}

/* host.sleep(seconds): blocks this worker (not the host) for a while. The
 * watchdog's signal cuts it short when the job times out or the host stops
 * (nanosleep returns EINTR), and the armed hook then raises the error as it
 * does for a running loop. [-1, +0, e] */
static int host_fn_sleep(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  double s = luaL_checknumber(L, 1);
  char err[200];
  if (pawl__bounds_check("pawl.sleep: seconds", s, 0, 86400, 0, NULL, err, sizeof err))
    return luaL_error(L, "%s", err);
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    if (w->cfg.interrupted(w->cfg.data)) break;
  return 0;
}

/* ---- locks held by job code --------------------------------------------- */

/* Records a lock pawl.lock took. 0, or PAWL_ENOMEM. */
static int host_fn_lock_keep(pawl__lua_t *w, const char *name, const char *owner) {
  if (w->nlocks == w->locks_cap) {
    size_t cap = w->locks_cap ? w->locks_cap * 2 : 4;
    pawl__lua_lock_t *p = pawl__realloc(w->locks, cap * sizeof *p);
    if (!p) return PAWL_ENOMEM;
    w->locks = p;
    w->locks_cap = cap;
  }
  pawl__lua_lock_t *k = &w->locks[w->nlocks];
  k->name = pawl__strdup(name);
  k->owner = pawl__strdup(owner);
  if (!k->name || !k->owner) {
    pawl__free(k->name);
    pawl__free(k->owner);
    return PAWL_ENOMEM;
  }
  w->nlocks++;
  return 0;
}

static void host_fn_lock_forget(pawl__lua_t *w, const char *name, const char *owner) {
  for (size_t i = 0; i < w->nlocks; i++) {
    pawl__lua_lock_t *k = &w->locks[i];
    if (strcmp(k->name, name) != 0 || strcmp(k->owner, owner) != 0) continue;
    pawl__free(k->name);
    pawl__free(k->owner);
    w->locks[i] = w->locks[--w->nlocks];
    return;
  }
}

/* The locks the last call left held (it timed out, was stopped, or failed
 * to release them). A lock that cannot be released now runs out with its
 * TTL. */
void pawl__lua_release_locks(pawl__lua_t *w) {
  for (size_t i = 0; i < w->nlocks; i++) {
    pawl__lua_lock_t *k = &w->locks[i];
    if (pawl_lock_release(w->cfg.p, k->name, k->owner) != 0 && w->cfg.log) {
      log_line_t line;
      pawl__log_begin(&line, w->cfg.log, PAWL_LOG_WARN,
                "a lock the job held could not be released; it is freed "
                "when its TTL runs out");
      pawl__log_str(&line, "lock", k->name);
      pawl__log_str(&line, "error", pawl_errmsg(w->cfg.p));
      pawl__log_end(&line);
    }
    pawl__free(k->name);
    pawl__free(k->owner);
  }
  w->nlocks = 0;
}

/* host.lock_acquire(name, ttl_s) -> owner | false | nil, message: an owner
 * of our own (node id and a fresh UUIDv7: unique to this call, so two jobs
 * of one node exclude each other too). [-2, +1|2, e] */
static int host_fn_lock_acquire(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  host_fn_no_load(L, w, "pawl.lock");
  char err[200] = "";
  const char *name = host_fn_str(L, 1, "pawl.lock: name", 0, err, sizeof err);
  if (err[0]) {
    lua_pushnil(L);
    lua_pushstring(L, err + strlen("pawl.lock: "));
    return 2;
  }
  double ttl = luaL_checknumber(L, 2);
  if (pawl__bounds_check("pawl.lock: ttl", ttl, 0.001, PAWL_LEASE_MAX_MS / 1000.0, 0,
                   "seconds", err, sizeof err))
    return luaL_error(L, "%s", err);
  pawl_id_t id;
  pawl_id_new(&id);
  char owner[300], text[PAWL_ID_STRLEN];
  pawl_id_format(&id, text);
  snprintf(owner, sizeof owner, "%s/%s", pawl_node_id(w->cfg.p), text);
  int got = 0;
  if (pawl_lock_acquire(w->cfg.p, name, owner, (int64_t)ceil(ttl * 1000), &got) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, pawl_errmsg(w->cfg.p));
    return 2;
  }
  if (!got) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (host_fn_lock_keep(w, name, owner) != 0) {
    pawl_lock_release(w->cfg.p, name, owner);
    return luaL_error(L, "out of memory");
  }
  lua_pushstring(L, owner);
  return 1;
}

/* host.lock_release(name, owner) -> true | nil, message [-2, +1|2, e] */
static int host_fn_lock_release(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  host_fn_no_load(L, w, "pawl.lock");
  char err[200] = "";
  const char *name = host_fn_str(L, 1, "name", 0, err, sizeof err);
  const char *owner = host_fn_str(L, 2, "owner", 0, err, sizeof err);
  if (err[0]) return luaL_error(L, "%s", err);
  if (pawl_lock_release(w->cfg.p, name, owner) != 0) {
    /* Still recorded: the worker tries again once the call returns. */
    lua_pushnil(L);
    lua_pushstring(L, pawl_errmsg(w->cfg.p));
    return 2;
  }
  host_fn_lock_forget(w, name, owner);
  lua_pushboolean(L, 1);
  return 1;
}

/* 53 random bits as a double, from the kernel (getrandom). A seed, never
 * a key: should getrandom fail (a kernel without it), the clock, the thread
 * and an address are mixed instead, which still tells states apart. */
double pawl__lua_entropy(void) {
  uint64_t x = 0;
  if (getrandom(&x, sizeof x, GRND_NONBLOCK) != (ssize_t)sizeof x) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^
        (uint64_t)(uintptr_t)&x ^ ((uint64_t)pthread_self() << 17);
    /* splitmix64's finalizer spreads the bits */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    x ^= x >> 31;
  }
  return (double)(x >> 11);
}

/* host.entropy() -> a fresh random seed for math.randomseed [-0, +1, -] */
static int host_fn_entropy(lua_State *L) {
  lua_pushnumber(L, pawl__lua_entropy());
  return 1;
}

/* host.redact_web_url(url) -> `url` as messages show it: its user
 * information and query replaced (pawl__redact_web_url, what the webhook
 * sender logs), so a refused webhook URL is shown the same way at script
 * load. [-1, +1, -] */
static int host_fn_redact_web_url(lua_State *L) {
  const char *url = luaL_checkstring(L, 1);
  char shown[512];
  pawl__redact_web_url(url, shown, sizeof shown);
  lua_pushstring(L, shown);
  return 1;
}

/* host.redact_key(key) -> whether admin views hide the value of a member
 * named `key` by the built-in words (pawl__redact_key): ctx:log
 * fields follow the same rule. [-1, +1, -] */
static int host_fn_redact_key(lua_State *L) {
  size_t len;
  const char *k = luaL_checklstring(L, 1, &len);
  lua_pushboolean(L, pawl__redact_key(k, len, NULL, 0));
  return 1;
}

/* host.text(s) -> s made valid UTF-8 without NUL: each byte that does not
 * start a well-formed sequence, and each NUL, becomes U+FFFD (as
 * pawl__utf8_scrub does for what reaches the store). The string itself when it
 * is already clean, the common case. [-1, +1, m] */
static int host_fn_text(lua_State *L) {
  size_t len, i = 0;
  const unsigned char *s = (const unsigned char *)luaL_checklstring(L, 1, &len);
  for (size_t k; i < len && s[i] && (k = pawl__json_utf8_len(s + i, len - i)) > 0;) i += k;
  if (i == len) {
    lua_settop(L, 1);
    return 1;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, (const char *)s, i);
  while (i < len) {
    size_t k = s[i] ? pawl__json_utf8_len(s + i, len - i) : 0;
    if (k) {
      luaL_addlstring(&b, (const char *)s + i, k);
      i += k;
    } else {
      luaL_addlstring(&b, "\xef\xbf\xbd", 3);
      i++;
    }
  }
  luaL_pushresult(&b);
  return 1;
}

/* host.cron_check(expr, tz) -> nil | message: a script's cron and tz as
 * the cron core parses them (host/api/recurring.c words its refusals the
 * same way: the field, the value, why). [-2, +1, m] */
static int host_fn_cron_check(lua_State *L) {
  const char *expr = luaL_checkstring(L, 1);
  const char *tz = luaL_optstring(L, 2, "UTC");
  pawl__cron_t c;
  const pawl__tz_t *z;
  char why[PAWL__TZ_ERRLEN];
  if (pawl__cron_parse(expr, &c, why, sizeof why) != 0) {
    lua_pushfstring(L, "cron: bad expression \"%s\": %s", expr, why);
    return 1;
  }
  if (pawl__tz_get(tz, &z, why, sizeof why) != 0) {
    lua_pushfstring(L, "tz: %s", why);
    return 1;
  }
  lua_pushnil(L);
  return 1;
}

/* host.memory_check(v) -> bytes | nil, message: a script's `memory`, a
 * size ("64M", "1G") or a number of bytes, within
 * PAWL_JOB_MEMORY_MIN..MAX (bounds.c reads and words it, as it does
 * pawl run --job-memory). [-1, +1|2, m] */
static int host_fn_memory_check(lua_State *L) {
  char why[300];
  int64_t v = 0;
  int rc;
  if (lua_type(L, 1) == LUA_TNUMBER)
    rc = pawl__bounds_size_num("memory", lua_tonumber(L, 1), PAWL_JOB_MEMORY_MIN,
                               PAWL_JOB_MEMORY_MAX, &v, why, sizeof why);
  else {
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    /* A NUL inside would end the text early and pass what follows. */
    rc = strlen(text) != len
             ? pawl__bounds_size("memory", "(text with a NUL byte)",
                                 PAWL_JOB_MEMORY_MIN, PAWL_JOB_MEMORY_MAX, &v,
                                 why, sizeof why)
             : pawl__bounds_size("memory", text, PAWL_JOB_MEMORY_MIN,
                                 PAWL_JOB_MEMORY_MAX, &v, why, sizeof why);
  }
  if (rc) {
    lua_pushnil(L);
    lua_pushstring(L, why);
    return 2;
  }
  lua_pushnumber(L, (double)v);
  return 1;
}

/* ---- restartable steps ---------------------------------------------------- */

/* Forgets the exit ctx:exit gave the step. */
static void host_fn_step_forget(pawl__lua_t *w) {
  pawl__free(w->step_exit_code);
  pawl__free(w->step_exit_message);
  w->step_exit_code = w->step_exit_message = NULL;
}

/* host.steps(seq) -> { {index, name, status, checkpoint_json}, ... } |
 * nil, message: the step executions of the running job, oldest first.
 * [-1, +1|2, e] */
static int host_fn_steps(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  const pawl_job_t *job = host_fn_job(L, w, 1);
  pawl_steps_t *st = NULL;
  if (pawl_steps(w->cfg.p, &job->id, &st) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, pawl_errmsg(w->cfg.p));
    return 2;
  }
  /* Built protected from memory errors only by luaL's own: free first on
   * the one path that raises (lua_createtable and friends raise on OOM,
   * which loses `st`; acceptable for an out-of-memory state, which the
   * worker closes anyway). */
  lua_createtable(L, (int)st->n, 0);
  for (size_t i = 0; i < st->n; i++) {
    const pawl_step_exec_t *e = &st->execs[i];
    lua_createtable(L, 4, 0);
    lua_pushinteger(L, e->index);
    lua_rawseti(L, -2, 1);
    lua_pushstring(L, e->name);
    lua_rawseti(L, -2, 2);
    lua_pushinteger(L, e->status);
    lua_rawseti(L, -2, 3);
    if (e->checkpoint) {
      lua_pushstring(L, e->checkpoint);
      lua_rawseti(L, -2, 4);
    }
    lua_rawseti(L, -2, (int)i + 1);
  }
  pawl_steps_free(st);
  return 1;
}

/* host.step_begin(seq, index, name, checkpoint_json|nil) [-4, +0, e] */
static int host_fn_step_begin(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  const pawl_job_t *job = host_fn_job(L, w, 1);
  lua_Integer index = luaL_checkinteger(L, 2);
  char err[200] = "";
  size_t errlen = sizeof err;
  const char *name = host_fn_str(L, 3, "step name", 0, err, errlen);
  const char *cp = host_fn_optstr(L, 4, "checkpoint");
  if (err[0]) return luaL_error(L, "%s", err);
  if (w->step_exec) return luaL_error(L, "a step is running already");
  if (index < 1 || index > PAWL_STEPS_MAX)
    return luaL_error(L, "step index must be between 1 and %d",
                      PAWL_STEPS_MAX);
  int64_t exec = 0;
  if (pawl_step_begin(w->cfg.p, &job->id, job->attempt, (int32_t)index, name,
                      cp, &exec) != 0)
    return luaL_error(L, "step %s: %s", name, pawl_errmsg(w->cfg.p));
  w->step_exec = exec;
  memset(w->step_counts, 0, sizeof w->step_counts);
  host_fn_step_forget(w);
  return 0;
}

/* host.step_save(seq, checkpoint_json) -> nil | message: the checkpoint
 * and the counters in one write. [-2, +0|1, e] */
static int host_fn_step_save(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  const pawl_job_t *job = host_fn_job(L, w, 1);
  char err[200] = "";
  const char *cp = host_fn_str(L, 2, "checkpoint", 0, err, sizeof err);
  if (err[0]) {
    lua_pushstring(L, err);
    return 1;
  }
  if (!w->step_exec) {
    lua_pushliteral(L, "only a step of a script's steps can save a checkpoint");
    return 1;
  }
  if (pawl_step_save(w->cfg.p, &job->id, job->attempt, w->step_exec, cp,
                     w->step_counts) != 0) {
    lua_pushstring(L, pawl_errmsg(w->cfg.p));
    return 1;
  }
  return 0;
}

/* host.step_count(seq, which, n) -> the counter's new value | nil, message
 * (which: 0..5 as PAWL_STEP_READ..; n a whole number, the sum within
 * 0..2^53). Counted in memory; written with the next checkpoint and at the
 * step's end. [-3, +1|2, e] */
static int host_fn_step_count(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  host_fn_job(L, w, 1);
  lua_Integer which = luaL_checkinteger(L, 2);
  double n = luaL_checknumber(L, 3);
  if (which < 0 || which >= PAWL_STEP_NCOUNTS)
    return luaL_error(L, "no such counter");
  if (!w->step_exec) {
    lua_pushnil(L);
    lua_pushliteral(L, "counters belong to a step of a script's steps");
    return 2;
  }
  double sum = (double)w->step_counts[which] + n;
  char err[200];
  if (pawl__bounds_check("the counter", sum, 0, 9007199254740991.0, 1, NULL,
                         err, sizeof err) ||
      pawl__bounds_check("n", n, -9007199254740991.0, 9007199254740991.0, 1,
                         NULL, err, sizeof err)) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  w->step_counts[which] = (int64_t)sum;
  lua_pushnumber(L, sum);
  return 1;
}

/* host.step_exit(seq, code, message|nil) -> nil | message: the exit of the
 * job (written now) and of the running step (written at its end).
 * [-3, +0|1, e] */
static int host_fn_step_exit(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  const pawl_job_t *job = host_fn_job(L, w, 1);
  char err[200] = "";
  size_t errlen = sizeof err;
  const char *code = host_fn_str(L, 2, "exit code", 0, err, errlen);
  const char *msg = host_fn_optstr(L, 3, "exit message");
  if (err[0]) {
    lua_pushstring(L, err);
    return 1;
  }
  if (pawl_job_exit(w->cfg.p, &job->id, job->attempt, code, msg) != 0) {
    lua_pushstring(L, pawl_errmsg(w->cfg.p));
    return 1;
  }
  char *c = pawl__strdup(code), *m = msg ? pawl__strdup(msg) : NULL;
  if (!c || (msg && !m)) {
    pawl__free(c);
    pawl__free(m);
    return luaL_error(L, "out of memory");
  }
  host_fn_step_forget(w);
  w->step_exit_code = c;
  w->step_exit_message = m;
  return 0;
}

/* host.step_end(seq) -> nil | message: the running step completed.
 * [-1, +0|1, e] */
static int host_fn_step_end(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  const pawl_job_t *job = host_fn_job(L, w, 1);
  if (!w->step_exec) return 0;
  int64_t exec = w->step_exec;
  w->step_exec = 0;
  int rc = pawl_step_end(w->cfg.p, &job->id, job->attempt, exec,
                         PAWL_STEP_COMPLETED, w->step_exit_code,
                         w->step_exit_message, w->step_counts);
  host_fn_step_forget(w);
  if (rc != 0) {
    lua_pushstring(L, pawl_errmsg(w->cfg.p));
    return 1;
  }
  return 0;
}

void pawl__lua_step_close(pawl__lua_t *w, const pawl__lua_outcome_t *o) {
  if (w->step_exec && w->job) {
    int status = o->kind == PAWL_OUT_SNOOZE || o->kind == PAWL_OUT_RELEASE
                     ? PAWL_STEP_STOPPED
                     : o->kind == PAWL_OUT_SUCCEEDED ? PAWL_STEP_COMPLETED
                                                     : PAWL_STEP_FAILED;
    /* The error, cut to what a step's message holds (on a character's
     * boundary: the store takes valid UTF-8 only). */
    char msg[PAWL_EXIT_MESSAGE_MAX + 1];
    const char *m = w->step_exit_message;
    if (status == PAWL_STEP_FAILED && o->error) {
      size_t n = strlen(o->error), i = 0;
      for (size_t k; i < n && i < PAWL_EXIT_MESSAGE_MAX &&
                     (k = pawl__json_utf8_len((const unsigned char *)o->error + i,
                                              n - i)) > 0 &&
                     i + k <= PAWL_EXIT_MESSAGE_MAX;)
        i += k;
      memcpy(msg, o->error, i);
      msg[i] = 0;
      m = msg;
    }
    if (pawl_step_end(w->cfg.p, &w->job->id, w->job->attempt, w->step_exec,
                      status, w->step_exit_code, m, w->step_counts) != 0 &&
        w->cfg.log) {
      log_line_t line;
      pawl__log_begin(&line, w->cfg.log, PAWL_LOG_WARN,
                      "the end of a step could not be recorded");
      pawl__log_id(&line, "job", &w->job->id);
      pawl__log_str(&line, "error", pawl_errmsg(w->cfg.p));
      pawl__log_end(&line);
    }
  }
  w->step_exec = 0;
  host_fn_step_forget(w);
}

/* ---- alerts ------------------------------------------------------------- */

/* host.node() -> this node's id, or nil without a handle [-0, +1, -] */
static int host_fn_node(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  if (w->cfg.p)
    lua_pushstring(L, pawl_node_id(w->cfg.p));
  else
    lua_pushnil(L);
  return 1;
}

/* ---- webhook grants ------------------------------------------------------ */

static void host_fn_strings_free(char **list, size_t n) {
  for (size_t i = 0; list && i < n; i++) pawl__free(list[i]);
  pawl__free(list);
}

void pawl__lua_webhook_forget(pawl__lua_t *w) {
  host_fn_strings_free(w->wh_grants, w->nwh_grants);
  host_fn_strings_free(w->wh_named, w->nwh_named);
  w->wh_grants = w->wh_named = NULL;
  w->nwh_grants = w->nwh_named = 0;
}

/* Copies the strings of list `idx` (at most 64) into *out, each passed
 * through `conv` (NULL: as they are); NULL on a bad entry (message in
 * err) or out of memory. */
static char **host_fn_strings(lua_State *L, int idx, size_t *n,
                              int (*conv)(const char *, char *), char *err,
                              size_t errlen) {
  *n = lua_objlen(L, idx);
  if (*n > 64) {
    snprintf(err, errlen, "at most 64 webhook destinations (got %zu)", *n);
    return NULL;
  }
  char **list = pawl__calloc(*n ? *n : 1, sizeof *list);
  if (!list) return NULL;
  for (size_t i = 0; i < *n; i++) {
    lua_rawgeti(L, idx, (int)i + 1);
    const char *s = lua_tostring(L, -1);
    char dest[PAWL__WEB_DEST_MAX];
    int bad = !s || (conv && conv(s, dest) != 0);
    if (!bad) list[i] = pawl__strdup(conv ? dest : s);
    lua_pop(L, 1);
    if (bad || !list[i]) {
      if (bad) snprintf(err, errlen, "not a webhook destination: %.200s",
                        s ? s : "(not a string)");
      host_fn_strings_free(list, *n);
      return NULL;
    }
  }
  return list;
}

/* host.webhook_grants(grants, urls) -> nil | message: what the loaded
 * _defaults.lua grants (its allow_webhook list, checked by the caller
 * with host.web_grant_check) and the URLs its top level gave
 * pawl.alert.webhook (the global on_dead hook may post to them), both
 * lists of strings; they replace the previous file's. [-2, +1, m] */
static int host_fn_webhook_grants(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  char err[256] = "out of memory";
  size_t ng = 0, nn = 0;
  char **grants = host_fn_strings(L, 1, &ng, NULL, err, sizeof err);
  char **named = grants ? host_fn_strings(L, 2, &nn, pawl__web_dest, err,
                                          sizeof err)
                        : NULL;
  if (!grants || !named) {
    host_fn_strings_free(grants, ng);
    lua_pushstring(L, err);
    return 1;
  }
  pawl__lua_webhook_forget(w);
  w->wh_grants = grants, w->nwh_grants = ng;
  w->wh_named = named, w->nwh_named = nn;
  lua_pushnil(L);
  return 1;
}

/* host.web_grant_check(grant) -> nil | message [-1, +1, -] */
static int host_fn_web_grant_check(lua_State *L) {
  char err[300];
  if (pawl__web_grant_check(luaL_checkstring(L, 1), err, sizeof err) == 0)
    lua_pushnil(L);
  else
    lua_pushstring(L, err);
  return 1;
}

/* Whether the code running in `w` may post to destination `dest`: a
 * grant of the operator's (pawl run --allow-webhook) or of _defaults.lua
 * covers it, or the global on_dead hook runs and _defaults.lua named it. */
static int host_fn_webhook_allowed(pawl__lua_t *w, const char *dest) {
  const pawl_host_opts_t *o = w->cfg.opts;
  for (size_t i = 0; o && i < o->nallow_webhook; i++)
    if (pawl__web_grant_covers(o->allow_webhook[i], dest)) return 1;
  for (size_t i = 0; i < w->nwh_grants; i++)
    if (pawl__web_grant_covers(w->wh_grants[i], dest)) return 1;
  for (size_t i = 0; w->alerting && i < w->nwh_named; i++)
    if (strcmp(w->wh_named[i], dest) == 0) return 1;
  return 0;
}

/* host.alert_post(url, headers, body, timeout, attempts, backoff) -> nil,
 * or why the post was not queued. The arguments were checked by
 * pawl.alert.webhook; they are checked again for their types and bounds
 * here (C must not trust its caller's numbers). Nothing is sent on this
 * thread: the owner's sender thread posts it. [-0, +1, v] */
static int host_fn_alert_post(lua_State *L) {
  pawl__lua_t *w = host_fn_worker(L);
  const char *url = luaL_checkstring(L, 1);
  /* A webhook sends data off the machine, to a place the URL (perhaps a
   * job's payload) chooses: job code may post only where the operator
   * said it may. The refusal is logged for the operator as well as
   * raised in the job. */
  char dest[PAWL__WEB_DEST_MAX];
  int valid = pawl__web_dest(url, dest) == 0;
  if (!valid || !host_fn_webhook_allowed(w, dest)) {
    char shown[512];
    pawl__redact_web_url(url, shown, sizeof shown);
    if (w->cfg.log) {
      log_line_t line;
      pawl__log_begin(&line, w->cfg.log, PAWL_LOG_WARN,
                      "webhook refused: its destination is not granted");
      if (w->job) {
        pawl__log_id(&line, "job", &w->job->id);
        pawl__log_str(&line, "type", w->job->type);
      }
      pawl__log_str(&line, "url", shown);
      pawl__log_end(&line);
    }
    if (!valid)
      return luaL_error(L, "pawl.alert.webhook: %s is not an http:// or "
                           "https:// URL with a host", shown);
    return luaL_error(L, "pawl.alert.webhook: %s is not a granted "
                         "destination (the operator grants one with pawl run "
                         "--allow-webhook HOST[:PORT] or allow_webhook in "
                         "_defaults.lua)", dest);
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *body = luaL_checkstring(L, 3);
  double timeout = luaL_checknumber(L, 4);
  double attempts = luaL_checknumber(L, 5);
  double backoff = luaL_checknumber(L, 6);
  if (!(timeout >= 0.1 && timeout <= 60) ||
      !(attempts >= 1 && attempts <= 10) ||
      !(backoff >= 0.01 && backoff <= 600))
    return luaL_error(L, "alert_post: timeout 0.1..60, attempts 1..10, "
                         "backoff 0.01..600");
  const char *headers[32];
  size_t n = lua_objlen(L, 2);
  if (n > 32) return luaL_error(L, "alert_post: at most 32 headers");
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 2, (int)i + 1);
    headers[i] = lua_tostring(L, -1);
    if (!headers[i]) return luaL_error(L, "alert_post: a header is not text");
    lua_pop(L, 1); /* the table keeps the string alive */
  }
  if (!w->cfg.post) {
    lua_pushliteral(L, "no sender: webhooks post from a running host (pawl "
                       "run, pawl_start)");
    return 1;
  }
  pawl__lua_post_t req = {
      .url = url, .headers = headers, .nheaders = n, .body = body,
      .timeout_s = timeout, .attempts = (int)attempts, .backoff_s = backoff,
  };
  char err[256];
  if (w->cfg.post(w->cfg.post_data, &req, err, sizeof err) != 0) {
    lua_pushstring(L, err);
    return 1;
  }
  lua_pushnil(L);
  return 1;
}

static const luaL_Reg host_fns[] = {
    {"log", host_fn_log},         {"progress", host_fn_progress},
    {"canceled", host_fn_canceled}, {"heartbeat", host_fn_heartbeat},
    {"signal_of", host_fn_signal_of}, {"signal", host_fn_signal},
    {"replace", host_fn_replace},
    {"enqueue", host_fn_enqueue}, {"chain", host_fn_chain}, {"now", host_fn_now},
    {"batch", pawl__lua_host_batch}, /* host_batch.c */
    {"print", host_fn_print},     {"time", host_fn_time},
    {"sleep", host_fn_sleep},     {"lock_acquire", host_fn_lock_acquire},
    {"lock_release", host_fn_lock_release}, {"entropy", host_fn_entropy},
    {"text", host_fn_text},       {"cron_check", host_fn_cron_check},
    {"memory_check", host_fn_memory_check},
    {"redact_key", host_fn_redact_key}, /* redaction in admin views */
    {"redact_web_url", host_fn_redact_web_url},
    /* restartable steps */
    {"steps", host_fn_steps},     {"step_begin", host_fn_step_begin},
    {"step_save", host_fn_step_save}, {"step_count", host_fn_step_count},
    {"step_exit", host_fn_step_exit}, {"step_end", host_fn_step_end},
    /* dead-letter alerts */
    {"node", host_fn_node},       {"alert_post", host_fn_alert_post},
    {"webhook_grants", host_fn_webhook_grants},
    {"web_grant_check", host_fn_web_grant_check},
    {NULL, NULL}};

void pawl__lua_push_host(lua_State *L, pawl__lua_t *w) {
  lua_newtable(L);
  for (const luaL_Reg *r = host_fns; r->name; r++) {
    lua_pushlightuserdata(L, w);
    lua_pushcclosure(L, r->func, 1);
    lua_setfield(L, -2, r->name);
  }
}

void pawl__lua_forget_locks(pawl__lua_t *w) {
  for (size_t i = 0; i < w->nlocks; i++) {
    pawl__free(w->locks[i].name);
    pawl__free(w->locks[i].owner);
  }
  pawl__free(w->locks);
  w->locks = NULL;
  w->nlocks = w->locks_cap = 0;
}
