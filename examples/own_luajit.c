/* own_luajit.c: a game with a LuaJIT of its own (for its own scripts)
 * that also runs pawl jobs, linked with the static libpawl.a.
 *
 * A game that scripts in Lua links its LuaJIT (Debian's libluajit-5.1, or
 * OpenResty's branch) and calls lua_* itself. libpawl.a carries the LuaJIT
 * pawl needs (built with LUAJIT_ENABLE_CHECKHOOK and pawl's patches: see
 * docs/security.md, "Timeouts and runaway code") with every one of its symbols
 * private, so the two never merge: whatever the link order, the game's
 * lua_* calls reach the game's LuaJIT and pawl's jobs run on pawl's.
 * This program checks both sides and exits 0 only if they hold:
 *
 * - the game's own state nests coroutine resumes NEST deep (1200): the
 *   stock LuaJIT allows it, pawl's refuses past 1000 ("C stack
 *   overflow"), so a game whose calls reached pawl's LuaJIT fails here;
 * - a job that nests as deep fails with "C stack overflow": pawl's jobs
 *   run on the patched LuaJIT, not on the game's;
 * - runaway jobs (loops that never end, hot enough to be compiled to
 *   machine code) with `timeout = 1` are stopped at their timeout: on a
 *   LuaJIT without the check hook a compiled loop never sees it, and the
 *   alarm below ends the program instead.
 *
 *   own_luajit DB_PATH
 *
 * Built and run by spec/examples/own_luajit_check.sh (ctest example.own_luajit)
 * against an installed prefix, with the game's LuaJIT named first (and
 * libpawl.a named as a file: -lpawl would pick libpawl.so beside it):
 *
 *   export PKG_CONFIG_PATH=/opt/pawl/lib/pkgconfig
 *   cc own_luajit.c $(pkg-config --cflags luajit pawl) \
 *      $(pkg-config --libs luajit) /opt/pawl/lib/libpawl.a \
 *      $(pkg-config --static --libs pawl | sed 's/-lpawl //')
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <pawl.h>

/* How deep the coroutines nest: past pawl's limit (1000), well inside
 * what the stock LuaJIT allows. */
#define NEST 1200

/* Hang guard: a runaway job that is never stopped would keep pawl_step()
 * from returning; this ends the program with a message instead. Far above
 * the jobs' 1 s timeouts, so a loaded machine never meets it. */
#define HANG_S 120

/* Each level resumes a coroutine that nests one deeper; an error comes
 * back up as it was raised (error(e, 0) adds no position). */
#define NEST_FN                                                         \
  "local function nest(n)\n"                                            \
  "  if n == 0 then return 0 end\n"                                     \
  "  local co = coroutine.create(function() return nest(n - 1) end)\n"  \
  "  local ok, v = coroutine.resume(co)\n"                              \
  "  if not ok then error(v, 0) end\n"                                  \
  "  return v + 1\n"                                                    \
  "end\n"

/* The length of the first line of an error (a traceback follows). */
static int first_line(const char *msg) {
  size_t len = strcspn(msg, "\n");
  return len > 200 ? 200 : (int)len;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define MAX_JOBS 8

/* When each job's attempt started (PAWL_EV_STARTED), by its index. */
struct started {
  int n;
  const pawl_id_t *ids;
  double at[MAX_JOBS];
};

static void on_event(void *data, const pawl_job_event_t *ev) {
  struct started *st = data;
  if (ev->kind != PAWL_EV_STARTED) return;
  for (int i = 0; i < st->n; i++)
    if (!memcmp(&st->ids[i], &ev->id, sizeof ev->id)) st->at[i] = mono_s();
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] =
      "own_luajit: a runaway job was not stopped at its timeout\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(3);
}

/* The game's side: its own state, on its own LuaJIT. */
static int game_lua(void) {
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "own_luajit: luaL_newstate failed\n");
    return -1;
  }
  luaL_openlibs(L);
  char chunk[512];
  snprintf(chunk, sizeof chunk, NEST_FN "return jit.version, nest(%d)",
           NEST);
  int rc = 0;
  if (luaL_dostring(L, chunk)) {
    fprintf(stderr,
            "own_luajit: the game's own Lua state cannot nest %d coroutine "
            "resumes (%.*s): its lua_* calls reach pawl's LuaJIT\n",
            NEST, first_line(lua_tostring(L, -1)), lua_tostring(L, -1));
    rc = -1;
  } else {
    Dl_info where;
    const char *from = "?";
    if (dladdr((void *)lua_newstate, &where) && where.dli_fname)
      from = where.dli_fname;
    printf("game: %s, nested %d coroutine resumes; Lua API from %s\n",
           lua_tostring(L, -2), (int)lua_tointeger(L, -1), from);
  }
  lua_close(L);
  return rc;
}

struct job {
  const char *type;
  const char *source;
  const char *want_error; /* what its last error must contain */
};

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: own_luajit DB_PATH\n");
    return 2;
  }
  signal(SIGALRM, on_alarm);
  alarm(HANG_S);
  if (game_lua()) return 1;

  char db[1024];
  snprintf(db, sizeof db, "sqlite:%s", argv[1]);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = db;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err)) {
    fprintf(stderr, "own_luajit: %s\n", err);
    return 1;
  }
  char nest_src[512];
  snprintf(nest_src, sizeof nest_src,
           "return { max_attempts = 1, run = function()\n" NEST_FN
           "return nest(%d) end }",
           NEST);
  /* Loops that never end and never call anything: after a few dozen
   * iterations LuaJIT compiles each to a machine-code loop, where only
   * the check hook sees a timeout. */
  struct job jobs[] = {
      {"nest", nest_src, "C stack overflow"},
      {"spin", "return { timeout = 1, max_attempts = 1, run = function() "
               "while true do end end }",
       "timed out"},
      {"count", "return { timeout = 1, max_attempts = 1, run = function() "
                "local i = 0 while i >= 0 do i = i + 1 end end }",
       "timed out"},
      {"float", "return { timeout = 1, max_attempts = 1, run = function() "
                "local x = 0.5 repeat x = x * 1.0000001 until x < 0 end }",
       "timed out"},
  };
  enum { n = sizeof jobs / sizeof jobs[0] };
  _Static_assert(n <= MAX_JOBS, "MAX_JOBS");
  pawl_id_t ids[n];
  struct started st = {n, ids, {0}};
  for (int i = 0; i < n; i++) {
    if (pawl_define(p, jobs[i].type, jobs[i].source) ||
        pawl_enqueue(p, jobs[i].type, NULL, NULL, &ids[i], NULL)) {
      fprintf(stderr, "own_luajit: %s: %s\n", jobs[i].type, pawl_errmsg(p));
      return 1;
    }
  }
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.log_level = PAWL_LOG_ERROR;
  ho.event_fn = on_event;
  ho.event_data = &st;
  if (pawl_step_start(p, &ho)) {
    fprintf(stderr, "own_luajit: %s\n", pawl_errmsg(p));
    return 1;
  }
  /* Steps until every job has failed as it must. A step runs jobs for
   * its budget plus at most one job: a runaway job returns the step once
   * it is stopped, and the time since its start bounds how long it ran. */
  int ended[n] = {0}, nended = 0;
  while (nended < n) {
    if (pawl_step(p, 100) < 0) {
      fprintf(stderr, "own_luajit: pawl_step: %s\n", pawl_errmsg(p));
      return 1;
    }
    double now = mono_s();
    for (int i = 0; i < n; i++) {
      if (ended[i]) continue;
      pawl_job_t *j = NULL;
      if (pawl_get(p, &ids[i], &j)) {
        fprintf(stderr, "own_luajit: pawl_get: %s\n", pawl_errmsg(p));
        return 1;
      }
      int bad = 0;
      if (j->state == PAWL_SUCCEEDED) {
        fprintf(stderr, "own_luajit: job %s succeeded\n", jobs[i].type);
        bad = 1;
      } else if (j->state == PAWL_FAILED) {
        const char *e = j->last_error ? j->last_error : "";
        if (!strstr(e, jobs[i].want_error)) {
          fprintf(stderr,
                  "own_luajit: job %s failed with \"%.*s\", not \"%s\"\n",
                  jobs[i].type, first_line(e), e, jobs[i].want_error);
          bad = 1;
        } else {
          /* A quick job may share its step with a runaway one: only
           * the runaway jobs' bound says something. */
          if (strstr(jobs[i].want_error, "timed out"))
            printf("job %s: \"%.*s\", ended within %.2f s of its start\n",
                   jobs[i].type, first_line(e), e, now - st.at[i]);
          else
            printf("job %s: \"%.*s\"\n", jobs[i].type, first_line(e), e);
          ended[i] = 1;
          nended++;
        }
      }
      pawl_job_free(j);
      if (bad) return 1;
    }
  }
  alarm(0);
  pawl_close(p);
  return 0;
}
