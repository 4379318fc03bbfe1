/* start.c: the public entry points that start a threaded host, with the
 * servers of ops/ in the engine's hook table (runner/hooks.h says why the
 * engine takes them this way). */
#include "ops.h"

static const pawl__ops_hooks_t ops_hooks = {
    .admin_new = pawl__admin_new,
    .admin_free = pawl__admin_free,
    .admin_main = pawl__admin_main,
    .serve_new = pawl__serve_new,
    .serve_stop = pawl__serve_stop,
    .webhook_new = pawl__webhook_new,
    .webhook_free = pawl__webhook_free,
    .webhook_post = pawl__webhook_post,
};

int pawl_start(pawl_t *p, const pawl_host_opts_t *o) {
  return pawl__host_start(p, o, &ops_hooks);
}

int pawl_attach_uv(pawl_t *p, struct uv_loop_s *loop,
                   const pawl_uv_opts_t *o) {
  return pawl__uv_attach(p, loop, o, &ops_hooks);
}
