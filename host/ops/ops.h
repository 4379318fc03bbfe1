/* ops.h: the servers around the engine (ops/), as the engine's hook table
 * (runner/hooks.h) names them; start.c puts them in the table.
 *
 * admin_server.c: the admin console's server (no optional library).
 * serve.c with http.c: the metrics endpoint on libmicrohttpd; without it
 * (cmake -DPAWL_WITH_HTTP=OFF) http_absent.c, whose pawl__serve_new
 * refuses --metrics saying so.
 * webhook.c: pawl.alert.webhook's sender on libcurl; without it
 * (cmake -DPAWL_WITH_CURL=OFF) webhook_absent.c, whose pawl__webhook_post
 * refuses every post saying so. */
#ifndef PAWL_OPS_H
#define PAWL_OPS_H

#include "hooks.h"
#include "host.h"

int pawl__admin_new(host_t *h, const pawl_admin_opts_t *o,
                    struct admin_server **out, char *err, size_t errlen);
void pawl__admin_free(struct admin_server *a);
void *pawl__admin_main(void *arg);

int pawl__serve_new(host_t *h, const pawl_metrics_opts_t *o, char *err,
                    size_t errlen);
void pawl__serve_stop(host_t *h);

int pawl__webhook_new(host_t *h, char *err, size_t errlen);
void pawl__webhook_free(host_t *h);
int pawl__webhook_post(void *data, const pawl__lua_post_t *req, char *err,
                       size_t errlen);

#endif
