/* http.c: the host's HTTP server on libmicrohttpd (http.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "http.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "listen.h"
#include "pawl.h"

#define HTTP_ROUTES_MAX 8

struct http_server {
  struct MHD_Daemon *d;
  int fd;                    /* until the daemon has it */
  http_route_t routes[HTTP_ROUTES_MAX];
  size_t nroutes;
  char token[PAWL__TOKEN_MAX + 1];
  size_t token_len;          /* 0: no token asked */
};

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
  memcpy(s->routes, routes, nroutes * sizeof *routes);
  s->nroutes = nroutes;
  if (token) {
    memcpy(s->token, token, token_len);
    s->token_len = token_len;
  }
  /* Its own thread, polling; a scrape is served in microseconds, so one
   * thread serves every connection. Slow or idle clients are cut after
   * 10 s; at most 64 at once. */
  s->d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL,
      http_handle, s, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
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
  if (s->d) MHD_stop_daemon(s->d);
  memset(s->token, 0, sizeof s->token);
  pawl__free(s);
}
