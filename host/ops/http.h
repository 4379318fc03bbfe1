/* http.h: the host's HTTP server, on libmicrohttpd: it serves
 * the metrics endpoint now, and the web dashboard will add its routes to
 * it. It knows routes, methods and the token, nothing of what a route
 * serves.
 *
 * GET and HEAD only (405 otherwise); a path no route has is 404. With a
 * token, every request must carry `Authorization: Bearer TOKEN` (401
 * otherwise; compared in constant time). Requests are served on
 * libmicrohttpd's own thread, one at a time, so a route's handler must
 * read memory only (never the database, never a lock a worker holds
 * long). Slow clients are bounded before anything is known of them: a
 * request head must arrive whole within 5 s, and past 16 unfinished
 * heads from one address or 64 in all the oldest is closed (http.c
 * says why). */
#ifndef PAWL_HTTP_H
#define PAWL_HTTP_H

#include <stddef.h>

#include "buf.h"

typedef struct http_server http_server_t;

/* Fills `body` (and *content_type, a static string) for a GET of the
 * route; returns the HTTP status (200). */
typedef int (*http_handler_fn)(void *data, pawl_buf_t *body,
                               const char **content_type);

typedef struct http_route {
  const char *path;          /* exact, "/metrics"; static */
  http_handler_fn fn;
  void *data;
} http_route_t;

/* Serves `routes` (copied; at most 8) on the listening socket `fd`
 * (taken: the server closes it). token: NULL, or
 * the token (copied). 0, or PAWL_ENOMEM / PAWL_EIO with err. */
int pawl__http_new(int fd, const char *token, size_t token_len,
                   const http_route_t *routes, size_t nroutes,
                   http_server_t **out, char *err, size_t errlen);
/* Stops serving (waits for a request being served) and frees. */
void pawl__http_free(http_server_t *s);

#endif
