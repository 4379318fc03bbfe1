/* types.c: what admin views know of job types (issue 16; include/pawl.h,
 * "redaction in admin views"): the host's side, recording the loaded
 * scripts' redact lists, and the views' side, reading one back. Rows live
 * in pawl_types (stores/store.h, "types"). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>

#include "alloc.h"
#include "handle.h"
#include "json.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "redact.h"
#include "store.h"

int pawl__types_sync(pawl_t *p, const char *types) {
  p->errmsg[0] = 0;
  char err[200];
  if (!types || pawl__json_check(types, strlen(types), JSON_POLICY, err,
                                 sizeof err) != 0)
    return pawl__fail(p, PAWL_EINVAL, "job types to record: %s",
                      types ? err : "none given");
  return pawl__from_store(p, p->store->ops->types.sync(p->store, types));
}

int pawl_type_redact(pawl_t *p, const char *type, char ***names, size_t *n) {
  p->errmsg[0] = 0;
  *names = NULL;
  *n = 0;
  int rc = pawl__check_name(p, "job type", type);
  if (rc) return rc;
  char *list = NULL;
  rc = pawl__from_store(p, p->store->ops->types.redact_of(p->store, type,
                                                          &list));
  if (rc || !list) return rc;
  rc = pawl__redact_names(list, names, n);
  pawl__free(list);
  if (rc == -2) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  if (rc)
    return pawl__fail(p, PAWL_ESTORE,
                      "job type %s: its redact list in pawl_types is not a "
                      "JSON array of names",
                      type);
  return 0;
}

void pawl_names_free(char **names) { pawl__free(names); }
