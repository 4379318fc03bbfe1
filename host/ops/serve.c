/* serve.c: the host's HTTP server (http.c) and its routes: /metrics
 * (metrics.c) now; the web dashboard's later. Checks the options, binds
 * the address (listen.c), refuses a non-loopback one without a token. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ops.h"
#include "http.h"
#include "listen.h"
#include "metrics.h"

static int serve_metrics(void *data, pawl_buf_t *body,
                         const char **content_type) {
  metrics_t *m = data;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pawl__metrics_render(m, body);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  *content_type = "text/plain; version=0.0.4; charset=utf-8";
  /* What a scrape costs the host (bench/metrics_bench.sh reads it). */
  pawl__metrics_log_scrape(m, (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000 +
                                  (t1.tv_nsec - t0.tv_nsec) / 1000,
                           body->len);
  return 200;
}

int pawl__serve_new(host_t *h, const pawl_metrics_opts_t *o, char *err,
                    size_t errlen) {
  if (!o->listen) {
    snprintf(err, errlen, "metrics: listen (ADDRESS:PORT) is required");
    return PAWL_EINVAL;
  }
  if (o->refresh_ms && (o->refresh_ms < 100 || o->refresh_ms > 3600000)) {
    snprintf(err, errlen,
             "metrics refresh_ms must be 0 or between 100 and 3600000 (got "
             "%lld)",
             (long long)o->refresh_ms);
    return PAWL_EINVAL;
  }
  int64_t refresh = o->refresh_ms ? o->refresh_ms : 5000;
  if (o->recount_ms && (o->recount_ms < refresh || o->recount_ms > 1200000)) {
    snprintf(err, errlen,
             "metrics recount_ms must be 0 or between refresh_ms (%lld) and "
             "1200000 (got %lld)",
             (long long)refresh, (long long)o->recount_ms);
    return PAWL_EINVAL;
  }
  char token[PAWL__TOKEN_MAX + 1];
  size_t token_len = 0;
  int rc = 0;
  if (o->token_file &&
      (rc = pawl__token_read(o->token_file, "metrics token file", token,
                             &token_len, err, errlen)))
    return rc;
  int fd = -1, loopback = 0;
  char name[80];
  if ((rc = pawl__tcp_listen(o->listen, "--metrics", &fd, name, sizeof name,
                             &loopback, err, errlen))) {
    memset(token, 0, sizeof token);
    return rc;
  }
  if (!loopback && !o->token_file) {
    close(fd);
    snprintf(err, errlen,
             "--metrics %s is not a loopback address: serving metrics to "
             "other machines needs --metrics-token-file (scrapers then send "
             "Authorization: Bearer TOKEN)",
             o->listen);
    return PAWL_EINVAL;
  }
  if (!(h->metrics = pawl__metrics_new(h, refresh, o->recount_ms))) {
    close(fd);
    memset(token, 0, sizeof token);
    snprintf(err, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  if ((rc = pawl__metrics_open(h->metrics, err, errlen))) {
    close(fd);
    memset(token, 0, sizeof token);
    return rc;
  }
  http_route_t routes[] = {{"/metrics", serve_metrics, h->metrics}};
  rc = pawl__http_new(fd, o->token_file ? token : NULL, token_len, routes,
                      sizeof routes / sizeof *routes, &h->http, err, errlen);
  memset(token, 0, sizeof token);
  if (rc) return rc;
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "metrics listening");
  pawl__log_str(&line, "http", name);
  pawl__log_str(&line, "path", "/metrics");
  pawl__log_end(&line);
  return 0;
}

void pawl__serve_stop(host_t *h) {
  pawl__http_free(h->http);
  h->http = NULL;
}
