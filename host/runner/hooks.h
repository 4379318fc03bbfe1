/* hooks.h: what the engine calls of the servers around it (ops/), and the
 * entry points through which ops/ starts the engine.
 *
 * The engine (runner/) starts and stops the admin console's server, the
 * HTTP server of the metrics endpoint and the sender of
 * pawl.alert.webhook's posts, but it must not depend on them: ops/ lies
 * above the engine, and it is where the optional libraries (libmicrohttpd,
 * libcurl) are linked, so the engine compiles and links without any of
 * them. The engine therefore reaches those servers only through this
 * table of function pointers, which ops/ hands it with each start: the
 * public pawl_start() and pawl_attach_uv() are defined in ops/start.c and
 * call pawl__host_start() and pawl__uv_attach() below with ops/'s table.
 * A table passed in, rather than a header of functions ops/ implements,
 * because then the engine's objects name no symbol of ops/ at all (the
 * link-level layout check, spec/functional/layer_link_check.sh, holds
 * them to that), and rather than a table ops/ registers in a global,
 * because nothing would call the registration in a program that links
 * the internal archive and only calls pawl_start(). A host made without a
 * table (step mode) has no servers and posts no webhooks. */
#ifndef PAWL_HOOKS_H
#define PAWL_HOOKS_H

#include <stddef.h>

#include "bridge.h"
#include "pawl.h"

struct host;
struct admin_server;

typedef struct pawl__ops_hooks {
  /* The admin console's server: made when pawl_host_opts_t.admin asks
   * for it (the sockets are bound then, so a refused path fails the
   * start); `admin_main` serves until the host has stopped (its argument:
   * *out); admin_free (also when never started, and of NULL) removes the
   * socket. admin_new: 0 or a PAWL_E* code with the message in err. */
  int (*admin_new)(struct host *h, const pawl_admin_opts_t *o,
                   struct admin_server **out, char *err, size_t errlen);
  void (*admin_free)(struct admin_server *a);
  void *(*admin_main)(void *arg);
  /* The HTTP server and what it serves (the metrics endpoint): made when
   * pawl_host_opts_t.metrics asks for it (the address is bound then):
   * sets h->metrics and h->http; 0 or a PAWL_E* code with the message in
   * err; what it made is freed by pawl__host_free. serve_stop: stops
   * serving (once the threads are joined, and at the host's free). */
  int (*serve_new)(struct host *h, const pawl_metrics_opts_t *o, char *err,
                   size_t errlen);
  void (*serve_stop)(struct host *h);
  /* The sender of pawl.alert.webhook's posts: made at every start
   * (h->webhook), stopped at the host's free (what is still queued is
   * dropped, logged); webhook_post is the Lua bridge's post callback
   * (data: the host). */
  int (*webhook_new)(struct host *h, char *err, size_t errlen);
  void (*webhook_free)(struct host *h);
  int (*webhook_post)(void *data, const pawl__lua_post_t *req, char *err,
                      size_t errlen);
} pawl__ops_hooks_t;

/* pawl_start() with the servers of `ops` (host.c; never NULL). */
int pawl__host_start(pawl_t *p, const pawl_host_opts_t *in,
                     const pawl__ops_hooks_t *ops);

/* pawl_attach_uv() whose PAWL_UV_THREADS host has the servers of `ops`
 * (uv_attach.c; never NULL). */
int pawl__uv_attach(pawl_t *p, struct uv_loop_s *loop,
                    const pawl_uv_opts_t *o, const pawl__ops_hooks_t *ops);

#endif
