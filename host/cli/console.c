/* console.c: `pawl console`, the Lua REPL admin console (direct mode).
 *
 * The terminal is this file's: line editing and history (libedit), tab
 * completion, multi-line chunks, Ctrl-C and Ctrl-D. Everything about Lua
 * is lua/pawl/console.lua's: a session there evaluates a chunk and shows
 * its results, says whether a chunk is incomplete, and offers completion
 * candidates. This file calls the session through console_call() and
 * hands it three functions: write(text), ask(question) and width().
 *
 * Attached to a running host (--connect), the session runs there: the
 * same calls go over the host's admin socket (console_client.c) to a
 * session of the same console.lua in the host's admin state, and output
 * and questions come back as frames; this front end stays as it is, and
 * its Lua state only holds completion candidates. Ctrl-C while a chunk
 * runs on the host is sent to it as an interrupt.
 *
 * Ctrl-C: while a line is edited the terminal does not turn it into a
 * signal (-isig): libedit hands it to console_ctrl_c, which discards the
 * chunk being typed. While a chunk runs, the terminal is in its normal
 * mode and Ctrl-C raises SIGINT; the handler arms a count hook on the
 * console's Lua state (as lua.c does), and the hook raises "interrupted"
 * in the running code. The checkhook LuaJIT build checks hooks in
 * compiled loops too, so `while true do end` stops. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <histedit.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "buf.h"
#include "cli_admin.h"
#include "console_client.h"

/* lua/pawl/console.lua (embedded by cmake/embed_file.cmake) and the Lua
 * module (host/lua/lua_module*.c, linked into this program). */
extern const char pawl_console_lua[];
extern const size_t pawl_console_lua_len;
int luaopen_pawl(lua_State *L);

/* History entries kept (in memory and in the file). */
#define CONSOLE_HISTORY_MAX 1000
/* A chunk longer than this is run but not kept in the history. */
#define CONSOLE_HISTORY_ENTRY_MAX (64 * 1024)
/* Completion candidates listed at most. */
#define CONSOLE_LIST_MAX 200

typedef struct console {
  lua_State *L;
  int session;            /* registry ref of the session */
  int interactive;        /* stdin is a terminal: line editing */
  EditLine *el;
  History *hist;
  char *hist_path;        /* NULL: no history file */
  char prompt[512], cont[512];
  const char *asking;     /* the question ask() shows, or NULL */
  int continuing;         /* a chunk is pending: continuation prompt */
  int interrupted;        /* Ctrl-C on the line being edited */
  int failed;             /* some chunk failed (non-interactive status) */
  console_client_t *remote; /* attached to a host: chunks run there */
} console_t;

/* The signal handler's view: the state a chunk runs in, while it runs. A
 * process has one console; a handler has nowhere else to look. */
static lua_State *volatile console_running_L;
static volatile sig_atomic_t console_remote_running; /* a chunk on the host */
static volatile sig_atomic_t console_remote_mode;    /* attached to a host */
static volatile sig_atomic_t console_exit_on_sigint;
static volatile sig_atomic_t console_echo_newline; /* stdout is a terminal */
/* A Ctrl-C that came after Enter but before the chunk started (the
 * terminal had ISIG back, nothing was running yet): the chunk is
 * interrupted as soon as it starts. */
static volatile sig_atomic_t console_local_pending;

/* [-0, +0, e] The count hook Ctrl-C arms: stop the running chunk. */
static void console_stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted (Ctrl-C)");
}

static void console_sigint(int sig) {
  /* Attached: kept until the chunk is on its way, so that a Ctrl-C right
   * after Enter (while the line is checked and sent) stops that chunk. */
  if (console_remote_running || (console_remote_mode && !console_exit_on_sigint)) {
    console_client_interrupt = 1; /* the client sends it on */
    if (console_echo_newline) {
      ssize_t w = write(STDOUT_FILENO, "\n", 1);
      (void)w;
    }
    return;
  }
  lua_State *L = console_running_L;
  if (L) {
    lua_sethook(L, console_stop_hook,
                LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
    /* The terminal echoed "^C": the error goes on a line of its own. */
    if (console_echo_newline) {
      ssize_t w = write(STDOUT_FILENO, "\n", 1);
      (void)w;
    }
    return;
  }
  if (console_exit_on_sigint) { /* waiting for piped input: end */
    signal(sig, SIG_DFL);
    raise(sig);
  }
  console_local_pending = 1;
}

/* [-0, +1, m] debug.traceback as the message handler of C's own calls. */
static int console_traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
  return 1;
}

/* ---- functions the session gets -------------------------------------------- */

/* write(text) [-0, +0, -] */
static int console_write(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  fwrite(s, 1, n, stdout);
  fflush(stdout);
  return 0;
}

/* write_err(text) [-0, +0, -] Error lines, on stderr after what stdout
 * has so far. */
static int console_write_err(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  fflush(stdout);
  fwrite(s, 1, n, stderr);
  return 0;
}

/* width() [-0, +1, -] Columns of the terminal; 0 when output goes
 * elsewhere (nothing is cut then). */
static int console_width(lua_State *L) {
  struct winsize ws;
  int w = 0;
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
    w = ws.ws_col;
  else if (getenv("COLUMNS"))
    w = atoi(getenv("COLUMNS"));
  lua_pushinteger(L, w > 0 && w < 10000 ? w : 0);
  return 1;
}

static char *console_prompt_fn(EditLine *el) {
  console_t *c = NULL;
  el_get(el, EL_CLIENTDATA, &c);
  if (c->asking) return (char *)c->asking;
  return c->continuing ? c->cont : c->prompt;
}

/* The operator's answer to `q` (malloc'd), or NULL when there is no
 * terminal to ask on (or on Ctrl-C / Ctrl-D). */
static char *console_read_answer(void *data, const char *q) {
  console_t *c = data;
  if (!c->interactive || !c->el) return NULL;
  c->asking = q;
  c->interrupted = 0;
  int n = 0;
  const char *line = el_gets(c->el, &n);
  c->asking = NULL;
  if (!line || n <= 0 || c->interrupted) {
    fputs(c->interrupted ? "^C\n" : "\n", stdout);
    c->interrupted = 0;
    return NULL;
  }
  return strndup(line, strcspn(line, "\n"));
}

/* ask(question) [-0, +1, m] The operator's answer, or nil. */
static int console_ask(lua_State *L) {
  console_t *c = lua_touserdata(L, lua_upvalueindex(1));
  const char *q = luaL_checkstring(L, 1);
  char *answer = console_read_answer(c, q);
  if (!answer) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushstring(L, answer); /* raises only without memory: then leaked */
  free(answer);
  return 1;
}

/* ---- calling the session -------------------------------------------------- */

/* Calls session:method(args...) with the `nargs` values on the stack top;
 * leaves `nres` results. On an error prints it and returns -1 (nothing
 * left on the stack). */
static int console_call(console_t *c, const char *method, int nargs, int nres) {
  lua_State *L = c->L;
  int base = lua_gettop(L) - nargs;
  int msgh = base + nargs + 1;
  lua_pushcfunction(L, console_traceback);
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->session);
  lua_getfield(L, -1, method);
  lua_insert(L, -2); /* msgh, method, session */
  for (int i = 0; i < nargs; i++) lua_pushvalue(L, base + 1 + i);
  int rc = lua_pcall(L, nargs + 1, nres, msgh);
  if (rc != 0) {
    fflush(stdout);
    fprintf(stderr, "error: %s\n", lua_tostring(L, -1));
    lua_settop(L, base);
    return -1;
  }
  /* Drop the handler and the arguments under the results. */
  lua_remove(L, msgh);
  for (int i = 0; i < nargs; i++) lua_remove(L, base + 1);
  return 0;
}

/* Runs a chunk (REPL rules unless as_script): 1 when it succeeded. */
static int console_eval(console_t *c, const char *chunk, size_t len,
                        const char *chunkname, int as_script) {
  lua_State *L = c->L;
  if (c->remote) {
    lua_pushcfunction(L, console_width);
    lua_call(L, 0, 1);
    int width = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    console_remote_running = 1; /* the flag may be set already: kept */
    int r = console_client_eval(c->remote, chunk, len,
                                as_script ? chunkname : NULL, width,
                                console_read_answer, c);
    console_remote_running = 0;
    console_client_interrupt = 0;
    if (r != 1) c->failed = 1;
    return r == 1;
  }
  lua_pushlstring(L, chunk, len);
  lua_pushstring(L, chunkname);
  lua_pushboolean(L, as_script);
  console_running_L = L;
  if (console_local_pending) { /* the handler found nothing running yet */
    console_local_pending = 0;
    lua_sethook(L, console_stop_hook,
                LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  }
  int rc = console_call(c, "eval", 3, 1);
  console_running_L = NULL;
  lua_sethook(L, NULL, 0, 0); /* a Ctrl-C that came after the end */
  if (rc) {
    c->failed = 1;
    return 0;
  }
  int ok = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!ok) c->failed = 1;
  return ok;
}

/* 1 when the chunk ends too early to run (`function f()`). */
static int console_incomplete(console_t *c, const char *chunk, size_t len) {
  if (c->remote) return console_client_incomplete(c->remote, chunk, len) == 1;
  lua_pushlstring(c->L, chunk, len);
  if (console_call(c, "incomplete", 1, 1)) return 0;
  int r = lua_toboolean(c->L, -1);
  lua_pop(c->L, 1);
  return r;
}

/* ---- completion ------------------------------------------------------------- */

static int console_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Tab: the session's candidates for the text before the cursor. One, or a
 * longer common prefix: inserted. Several: listed under the line. */
static unsigned char console_complete(EditLine *el, int ch) {
  (void)ch;
  console_t *c = NULL;
  el_get(el, EL_CLIENTDATA, &c);
  const LineInfo *li = el_line(el);
  size_t len = (size_t)(li->cursor - li->buffer);
  lua_State *L = c->L;
  int top = lua_gettop(L);
  lua_pushlstring(L, li->buffer, len);
  if (c->remote) {
    /* The host's reply: the start, then one candidate a line; made into
     * what the session's complete() returns. */
    lua_pop(L, 1);
    char *reply = console_client_complete(c->remote, li->buffer, len);
    if (!reply) return CC_ERROR;
    char *nl = strchr(reply, '\n');
    lua_pushinteger(L, atoi(reply));
    lua_newtable(L);
    int k = 0;
    for (char *p = nl ? nl + 1 : NULL; p && *p;) {
      char *e = strchr(p, '\n');
      lua_pushlstring(L, p, e ? (size_t)(e - p) : strlen(p));
      lua_rawseti(L, -2, ++k);
      p = e ? e + 1 : NULL;
    }
    free(reply);
  } else if (console_call(c, "complete", 1, 2)) {
    return CC_REDISPLAY;
  }
  size_t start = (size_t)lua_tointeger(L, -2);
  if (!lua_istable(L, -1) || start < 1 || start > len + 1) {
    lua_settop(L, top);
    return CC_ERROR;
  }
  size_t typed = len - (start - 1);
  size_t n = lua_objlen(L, -1);
  if (n == 0) {
    lua_settop(L, top);
    return CC_ERROR;
  }
  /* The candidates stay on the Lua stack (in their table) while used. */
  const char *first = NULL;
  size_t common = 0;
  for (size_t i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, (int)i);
    const char *s = lua_tostring(L, -1);
    lua_pop(L, 1);
    if (!s) continue;
    if (!first) {
      first = s;
      common = strlen(s);
    } else {
      size_t k = 0;
      while (k < common && s[k] == first[k]) k++;
      common = k;
    }
  }
  unsigned char ret = CC_REFRESH;
  if (first && common > typed) {
    char *add = strndup(first + typed, common - typed);
    if (add) el_insertstr(el, add);
    free(add);
    ret = CC_REDISPLAY;
  } else if (n > 1) {
    /* List them, sorted, as many to a line as fit. */
    size_t shown = n < CONSOLE_LIST_MAX ? n : CONSOLE_LIST_MAX, wmax = 0;
    const char **v = calloc(shown, sizeof *v);
    if (v) {
      for (size_t i = 0; i < shown; i++) {
        lua_rawgeti(L, -1, (int)i + 1);
        v[i] = lua_tostring(L, -1); /* kept alive by the table */
        lua_pop(L, 1);
        if (!v[i]) v[i] = "";
        if (strlen(v[i]) > wmax) wmax = strlen(v[i]);
      }
      qsort(v, shown, sizeof *v, console_cmp);
      lua_pushcfunction(L, console_width);
      lua_call(L, 0, 1);
      size_t cols = (size_t)lua_tointeger(L, -1);
      lua_pop(L, 1);
      size_t per = cols > wmax + 2 ? cols / (wmax + 2) : 1;
      fputc('\n', stdout);
      for (size_t i = 0; i < shown; i++)
        fprintf(stdout, "%-*s%s", (int)(wmax + 2), v[i],
                (i + 1) % per == 0 || i + 1 == shown ? "\n" : "");
      if (shown < n) fprintf(stdout, "(%zu more)\n", n - shown);
      fflush(stdout);
      free(v);
    }
    ret = CC_REDISPLAY;
  }
  lua_settop(L, top);
  return ret;
}

/* Ctrl-C on the line: discard the chunk being typed. */
static unsigned char console_ctrl_c(EditLine *el, int ch) {
  (void)ch;
  console_t *c = NULL;
  el_get(el, EL_CLIENTDATA, &c);
  c->interrupted = 1;
  const LineInfo *li = el_line(el);
  el_cursor(el, (int)(li->lastchar - li->cursor));
  return CC_NEWLINE;
}

/* ---- history ---------------------------------------------------------------- */

/* $PAWL_HISTORY ("" for none), else ~/.pawl_history. */
static char *console_history_path(void) {
  const char *env = getenv("PAWL_HISTORY");
  if (env) return *env ? strdup(env) : NULL;
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  char *p = NULL;
  if (asprintf(&p, "%s/.pawl_history", home) < 0) return NULL;
  return p;
}

/* Saves the history: the file is created readable by its owner only
 * (chunks may hold payloads and ids worth keeping private). */
static void console_history_save(console_t *c) {
  if (!c->hist_path || !c->hist) return;
  int fd = open(c->hist_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  close(fd);
  HistEvent ev;
  history(c->hist, &ev, H_SAVE, c->hist_path);
}

static void console_history_add(console_t *c, const char *chunk, size_t len) {
  if (!c->hist || len == 0 || len > CONSOLE_HISTORY_ENTRY_MAX) return;
  size_t i = 0;
  while (i < len && (chunk[i] == ' ' || chunk[i] == '\t' || chunk[i] == '\n')) i++;
  if (i == len) return;
  char *entry = strndup(chunk, len);
  if (!entry) return;
  size_t n = strlen(entry);
  while (n > 0 && entry[n - 1] == '\n') entry[--n] = 0;
  HistEvent ev;
  history(c->hist, &ev, H_ENTER, entry);
  free(entry);
  console_history_save(c);
}

/* ---- the loops ------------------------------------------------------------- */

/* ":trace", ":help", ":quit": 1 when handled, -1 to quit. */
static int console_command(console_t *c, const char *line) {
  while (*line == ' ' || *line == '\t') line++;
  if (*line != ':') return 0;
  size_t n = strcspn(line, " \t\n");
  if (strncmp(line, ":trace", n) == 0 && n > 1) {
    if (c->remote) {
      console_client_trace(c->remote);
    } else if (!console_call(c, "trace", 0, 1)) {
      printf("%s\n", lua_tostring(c->L, -1));
      lua_pop(c->L, 1);
    }
    return 1;
  }
  if ((strncmp(line, ":quit", n) == 0 || strncmp(line, ":exit", n) == 0) && n > 1)
    return -1;
  if (strncmp(line, ":help", n) == 0 && n > 1) {
    console_eval(c, "help()", 6, "=stdin", 0);
    return 1;
  }
  fprintf(stderr, "error: unknown command %.*s (:trace, :help, :quit)\n",
          (int)n, line);
  return 1;
}

/* A Ctrl-C typed right after Enter, while the editor still had the
 * terminal without ISIG, is a byte waiting in the terminal's input, not a
 * SIGINT: the editor reads one byte at a time, so nothing behind the line
 * is read yet. Seen here, it interrupts the chunk about to run, as it
 * would have a moment later; the other bytes typed ahead go back to the
 * editor for the next prompt. */
static void console_typeahead(console_t *c) {
  int avail = 0;
  if (ioctl(STDIN_FILENO, FIONREAD, &avail) || avail <= 0) return;
  char buf[256];
  char keep[sizeof buf + 1];
  size_t nkeep = 0, want = (size_t)avail < sizeof buf ? (size_t)avail
                                                      : sizeof buf;
  ssize_t n = read(STDIN_FILENO, buf, want);
  if (n <= 0) return;
  int ctrl_c = 0;
  for (ssize_t i = 0; i < n; i++) {
    if (buf[i] == 3)
      ctrl_c = 1;
    else if (buf[i] != 0)
      keep[nkeep++] = buf[i];
  }
  keep[nkeep] = 0;
  if (nkeep) el_push(c->el, keep);
  if (!ctrl_c) return;
  if (c->remote)
    console_client_interrupt = 1; /* kept by console_eval, sent at once */
  else
    console_local_pending = 1;
}

static void console_repl(console_t *c) {
  pawl_buf_t chunk;
  pawl__buf_init(&chunk);
  for (;;) {
    c->continuing = chunk.len > 0;
    c->interrupted = 0;
    console_client_interrupt = 0; /* one from an earlier chunk */
    console_local_pending = 0;
    int n = 0;
    const char *line = el_gets(c->el, &n);
    /* Ctrl-C: the chunk is dropped. Checked first: on an empty line
     * el_gets() returns NULL for it, as for Ctrl-D. */
    if (c->interrupted) {
      fputs("^C\n", stdout);
      pawl__buf_reset(&chunk);
      continue;
    }
    if (!line || n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      fputc('\n', stdout); /* Ctrl-D */
      break;
    }
    if (chunk.len == 0) {
      int cmd = console_command(c, line);
      if (cmd < 0) break;
      if (cmd > 0) continue;
    }
    pawl__buf_puts(&chunk, line);
    if (chunk.oom) {
      fprintf(stderr, "error: out of memory\n");
      pawl__buf_reset(&chunk);
      continue;
    }
    if (console_incomplete(c, pawl__buf_cstr(&chunk), chunk.len)) continue;
    console_history_add(c, pawl__buf_cstr(&chunk), chunk.len);
    console_typeahead(c);
    console_eval(c, pawl__buf_cstr(&chunk), chunk.len, "=stdin", 0);
    pawl__buf_reset(&chunk);
    if (c->remote && console_client_lost(c->remote)) break;
  }
  pawl__buf_free(&chunk);
}

/* Piped input: the same chunks, without prompts or editing. */
static void console_pipe(console_t *c) {
  pawl_buf_t chunk;
  pawl__buf_init(&chunk);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  console_exit_on_sigint = 1;
  while ((n = getline(&line, &cap, stdin)) >= 0) {
    if (chunk.len == 0) {
      int cmd = console_command(c, line);
      if (cmd < 0) break;
      if (cmd > 0) continue;
    }
    pawl__buf_append(&chunk, line, (size_t)n);
    if (console_incomplete(c, pawl__buf_cstr(&chunk), chunk.len)) continue;
    console_exit_on_sigint = 0;
    console_eval(c, pawl__buf_cstr(&chunk), chunk.len, "=stdin", 0);
    console_exit_on_sigint = 1;
    pawl__buf_reset(&chunk);
    if (c->remote && console_client_lost(c->remote)) break;
  }
  if (chunk.len && !(c->remote && console_client_lost(c->remote))) { /* what was left: run it, to report the error */
    console_eval(c, pawl__buf_cstr(&chunk), chunk.len, "=stdin", 0);
  }
  free(line);
  pawl__buf_free(&chunk);
}

static int console_editline(console_t *c) {
  c->el = el_init("pawl", stdin, stdout, stderr);
  if (!c->el) return -1;
  c->hist = history_init();
  HistEvent ev;
  if (c->hist) {
    history(c->hist, &ev, H_SETSIZE, CONSOLE_HISTORY_MAX);
    history(c->hist, &ev, H_SETUNIQUE, 1);
    c->hist_path = console_history_path();
    if (c->hist_path && access(c->hist_path, R_OK) == 0)
      history(c->hist, &ev, H_LOAD, c->hist_path);
    el_set(c->el, EL_HIST, history, c->hist);
  }
  el_set(c->el, EL_CLIENTDATA, c);
  el_set(c->el, EL_EDITOR, "emacs");
  el_set(c->el, EL_SIGNAL, 1);
  el_set(c->el, EL_PROMPT, console_prompt_fn);
  /* Ctrl-C reaches the editor as a key, not as SIGINT. */
  el_set(c->el, EL_SETTY, "-d", "-isig", NULL);
  el_set(c->el, EL_ADDFN, "pawl-complete", "complete a name", console_complete);
  el_set(c->el, EL_ADDFN, "pawl-discard", "discard the chunk", console_ctrl_c);
  el_source(c->el, NULL); /* the operator's ~/.editrc */
  el_set(c->el, EL_BIND, "^I", "pawl-complete", NULL);
  el_set(c->el, EL_BIND, "^C", "pawl-discard", NULL);
  return 0;
}

/* Reads a whole FILE.lua (a "#!" first line is skipped, as lua does). */
static char *console_read_file(const char *path, size_t *len, char *err,
                               size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  pawl_buf_t b;
  pawl__buf_init(&b);
  char tmp[65536];
  size_t n;
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) pawl__buf_append(&b, tmp, n);
  int bad = ferror(f);
  fclose(f);
  if (bad || b.oom) {
    snprintf(err, errlen, "cannot read %s", path);
    pawl__buf_free(&b);
    return NULL;
  }
  *len = b.len;
  char *s = pawl__buf_detach(&b);
  if (!s) s = strdup("");
  if (s && s[0] == '#' && s[1] == '!') {
    size_t nl = strcspn(s, "\n");
    memset(s, ' ', nl); /* keep line numbers */
  }
  return s;
}

/* [-0, +1, e] Under lua_cpcall: the session, or an error message. */
typedef struct console_setup {
  console_t *c;
  const cli_console_args_t *a;
} console_setup_t;

static int console_setup(lua_State *L) {
  console_setup_t *s = lua_touserdata(L, 1);
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_pawl);
  lua_setfield(L, -2, "pawl");
  if (luaL_loadbuffer(L, pawl_console_lua, pawl_console_lua_len,
                      "@lua/pawl/console.lua"))
    lua_error(L);
  lua_setfield(L, -2, "pawl.console");
  lua_pop(L, 2);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "pawl.console");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "new");
  lua_createtable(L, 0, 12);
  const cli_console_args_t *a = s->a;
  if (a->db) {
    lua_pushstring(L, a->db);
    lua_setfield(L, -2, "db");
  }
  lua_pushboolean(L, a->create);
  lua_setfield(L, -2, "create");
  lua_pushinteger(L, (lua_Integer)a->db_mode);
  lua_setfield(L, -2, "db_mode");
  lua_pushboolean(L, a->sync_full);
  lua_setfield(L, -2, "sync_full");
  lua_pushstring(L, a->scripts ? a->scripts : "./scripts");
  lua_setfield(L, -2, "scripts");
  lua_pushboolean(L, a->json);
  lua_setfield(L, -2, "json");
  lua_pushboolean(L, s->c->interactive);
  lua_setfield(L, -2, "interactive");
  lua_pushcfunction(L, console_write);
  lua_setfield(L, -2, "write");
  lua_pushcfunction(L, console_write_err);
  lua_setfield(L, -2, "write_err");
  lua_pushcfunction(L, console_width);
  lua_setfield(L, -2, "width");
  lua_pushlightuserdata(L, s->c);
  lua_pushcclosure(L, console_ask, 1);
  lua_setfield(L, -2, "ask");
  lua_call(L, 1, 2);
  if (lua_isnil(L, -2)) lua_error(L); /* the open's message */
  lua_pop(L, 1);
  s->c->session = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

int cli_console_main(const cli_console_args_t *a, char *err, size_t errlen) {
  console_t c;
  memset(&c, 0, sizeof c);
  c.session = LUA_NOREF;
  c.interactive = !a->code && !a->file && isatty(STDIN_FILENO);
  console_echo_newline = isatty(STDOUT_FILENO);
  setlocale(LC_CTYPE, "");
  c.L = luaL_newstate();
  if (!c.L) return snprintf(err, errlen, "out of memory"), 1;
  if (a->connect) {
    /* Attached: the session is the host's. */
    if (console_client_open(a->connect, a->token_file, c.interactive, a->json,
                            &c.remote, err, errlen)) {
      lua_close(c.L);
      return 1;
    }
    console_remote_mode = 1;
    snprintf(c.prompt, sizeof c.prompt, "pawl@%s> ",
             console_client_node(c.remote));
    size_t w = strlen(c.prompt);
    snprintf(c.cont, sizeof c.cont, "%*s..> ", (int)(w > 4 ? w - 4 : 0), "");
  }
  console_setup_t s = {&c, a};
  if (!c.remote && lua_cpcall(c.L, console_setup, &s)) {
    snprintf(err, errlen, "%s", lua_tostring(c.L, -1));
    lua_close(c.L);
    return 1;
  }
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = console_sigint; /* no SA_RESTART: a read in a chunk ends */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);

  int rc = 0;
  if (a->code) {
    rc = console_eval(&c, a->code, strlen(a->code), "=(command line)", 0) ? 0 : 1;
  } else if (a->file) {
    size_t len = 0;
    char *src = console_read_file(a->file, &len, err, errlen);
    if (!src) {
      rc = 2;
    } else {
      char name[1024];
      snprintf(name, sizeof name, "@%s", a->file);
      rc = console_eval(&c, src, len, name, 1) ? 0 : 1;
      free(src);
    }
  } else if (c.interactive) {
    if (!c.remote && !console_call(&c, "prompt", 0, 2)) {
      snprintf(c.prompt, sizeof c.prompt, "%s", lua_tostring(c.L, -2));
      snprintf(c.cont, sizeof c.cont, "%s", lua_tostring(c.L, -1));
      lua_pop(c.L, 2);
    }
    if (console_editline(&c)) {
      snprintf(err, errlen, "cannot set up line editing");
      rc = 1;
    } else {
      if (c.remote)
        printf("pawl %s console attached to %s (node %s): help() lists the "
               "functions, Ctrl-D leaves\n",
               PAWL_VERSION, a->connect, console_client_node(c.remote));
      else
        printf("pawl %s console: help() lists the functions, Ctrl-D leaves\n",
               PAWL_VERSION);
      console_repl(&c);
    }
  } else {
    console_pipe(&c);
    rc = c.failed ? 1 : 0;
  }
  fflush(stdout);
  if (c.el) el_end(c.el);
  if (c.hist) history_end(c.hist);
  free(c.hist_path);
  if (c.remote)
    console_client_close(c.remote);
  else
    console_call(&c, "close", 0, 0);
  lua_close(c.L);
  sigaction(SIGINT, &old, NULL);
  /* A chunk's error was printed already (err stays empty): main has
   * nothing to add. */
  return rc;
}
