/* admin_server.c: the attached console's server: the unix socket (and
 * the optional TCP listener) of a running host, their checks, and the
 * thread that serves every connection.
 *
 * One thread serves all connections with poll(). A connection says hello
 * (a token on TCP), gets a session in the host's admin Lua state
 * (lua/bridge.h, "the admin console's Lua state"), and sends chunks; a
 * chunk runs on this thread, one at a time across all connections, and
 * its output goes back as it is written. While a chunk runs, the state's
 * hook asks admin_check() every few ms whether its client pressed Ctrl-C
 * or went away, and the other connections wait. The wire protocol is in
 * the README ("Console", "The wire protocol"); every frame is bounded
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
#include "host.h"
#include "listen.h"
#include "pawl_internal.h"

#define ADMIN_PROTOCOL 1
/* The largest frame a client may send (its length field): a chunk of up
 * to 1 MiB, its type byte and a little room. */
#define ADMIN_FRAME_MAX (1024 * 1024 + 64)
/* Output goes out in frames of at most this many payload bytes. */
#define ADMIN_OUT_FRAME 65536
/* What one chunk may write; the rest is dropped with a note. */
#define ADMIN_OUTPUT_MAX (8 * 1024 * 1024)
/* A connection that has not said hello in this long is closed. */
#define ADMIN_HELLO_MS 10000
/* A client that does not read its output for this long is dropped. */
#define ADMIN_SEND_MS 10000
/* How long a question (a bulk action's confirmation) waits. */
#define ADMIN_ASK_MS (10 * 60 * 1000)
/* The admin Lua state's memory. */
#define ADMIN_MEMORY_MAX ((size_t)256 * 1024 * 1024)
#define ADMIN_TOKEN_MAX PAWL__TOKEN_MAX

typedef struct admin_conn {
  int fd;
  int tcp;                   /* 1: came in over TCP (needs the token) */
  int session;               /* 0 until hello */
  int interactive;
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
  admin_conn_t **conns;
  int nconns;
  admin_conn_t *cur;         /* whose chunk runs now */
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

/* Reads what the socket has into c->in (up to a whole largest frame).
 * 0, or -1 when the peer has gone (or sent more than a frame may hold). */
static int admin_fill(admin_conn_t *c) {
  for (;;) {
    if (c->inlen == c->incap) {
      if (c->incap >= ADMIN_FRAME_MAX + 4) return -1; /* a frame too big */
      size_t cap = c->incap ? c->incap * 2 : 4096;
      if (cap > ADMIN_FRAME_MAX + 4) cap = ADMIN_FRAME_MAX + 4;
      unsigned char *p = pawl__realloc(c->in, cap);
      if (!p) return -1;
      c->in = p;
      c->incap = cap;
    }
    ssize_t k = recv(c->fd, c->in + c->inlen, c->incap - c->inlen, 0);
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
  if (n < 1 || n > ADMIN_FRAME_MAX) return -1;
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

/* ---- what the admin state calls (pawl__admin_io_t) ------------------------------ */

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
 * gone. */
static int admin_io_check(void *data) {
  admin_server_t *a = data;
  admin_conn_t *c = a->cur;
  if (!c || c->dead) return 2;
  if (admin_fill(c) != 0) c->dead = 1;
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
 * and the text, or "0" for none). */
static char *admin_io_ask(void *data, const char *question) {
  admin_server_t *a = data;
  admin_conn_t *c = a->cur;
  if (!c || c->dead || !c->interactive) return NULL;
  if (admin_send_str(c, 'q', question)) return NULL;
  int64_t end = pawl__mono_ms() + ADMIN_ASK_MS;
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
    int64_t left = end - pawl__mono_ms();
    if (left <= 0) break;
    pthread_mutex_lock(&a->h->mu);
    int stopping = a->h->stopping;
    pthread_mutex_unlock(&a->h->mu);
    if (stopping) break;
    struct pollfd pf = {.fd = c->fd, .events = POLLIN};
    if (poll(&pf, 1, 500) > 0 && admin_fill(c) != 0) c->dead = 1;
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
    if (!has || !admin_token_ok(a, token, strlen(token))) {
      admin_refuse(a, c, has ? "wrong token" : "a token is required");
      return;
    }
  }
  int json = admin_hello_field(p, len, "json", flag, sizeof flag) &&
             flag[0] == '1';
  c->interactive = admin_hello_field(p, len, "interactive", flag,
                                     sizeof flag) && flag[0] == '1';
  a->cur = c;
  int s = pawl__admin_session_new(a->lua, json, c->interactive);
  a->cur = NULL;
  if (s < 0) {
    admin_send_str(c, 'b', "the host could not start a console session");
    c->dead = 1;
    return;
  }
  c->session = s;
  char w[300];
  snprintf(w, sizeof w, "version=%d\nnode=%s\n", ADMIN_PROTOCOL,
           pawl_node_id(a->h->p));
  admin_send_str(c, 'w', w);
  admin_log(a, PAWL_LOG_INFO, "console attached", c, NULL);
}

/* Runs a chunk (C: REPL rules, F: a script, "NAME\n" then its text) and
 * consumes its frame. */
static void admin_chunk(admin_server_t *a, admin_conn_t *c, char type,
                        const char *p, size_t len) {
  /* Copied out of the buffer, which reading during the chunk (Ctrl-C)
   * moves, and the frame consumed. */
  char *chunk = pawl__malloc(len + 1);
  if (chunk) {
    memcpy(chunk, p, len);
    chunk[len] = 0;
  }
  admin_consume(c, len);
  if (!chunk) {
    admin_send_str(c, 'e', "error: out of memory\n");
    admin_send_str(c, 'r', "0");
    return;
  }
  char name[256] = "=stdin";
  const char *text = chunk;
  size_t tlen = len;
  int as_script = type == 'F';
  if (as_script) {
    const char *nl = memchr(chunk, '\n', len);
    size_t n = nl ? (size_t)(nl - chunk) : 0;
    if (!nl || n == 0 || n >= sizeof name) {
      pawl__free(chunk);
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
  a->cur = c;
  int ok = pawl__admin_eval(a->lua, c->session, text, tlen, name, as_script);
  a->cur = NULL;
  pawl__free(chunk);
  admin_send_str(c, 'r', ok ? "1" : "0");
}

/* Handles every whole frame c has sent. */
static void admin_serve(admin_server_t *a, admin_conn_t *c) {
  char type;
  const char *p;
  size_t len;
  int r;
  while (!c->dead && (r = admin_frame(c, &type, &p, &len)) != 0) {
    if (r < 0) {
      admin_refuse(a, c, "protocol error: a frame longer than 1 MiB");
      return;
    }
    if (!c->session && type != 'H') {
      admin_refuse(a, c, "protocol error: hello first");
      return;
    }
    if (type == 'C' || type == 'F') {
      admin_chunk(a, c, type, p, len); /* consumes the frame itself */
      continue;
    }
    switch (type) {
    case 'H':
      if (c->session)
        admin_refuse(a, c, "protocol error: a second hello");
      else
        admin_hello(a, c, p, len);
      break;
    case 'W': {
      char v[16];
      size_t n = len < sizeof v - 1 ? len : sizeof v - 1;
      memcpy(v, p, n);
      v[n] = 0;
      pawl__admin_session_width(a->lua, c->session, atoi(v));
      break;
    }
    case 'P': {
      a->cur = c;
      int inc = pawl__admin_incomplete(a->lua, c->session, p, len);
      a->cur = NULL;
      admin_send_str(c, 'p', inc ? "1" : "0");
      break;
    }
    case 'T': {
      a->cur = c;
      char *out = pawl__admin_complete(a->lua, c->session, p, len);
      a->cur = NULL;
      admin_send_str(c, 'c', out ? out : "0\n");
      pawl__free(out);
      break;
    }
    case 'K': {
      a->cur = c;
      char *t = pawl__admin_trace(a->lua, c->session);
      a->cur = NULL;
      if (t) {
        admin_send(c, 'o', t, strlen(t) < ADMIN_OUT_FRAME ? strlen(t) : ADMIN_OUT_FRAME);
        admin_send_str(c, 'o', "\n");
      }
      admin_send_str(c, 'r', t ? "1" : "0");
      pawl__free(t);
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

static void admin_close_conn(admin_server_t *a, admin_conn_t *c) {
  if (c->session) {
    pawl__admin_session_free(a->lua, c->session);
    admin_log(a, PAWL_LOG_INFO, "console detached", c, NULL);
  }
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
  } else {
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
  }
  int live = 0;
  for (int i = 0; i < a->nconns; i++) live += !a->conns[i]->dead;
  if (live > a->max_clients) {
    char why[120];
    snprintf(why, sizeof why, "%d consoles are attached already (the most)",
             a->max_clients);
    admin_refuse(a, c, why);
  }
}

/* Ends every connection that is dead, and those silent before hello. */
static void admin_sweep(admin_server_t *a) {
  int64_t now = pawl__mono_ms();
  int k = 0;
  for (int i = 0; i < a->nconns; i++) {
    admin_conn_t *c = a->conns[i];
    if (!c->dead && !c->session && now - c->opened > ADMIN_HELLO_MS)
      admin_refuse(a, c, "no hello in time");
    if (c->dead)
      admin_close_conn(a, c);
    else
      a->conns[k++] = c;
  }
  a->nconns = k;
}

void *pawl__admin_main(void *arg) {
  admin_server_t *a = arg;
  host_t *h = a->h;
  struct pollfd *fds = NULL;
  for (;;) {
    pthread_mutex_lock(&h->mu);
    /* Served until the host has stopped: jobs finish meanwhile, and a
     * console may watch them. */
    int end = h->stopping && h->poller_done && h->completer_done;
    pthread_mutex_unlock(&h->mu);
    if (end) break;
    struct pollfd *grown = pawl__realloc(fds, (size_t)(a->nconns + 2) * sizeof *fds);
    if (!grown) { /* try again next round */
      struct timespec ts = {0, 100 * 1000000};
      nanosleep(&ts, NULL);
      continue;
    }
    fds = grown;
    int n = 0;
    if (a->unix_fd >= 0) fds[n++] = (struct pollfd){.fd = a->unix_fd, .events = POLLIN};
    if (a->tcp_fd >= 0) fds[n++] = (struct pollfd){.fd = a->tcp_fd, .events = POLLIN};
    int nl = n;
    for (int i = 0; i < a->nconns; i++)
      fds[n++] = (struct pollfd){.fd = a->conns[i]->fd, .events = POLLIN};
    int nc = a->nconns;
    /* 100 ms: how soon a stop of the host is noticed. */
    if (poll(fds, (nfds_t)n, 100) > 0) {
      for (int i = 0; i < nc; i++) {
        admin_conn_t *c = a->conns[i];
        if (!(fds[nl + i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (admin_fill(c) != 0) c->dead = 1;
        admin_serve(a, c);
      }
      for (int i = 0; i < nl; i++)
        if (fds[i].revents & POLLIN)
          admin_accept(a, fds[i].fd, fds[i].fd == a->tcp_fd);
    }
    admin_sweep(a);
  }
  pawl__free(fds);
  admin_unlisten(a); /* the host has stopped: nobody may attach any more */
  for (int i = 0; i < a->nconns; i++) {
    admin_send_str(a->conns[i], 'b', "the host has stopped");
    admin_close_conn(a, a->conns[i]);
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
  if (!a) return;
  for (int i = 0; i < a->nconns; i++) admin_close_conn(a, a->conns[i]);
  pawl__free(a->conns);
  pawl__admin_lua_close(a->lua);
  pawl_close(a->db);
  admin_unlisten(a);
  memset(a->token, 0, sizeof a->token);
  pawl__free(a);
}
