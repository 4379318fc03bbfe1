/* console_client.c: `pawl console --connect`: the client's end of the wire
 * protocol (see console_client.h and docs/console.md). Frames are a 4-byte
 * big-endian length of what follows, a type byte and a payload; the
 * client sends upper-case types, the host answers in lower case. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "console_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"

#define CLIENT_PROTOCOL 1
/* The largest frame the host sends is far smaller; this bounds what a
 * host (or something else on that port) can make us hold. */
#define CLIENT_FRAME_MAX (4 * 1024 * 1024)
/* A chunk the host takes at most (its ADMIN_FRAME_MAX, less room). */
#define CLIENT_CHUNK_MAX (1024 * 1024)

volatile sig_atomic_t console_client_interrupt;

struct console_client {
  int fd;
  int lost;
  int width;                 /* last width sent */
  char node[256];
};

/* ---- frames ------------------------------------------------------------------ */

static int client_write_all(console_client_t *cc, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t k = send(cc->fd, p, len, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      cc->lost = 1;
      return -1;
    }
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

static int client_send(console_client_t *cc, char type, const void *payload,
                       size_t len) {
  if (cc->lost) return -1;
  unsigned char hdr[5];
  uint32_t n = (uint32_t)len + 1;
  hdr[0] = (unsigned char)(n >> 24);
  hdr[1] = (unsigned char)(n >> 16);
  hdr[2] = (unsigned char)(n >> 8);
  hdr[3] = (unsigned char)n;
  hdr[4] = (unsigned char)type;
  if (client_write_all(cc, hdr, 5)) return -1;
  return len ? client_write_all(cc, payload, len) : 0;
}

/* Reads exactly len bytes; while waiting, a Ctrl-C (the flag) is sent on
 * as an interrupt frame when `interruptible`. */
static int client_read_all(console_client_t *cc, void *buf, size_t len,
                           int interruptible) {
  char *p = buf;
  while (len > 0) {
    if (interruptible && console_client_interrupt) {
      console_client_interrupt = 0;
      if (client_send(cc, 'X', NULL, 0)) return -1;
    }
    struct pollfd pf = {.fd = cc->fd, .events = POLLIN};
    int r = poll(&pf, 1, 200);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    ssize_t k = recv(cc->fd, p, len, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) {
      cc->lost = 1;
      return -1;
    }
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

/* The next frame: its type, and its payload (malloc'd, NUL-ended). */
static int client_recv(console_client_t *cc, char *type, char **payload,
                       size_t *len, int interruptible) {
  unsigned char hdr[5];
  if (cc->lost || client_read_all(cc, hdr, 5, interruptible)) return -1;
  uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
               (uint32_t)hdr[2] << 8 | hdr[3];
  if (n < 1 || n > CLIENT_FRAME_MAX) {
    cc->lost = 1;
    return -1;
  }
  char *p = malloc(n);
  if (!p) {
    cc->lost = 1;
    return -1;
  }
  if (client_read_all(cc, p, n - 1, interruptible)) {
    free(p);
    return -1;
  }
  p[n - 1] = 0;
  *type = (char)hdr[4];
  *payload = p;
  *len = n - 1;
  return 0;
}

/* The host said bye: its reason on stderr, the connection is over. */
static void client_bye(console_client_t *cc, const char *why) {
  fflush(stdout);
  fprintf(stderr, "pawl: the host closed the console: %s\n", why);
  cc->lost = 1;
}

static void client_lost_msg(console_client_t *cc) {
  fflush(stdout);
  fprintf(stderr, "pawl: the connection to the host was lost\n");
  cc->lost = 1;
}

/* ---- connecting ------------------------------------------------------------------ */

/* ADDRESS:PORT (digits after the last colon, no slash): TCP. */
static int client_is_tcp(const char *t) {
  const char *colon = strrchr(t, ':');
  if (!colon || strchr(t, '/') || !colon[1]) return 0;
  for (const char *p = colon + 1; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return colon != t;
}

static int client_connect(const char *target, int *tcp, char *err,
                          size_t errlen) {
  *tcp = client_is_tcp(target);
  if (!*tcp) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(target) >= sizeof sa.sun_path) {
      snprintf(err, errlen, "--connect %s: a socket path is at most %zu bytes",
               target, sizeof sa.sun_path - 1);
      return -1;
    }
    strcpy(sa.sun_path, target);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
      snprintf(err, errlen,
               "cannot attach to %s: %s (is `pawl run` serving it? its "
               "socket is the database's path + .sock unless "
               "--admin-socket says otherwise)",
               target, strerror(errno));
      if (fd >= 0) close(fd);
      return -1;
    }
    return fd;
  }
  const char *colon = strrchr(target, ':');
  char host[256];
  size_t hl = (size_t)(colon - target);
  const char *hs = target;
  if (hl >= 2 && hs[0] == '[' && hs[hl - 1] == ']') hs++, hl -= 2;
  if (hl >= sizeof host) hl = sizeof host - 1;
  memcpy(host, hs, hl);
  host[hl] = 0;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  struct addrinfo *res = NULL;
  int g = getaddrinfo(host, colon + 1, &hints, &res);
  if (g != 0) {
    snprintf(err, errlen, "--connect %s: %s", target, gai_strerror(g));
    return -1;
  }
  int fd = -1, e = 0;
  for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      e = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0)
    snprintf(err, errlen, "cannot attach to %s: %s", target, strerror(e));
  return fd;
}

/* The token: the file's text without trailing white space. */
static int client_token(const char *file, char *out, size_t outlen, char *err,
                        size_t errlen) {
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "--admin-token-file %s: %s", file, strerror(errno));
    return -1;
  }
  ssize_t n = read(fd, out, outlen - 1);
  close(fd);
  if (n < 0) n = 0;
  while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' ||
                   out[n - 1] == ' ' || out[n - 1] == '\t'))
    n--;
  out[n] = 0;
  if (n == 0 || memchr(out, '\n', (size_t)n)) {
    snprintf(err, errlen, "--admin-token-file %s: expected one line of text",
             file);
    return -1;
  }
  return 0;
}

int console_client_open(const char *target, const char *token_file,
                        int interactive, int json, console_client_t **out,
                        char *err, size_t errlen) {
  char token[4200] = "";
  int tcp = 0;
  if (client_is_tcp(target) && !token_file) {
    snprintf(err, errlen,
             "--connect %s is a TCP address: it needs --admin-token-file "
             "(the host's token)",
             target);
    return 1;
  }
  if (token_file && client_token(token_file, token, sizeof token, err, errlen))
    return 1;
  int fd = client_connect(target, &tcp, err, errlen);
  if (fd < 0) return 1;
  console_client_t *cc = calloc(1, sizeof *cc);
  if (!cc) {
    close(fd);
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  cc->fd = fd;
  cc->width = -1;
  char hello[4400];
  int n = snprintf(hello, sizeof hello, "version=%d\ninteractive=%d\njson=%d\n",
                   CLIENT_PROTOCOL, interactive, json);
  if (tcp) n += snprintf(hello + n, sizeof hello - (size_t)n, "token=%s\n", token);
  memset(token, 0, sizeof token);
  char type = 0, *payload = NULL;
  size_t len = 0;
  client_send(cc, 'H', hello, (size_t)n);
  memset(hello, 0, sizeof hello);
  /* A host that refuses at once (peer credentials) has sent its bye and
   * closed before our hello arrived: its reason is still to be read. */
  cc->lost = 0;
  int rc = client_recv(cc, &type, &payload, &len, 0);
  if (rc || type != 'w') {
    if (!rc && type == 'b')
      snprintf(err, errlen, "the host at %s %s", target, payload);
    else if (!rc && (type == 'e' || type == 'o'))
      snprintf(err, errlen, "the host at %s: %s", target, payload);
    else
      snprintf(err, errlen, "%s did not answer as a pawl host does", target);
    free(payload);
    console_client_close(cc);
    return 1;
  }
  const char *node = strstr(payload, "node=");
  if (node) {
    node += 5;
    size_t k = strcspn(node, "\n");
    snprintf(cc->node, sizeof cc->node, "%.*s", (int)k, node);
  }
  free(payload);
  *out = cc;
  return 0;
}

void console_client_close(console_client_t *cc) {
  if (!cc) return;
  if (!cc->lost) client_send(cc, 'B', NULL, 0);
  close(cc->fd);
  free(cc);
}

const char *console_client_node(const console_client_t *cc) { return cc->node; }

int console_client_lost(const console_client_t *cc) { return cc->lost; }

/* ---- requests ---------------------------------------------------------------- */

/* Reads frames until the result (r): output to stdout/stderr (or into
 * `out` and `errout` when they are not NULL), questions answered. 1/0 as
 * the result says, -1 lost. */
static int client_until_result_to(console_client_t *cc,
                                  console_client_ask_fn ask, void *ask_data,
                                  pawl_buf_t *out, pawl_buf_t *errout) {
  for (;;) {
    char type, *p;
    size_t len;
    if (client_recv(cc, &type, &p, &len, 1)) {
      client_lost_msg(cc);
      return -1;
    }
    switch (type) {
    case 'o':
      if (out) {
        pawl__buf_append(out, p, len);
        break;
      }
      fwrite(p, 1, len, stdout);
      fflush(stdout);
      break;
    case 'e':
      if (errout) {
        pawl__buf_append(errout, p, len);
        break;
      }
      fflush(stdout);
      fwrite(p, 1, len, stderr);
      break;
    case 'q': {
      char *answer = ask ? ask(ask_data, p) : NULL;
      pawl_buf_t b;
      pawl__buf_init(&b);
      pawl__buf_putc(&b, answer ? '1' : '0');
      if (answer) pawl__buf_puts(&b, answer);
      free(answer);
      client_send(cc, 'A', b.data, b.len);
      pawl__buf_free(&b);
      break;
    }
    case 'r': {
      int ok = len > 0 && p[0] == '1';
      free(p);
      return ok;
    }
    case 'b':
      client_bye(cc, p);
      free(p);
      return -1;
    default:
      break; /* unknown to this client: skipped */
    }
    free(p);
  }
}

static int client_until_result(console_client_t *cc, console_client_ask_fn ask,
                               void *ask_data) {
  return client_until_result_to(cc, ask, ask_data, NULL, NULL);
}

int console_client_capture(console_client_t *cc, const char *chunk,
                           size_t len, pawl_buf_t *out, pawl_buf_t *errout) {
  if (cc->lost) return -1;
  if (len > CLIENT_CHUNK_MAX) {
    pawl__buf_puts(errout, "a chunk may hold at most 1 MiB");
    return 0;
  }
  if (client_send(cc, 'C', chunk, len)) {
    cc->lost = 1;
    return -1;
  }
  return client_until_result_to(cc, NULL, NULL, out, errout);
}

int console_client_eval(console_client_t *cc, const char *chunk, size_t len,
                        const char *script_name, int width,
                        console_client_ask_fn ask, void *ask_data) {
  if (cc->lost) return -1;
  if (width != cc->width) {
    char w[16];
    int n = snprintf(w, sizeof w, "%d", width);
    client_send(cc, 'W', w, (size_t)n);
    cc->width = width;
  }
  size_t extra = script_name ? strlen(script_name) + 1 : 0;
  if (len + extra > CLIENT_CHUNK_MAX) {
    fflush(stdout);
    fprintf(stderr, "error: a chunk may hold at most 1 MiB (this one has "
                    "%zu bytes)\n", len);
    return 0;
  }
  int rc;
  if (script_name) {
    pawl_buf_t b;
    pawl__buf_init(&b);
    pawl__buf_puts(&b, script_name);
    pawl__buf_putc(&b, '\n');
    pawl__buf_append(&b, chunk, len);
    rc = b.oom ? -1 : client_send(cc, 'F', b.data, b.len);
    pawl__buf_free(&b);
  } else {
    rc = client_send(cc, 'C', chunk, len);
  }
  if (rc) {
    client_lost_msg(cc);
    return -1;
  }
  return client_until_result(cc, ask, ask_data);
}

/* Sends a request and waits for the answer of type `want`. */
static char *client_ask_host(console_client_t *cc, char req, const char *s,
                             size_t len, char want) {
  if (len > CLIENT_CHUNK_MAX || client_send(cc, req, s, len)) return NULL;
  for (;;) {
    char type, *p;
    size_t n;
    if (client_recv(cc, &type, &p, &n, 0)) {
      client_lost_msg(cc);
      return NULL;
    }
    if (type == want) return p;
    if (type == 'b') {
      client_bye(cc, p);
      free(p);
      return NULL;
    }
    free(p);
  }
}

int console_client_incomplete(console_client_t *cc, const char *chunk,
                              size_t len) {
  char *p = client_ask_host(cc, 'P', chunk, len, 'p');
  if (!p) return -1;
  int r = p[0] == '1';
  free(p);
  return r;
}

char *console_client_complete(console_client_t *cc, const char *line,
                              size_t len) {
  return client_ask_host(cc, 'T', line, len, 'c');
}

int console_client_trace(console_client_t *cc) {
  if (client_send(cc, 'K', NULL, 0)) {
    client_lost_msg(cc);
    return -1;
  }
  return client_until_result(cc, NULL, NULL) < 0 ? -1 : 0;
}
