/* http_absent.c: the metrics endpoint of a pawl built without
 * libmicrohttpd (cmake -DPAWL_WITH_HTTP=OFF): CMake compiles this file in
 * place of serve.c and http.c, so that such a build neither links nor
 * mentions libmicrohttpd, and a host asked for the endpoint does not start
 * (never a host that silently serves nothing), with a message that says
 * what is missing and how to get it. */
#include <stdio.h>

#include "ops.h"

int pawl__serve_new(host_t *h, const pawl_metrics_opts_t *o, char *err,
                    size_t errlen) {
  (void)h;
  snprintf(err, errlen,
           "--metrics %.100s: this pawl was built without HTTP "
           "(libmicrohttpd), which serves the metrics endpoint; rebuild it "
           "with cmake -DPAWL_WITH_HTTP=ON",
           o->listen ? o->listen : "");
  return PAWL_EINVAL;
}

/* Nothing was made: pawl__serve_new never succeeds here. */
void pawl__serve_stop(host_t *h) { (void)h; }
