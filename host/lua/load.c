/* load.c: loading job scripts into a state, through pawl.worker's
 * load_begin/load_one/load_failed, and what a loaded script says of its
 * defaults (pawl_script_info()). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "alloc.h"
#include "state.h"

/* How long a script's top level may run where there is no host (loading
 * for pawl_script_info; the host's own loads use its load_timeout_ms). */
#define LOAD_TIMEOUT_S 10.0

/* Calls W.load_failed(name, path, msg): a script whose load was cut short keeps its
 * previous version. [-0, +0, -] */
static void load_failed(pawl__lua_t *w, int wi, const char *name,
                        const char *path, const char *msg) {
  lua_State *L = w->L;
  lua_getfield(L, wi, "load_failed");
  lua_pushstring(L, name);
  lua_pushstring(L, path);
  lua_pushstring(L, msg);
  if (pawl__lua_call(w, 3, 0, PAWL__LUA_STEP_TIMEOUT_S, NULL) != 0) lua_pop(L, 1);
}

/* The files' text as the host read it (src), so that every worker serves
 * the same version, else the file at `path` (see bridge.h). */
int pawl__lua_load(pawl__lua_t *w, const pawl__script_t *list, size_t n,
                   int report, char **errors) {
  lua_State *L = pawl__lua_enter(w);
  const pawl_host_opts_t *opts = w->cfg.opts;
  host_logger_t *log = w->cfg.log;
  double limit = opts ? (double)opts->load_timeout_ms / 1000.0 : LOAD_TIMEOUT_S;
  int top = lua_gettop(L);
  int stopped = 0;
  w->loading = 1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  int wi = lua_gettop(L);
  /* load_begin(files, opts) */
  lua_getfield(L, wi, "load_begin");
  lua_newtable(L);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, list[i].path);
    lua_setfield(L, -2, list[i].name);
  }
  if (opts) {
    lua_newtable(L);
    lua_pushboolean(L, opts->unsafe_lua);
    lua_setfield(L, -2, "unsafe");
    lua_pushboolean(L, opts->allow_io);
    lua_setfield(L, -2, "allow_io");
    lua_pushboolean(L, opts->allow_env);
    lua_setfield(L, -2, "allow_env");
    lua_pushboolean(L, opts->allow_signal);
    lua_setfield(L, -2, "allow_signal");
    lua_pushboolean(L, opts->allow_replace);
    lua_setfield(L, -2, "allow_replace");
    lua_pushboolean(L, opts->allow_restart);
    lua_setfield(L, -2, "allow_restart");
    lua_pushnumber(L, (double)opts->default_timeout_s);
    lua_setfield(L, -2, "default_timeout");
  } else {
    lua_pushnil(L);
  }
  int why = 0;
  if (pawl__lua_call(w, 2, 0, PAWL__LUA_STEP_TIMEOUT_S, &why) != 0) {
    stopped = why == PAWL__LUA_STOP;
    if (log && !stopped) {
      log_line_t line;
      pawl__log_begin(&line, log, PAWL_LOG_ERROR, "loading scripts failed");
      pawl__log_str(&line, "error", lua_tostring(L, -1));
      pawl__log_end(&line);
    }
    lua_settop(L, top);
    w->loading = 0;
    return stopped ? -1 : 0;
  }
  for (int pass = 0; pass < 2 && !stopped; pass++) {
    for (size_t i = 0; i < n && !stopped; i++) {
      const char *name = list[i].name;
      if ((strcmp(name, "_defaults") == 0) != (pass == 0)) continue;
      /* The host is stopping: no more top levels to run. */
      if (w->cfg.stopping && (stopped = w->cfg.stopping(w->cfg.data)))
        break;
      int rc;
      why = 0;
      if (w->hosted && !list[i].fn) {
        /* The sandbox a script runs in would change the program's state
         * (its string metatable, its file metatable): refused there. */
        lua_pushfstring(L, "%s: Lua scripts do not load in the program's "
                        "own Lua state (db:step): define the type with "
                        "db:define", name);
        rc = 0;
      } else if (list[i].fn) {
        /* load_c(name, run, settings) -> nil | error */
        lua_getfield(L, wi, "load_c");
        lua_pushstring(L, name);
        pawl__lua_push_cjob(L, w, &list[i]);
        rc = pawl__lua_call(w, 3, 1, PAWL__LUA_STEP_TIMEOUT_S, &why);
      } else {
        /* load_one(name, path, src) -> nil | error */
        lua_getfield(L, wi, "load_one");
        lua_pushstring(L, name);
        lua_pushstring(L, list[i].path);
        if (list[i].src)
          lua_pushlstring(L, list[i].src, list[i].len);
        else
          lua_pushnil(L);
        rc = pawl__lua_call(w, 3, 1, limit, &why);
      }
      char *msg = NULL;
      if (rc != 0 && why == PAWL__LUA_STOP) {
        stopped = 1;
      } else if (rc != 0) {
        if (why == PAWL__LUA_MEMORY) {
          char mem[200];
          pawl__lua_memory_text(w, "its top level", mem, sizeof mem);
          if (pawl__asprintf(&msg, "script %s: %s", name, mem) < 0) msg = NULL;
        } else if (why) {
          if (pawl__asprintf(&msg, "script %s: loading took longer than %g s", name,
                       limit) < 0)
            msg = NULL;
        } else {
          msg = pawl__lua_strdup(lua_tostring(L, -1));
        }
        if (!msg) msg = pawl__lua_strdup("(no error message)");
        load_failed(w, wi, name, list[i].path, msg);
      } else if (!lua_isnil(L, -1) && why == PAWL__LUA_MEMORY) {
        /* pawl.worker caught the top level's memory error. */
        char mem[200];
        pawl__lua_memory_text(w, "its top level", mem, sizeof mem);
        if (pawl__asprintf(&msg, "script %s: %s", name, mem) < 0) msg = NULL;
      } else if (!lua_isnil(L, -1)) {
        msg = pawl__lua_strdup(lua_tostring(L, -1));
      }
      lua_pop(L, 1);
      if (msg && report && log) {
        log_line_t line;
        pawl__log_begin(&line, log, PAWL_LOG_ERROR,
                  "script not loaded (a previous version, if any, keeps serving)");
        pawl__log_str(&line, "script", name);
        pawl__log_str(&line, "error", msg);
        pawl__log_end(&line);
      }
      if (msg && errors)
        errors[i] = msg;
      else
        pawl__free(msg);
    }
  }
  lua_settop(L, top);
  w->loading = 0;
  /* The scripts as loaded are the workers' resting size: jobs' ceilings
   * count from here. */
  pawl__lua_heap_rest(w);
  return stopped ? -1 : 0;
}

void pawl__lua_set_load_errors(pawl__lua_t *w, const char *dir,
                               const pawl_script_error_t *e, size_t n) {
  lua_State *L = pawl__lua_enter(w);
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "set_load_errors");
  lua_remove(L, -2);
  lua_createtable(L, 0, (int)(n < 64 ? n : 64));
  for (size_t i = 0; i < n; i++) {
    if (strcmp(e[i].type, "_defaults") == 0) continue;
    lua_createtable(L, 0, 2);
    if (dir)
      lua_pushfstring(L, "%s/%s.lua", dir, e[i].type);
    else
      lua_pushstring(L, e[i].type);
    lua_setfield(L, -2, "path");
    lua_pushstring(L, e[i].error);
    lua_setfield(L, -2, "err");
    lua_setfield(L, -2, e[i].type);
  }
  if (pawl__lua_call(w, 1, 0, PAWL__LUA_STEP_TIMEOUT_S, NULL) != 0)
    lua_pop(L, 1);
}

int pawl__lua_defaults_of(pawl__lua_t *w, const char *type,
                          pawl_script_info_t *out) {
  lua_State *L = pawl__lua_enter(w);
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "defaults_of");
  lua_remove(L, -2);
  lua_pushstring(L, type);
  if (pawl__lua_call(w, 1, 10, PAWL__LUA_STEP_TIMEOUT_S, NULL) != 0) {
    lua_pop(L, 1);
    return -1;
  }
  /* What applies to jobs that set none: checked values (max_attempts
   * 1..10000, a timeout of at most PAWL_TIMEOUT_MAX_S). */
  out->applied_max_attempts = (int32_t)lua_tonumber(L, -2);
  out->applied_timeout_s = (int32_t)ceil(lua_tonumber(L, -1));
  lua_pop(L, 2);
  /* Identifying fields: pawl.worker checked them (1..16
   * names of at most 200 bytes). */
  if (lua_istable(L, -1)) {
    size_t n = lua_objlen(L, -1);
    for (size_t i = 0; i < n && i < 16; i++) {
      lua_rawgeti(L, -1, (int)i + 1);
      const char *f = lua_tostring(L, -1);
      snprintf(out->identity[i], sizeof out->identity[i], "%s", f ? f : "");
      out->identity_ptrs[i] = out->identity[i];
      out->nidentity = i + 1;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  const char *q = lua_tostring(L, -7);
  if (q) snprintf(out->queue, sizeof out->queue, "%s", q);
  if (lua_isnumber(L, -6)) {
    out->has_priority = 1;
    out->priority = (int32_t)lua_tonumber(L, -6);
  }
  out->max_attempts = (int32_t)lua_tonumber(L, -5);
  out->timeout_s = (int32_t)ceil(lua_tonumber(L, -4));
  /* pawl.worker checked it: at most 200 bytes. */
  const char *k = lua_tostring(L, -3);
  if (k) snprintf(out->ordering_key, sizeof out->ordering_key, "%s", k);
  out->ordering_key_fn = lua_toboolean(L, -2);
  const char *r = lua_tostring(L, -1);
  if (r) snprintf(out->resource, sizeof out->resource, "%s", r);
  lua_pop(L, 7);
  return 0;
}

/* The redact lists of the loaded types among list[0..n) (W.types_json):
 * malloc'd JSON, or NULL when pawl.worker could not say. */
char *pawl__lua_types_json(pawl__lua_t *w, const pawl__script_t *list,
                           size_t n) {
  lua_State *L = pawl__lua_enter(w);
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "types_json");
  lua_remove(L, -2);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, list[i].name);
    lua_rawseti(L, -2, (int)i + 1);
  }
  if (pawl__lua_call(w, 1, 1, PAWL__LUA_STEP_TIMEOUT_S, NULL) != 0) {
    lua_pop(L, 1);
    return NULL;
  }
  const char *j = lua_tostring(L, -1);
  char *out = j ? pawl__strdup(j) : NULL;
  lua_pop(L, 1);
  return out;
}

/* The recurring definition `type` declares (W.cron_of): 1 with *out
 * filled (strings malloc'd: free them as pawl_recurring_free() does), 0
 * when it declares none, -1 when pawl.worker could not say or out of
 * memory. */
int pawl__lua_cron_of(pawl__lua_t *w, const char *type, pawl_recurring_t *out) {
  lua_State *L = pawl__lua_enter(w);
  memset(out, 0, sizeof *out);
  lua_rawgeti(L, LUA_REGISTRYINDEX, w->ref_worker);
  lua_getfield(L, -1, "cron_of");
  lua_remove(L, -2);
  lua_pushstring(L, type);
  if (pawl__lua_call(w, 1, 8, PAWL__LUA_STEP_TIMEOUT_S, NULL) != 0) {
    lua_pop(L, 1);
    return -1;
  }
  int found = lua_isstring(L, -8);
  if (found) {
    const char *q = lua_tostring(L, -2);
    out->name = pawl__strdup(lua_tostring(L, -8));
    out->expr = pawl__strdup(lua_tostring(L, -7));
    out->tz = pawl__strdup(lua_tostring(L, -6));
    int m = pawl_misfire_parse(lua_tostring(L, -5));
    out->misfire = m < 0 ? PAWL_MISFIRE_RUN_ONCE : m;
    out->catch_up_limit = (int32_t)lua_tonumber(L, -4);
    out->payload = pawl__strdup(lua_tostring(L, -3));
    out->queue = q ? pawl__strdup(q) : NULL;
    out->priority = (int32_t)lua_tonumber(L, -1);
    out->type = pawl__strdup(type);
    out->script = pawl__strdup(type);
    out->enabled = 1;
    out->from_script = 1;
  }
  lua_pop(L, 8);
  if (found && (!out->name || !out->expr || !out->tz || !out->payload ||
                !out->type || !out->script)) {
    /* Out of memory: free what was copied, leave *out empty. */
    pawl_recurring_t *copy = pawl__malloc(sizeof *copy);
    if (copy) {
      *copy = *out;
      pawl_recurring_free(copy, 1);
    }
    memset(out, 0, sizeof *out);
    return -1;
  }
  return found;
}
