/* webhook_absent.c: pawl.alert.webhook in a pawl built without libcurl
 * (cmake -DPAWL_WITH_CURL=OFF): CMake compiles this file in place of
 * webhook.c, so that such a build neither links nor mentions libcurl. The
 * host starts without a sender (alerts that do not post still run), and
 * every post is refused: the hook's error says what is missing and how to
 * get it, as a full queue's does, so the operator sees it in the log. */
#include <stdio.h>

#include "ops.h"

int pawl__webhook_new(host_t *h, char *err, size_t errlen) {
  (void)h, (void)err, (void)errlen;
  return 0; /* h->webhook stays NULL */
}

void pawl__webhook_free(host_t *h) { (void)h; }

int pawl__webhook_post(void *data, const pawl__lua_post_t *req, char *err,
                       size_t errlen) {
  (void)data, (void)req;
  snprintf(err, errlen,
           "pawl.alert.webhook: this pawl was built without libcurl, which "
           "sends webhook posts; rebuild it with cmake -DPAWL_WITH_CURL=ON");
  return -1;
}
