/* types.c: what admin views know of job types (include/pawl.h,
 * "redaction in admin views"): the host's side, recording the loaded
 * scripts' redact lists, and the views' side, reading one back. Rows live
 * in pawl_types (stores/store.h, "types"). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
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
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  *names = NULL;
  *n = 0;
  int rc = pawl__check_name(p, "job type", type);
  if (rc) return rc;
  char *list = NULL;
  rc = pawl__from_store(p, p->store->ops->types.get(p->store, type, &list,
                                                    NULL));
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

/* Whether `name` is one of the branch names of `type` as recorded: 1 yes
 * (or not recorded: nothing to check against), 0 no (`known` receives the
 * declared names, comma-separated, the caller's: pawl__free(); NULL out of
 * memory), negative on an error. */
static int types_has_branch(pawl_t *p, const char *type, const char *name,
                            char **known) {
  char *redact = NULL, *list = NULL;
  int rc = pawl__from_store(p, p->store->ops->types.get(p->store, type,
                                                        &redact, &list));
  pawl__free(redact);
  if (rc) return rc;
  if (!list) return 1;
  char **names = NULL;
  size_t n = 0;
  int prc = pawl__redact_names(list, &names, &n);
  if (prc) {
    pawl__free(list);
    return prc == -2 ? pawl__fail(p, PAWL_ENOMEM, "out of memory")
                     : pawl__fail(p, PAWL_ESTORE, "job type %s: its branch "
                                  "names in pawl_types are not a JSON array "
                                  "of names", type);
  }
  pawl__free(list);
  int found = 0;
  for (size_t i = 0; i < n && !found; i++) found = strcmp(names[i], name) == 0;
  if (!found) {
    /* The declared names for the message: "big, vip", or "none". */
    pawl_buf_t b;
    pawl__buf_init(&b);
    for (size_t i = 0; i < n; i++) {
      if (i) pawl__buf_puts(&b, ", ");
      pawl__buf_puts(&b, names[i]);
    }
    if (!n) pawl__buf_puts(&b, "none");
    *known = b.oom ? NULL : b.data;
    if (b.oom) pawl__buf_free(&b);
  }
  pawl__free(names);
  return found;
}

/* Branches are declared in the parent's script, which the enqueuer may
 * not have (the CLI, C, another job's code): the hosts record each
 * type's names in pawl_types when they load its script, and a name no
 * loaded script declares would never fire, leaving the child to be
 * canceled when its parent ends. One read per parent (a fan-in with a
 * branch condition is rare), one per distinct type in a row. */
int pawl__branch_check(pawl_t *p, const char *name, const pawl_id_t *after,
                       size_t n) {
  char last[201] = "";
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    pawl_job_t *job = NULL;
    rc = pawl__from_store(p, p->store->ops->jobs.get(p->store, &after[i],
                                                     &job));
    if (rc == PAWL_ENOTFOUND) {
      p->errmsg[0] = 0;
      rc = 0;
      continue;
    }
    if (rc) break;
    if (strcmp(job->type, last) != 0) {
      char *known = NULL;
      int has = types_has_branch(p, job->type, name, &known);
      if (has == 0) {
        char text[PAWL_ID_STRLEN];
        pawl_id_format(&after[i], text);
        rc = pawl__fail(p, PAWL_EINVAL,
                        "unknown branch \"%.200s\": parent job %s is a %.200s, "
                        "whose script declares the branches: %.300s",
                        name, text, job->type, known ? known : "?");
        pawl__free(known);
      } else if (has < 0) {
        rc = has;
      } else {
        snprintf(last, sizeof last, "%s", job->type);
      }
    }
    pawl_job_free(job);
  }
  return rc;
}
