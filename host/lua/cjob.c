/* cjob.c: job types in C (pawl_define_c) inside the Lua bridge.
 *
 * A C type becomes a script table whose run function is a C closure (made
 * here) calling the program's function, so that everything around run()
 * is the Lua job's path: pawl.worker's prepare (max_attempts, the
 * timeout), the protected call under the deadline, the result's checks,
 * and after a failure the sanitizer and the retry policy. The closure
 * turns the function's answer into what a Lua run() does: a return value
 * (the result, decoded from its JSON), or an error (the message; a fatal
 * one as pawl.fatal raises it).
 *
 * The program's function cannot be interrupted (a signal only arms a hook
 * for the next Lua instruction): its timeout is checked when it returns.
 * Everything C allocates for it is freed before any Lua error is raised
 * (LuaJIT's unwinding skips C cleanup). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>

#include "alloc.h"
#include "json.h"
#include "ljson.h"
#include "state.h"

typedef struct cjob {
  pawl_job_fn fn;
  void *ud;
} cjob_t;

struct pawl_ctx {
  pawl__lua_t *w;
  lua_State *L;
  int ctx_index;             /* the Lua ctx, for ctx:log */
  char *result;              /* owned */
  char *error;               /* owned */
};

static double cjob_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* run(job, ctx) of a C type. Upvalues: the cjob_t (full userdata) and the
 * pawl__lua_t. [-2, +1, e] */
static int cjob_run(lua_State *L) {
  cjob_t *c = lua_touserdata(L, lua_upvalueindex(1));
  pawl__lua_t *w = lua_touserdata(L, lua_upvalueindex(2));
  if (!w->job) return luaL_error(L, "a C job type's run called outside a job");
  struct pawl_ctx ctx = {.w = w, .L = L, .ctx_index = 2};
  double timeout_s = w->timeout_s;
  double t0 = cjob_mono_ms();
  int rc = c->fn(w->job, &ctx, c->ud);
  double took = cjob_mono_ms() - t0;
  int late = timeout_s > 0 && took > timeout_s * 1000.0;
  if (!late && rc == PAWL_JOB_OK) {
    pawl__free(ctx.error);
    if (!ctx.result) return 0;
    /* A Lua string first, so that nothing C owns is lost if memory runs
     * out while decoding. */
    lua_pushstring(L, ctx.result);
    pawl__free(ctx.result);
    size_t len = 0;
    const char *s = lua_tolstring(L, -1, &len);
    char err[256];
    if (pawl__ljson_decode(L, s, len, err, sizeof err) != 0)
      return luaL_error(L, "the C job's result: %s", err);
    return 1;
  }
  pawl__free(ctx.result);
  if (late)
    lua_pushfstring(L, "job timed out after %f s (a C job is stopped only "
                       "when it returns)", timeout_s);
  else if (ctx.error)
    lua_pushstring(L, ctx.error);
  else
    lua_pushfstring(L, "the C job failed (it returned %d)", rc);
  pawl__free(ctx.error);
  if (!late && rc == PAWL_JOB_FATAL) {
    /* { [SENTINEL] = "fatal", message = msg }, as pawl.fatal raises. */
    lua_createtable(L, 0, 2);
    lua_insert(L, -2);
    lua_setfield(L, -2, "message");
    lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
    lua_getfield(L, -1, "SENTINEL");
    lua_remove(L, -2);
    lua_pushliteral(L, "fatal");
    lua_rawset(L, -3);
  }
  return lua_error(L);
}

void pawl__lua_push_cjob(lua_State *L, pawl__lua_t *w,
                         const pawl__script_t *def) {
  cjob_t *c = lua_newuserdata(L, sizeof *c);
  c->fn = def->fn;
  c->ud = def->ud;
  lua_pushlightuserdata(L, w);
  lua_pushcclosure(L, cjob_run, 2);
  const pawl_define_opts_t *o = &def->copts;
  lua_createtable(L, 0, 4);
  if (o->queue) {
    lua_pushstring(L, o->queue);
    lua_setfield(L, -2, "queue");
  }
  if (o->has_priority) {
    lua_pushnumber(L, o->priority);
    lua_setfield(L, -2, "priority");
  }
  if (o->max_attempts > 0) {
    lua_pushnumber(L, o->max_attempts);
    lua_setfield(L, -2, "max_attempts");
  }
  if (o->timeout_s > 0) {
    lua_pushnumber(L, o->timeout_s);
    lua_setfield(L, -2, "timeout");
  }
}

/* ---- the context -------------------------------------------------------- */

int pawl_ctx_set_result(pawl_ctx_t *ctx, const char *json) {
  if (!json) return PAWL_EINVAL;
  char err[256];
  if (pawl__json_validate(json, strlen(json), err, sizeof err) != 0)
    return PAWL_EINVAL;
  char *copy = pawl__strdup(json);
  if (!copy) return PAWL_ENOMEM;
  pawl__free(ctx->result);
  ctx->result = copy;
  return 0;
}

int pawl_ctx_fail(pawl_ctx_t *ctx, const char *msg) {
  char *copy = pawl__strdup(msg ? msg : "(no error message)");
  if (!copy) return PAWL_ENOMEM;
  pawl__free(ctx->error);
  ctx->error = copy;
  return 0;
}

/* ctx:log(level, msg), protected. [-3, +0, e] */
static int cjob_log(lua_State *L) {
  lua_getfield(L, 1, "log");
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_call(L, 3, 0);
  return 0;
}

int pawl_ctx_log(pawl_ctx_t *ctx, int level, const char *msg) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  if (level < PAWL_LOG_DEBUG || level > PAWL_LOG_ERROR || !msg)
    return PAWL_EINVAL;
  lua_State *L = ctx->L;
  lua_pushcfunction(L, cjob_log);
  lua_pushvalue(L, ctx->ctx_index);
  lua_pushstring(L, names[level]);
  lua_pushstring(L, msg);
  int rc = lua_pcall(L, 3, 0, 0);
  if (rc != 0) lua_pop(L, 1);
  return rc == 0 ? 0 : PAWL_EINVAL;
}

pawl_t *pawl_ctx_handle(pawl_ctx_t *ctx) { return ctx->w->cfg.p; }
