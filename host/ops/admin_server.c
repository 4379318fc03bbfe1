/* admin_server.c: the attached console's server: the unix socket (and
 * the optional TCP listener) of a running host, their checks, and the
 * threads that serve every connection.
 *
 * Two threads. The serving thread polls every connection: it accepts,
 * checks the hello (and the token on TCP), and hands requests that need
 * the host's admin Lua state (lua/bridge.h, "the admin console's Lua
 * state") to the Lua thread, one at a time across all connections; a
 * request that arrives meanwhile is answered at once ("busy: another
 * console's chunk is running (N s left)"), so no console, and no
 * `pawl top --connect`, waits on another's chunk. The Lua thread runs the
 * request, its output going back as it is written; while a chunk runs, the
 * state's hook asks admin_io_check() every few ms whether its client
 * pressed Ctrl-C or went away, or the host is stopping. At stop, a chunk
 * stuck in a C call is waited for at most ADMIN_STOP_GRACE_MS (never more
 * than the admin timeout) and then left behind with its thread, as the
 * loader's stuck script is. TCP connections that have not authenticated
 * have ADMIN_AUTH_MS to do so, frames of at most ADMIN_HELLO_MAX and slots
 * of their own (ADMIN_PENDING_MAX), never the attached consoles'. The
 * wire protocol is in docs/console.md ("The wire protocol"); every
 * frame is bounded
 * (ADMIN_FRAME_MAX in, ADMIN_OUT_FRAME out), and so is what one chunk may
 * write (ADMIN_OUTPUT_MAX) and what a connection may buffer.
 *
 * The socket is made safely: its directory is checked, an existing path
 * is refused unless it is our user's stale socket, and the socket is
 * bound in a private directory (mode 0700) beside it, set to 0600 and
 * renamed into place, so it never exists with other bits and a path that
 * changes meanwhile (a symbolic link dropped in) is replaced, not
 * followed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "alloc.h"
#include "buf.h"
#include "clock.h"
#include "ops.h"
#include "listen.h"
#include "pawl_internal.h"

#define ADMIN_PROTOCOL 1
/* The largest frame a client may send (its length field): a chunk of up
 * to 1 MiB, its type byte and a little room. */
#define ADMIN_FRAME_MAX (1024 * 1024 + 64)
/* The largest frame before hello: the hello itself (a token of at most
 * 4 KiB and a few lines). A stranger buffers no more than this. */
#define ADMIN_HELLO_MAX 8192
/* Output goes out in frames of at most this many payload bytes. */
#define ADMIN_OUT_FRAME 65536
/* What one chunk may write; the rest is dropped with a note. */
#define ADMIN_OUTPUT_MAX (8 * 1024 * 1024)
/* A connection on the unix socket (its peer's credentials already
 * checked) that has not said hello in this long is closed. */
#define ADMIN_HELLO_MS 10000
/* A TCP connection that has not said hello with the token in this long is
 * closed: a stranger holds a slot for a moment only. */
#define ADMIN_AUTH_MS 2000
/* TCP connections waiting to authenticate: slots of their own, so that
 * strangers never take the slots of the consoles that have attached. */
#define ADMIN_PENDING_MAX 16
/* A client that does not read its output for this long is dropped. */
#define ADMIN_SEND_MS 10000
/* At stop, how long a chunk stuck in a C call is waited for (at most the
 * admin timeout) before its thread is left behind. */
#define ADMIN_STOP_GRACE_MS 2000
/* The admin Lua state's memory. */
#define ADMIN_MEMORY_MAX ((size_t)256 * 1024 * 1024)
#define ADMIN_TOKEN_MAX PAWL__TOKEN_MAX

typedef struct admin_conn {
  int fd;
  int tcp;                   /* 1: came in over TCP (needs the token) */
  int hello_ok;              /* 1 once its hello was accepted */
  int session;               /* 0 until its first request made one */
  int interactive, json;
  int width, width_sent;     /* the terminal's width, and the session's */
  int busy;                  /* its request is with the Lua thread (a->mu):
                                only that thread reads or writes it then */
  int dead;                  /* closed at the end of the loop's round */
  int interrupted;           /* Ctrl-C (X frame) during a chunk */
  int64_t opened;            /* mono ms */
  unsigned char *in;         /* received, not yet handled */
  size_t inlen, incap;
  size_t out_bytes;          /* written by the chunk running now */
  int out_cut;
  char peer[64];
} admin_conn_t;

typedef struct admin_server {
  host_t *h;
  int unix_fd, tcp_fd;
  char *sock_path;           /* NULL: no unix socket */
  dev_t sock_dev;
  ino_t sock_ino;
  char tcp_name[80];
  char token[ADMIN_TOKEN_MAX + 1];
  size_t token_len;
  pawl_t *db;                /* the admin state's own connection */
  pawl__admin_lua_t *lua;
  int64_t timeout_ms;
  int max_clients;
  admin_conn_t **conns;      /* the serving thread's */
  int nconns;
  /* The Lua thread runs every request that needs the state (a chunk,
   * completion, :trace, a session's start and end); the serving thread
   * hands them over under mu, one at a time, and answers the others
   * "busy" meanwhile, so that no console waits on another's chunk. */
  pthread_t lua_thread;
  int lua_running;           /* started and not yet joined or left */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  admin_conn_t *job;         /* the request running now (mu) */
  char job_type;
  char *job_data;
  size_t job_len;
  int64_t job_deadline;      /* mono ms: when its chunk will be stopped */
  int *frees;                /* sessions to end (mu) */
  int nfrees, capfrees;
  int quit;                  /* the Lua thread ends (mu) */
  atomic_int stopping;       /* the host stops: chunks are stopped */
  int abandoned;             /* the Lua thread was left behind */
  admin_conn_t *left;        /* then, the connection it holds */
  int wake[2];               /* a request has ended: the serving thread looks */
  admin_conn_t *cur;         /* the Lua thread's: whose request runs now */
} admin_server_t;

/* ---- frames ------------------------------------------------------------------ */

/* Sends all of buf within ADMIN_SEND_MS. 0, or -1 (the connection is then
 * dead). */
static int admin_send_all(admin_conn_t *c, const void *buf, size_t len) {
  const char *p = buf;
  int64_t end = pawl__mono_ms() + ADMIN_SEND_MS;
  while (len > 0 && !c->dead) {
    ssize_t k = send(c->fd, p, len, MSG_NOSIGNAL);
    if (k > 0) {
      p += k;
      len -= (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int64_t left = end - pawl__mono_ms();
      struct pollfd pf = {.fd = c->fd, .events = POLLOUT};
      if (left > 0 && poll(&pf, 1, (int)(left < 1000 ? left : 1000)) >= 0)
        continue;
    }
    c->dead = 1;
  }
  return c->dead ? -1 : 0;
}

/* One frame: length (4 bytes, big-endian, of what follows), type, payload
 * (len at most ADMIN_OUT_FRAME for output; the callers split). */
static int admin_send(admin_conn_t *c, char type, const char *payload,
                      size_t len) {
  unsigned char hdr[5];
  uint32_t n = (uint32_t)len + 1;
  hdr[0] = (unsigned char)(n >> 24);
  hdr[1] = (unsigned char)(n >> 16);
  hdr[2] = (unsigned char)(n >> 8);
  hdr[3] = (unsigned char)n;
  hdr[4] = (unsigned char)type;
  if (admin_send_all(c, hdr, 5)) return -1;
  return len ? admin_send_all(c, payload, len) : 0;
}

static int admin_send_str(admin_conn_t *c, char type, const char *s) {
  return admin_send(c, type, s, strlen(s));
}

/* The largest frame c may send now. */
static size_t admin_frame_max(const admin_conn_t *c) {
  return c->hello_ok ? ADMIN_FRAME_MAX : ADMIN_HELLO_MAX;
}

/* Reads what the socket has into c->in (up to a whole largest frame).
 * 0, 1 when the buffer is full (its head frame is too big, or frames
 * wait to be handled), or -1 when the peer has gone. */
static int admin_fill(admin_conn_t *c) {
  size_t max = admin_frame_max(c) + 4;
  for (;;) {
    if (c->inlen >= max) return 1;
    if (c->inlen == c->incap) {
      size_t cap = c->incap ? c->incap * 2 : 4096;
      if (cap > max) cap = max;
      unsigned char *p = pawl__realloc(c->in, cap);
      if (!p) return -1;
      c->in = p;
      c->incap = cap;
    }
    size_t room = (max < c->incap ? max : c->incap) - c->inlen;
    ssize_t k = recv(c->fd, c->in + c->inlen, room, 0);
    if (k > 0) {
      c->inlen += (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return -1; /* 0: closed; else an error */
  }
}

/* The frame at the head of c->in: 1 (*type, *payload, *len set), 0 when
 * it is not all there yet, -1 when its length is out of bounds. */
static int admin_frame(admin_conn_t *c, char *type, const char **payload,
                       size_t *len) {
  if (c->inlen < 4) return 0;
  uint32_t n = (uint32_t)c->in[0] << 24 | (uint32_t)c->in[1] << 16 |
               (uint32_t)c->in[2] << 8 | c->in[3];
  if (n < 1 || n > admin_frame_max(c)) return -1;
  if (c->inlen < 4 + (size_t)n) return 0;
  *type = (char)c->in[4];
  *payload = (const char *)c->in + 5;
  *len = n - 1;
  return 1;
}

static void admin_consume(admin_conn_t *c, size_t len) {
  size_t n = 5 + len;
  memmove(c->in, c->in + n, c->inlen - n);
  c->inlen -= n;
}

/* Stops listening and removes the socket, if it is still ours (not one a
 * later host made). Idempotent. */
static void admin_unlisten(admin_server_t *a) {
  if (a->unix_fd >= 0) close(a->unix_fd);
  if (a->tcp_fd >= 0) close(a->tcp_fd);
  a->unix_fd = a->tcp_fd = -1;
  struct stat st;
  if (a->sock_path && lstat(a->sock_path, &st) == 0 &&
      st.st_dev == a->sock_dev && st.st_ino == a->sock_ino)
    unlink(a->sock_path);
  pawl__free(a->sock_path);
  a->sock_path = NULL;
}

/* ---- what the admin state calls (pawl__admin_io_t), on the Lua thread -------- */

static int admin_io_write(void *data, int stream, const char *s, size_t len) {
  admin_server_t *a = data;
  admin_conn_t *c = a->cur;
  if (!c || c->dead) return -1;
  if (c->out_cut) return 0;
  if (c->out_bytes + len > ADMIN_OUTPUT_MAX) {
    c->out_cut = 1;
    char note[160];
    snprintf(note, sizeof note,
             "... (output cut: a chunk may write at most %d MiB; the rest "
             "is dropped)\n",
             ADMIN_OUTPUT_MAX / (1024 * 1024));
    return admin_send_str(c, 'e', note);
  }
  c->out_bytes += len;
  while (len > 0) {
    size_t k = len < ADMIN_OUT_FRAME ? len : ADMIN_OUT_FRAME;
    if (admin_send(c, stream ? 'e' : 'o', s, k)) return -1;
    s += k;
    len -= k;
  }
  return 0;
}

/* Looks at what the client sent while its chunk runs: X (Ctrl-C) is
 * taken; any other frame waits for the chunk's end. 0, 1 interrupted, 2
 * gone, 3 the host is stopping. */
static int admin_io_check(void *data) {
  admin_server_t *a = data;
  admin_conn_t *c = a->cur;
  if (atomic_load(&a->stopping)) return 3;
  if (!c || c->dead) return 2;
  if (admin_fill(c) < 0) c->dead = 1;
  char type;
  const char *payload;
  size_t len;
  int r;
  while ((r = admin_frame(c, &type, &payload, &len)) == 1 && type == 'X') {
    admin_consume(c, len);
    c->interrupted = 1;
  }
  if (r < 0) c->dead = 1;
  if (c->dead) return 2;
  if (c->interrupted) {
    c->interrupted = 0;
    return 1;
  }
  return 0;
}

/* Sends the question (q frame) and waits for the answer (A frame: "1"
 * and the text, or "0" for none) until `deadline` (the chunk's). */
static char *admin_io_ask(void *data, const char *question, int64_t deadline) {
  admin_server_t *a = data;
  admin_conn_t *c = a->cur;
  if (!c || c->dead || !c->interactive) return NULL;
  if (admin_send_str(c, 'q', question)) return NULL;
  while (!c->dead) {
    char type;
    const char *payload;
    size_t len;
    int r = admin_frame(c, &type, &payload, &len);
    if (r < 0) {
      c->dead = 1;
      break;
    }
    if (r == 1) {
      char *answer = NULL;
      if (type == 'A' && len >= 1 && payload[0] == '1')
        answer = pawl__strndup(payload + 1, len - 1);
      if (type == 'X') c->interrupted = 0; /* the question's Ctrl-C: no */
      if (type == 'B') c->dead = 1;
      admin_consume(c, len);
      if (type == 'A' || type == 'X' || type == 'B') return answer;
      continue; /* nothing else belongs here: skipped */
    }
    int64_t left = deadline - pawl__mono_ms();
    if (left <= 0 || atomic_load(&a->stopping)) break;
    struct pollfd pf = {.fd = c->fd, .events = POLLIN};
    if (poll(&pf, 1, (int)(left < 100 ? left : 100)) > 0 && admin_fill(c) < 0)
      c->dead = 1;
  }
  return NULL;
}

/* ---- a connection's frames ------------------------------------------------------- */

static void admin_log(admin_server_t *a, int level, const char *msg,
                      admin_conn_t *c, const char *why) {
  log_line_t line;
  pawl__log_begin(&line, &a->h->log, level, msg);
  if (c) pawl__log_str(&line, "peer", c->peer);
  if (why) pawl__log_str(&line, "reason", why);
  pawl__log_end(&line);
}

/* Refuses the connection: a bye frame saying why, then closed. */
static void admin_refuse(admin_server_t *a, admin_conn_t *c, const char *why) {
  char msg[300];
  snprintf(msg, sizeof msg, "refused: %s", why);
  admin_send_str(c, 'b', msg);
  admin_log(a, PAWL_LOG_WARN, "console refused", c, why);
  c->dead = 1;
}

/* The value of `key=` in a hello's lines, copied into out (NUL-ended);
 * 1 when present. */
static int admin_hello_field(const char *p, size_t len, const char *key,
                             char *out, size_t outlen) {
  size_t klen = strlen(key);
  const char *end = p + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if ((size_t)(le - p) > klen && memcmp(p, key, klen) == 0 && p[klen] == '=') {
      size_t n = (size_t)(le - p) - klen - 1;
      if (n >= outlen) n = outlen - 1;
      memcpy(out, p + klen + 1, n);
      out[n] = 0;
      return 1;
    }
    p = le + 1;
  }
  return 0;
}

/* Compares the token sent with ours (listen.h). */
static int admin_token_ok(const admin_server_t *a, const char *given,
                          size_t glen) {
  return pawl__token_ok(a->token, a->token_len, given, glen);
}

static int admin_is_busy(admin_server_t *a, admin_conn_t *c) {
  pthread_mutex_lock(&a->mu);
  int b = c->busy;
  pthread_mutex_unlock(&a->mu);
  return b;
}

/* Connections holding a console's slot: every one but the TCP ones still
 * waiting to authenticate. (A busy one's fields are the Lua thread's: it
 * has said hello, so it holds a slot.) */
static int admin_attached(admin_server_t *a) {
  int n = 0;
  for (int i = 0; i < a->nconns; i++) {
    admin_conn_t *c = a->conns[i];
    n += admin_is_busy(a, c) || (!c->dead && !(c->tcp && !c->hello_ok));
  }
  return n;
}

static void admin_full(admin_server_t *a, admin_conn_t *c) {
  char why[120];
  snprintf(why, sizeof why, "%d consoles are attached already (the most)",
           a->max_clients);
  admin_refuse(a, c, why);
}

/* The hello, on the serving thread: the version, the token over TCP. The
 * session is made by the first request, on the Lua thread. */
static void admin_hello(admin_server_t *a, admin_conn_t *c, const char *p,
                        size_t len) {
  char v[16], token[ADMIN_TOKEN_MAX + 2], flag[8];
  if (!admin_hello_field(p, len, "version", v, sizeof v) ||
      atoi(v) != ADMIN_PROTOCOL) {
    admin_refuse(a, c, "unknown protocol version (this host speaks 1)");
    return;
  }
  if (c->tcp) {
    int has = admin_hello_field(p, len, "token", token, sizeof token);
    int ok = has && admin_token_ok(a, token, strlen(token));
    memset(token, 0, sizeof token);
    if (!ok) {
      admin_refuse(a, c, has ? "wrong token" : "a token is required");
      return;
    }
    /* Authenticated: now it needs a console's slot. */
    if (admin_attached(a) >= a->max_clients) {
      admin_full(a, c);
      return;
    }
  }
  c->json = admin_hello_field(p, len, "json", flag, sizeof flag) &&
            flag[0] == '1';
  c->interactive = admin_hello_field(p, len, "interactive", flag,
                                     sizeof flag) && flag[0] == '1';
  c->hello_ok = 1;
  char w[300];
  snprintf(w, sizeof w, "version=%d\nnode=%s\n", ADMIN_PROTOCOL,
           pawl_node_id(a->h->p));
  admin_send_str(c, 'w', w);
  admin_log(a, PAWL_LOG_INFO, "console attached", c, NULL);
}

/* ---- the Lua thread ------------------------------------------------------------ */

/* Runs a chunk (C: REPL rules, F: a script, "NAME\n" then its text). */
static void admin_chunk(admin_server_t *a, admin_conn_t *c, char type,
                        char *chunk, size_t len) {
  char name[256] = "=stdin";
  const char *text = chunk;
  size_t tlen = len;
  int as_script = type == 'F';
  if (as_script) {
    const char *nl = memchr(chunk, '\n', len);
    size_t n = nl ? (size_t)(nl - chunk) : 0;
    if (!nl || n == 0 || n >= sizeof name) {
      admin_refuse(a, c, "protocol error: a script frame starts with its "
                         "name and a newline");
      return;
    }
    memcpy(name, chunk, n);
    name[n] = 0;
    text = chunk + n + 1;
    tlen = len - n - 1;
  }
  c->out_bytes = 0;
  c->out_cut = 0;
  c->interrupted = 0;
  int ok = pawl__admin_eval(a->lua, c->session, text, tlen, name, as_script);
  admin_send_str(c, 'r', ok ? "1" : "0");
}

/* One request of c's (its frame's payload copied into `data`). */
static void admin_run(admin_server_t *a, admin_conn_t *c, char type,
                      char *data, size_t len) {
  a->cur = c;
  if (!c->session) {
    int s = pawl__admin_session_new(a->lua, c->json, c->interactive);
    if (s < 0) {
      admin_send_str(c, 'b', "the host could not start a console session");
      c->dead = 1;
      a->cur = NULL;
      return;
    }
    c->session = s;
  }
  if (c->width != c->width_sent) {
    pawl__admin_session_width(a->lua, c->session, c->width);
    c->width_sent = c->width;
  }
  switch (type) {
  case 'C':
  case 'F':
    admin_chunk(a, c, type, data, len);
    break;
  case 'P': {
    int inc = pawl__admin_incomplete(a->lua, c->session, data, len);
    admin_send_str(c, 'p', inc ? "1" : "0");
    break;
  }
  case 'T': {
    char *out = pawl__admin_complete(a->lua, c->session, data, len);
    admin_send_str(c, 'c', out ? out : "0\n");
    pawl__free(out);
    break;
  }
  case 'K': {
    char *t = pawl__admin_trace(a->lua, c->session);
    if (t) {
      admin_send(c, 'o', t, strlen(t) < ADMIN_OUT_FRAME ? strlen(t) : ADMIN_OUT_FRAME);
      admin_send_str(c, 'o', "\n");
    }
    admin_send_str(c, 'r', t ? "1" : "0");
    pawl__free(t);
    break;
  }
  }
  a->cur = NULL;
}

static void admin_wake(admin_server_t *a) {
  char b = 1;
  if (write(a->wake[1], &b, 1) < 0) { /* full: a wake-up is pending anyway */
  }
}

static void *admin_lua_main(void *arg) {
  admin_server_t *a = arg;
  pthread_mutex_lock(&a->mu);
  for (;;) {
    if (a->job) {
      admin_conn_t *c = a->job;
      char type = a->job_type;
      char *data = a->job_data;
      size_t len = a->job_len;
      pthread_mutex_unlock(&a->mu);
      admin_run(a, c, type, data, len);
      pawl__free(data);
      pthread_mutex_lock(&a->mu);
      a->job = NULL;
      a->job_data = NULL;
      c->busy = 0;
      pthread_cond_broadcast(&a->cv);
      admin_wake(a);
      continue;
    }
    if (a->nfrees) {
      int s = a->frees[--a->nfrees];
      pthread_mutex_unlock(&a->mu);
      pawl__admin_session_free(a->lua, s);
      pthread_mutex_lock(&a->mu);
      continue;
    }
    if (a->quit) break;
    pthread_cond_wait(&a->cv, &a->mu);
  }
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

/* ---- the serving thread ------------------------------------------------------- */

/* Answers a request that cannot run now, the way its type is answered. */
static void admin_busy(admin_server_t *a, admin_conn_t *c, char type,
                       const char *why) {
  (void)a;
  if (type == 'P') {
    admin_send_str(c, 'p', "0"); /* "complete": the chunk then hears why */
  } else if (type == 'T') {
    admin_send_str(c, 'c', "0\n");
  } else {
    admin_send_str(c, 'e', why);
    admin_send_str(c, 'r', "0");
  }
}

/* Hands request `type` (its frame at the head of c->in) to the Lua
 * thread, or answers busy at once; consumes the frame either way. */
static void admin_request(admin_server_t *a, admin_conn_t *c, char type,
                          const char *p, size_t len) {
  char why[200];
  pthread_mutex_lock(&a->mu);
  int idle = a->lua_running && !a->job && !atomic_load(&a->stopping);
  int64_t left = a->job ? a->job_deadline - pawl__mono_ms() : 0;
  pthread_mutex_unlock(&a->mu);
  if (!idle) {
    if (!a->lua_running)
      snprintf(why, sizeof why, "error: %s\n",
               atomic_load(&a->stopping) ? "the host is stopping"
                                         : "the console cannot run chunks "
                                           "(its thread did not start)");
    else if (left > 0)
      snprintf(why, sizeof why,
               "error: busy: another console's chunk is running (%lld s "
               "left)\n",
               (long long)((left + 999) / 1000));
    else
      snprintf(why, sizeof why,
               "error: busy: another console's chunk is running (past its "
               "limit, in a call that does not return)\n");
    admin_consume(c, len);
    admin_busy(a, c, type, why);
    return;
  }
  /* Only this thread hands requests out: the Lua thread stays idle. The
   * frame is consumed before the connection is handed over (the Lua
   * thread then reads c->in). */
  char *copy = pawl__malloc(len + 1);
  if (copy) {
    memcpy(copy, p, len);
    copy[len] = 0;
  }
  admin_consume(c, len);
  if (!copy) {
    admin_busy(a, c, type, "error: out of memory\n");
    return;
  }
  pthread_mutex_lock(&a->mu);
  a->job = c;
  a->job_type = type;
  a->job_data = copy;
  a->job_len = len;
  a->job_deadline = pawl__mono_ms() + a->timeout_ms;
  c->busy = 1;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
}

/* Handles every whole frame c has sent, until it hands a request over. */
static void admin_serve(admin_server_t *a, admin_conn_t *c) {
  char type;
  const char *p;
  size_t len;
  int r;
  while (!admin_is_busy(a, c) && !c->dead &&
         (r = admin_frame(c, &type, &p, &len)) != 0) {
    if (r < 0) {
      admin_refuse(a, c, c->hello_ok
                             ? "protocol error: a frame longer than 1 MiB"
                             : "protocol error: a hello is at most 8 KiB");
      return;
    }
    if (!c->hello_ok && type != 'H') {
      admin_refuse(a, c, "protocol error: hello first");
      return;
    }
    if (type == 'C' || type == 'F' || type == 'P' || type == 'T' ||
        type == 'K') {
      admin_request(a, c, type, p, len); /* consumes the frame itself */
      continue;
    }
    switch (type) {
    case 'H':
      if (c->hello_ok)
        admin_refuse(a, c, "protocol error: a second hello");
      else
        admin_hello(a, c, p, len);
      break;
    case 'W': {
      char v[16];
      size_t n = len < sizeof v - 1 ? len : sizeof v - 1;
      memcpy(v, p, n);
      v[n] = 0;
      c->width = atoi(v); /* given to the session by its next request */
      break;
    }
    case 'X':
    case 'A':
      break; /* late: the chunk or question has ended */
    case 'B':
      c->dead = 1;
      break;
    default:
      admin_refuse(a, c, "protocol error: unknown frame type");
      return;
    }
    if (!c->dead) admin_consume(c, len);
  }
}

/* ---- connections ------------------------------------------------------------------ */

/* Ends c. Its session is ended by the Lua thread (or here once that
 * thread has ended; never when it was left behind). */
static void admin_close_conn(admin_server_t *a, admin_conn_t *c) {
  if (c->session) {
    if (a->lua_running) {
      pthread_mutex_lock(&a->mu);
      if (a->nfrees == a->capfrees) {
        int cap = a->capfrees ? a->capfrees * 2 : 16;
        int *grown = pawl__realloc(a->frees, (size_t)cap * sizeof *grown);
        if (grown) {
          a->frees = grown;
          a->capfrees = cap;
        }
      }
      /* Out of memory: the session stays in the state (bounded by the
       * state's own ceiling) until the host stops. */
      if (a->nfrees < a->capfrees) a->frees[a->nfrees++] = c->session;
      pthread_cond_broadcast(&a->cv);
      pthread_mutex_unlock(&a->mu);
    } else if (!a->abandoned) {
      pawl__admin_session_free(a->lua, c->session);
    }
  }
  if (c->hello_ok) admin_log(a, PAWL_LOG_INFO, "console detached", c, NULL);
  close(c->fd);
  pawl__free(c->in);
  pawl__free(c);
}

static void admin_accept(admin_server_t *a, int lfd, int tcp) {
  int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return;
  admin_conn_t *c = pawl__calloc(1, sizeof *c);
  admin_conn_t **grown =
      c ? pawl__realloc(a->conns, (size_t)(a->nconns + 1) * sizeof *grown) : NULL;
  if (!grown) {
    pawl__free(c);
    close(fd);
    return;
  }
  a->conns = grown;
  a->conns[a->nconns++] = c;
  c->fd = fd;
  c->tcp = tcp;
  c->opened = pawl__mono_ms();
  if (tcp) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?", port[8] = "?";
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
      getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port,
                  sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(c->peer, sizeof c->peer, "tcp:%s:%s", host, port);
    /* Not authenticated yet: a slot among the waiting ones only. */
    int waiting = 0;
    for (int i = 0; i < a->nconns; i++)
      waiting += a->conns[i]->tcp && !a->conns[i]->hello_ok && !a->conns[i]->dead;
    if (waiting > ADMIN_PENDING_MAX) {
      char why[160];
      snprintf(why, sizeof why,
               "%d connections are waiting to authenticate already (the "
               "most); each has %d s",
               ADMIN_PENDING_MAX, ADMIN_AUTH_MS / 1000);
      admin_refuse(a, c, why);
    }
    return;
  }
  struct ucred cr;
  socklen_t cl = sizeof cr;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
    snprintf(c->peer, sizeof c->peer, "unix:?");
    admin_refuse(a, c, "the peer's credentials cannot be read");
    return;
  }
  snprintf(c->peer, sizeof c->peer, "unix:uid=%u,pid=%d", (unsigned)cr.uid,
           (int)cr.pid);
  if (cr.uid != geteuid() && cr.uid != 0) {
    char why[160];
    snprintf(why, sizeof why,
             "uid %u may not attach: only this host's user (uid %u) and "
             "root may",
             (unsigned)cr.uid, (unsigned)geteuid());
    admin_refuse(a, c, why);
    return;
  }
  if (admin_attached(a) > a->max_clients) admin_full(a, c);
}

/* Ends every connection that is dead, and those silent before hello
 * (never one whose request the Lua thread holds). */
static void admin_sweep(admin_server_t *a) {
  int64_t now = pawl__mono_ms();
  int k = 0;
  for (int i = 0; i < a->nconns; i++) {
    admin_conn_t *c = a->conns[i];
    if (admin_is_busy(a, c)) {
      a->conns[k++] = c;
      continue;
    }
    if (!c->dead && !c->hello_ok &&
        now - c->opened > (c->tcp ? ADMIN_AUTH_MS : ADMIN_HELLO_MS))
      admin_refuse(a, c, "no hello in time");
    if (c->dead)
      admin_close_conn(a, c);
    else
      a->conns[k++] = c;
  }
  a->nconns = k;
}

/* At stop: stops the running chunk, waits for it a little (at most the
 * admin timeout), then ends the Lua thread, or leaves it behind when it
 * is stuck in a C call, as the loader's stuck script is (host.c). */
static void admin_stop_lua(admin_server_t *a) {
  if (!a->lua_running) return;
  atomic_store(&a->stopping, 1);
  int64_t grace = a->timeout_ms < ADMIN_STOP_GRACE_MS ? a->timeout_ms
                                                      : ADMIN_STOP_GRACE_MS;
  int64_t giveup = pawl__mono_ms() + grace;
  pthread_mutex_lock(&a->mu);
  while (a->job) {
    int64_t left = giveup - pawl__mono_ms();
    if (left <= 0) break;
    struct timespec ts = pawl__mono_deadline(left < 50 ? left : 50);
    pthread_cond_timedwait(&a->cv, &a->mu, &ts);
  }
  int stuck = a->job != NULL;
  a->left = a->job;
  a->quit = 1;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
  a->lua_running = 0;
  if (!stuck) {
    pthread_join(a->lua_thread, NULL);
    return;
  }
  a->abandoned = 1;
  pthread_detach(a->lua_thread);
  pthread_mutex_lock(&a->h->mu);
  a->h->admin_abandoned = 1;
  pthread_mutex_unlock(&a->h->mu);
  log_line_t line;
  pawl__log_begin(&line, &a->h->log, PAWL_LOG_ERROR,
                  "a console's chunk, stuck in a blocking C call, was left "
                  "behind");
  pawl__log_str(&line, "peer", a->left->peer);
  pawl__log_int(&line, "waited_ms", grace);
  pawl__log_end(&line);
}

void *pawl__admin_main(void *arg) {
  admin_server_t *a = arg;
  host_t *h = a->h;
  struct pollfd *fds = NULL;
  int *which = NULL;
  if (pipe2(a->wake, O_NONBLOCK | O_CLOEXEC) != 0) a->wake[0] = a->wake[1] = -1;
  if (a->wake[0] >= 0 && pthread_create(&a->lua_thread, NULL, admin_lua_main, a) == 0) {
    a->lua_running = 1;
  } else {
    /* Served anyway: every request is then answered with why. */
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
                    "the admin console cannot run chunks: its thread did not "
                    "start");
    pawl__log_end(&line);
  }
  for (;;) {
    pthread_mutex_lock(&h->mu);
    /* Served until the host has stopped: jobs finish meanwhile, and a
     * console may watch them. */
    int end = h->stopping && h->poller_done && h->completer_done;
    pthread_mutex_unlock(&h->mu);
    if (end) break;
    size_t want = (size_t)a->nconns + 3;
    struct pollfd *grown = pawl__realloc(fds, want * sizeof *fds);
    if (grown) fds = grown;
    int *wgrown = grown ? pawl__realloc(which, want * sizeof *wgrown) : NULL;
    if (wgrown) which = wgrown;
    if (!grown || !wgrown) { /* try again next round */
      struct timespec ts = {0, 100 * 1000000};
      nanosleep(&ts, NULL);
      continue;
    }
    int n = 0;
    if (a->unix_fd >= 0) fds[n++] = (struct pollfd){.fd = a->unix_fd, .events = POLLIN};
    if (a->tcp_fd >= 0) fds[n++] = (struct pollfd){.fd = a->tcp_fd, .events = POLLIN};
    int nl = n;
    if (a->wake[0] >= 0) fds[n++] = (struct pollfd){.fd = a->wake[0], .events = POLLIN};
    int nw = n;
    /* A connection whose request runs is the Lua thread's to read. */
    for (int i = 0; i < a->nconns; i++) {
      which[i] = -1;
      if (admin_is_busy(a, a->conns[i])) continue;
      which[i] = n;
      fds[n++] = (struct pollfd){.fd = a->conns[i]->fd, .events = POLLIN};
    }
    int nc = a->nconns;
    /* 100 ms: how soon a stop of the host is noticed. */
    if (poll(fds, (nfds_t)n, 100) > 0) {
      if (nw > nl && (fds[nl].revents & POLLIN)) {
        char drain[64];
        while (read(a->wake[0], drain, sizeof drain) > 0) {
        }
      }
      for (int i = 0; i < nc; i++) {
        admin_conn_t *c = a->conns[i];
        if (which[i] < 0 || !(fds[which[i]].revents & (POLLIN | POLLHUP | POLLERR)))
          continue;
        if (admin_fill(c) < 0) c->dead = 1;
      }
      for (int i = 0; i < nl; i++)
        if (fds[i].revents & POLLIN)
          admin_accept(a, fds[i].fd, fds[i].fd == a->tcp_fd);
    }
    /* Every connection with whole frames: also those that waited while
     * their request ran. */
    for (int i = 0; i < a->nconns; i++) admin_serve(a, a->conns[i]);
    admin_sweep(a);
  }
  pawl__free(fds);
  pawl__free(which);
  admin_unlisten(a); /* the host has stopped: nobody may attach any more */
  admin_stop_lua(a);
  for (int i = 0; i < a->nconns; i++) {
    admin_conn_t *c = a->conns[i];
    if (c == a->left) continue; /* the stuck thread's */
    admin_send_str(c, 'b', "the host has stopped");
    admin_close_conn(a, c);
  }
  a->nconns = 0;
  pthread_mutex_lock(&h->mu);
  h->admin_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- making the listeners ---------------------------------------------------------- */

/* 1 when something answers on the unix socket at `path`. */
static int admin_socket_live(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int live = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ||
             (errno != ECONNREFUSED && errno != ENOENT);
  close(fd);
  return live;
}

/* Checks the socket's directory and what is at the path now. 0, or
 * PAWL_EIO with the message in err. */
static int admin_check_path(const char *path, char *err, size_t errlen) {
  uid_t me = geteuid();
  char *copy = pawl__strdup(path);
  if (!copy) return snprintf(err, errlen, "out of memory"), PAWL_ENOMEM;
  char *dir = dirname(copy);
  struct stat ds;
  int rc = 0;
  if (lstat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode)) {
    snprintf(err, errlen, "admin socket %s: its directory %s is not there", path, dir);
    rc = PAWL_EIO;
  } else if (ds.st_uid != me && ds.st_uid != 0) {
    snprintf(err, errlen,
             "admin socket %s: its directory %s belongs to uid %u, not to "
             "this user (uid %u) or root",
             path, dir, (unsigned)ds.st_uid, (unsigned)me);
    rc = PAWL_EIO;
  } else if ((ds.st_mode & 022) && !(ds.st_mode & S_ISVTX)) {
    snprintf(err, errlen,
             "admin socket %s: others may write to its directory %s (mode "
             "%04o) and it is not sticky: another user could replace the "
             "socket",
             path, dir, (unsigned)(ds.st_mode & 07777));
    rc = PAWL_EIO;
  }
  pawl__free(copy);
  if (rc) return rc;
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT) return 0;
    snprintf(err, errlen, "admin socket %s: %s", path, strerror(errno));
    return PAWL_EIO;
  }
  const char *why = NULL;
  char buf[160];
  if (S_ISLNK(st.st_mode)) {
    why = "is a symbolic link (refused: it could point anywhere)";
  } else if (st.st_uid != me) {
    snprintf(buf, sizeof buf, "belongs to uid %u, not to this user (uid %u)",
             (unsigned)st.st_uid, (unsigned)me);
    why = buf;
  } else if (!S_ISSOCK(st.st_mode)) {
    why = "exists and is not a socket";
  } else if (admin_socket_live(path)) {
    why = "is the live socket of another process (is another pawl run "
          "serving it?)";
  }
  if (why) {
    snprintf(err, errlen, "admin socket %s %s; pass --admin-socket PATH "
             "(or none)", path, why);
    return PAWL_EIO;
  }
  return 0; /* our stale socket: replaced below */
}

/* The unix socket at `path`, mode 0600 (see the file's comment). */
static int admin_bind_unix(admin_server_t *a, const char *path, char *err,
                           size_t errlen) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path) {
    snprintf(err, errlen, "admin socket %s: a socket's path is at most %zu "
             "bytes", path, sizeof sa.sun_path - 1);
    return PAWL_EINVAL;
  }
  char *copy = pawl__strdup(path);
  char tmpdir[sizeof sa.sun_path + 32];
  if (!copy) return snprintf(err, errlen, "out of memory"), PAWL_ENOMEM;
  snprintf(tmpdir, sizeof tmpdir, "%s/.pawl-sock-XXXXXX", dirname(copy));
  pawl__free(copy);
  if (strlen(tmpdir) + 2 >= sizeof sa.sun_path) {
    snprintf(err, errlen,
             "admin socket %s: its directory's name is too long for a socket "
             "(at most about %zu bytes)",
             path, sizeof sa.sun_path - 24);
    return PAWL_EINVAL;
  }
  int rc = admin_check_path(path, err, errlen);
  if (rc) return rc;
  if (!mkdtemp(tmpdir)) {
    snprintf(err, errlen, "admin socket %s: cannot make a directory beside it: %s",
             path, strerror(errno));
    return PAWL_EIO;
  }
  size_t tl = strlen(tmpdir); /* checked above: room for "/s" and a NUL */
  memcpy(sa.sun_path, tmpdir, tl);
  memcpy(sa.sun_path + tl, "/s", 3);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
           chmod(sa.sun_path, 0600) == 0 && listen(fd, 16) == 0 &&
           rename(sa.sun_path, path) == 0;
  int e = errno;
  unlink(sa.sun_path); /* when the rename did not happen */
  rmdir(tmpdir);
  struct stat st;
  if (ok && lstat(path, &st) != 0) ok = 0, e = errno;
  if (!ok) {
    if (fd >= 0) close(fd);
    snprintf(err, errlen, "admin socket %s: %s", path, strerror(e));
    return PAWL_EIO;
  }
  a->unix_fd = fd;
  a->sock_dev = st.st_dev;
  a->sock_ino = st.st_ino;
  if (!(a->sock_path = pawl__strdup(path))) return snprintf(err, errlen, "out of memory"), PAWL_ENOMEM;
  return 0;
}

/* The token file and the TCP listener, as listen.h makes them. */
static int admin_read_token(admin_server_t *a, const char *file, char *err,
                            size_t errlen) {
  return pawl__token_read(file, "admin token file", a->token, &a->token_len,
                          err, errlen);
}

static int admin_bind_tcp(admin_server_t *a, const char *spec, char *err,
                          size_t errlen) {
  return pawl__tcp_listen(spec, "--admin-listen", &a->tcp_fd, a->tcp_name,
                          sizeof a->tcp_name, NULL, err, errlen);
}

int pawl__admin_new(host_t *h, const pawl_admin_opts_t *o,
                    struct admin_server **out, char *err, size_t errlen) {
  if (!o->socket_path && !o->listen) return 0;
  if (o->timeout_ms < 0 || o->timeout_ms > PAWL_TIMEOUT_MAX_S * INT64_C(1000)) {
    snprintf(err, errlen, "admin timeout_ms must be between 0 and %lld (got %lld)",
             (long long)(PAWL_TIMEOUT_MAX_S * INT64_C(1000)), (long long)o->timeout_ms);
    return PAWL_EINVAL;
  }
  if (o->max_clients < 0 || o->max_clients > 256) {
    snprintf(err, errlen, "admin max_clients must be between 0 and 256 (got %d)",
             o->max_clients);
    return PAWL_EINVAL;
  }
  if (o->listen && !o->token_file) {
    snprintf(err, errlen,
             "--admin-listen %s needs --admin-token-file: a TCP console "
             "without a token is refused",
             o->listen);
    return PAWL_EINVAL;
  }
  admin_server_t *a = pawl__calloc(1, sizeof *a);
  if (!a) return snprintf(err, errlen, "out of memory"), PAWL_ENOMEM;
  a->h = h;
  a->unix_fd = a->tcp_fd = -1;
  a->wake[0] = a->wake[1] = -1;
  pthread_mutex_init(&a->mu, NULL);
  pawl__cond_init_mono(&a->cv);
  a->timeout_ms = o->timeout_ms ? o->timeout_ms : 30000;
  a->max_clients = o->max_clients ? o->max_clients : 16;
  int rc = 0;
  if (o->listen) rc = admin_read_token(a, o->token_file, err, errlen);
  if (!rc && o->socket_path) rc = admin_bind_unix(a, o->socket_path, err, errlen);
  if (!rc && o->listen) rc = admin_bind_tcp(a, o->listen, err, errlen);
  if (!rc) rc = pawl__open_sibling(h->p, "console", &a->db, err, errlen);
  if (!rc) {
    pawl__admin_config_t cfg = {
        .db = a->db,
        .host = h->p,
        .scripts_dir = h->scripts_dir,
        .timeout_ms = a->timeout_ms,
        .memory_max = ADMIN_MEMORY_MAX,
        .io = {.write = admin_io_write, .ask = admin_io_ask,
               .check = admin_io_check, .data = a},
    };
    rc = pawl__admin_lua_open(&cfg, &a->lua, err, errlen);
  }
  if (rc) {
    pawl__admin_free(a);
    return rc;
  }
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "admin console listening");
  if (a->sock_path) pawl__log_str(&line, "socket", a->sock_path);
  if (a->tcp_fd >= 0) pawl__log_str(&line, "tcp", a->tcp_name);
  pawl__log_end(&line);
  *out = a;
  return 0;
}

void pawl__admin_free(struct admin_server *a) {
  /* Left behind: its thread may still use the state, the connection and
   * the server (the host does not free itself then either). */
  if (!a || a->abandoned) return;
  for (int i = 0; i < a->nconns; i++) admin_close_conn(a, a->conns[i]);
  pawl__free(a->conns);
  pawl__admin_lua_close(a->lua);
  pawl_close(a->db);
  admin_unlisten(a);
  memset(a->token, 0, sizeof a->token);
  pawl__free(a->frees);
  if (a->wake[0] >= 0) close(a->wake[0]);
  if (a->wake[1] >= 0) close(a->wake[1]);
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->cv);
  pawl__free(a);
}
