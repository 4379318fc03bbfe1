/* lua_module_int.h: what the files of the Lua module (`require "pawl"`,
 * host/lua/lua_module*.c) share, and nothing else includes. The module is
 * written on include/pawl.h only (and, of host/, the helpers of core/ and
 * the JSON codec lua/ljson.c); its conventions (failures as nil, message,
 * code; no C allocation held across a raise; no mutable C statics) are
 * written at the top of lua_module.c.
 *
 * The files, by what they serve:
 *   lua_module.c               the handle (pawl.open, its clock), enqueue,
 *                              batches, get, signals and replace; the
 *                              handle's metatable and luaopen_pawl
 *   lua_module_args.c          what every part shares: reading arguments
 *                              and options, failures, boxes, jobs as tables
 *   lua_module_claim.c         a worker written in Lua: claim, finish,
 *                              leases, progress; a job's logs and history
 *   lua_module_admin.c         the operators' views and actions: jobs,
 *                              bulk actions, stats, nodes, locks, top,
 *                              scripts, redaction
 *   lua_module_admin_config.c  what operators set: queues, limits,
 *                              recurring definitions, retention cleanup
 *   lua_module_step.c          step mode's Lua side: db:define, db:step
 *   lua_module_step_so.c       pawl.so only: step mode started and run in
 *                              the program's Lua state
 *   lua_module_console.c       the consoles only (the CLI's and the
 *                              attached one): db:step refused, and a
 *                              handle around the host's connection
 *
 * Built three ways (CMakeLists.txt), each with its own file list rather
 * than #ifdefs in the files: pawl.so (lua_module_step_so.c), the CLI's
 * console (lua_module_console.c), and libpawl for the attached console
 * (lua_module_console.c, PAWL_LUA_MODULE_IN_HOST). */
#ifndef PAWL_LUA_MODULE_INT_H
#define PAWL_LUA_MODULE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#include "pawl.h"

#define LPAWL_HANDLE "pawl.handle"
#define LPAWL_BOX "pawl.box"
#define LPAWL_ADM_BOX "pawl.admin_box"
#define LPAWL_CJSON "pawl.cjson" /* registry: a private pawl.json (ljson.c) */

/* Largest integer a double holds exactly: ms timestamps are numbers. */
#define LPAWL_MAX_EXACT 9007199254740992.0

/* The userdata behind a handle. The clock reads `now` from here, so the
 * handle's clock can be frozen, moved and released from Lua. A userdata
 * never moves, so its address is a stable clock_data. */
typedef struct lpawl_handle {
  pawl_t *p;    /* NULL once closed */
  int frozen;   /* 1: the clock returns `now` */
  /* db:define / db:step: the job types (a registry reference to a table
   * name -> table or function; LUA_NOREF until the first define), step
   * mode started, and the lua_State calling now, which the library reads
   * at each step (pawl_step_start_lua). */
  int types_ref;
  int stepping;
  lua_State *cur;
  int64_t now;
  int borrowed; /* 1: a handle of the host's (the attached console's):
                   never closed from Lua, its clock the host's */
} lpawl_handle_t;

/* What the library returned, owned until freed by hand or by __gc. */
typedef struct lpawl_box {
  pawl_job_t *job;
  pawl_job_t **jobs;
  size_t njobs;
  pawl_history_t *hist;
  pawl_log_record_t *logs;
  size_t nlogs;
  char **names; /* db:type_redact */
} lpawl_box_t;

/* What the library returned for the admin reads, freed by __gc (the
 * LPAWL_BOX rule: nothing held in a C local across a raise). */
typedef struct lpawl_adm_box {
  char **names;
  size_t nnames;
  pawl_stats_t *stats;
  pawl_node_info_t *nodes;
  size_t nnodes;
  pawl_lock_info_t *locks;
  size_t nlocks;
  pawl_recurring_t *recs;  /* recurring definitions */
  size_t nrecs;
  pawl_queue_info_t *queues; /* db:queues() */
  size_t nqueues;
  pawl_limit_t *limits;
  size_t nlimits;
  char *top;                 /* db:top_snapshot() */
  pawl_retention_t *retention;    /* db:cleanup */
  pawl_cleanup_result_t *cleanup;
} lpawl_adm_box_t;

/* The names below cross files. Built into libpawl for the attached
 * console (PAWL_LUA_MODULE_IN_HOST) they take pawl__ names, the library's
 * rule for its internal symbols, so that a program that links both that
 * copy and one of its own (the CLI, pawl.so) never sees two definitions;
 * there the module's entry point is pawl__lua_module_open, which
 * admin_lua.c declares, and is not exported. Elsewhere they keep the
 * module's lpawl_ prefix, and luaopen_pawl is the one exported name. */
#ifdef PAWL_LUA_MODULE_IN_HOST
#define luaopen_pawl pawl__lua_module_open
#define lpawl_borrow pawl__lua_module_borrow
#define LPAWL_EXPORT
#define lpawl_check pawl__lpawl_check
#define lpawl_fail pawl__lpawl_fail
#define lpawl_fail_msg pawl__lpawl_fail_msg
#define lpawl_box_new pawl__lpawl_box_new
#define lpawl_box_free pawl__lpawl_box_free
#define lpawl_box_gc pawl__lpawl_box_gc
#define lpawl_anchor pawl__lpawl_anchor
#define lpawl_parse_id pawl__lpawl_parse_id
#define lpawl_bad_id pawl__lpawl_bad_id
#define lpawl_msg pawl__lpawl_msg
#define lpawl_check_keys pawl__lpawl_check_keys
#define lpawl_opt_int pawl__lpawl_opt_int
#define lpawl_opt_str pawl__lpawl_opt_str
#define lpawl_opt_bool pawl__lpawl_opt_bool
#define lpawl_json_arg pawl__lpawl_json_arg
#define lpawl_opt_strings pawl__lpawl_opt_strings
#define lpawl_set_str pawl__lpawl_set_str
#define lpawl_set_num pawl__lpawl_set_num
#define lpawl_set_time pawl__lpawl_set_time
#define lpawl_set_json pawl__lpawl_set_json
#define lpawl_push_id pawl__lpawl_push_id
#define lpawl_push_job pawl__lpawl_push_job
#define lpawl_return_job pawl__lpawl_return_job
#define lpawl_get pawl__lpawl_get
#define lpawl_logs pawl__lpawl_logs
#define lpawl_history pawl__lpawl_history
#define lpawl_step_register pawl__lpawl_step_register
#define lpawl_step_run pawl__lpawl_step_run
#define lpawl_claim_register pawl__lpawl_claim_register
#define lpawl_admin_register pawl__lpawl_admin_register
#define lpawl_admin_config_register pawl__lpawl_admin_config_register
#define lpawl_adm_box_new pawl__lpawl_adm_box_new
#define lpawl_adm_box_free pawl__lpawl_adm_box_free
#else
#define LPAWL_EXPORT __attribute__((visibility("default")))
#endif

/* The entry point: require "pawl" [-0, +1, e] (lua_module.c). */
LPAWL_EXPORT int luaopen_pawl(lua_State *L);

/* Hidden in every build: the CLI exports its symbols to the C modules its
 * Lua states load, and these are none of theirs. */
#pragma GCC visibility push(hidden)

/* ---- lua_module_args.c ---------------------------------------------------- */

/* [-0, +0, v] The open handle at `idx`; raises if it is closed. */
lpawl_handle_t *lpawl_check(lua_State *L, int idx);
/* [-0, +3, m] nil, the handle's message, the code's name. */
int lpawl_fail(lua_State *L, pawl_t *p, int rc);
/* [-0, +3, m] nil, a message of our own, the code's name. */
int lpawl_fail_msg(lua_State *L, int rc, const char *msg);
/* [-0, +1, m] A new box, empty. */
lpawl_box_t *lpawl_box_new(lua_State *L);
void lpawl_box_free(lpawl_box_t *b);
/* [-0, +0, -] __gc of a box. */
int lpawl_box_gc(lua_State *L);
/* [-0, +0, m] Records the value at the top in the anchor table at
 * `anchor`, so that a string pointer taken from it stays valid for the
 * rest of the call after the value is popped. */
void lpawl_anchor(lua_State *L, int anchor);
/* [-0, +0, v] Parses the job id argument at `idx`: 0 or PAWL_EINVAL. */
int lpawl_parse_id(lua_State *L, int idx, pawl_id_t *id);
/* [-0, +3, m] The failure of a bad id argument at `idx`. */
int lpawl_bad_id(lua_State *L, int idx);
/* [-0, +1, m] The message "<prefix><fmt ...>" for an argument error. */
const char *lpawl_msg(lua_State *L, const char *prefix, const char *fmt, ...);
/* [-0, +0, v] Raises unless every key of the table at `t` is one of
 * `names` (NULL-terminated). */
void lpawl_check_keys(lua_State *L, int t, const char *const *names, int argn,
                      const char *prefix, const char *what);
/* [-0, +0, e] Options of the table at `t`: an integer in [min, max]
 * (`dflt` when nil), a string kept by the anchor (NULL when nil), a
 * boolean (nil: false), an array of strings (*n of them; NULL: none). */
double lpawl_opt_int(lua_State *L, int t, const char *key, double dflt,
                     double min, double max, int argn, const char *prefix);
const char *lpawl_opt_str(lua_State *L, int t, const char *key, int anchor,
                          int argn, const char *prefix);
int lpawl_opt_bool(lua_State *L, int t, const char *key, int argn,
                   const char *prefix);
const char *const *lpawl_opt_strings(lua_State *L, int t, const char *key,
                                     int anchor, size_t *n, int argn,
                                     const char *prefix);
/* [-0, +0, e] JSON text from the value at `idx`: a table is encoded, a
 * string is taken as JSON, nil gives NULL. */
const char *lpawl_json_arg(lua_State *L, int idx, int anchor, int argn,
                           const char *prefix, const char *what);
/* [-0, +0, m] Fields of the table at the top: a string (skipped when
 * NULL), a number, a time (skipped when 0), JSON decoded (lpawl_set_json
 * says what a text that does not decode gives). */
void lpawl_set_str(lua_State *L, const char *k, const char *v);
void lpawl_set_num(lua_State *L, const char *k, double v);
void lpawl_set_time(lua_State *L, const char *k, int64_t v);
void lpawl_set_json(lua_State *L, const char *k, const char *v);
/* [-0, +1, m] A job id as text. */
void lpawl_push_id(lua_State *L, const pawl_id_t *id);
/* [-0, +1, m] A job as a table. */
void lpawl_push_job(lua_State *L, const pawl_job_t *j);
/* [-0, +1, e] The job in the box as a table, then frees it. */
int lpawl_return_job(lua_State *L, lpawl_box_t *b);

/* ---- methods other files call (db:job is built of them) --------------------- */

int lpawl_get(lua_State *L);     /* lua_module.c */
int lpawl_logs(lua_State *L);    /* lua_module_claim.c */
int lpawl_history(lua_State *L); /* lua_module_claim.c */

/* ---- step mode ------------------------------------------------------------ */

/* [-0, +1|3, e] db:step's work once its arguments are checked: the handle
 * at 1 (h), options at 3. pawl.so runs the jobs (lua_module_step_so.c);
 * the consoles refuse (lua_module_console.c). */
int lpawl_step_run(lua_State *L, lpawl_handle_t *h, double budget);

/* ---- registration ----------------------------------------------------------- */

/* [-0, +0, m] Add their methods to the table at the top. */
void lpawl_step_register(lua_State *L);
void lpawl_claim_register(lua_State *L);
void lpawl_admin_config_register(lua_State *L);
/* [-0, +0, m] Adds the admin methods (methods = 1) or module functions
 * (methods = 0) to the table at the top. */
void lpawl_admin_register(lua_State *L, int methods);

/* ---- lua_module_admin.c ----------------------------------------------------- */

/* [-0, +1, m] A new admin box, empty. */
lpawl_adm_box_t *lpawl_adm_box_new(lua_State *L);
void lpawl_adm_box_free(lpawl_adm_box_t *b);

/* ---- lua_module_console.c --------------------------------------------------- */

/* [-0, +1, m] A handle userdata around `p` (borrowed: never closed from
 * Lua, its clock the host's). The module must have been opened in L (its
 * metatable). The attached console's (admin_lua.c calls it
 * pawl__lua_module_borrow). */
void lpawl_borrow(lua_State *L, pawl_t *p);

#pragma GCC visibility pop

#endif
