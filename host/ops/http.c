/* http.c: the host's HTTP server on libmicrohttpd (http.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "http.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "listen.h"
#include "pawl.h"

#define HTTP_ROUTES_MAX 8

/* The limits on clients (docs/security.md, "Listeners"). Nothing is
 * known of a client until its request head has arrived whole (the token
 * is a header), so these bound what anyone who can reach the port holds:
 *
 * - HTTP_HEAD_MS: a request head must arrive whole within 5 s of the
 *   connection (or of the end of the request before it on a kept-alive
 *   connection). libmicrohttpd's timeout (HTTP_IDLE_S) counts from the
 *   last byte received, so a client sending a header line every few
 *   seconds would never meet it; the sweeper thread here cuts on the
 *   head's whole time.
 * - HTTP_HEADS_PER_ADDR, HTTP_HEADS_MAX: at most 16 unfinished heads from
 *   one address and 64 in all. A new connection past either takes the
 *   place of the oldest unfinished head (of its address, or of all):
 *   a scraper sends its head at once, so it is served, while the oldest
 *   of an attacker's slow connections goes. Refusing the new connection
 *   instead (libmicrohttpd's own limits) would let whoever came first
 *   keep the port, and on loopback the attacker and the scraper share
 *   one address.
 * - HTTP_CONN_MAX, HTTP_PER_ADDR_MAX: libmicrohttpd's own limits, above
 *   the heads' so that they leave room for requests being answered and
 *   connections being closed; they bound the descriptors whatever
 *   happens (past them, new connections wait in the listen queue or, per
 *   address, are closed at once). */
#define HTTP_HEAD_MS 5000
#define HTTP_IDLE_S 10
#define HTTP_HEADS_PER_ADDR 16
#define HTTP_HEADS_MAX 64
#define HTTP_PER_ADDR_MAX 32
#define HTTP_CONN_MAX 128

/* One connection, from libmicrohttpd's start notice to its close notice
 * (the descriptor stays open until the close notice has returned, so the
 * sweeper may shut it down while the slot is in use). */
typedef struct http_conn {
  int used;
  int fd;
  int in_head;               /* waiting for (the rest of) a request head */
  int cut;                   /* shut down here: on its way out */
  int64_t since_ms;          /* when the head it waits for began */
  int family;
  unsigned char addr[16];    /* the client's address, without the port */
} http_conn_t;

struct http_server {
  struct MHD_Daemon *d;
  int fd;                    /* until the daemon has it */
  http_route_t routes[HTTP_ROUTES_MAX];
  size_t nroutes;
  char token[PAWL__TOKEN_MAX + 1];
  size_t token_len;          /* 0: no token asked */
  /* The connections and the sweeper that enforces the head deadline;
   * mu guards conns and stopping (libmicrohttpd's thread and the
   * sweeper both use them). */
  pthread_mutex_t mu;
  pthread_cond_t wake;
  pthread_t sweeper;
  int sweeper_started;
  int stopping;
  http_conn_t conns[HTTP_CONN_MAX];
};

/* Makes libmicrohttpd close the connection: it reads the end of the
 * stream at its next poll and closes it as it closes any other. */
static void http_cut(http_conn_t *k) {
  shutdown(k->fd, SHUT_RDWR);
  k->cut = 1;
  k->in_head = 0;
}

/* The oldest unfinished head other than `except`, from `like`'s address
 * when like is not NULL; how many unfinished heads there are in *n. */
static http_conn_t *http_oldest_head(http_server_t *s, const http_conn_t *like,
                                     const http_conn_t *except, int *n) {
  http_conn_t *oldest = NULL;
  *n = 0;
  for (size_t i = 0; i < HTTP_CONN_MAX; i++) {
    http_conn_t *k = &s->conns[i];
    if (!k->used || !k->in_head) continue;
    if (like && (k->family != like->family ||
                 memcmp(k->addr, like->addr, sizeof k->addr) != 0))
      continue;
    (*n)++;
    if (k != except && (!oldest || k->since_ms < oldest->since_ms))
      oldest = k;
  }
  return oldest;
}

static void http_notify_conn(void *cls, struct MHD_Connection *c,
                             void **socket_context,
                             enum MHD_ConnectionNotificationCode toe) {
  http_server_t *s = cls;
  pthread_mutex_lock(&s->mu);
  if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
    http_conn_t *k = *socket_context;
    if (k) memset(k, 0, sizeof *k);
    *socket_context = NULL;
    pthread_mutex_unlock(&s->mu);
    return;
  }
  const union MHD_ConnectionInfo *fi =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  const union MHD_ConnectionInfo *ai =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  http_conn_t *k = NULL;
  for (size_t i = 0; !k && i < HTTP_CONN_MAX; i++)
    if (!s->conns[i].used) k = &s->conns[i];
  if (!k || !fi) {
    /* More connections than libmicrohttpd's limit lets in: cannot be,
     * but a connection not watched is not kept. */
    if (fi) shutdown(fi->connect_fd, SHUT_RDWR);
    *socket_context = NULL;
    pthread_mutex_unlock(&s->mu);
    return;
  }
  memset(k, 0, sizeof *k);
  k->used = 1;
  k->fd = fi->connect_fd;
  k->in_head = 1;
  k->since_ms = pawl__mono_ms();
  const struct sockaddr *sa = ai ? ai->client_addr : NULL;
  if (sa && sa->sa_family == AF_INET) {
    k->family = AF_INET;
    memcpy(k->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
           4);
  } else if (sa && sa->sa_family == AF_INET6) {
    k->family = AF_INET6;
    memcpy(k->addr,
           &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
  }
  *socket_context = k;
  int n;
  http_conn_t *old = http_oldest_head(s, k, k, &n);
  if (n > HTTP_HEADS_PER_ADDR && old) http_cut(old);
  old = http_oldest_head(s, NULL, k, &n);
  if (n > HTTP_HEADS_MAX && old) http_cut(old);
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->mu);
}

/* A request has been answered: the connection, if kept alive, waits for
 * the next head, which gets the deadline afresh. */
static void http_notify_done(void *cls, struct MHD_Connection *c,
                             void **con_cls,
                             enum MHD_RequestTerminationCode toe) {
  (void)con_cls;
  (void)toe;
  http_server_t *s = cls;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  pthread_mutex_lock(&s->mu);
  http_conn_t *k = ci ? ci->socket_context : NULL;
  if (k && !k->cut) {
    k->in_head = 1;
    k->since_ms = pawl__mono_ms();
    pthread_cond_signal(&s->wake);
  }
  pthread_mutex_unlock(&s->mu);
}

/* The head has arrived whole: the deadline no longer applies. */
static void http_head_done(http_server_t *s, struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  pthread_mutex_lock(&s->mu);
  http_conn_t *k = ci ? ci->socket_context : NULL;
  if (k) k->in_head = 0;
  pthread_mutex_unlock(&s->mu);
}

/* The sweeper: cuts every head older than HTTP_HEAD_MS, sleeping until
 * the next one would be. */
static void *http_sweep(void *arg) {
  http_server_t *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->stopping) {
    int64_t now = pawl__mono_ms(), next = INT64_MAX;
    for (size_t i = 0; i < HTTP_CONN_MAX; i++) {
      http_conn_t *k = &s->conns[i];
      if (!k->used || !k->in_head) continue;
      if (now - k->since_ms >= HTTP_HEAD_MS) http_cut(k);
      else if (k->since_ms + HTTP_HEAD_MS < next)
        next = k->since_ms + HTTP_HEAD_MS;
    }
    if (next == INT64_MAX) {
      pthread_cond_wait(&s->wake, &s->mu);
    } else {
      struct timespec ts = pawl__mono_deadline(next - now);
      pthread_cond_timedwait(&s->wake, &s->mu, &ts);
    }
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static enum MHD_Result http_send(struct MHD_Connection *c, unsigned status,
                                 const char *body, size_t len,
                                 const char *ctype, const char *hname,
                                 const char *hvalue) {
  struct MHD_Response *r = MHD_create_response_from_buffer(
      len, (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  if (hname) MHD_add_response_header(r, hname, hvalue);
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result http_text(struct MHD_Connection *c, unsigned status,
                                 const char *msg, const char *hname,
                                 const char *hvalue) {
  return http_send(c, status, msg, strlen(msg), "text/plain; charset=utf-8",
                   hname, hvalue);
}

static int http_authorized(const http_server_t *s, struct MHD_Connection *c) {
  if (!s->token_len) return 1;
  const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_AUTHORIZATION);
  if (!v || strncasecmp(v, "Bearer ", 7) != 0) return 0;
  v += 7;
  while (*v == ' ') v++;
  return pawl__token_ok(s->token, s->token_len, v, strlen(v));
}

static enum MHD_Result http_handle(void *cls, struct MHD_Connection *c,
                                   const char *url, const char *method,
                                   const char *version,
                                   const char *upload_data,
                                   size_t *upload_data_size, void **con_cls) {
  (void)version;
  (void)upload_data;
  (void)con_cls;
  http_server_t *s = cls;
  http_head_done(s, c);
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
      strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    *upload_data_size = 0; /* a body is not read: the answer is no */
    return http_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
                     "method not allowed: GET or HEAD\n",
                     MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  }
  if (!http_authorized(s, c))
    return http_text(c, MHD_HTTP_UNAUTHORIZED,
                     "unauthorized: send Authorization: Bearer TOKEN\n",
                     MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"pawl\"");
  for (size_t i = 0; i < s->nroutes; i++) {
    if (strcmp(url, s->routes[i].path) != 0) continue;
    pawl_buf_t body = {0};
    const char *ctype = "text/plain; charset=utf-8";
    int status = s->routes[i].fn(s->routes[i].data, &body, &ctype);
    enum MHD_Result ok;
    if (body.oom)
      ok = http_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n",
                     NULL, NULL);
    else
      ok = http_send(c, (unsigned)status, body.data ? body.data : "",
                     body.len, ctype, NULL, NULL);
    pawl__buf_free(&body);
    return ok;
  }
  return http_text(c, MHD_HTTP_NOT_FOUND, "not found\n", NULL, NULL);
}

int pawl__http_new(int fd, const char *token, size_t token_len,
                   const http_route_t *routes, size_t nroutes,
                   http_server_t **out, char *err, size_t errlen) {
  http_server_t *s = pawl__calloc(1, sizeof *s);
  if (!s || nroutes > HTTP_ROUTES_MAX || token_len > PAWL__TOKEN_MAX) {
    close(fd);
    pawl__free(s);
    snprintf(err, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  s->fd = fd;
  pthread_mutex_init(&s->mu, NULL);
  pawl__cond_init_mono(&s->wake);
  memcpy(s->routes, routes, nroutes * sizeof *routes);
  s->nroutes = nroutes;
  if (token) {
    memcpy(s->token, token, token_len);
    s->token_len = token_len;
  }
  if (pthread_create(&s->sweeper, NULL, http_sweep, s) != 0) {
    close(fd);
    s->fd = -1;
    snprintf(err, errlen, "cannot start the HTTP server's sweeper thread");
    pawl__http_free(s);
    return PAWL_EIO;
  }
  s->sweeper_started = 1;
  /* A longer listen queue than listen.c's: while connections arrive
   * faster than this thread takes them (a burst of an attacker's), a
   * scraper's connection waits in the queue instead of having its SYN
   * dropped and retried a second later. Listening again on a listening
   * socket only changes the queue's length. */
  listen(fd, HTTP_CONN_MAX);
  /* Its own thread, polling; a scrape is served in microseconds, so one
   * thread serves every connection. The limits are described above. */
  s->d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL,
      http_handle, s, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONN_MAX,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_PER_ADDR_MAX,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_S,
      MHD_OPTION_NOTIFY_CONNECTION, http_notify_conn, s,
      MHD_OPTION_NOTIFY_COMPLETED, http_notify_done, s, MHD_OPTION_END);
  /* The daemon owns the socket now: MHD_stop_daemon closes it. A daemon
   * that did not start may have closed it already, so it is not closed
   * again here (another thread may have got the number meanwhile). */
  s->fd = -1;
  if (!s->d) {
    snprintf(err, errlen, "cannot start the HTTP server (libmicrohttpd)");
    pawl__http_free(s);
    return PAWL_EIO;
  }
  *out = s;
  return 0;
}

void pawl__http_free(http_server_t *s) {
  if (!s) return;
  /* The daemon first: its close notices still take the lock. */
  if (s->d) MHD_stop_daemon(s->d);
  if (s->sweeper_started) {
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->sweeper, NULL);
  }
  pthread_cond_destroy(&s->wake);
  pthread_mutex_destroy(&s->mu);
  memset(s->token, 0, sizeof s->token);
  pawl__free(s);
}
