/* pawl.c: the public API (include/pawl.h) over the store interface.
 *
 * This layer checks input (names, JSON, numbers) so that bad input is
 * refused with a message naming it before anything reaches the database,
 * fills in defaults, and keeps the per-handle error message. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "alloc.h"
#include "bounds.h"
#include "buf.h"
#include "handle.h"
#include "json.h"
#include "pawl.h"
#include "pawl_internal.h"
#include "store.h"

/* ---- handle ------------------------------------------------------------- */

int pawl__fail(pawl_t *p, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->errmsg, sizeof p->errmsg, fmt, ap);
  va_end(ap);
  return rc;
}

/* Copies the store's message after a failed store call. */
int pawl__from_store(pawl_t *p, int rc) {
  if (rc) {
    if (p->store->errmsg[0])
      snprintf(p->errmsg, sizeof p->errmsg, "%s", p->store->errmsg);
    else
      snprintf(p->errmsg, sizeof p->errmsg, "%s", pawl_strerror(rc));
  }
  return rc;
}

void pawl_options_init(pawl_options_t *o) {
  memset(o, 0, sizeof *o);
  o->age_boost_ms = -1;
  o->create = 1;
}

void pawl_enqueue_opts_init(pawl_enqueue_opts_t *o) { memset(o, 0, sizeof *o); }

void pawl_filter_init(pawl_filter_t *f) {
  memset(f, 0, sizeof *f);
  f->state = -1;
}

/* The user running the process. getpwuid_r, not getpwuid: handles may be
 * opened on several threads at once, and getpwuid's result is static. */
static char *pawl_default_principal(void) {
  struct passwd pwd, *pw = NULL;
  char buf[4096];
  if (getpwuid_r(geteuid(), &pwd, buf, sizeof buf, &pw) != 0) pw = NULL;
  const char *user = pw && pw->pw_name ? pw->pw_name : getenv("USER");
  return pawl__strdup(user ? user : "unknown");
}

static char *pawl_default_node_id(void) {
  char host[256] = "localhost", *id = NULL;
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  if (pawl__asprintf(&id, "%s-%d", host, (int)getpid()) < 0) return NULL;
  return id;
}

int pawl_open(pawl_t **out, const pawl_options_t *opts, char *errbuf,
              size_t errlen) {
  pawl_options_t defaults;
  char scratch[512];
  if (!errbuf || errlen == 0) {
    errbuf = scratch;
    errlen = sizeof scratch;
  }
  errbuf[0] = 0;
  if (!opts) {
    pawl_options_init(&defaults);
    opts = &defaults;
  }
  const char *url = opts->db;
  if (url && !*url) {
    snprintf(errbuf, errlen, "empty database URL");
    return PAWL_EINVAL;
  }
  if (!url) url = getenv("PAWL_DB");
  if (!url || !*url) url = "sqlite:./pawl.db";
  /* The boost times a priority must fit the rank's 64 bits. */
  if (opts->age_boost_ms != -1 &&
      pawl__bounds_check_int("age boost", opts->age_boost_ms, 0,
                       PAWL_AGE_BOOST_MAX_MS, "ms", errbuf, errlen))
    return PAWL_EINVAL;
  if (pawl__bounds_check_int("lease_ms", opts->lease_ms, 0, PAWL_LEASE_MAX_MS, NULL,
                       errbuf, errlen) ||
      pawl__bounds_check_int("busy_timeout_ms", opts->busy_timeout_ms, 0, INT32_MAX,
                       NULL, errbuf, errlen))
    return PAWL_EINVAL;
  if (opts->file_mode & ~0777u ||
      (opts->file_mode && (opts->file_mode & 0600) != 0600)) {
    snprintf(errbuf, errlen,
             "file mode 0%o must be within 0777 and give the owner read and "
             "write (0600)",
             opts->file_mode);
    return PAWL_EINVAL;
  }
  pawl_t *p = pawl__calloc(1, sizeof *p);
  if (p) pawl__alloc_handles(1);
  if (!p) {
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  p->magic = PAWL__MAGIC_OPEN;
  p->node_id = opts->node_id ? pawl__strdup(opts->node_id) : pawl_default_node_id();
  p->principal =
      opts->principal ? pawl__strdup(opts->principal) : pawl_default_principal();
  p->lease_ms = opts->lease_ms ? opts->lease_ms : 30000;
  pawl_id_new(&p->incarnation);
  if (!p->node_id || !p->principal) {
    pawl_close(p);
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  p->shared = pawl__calloc(1, sizeof *p->shared);
  if (!p->shared) {
    pawl_close(p);
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  pthread_mutex_init(&p->shared->mu, NULL);
  pthread_mutex_init(&p->shared->gate, NULL);
  p->shared->refs = 1;
  p->shared->root = p;
  p->gate = &p->shared->gate;
  /* Made now, not at the first definition: a host's loader thread reads
   * it while the program may define more. */
  if (!(p->defs = pawl__defs_new())) {
    pawl_close(p);
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  store_config_t cfg = {
      .write_gate = p->gate,
      .url = url,
      .clock = opts->clock,
      .clock_data = opts->clock_data,
      .sync_full = opts->sync_full,
      .busy_timeout_ms = opts->busy_timeout_ms,
      .age_boost_ms = opts->age_boost_ms,
      .no_migrate = opts->no_migrate,
      .create = opts->create,
      .check_writable = opts->check_writable,
      .file_mode = opts->file_mode,
      .no_autocheckpoint = opts->manual_checkpoint,
  };
  int rc = pawl__store_open(&p->store, &cfg, errbuf, errlen);
  if (rc) {
    pawl_close(p);
    return rc;
  }
  /* Kept for sibling handles: same database, settings already applied. */
  p->cfg = cfg;
  p->cfg.url = pawl__strdup(url);
  p->cfg.age_boost_ms = -1;
  p->cfg.no_migrate = 1;
  p->cfg.create = 0; /* a sibling never makes a new database of its own */
  p->cfg.check_writable = 0;
  if (!p->cfg.url) {
    pawl_close(p);
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  *out = p;
  return 0;
}

/* A sibling of `parent` (see pawl__open_sibling); `autocheckpoint`: its
 * commits checkpoint the write-ahead log as SQLite does by default. */
static int pawl_open_sibling(pawl_t *parent, const char *principal,
                             int autocheckpoint, pawl_t **out, char *errbuf,
                             size_t errlen) {
  pawl_t *p = pawl__calloc(1, sizeof *p);
  if (p) pawl__alloc_handles(1);
  if (!p) {
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  p->magic = PAWL__MAGIC_OPEN;
  p->node_id = pawl__strdup(parent->node_id);
  p->principal = pawl__strdup(principal ? principal : parent->principal);
  p->lease_ms = parent->lease_ms;
  p->incarnation = parent->incarnation;
  p->host = parent->host;
  p->host_ops = parent->host_ops;
  p->cfg = parent->cfg;
  p->cfg.no_autocheckpoint = !autocheckpoint;
  p->cfg.url = p->node_id && p->principal ? pawl__strdup(parent->cfg.url) : NULL;
  if (!p->cfg.url) {
    pawl_close(p);
    snprintf(errbuf, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  int rc = pawl__store_open(&p->store, &p->cfg, errbuf, errlen);
  if (rc) {
    pawl_close(p);
    return rc;
  }
  *out = p;
  return 0;
}

int pawl_sibling(pawl_t *p, pawl_t **out) {
  PAWL__CHECK(p);
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (!out) return pawl__fail(p, PAWL_EINVAL, "pawl_sibling: out is NULL");
  if (!p->shared)
    return pawl__fail(p, PAWL_EINVAL,
                      "pawl_sibling: a host's own handle (job code's) "
                      "makes no siblings; use the program's handle");
  pawl_t *q = NULL;
  char err[sizeof p->errmsg];
  /* Its checkpoints as the parent's were asked for (manual_checkpoint). */
  int rc = pawl_open_sibling(p, NULL, !p->cfg.no_autocheckpoint, &q, err,
                             sizeof err);
  if (rc) return pawl__fail(p, rc, "pawl_sibling: %s", err);
  /* Not the host's own handle: it wakes the host through `shared`. */
  q->host = NULL;
  q->host_ops = NULL;
  q->defs = pawl__defs_new();
  if (!q->defs) {
    pawl_close(q);
    return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  }
  pthread_mutex_lock(&p->shared->mu);
  p->shared->refs++;
  pthread_mutex_unlock(&p->shared->mu);
  q->shared = p->shared;
  *out = q;
  return 0;
}

int pawl__check_open(pawl_t *p) {
  if (!p || p->magic != PAWL__MAGIC_OPEN) return PAWL_EMISUSE;
  return 0;
}

int pawl__check(pawl_t *p) {
  if (!p || p->magic != PAWL__MAGIC_OPEN) return PAWL_EMISUSE;
  if (atomic_load_explicit(&p->bound, memory_order_acquire) &&
      !pthread_equal(p->owner, pthread_self()))
    return PAWL_EMISUSE;
  return 0;
}

/* Drops p's hold on what it shares with its siblings; the last one frees
 * it (the write gate with it: no handle of the family is left to write). */
static void pawl_shared_release(pawl_t *p) {
  pawl__shared_t *sh = p->shared;
  if (!sh) return;
  pthread_mutex_lock(&sh->mu);
  if (sh->root == p) {
    sh->root = NULL;
    sh->host = NULL;
    sh->host_ops = NULL;
  }
  int last = --sh->refs == 0;
  pthread_mutex_unlock(&sh->mu);
  p->shared = NULL;
  p->gate = NULL;
  if (!last) return;
  pthread_mutex_destroy(&sh->gate);
  pthread_mutex_destroy(&sh->mu);
  pawl__free(sh);
}

int pawl__open_sibling(pawl_t *parent, const char *principal, pawl_t **out,
                       char *errbuf, size_t errlen) {
  /* The host's connections leave checkpoints to its checkpointer. */
  return pawl_open_sibling(parent, principal, 0, out, errbuf, errlen);
}

void pawl_close(pawl_t *p) {
  if (!p || p->magic != PAWL__MAGIC_OPEN) return; /* closed: see pawl.h */
  /* Refused, leaving the handle as it was: from inside a step (job code,
   * an event callback: the step still runs on it), and from another
   * thread while it is attached to a libuv loop (the loop's handles are
   * closed on the loop's thread). See the step host's close_refused. */
  if (p->owns_host && p->host_ops->close_refused &&
      p->host_ops->close_refused(p))
    return;
  if (p->owns_host) p->host_ops->free(p);
  pawl__defs_destroy(p->defs);
  if (p->store) p->store->ops->close(p->store);
  pawl__free((char *)p->cfg.url);
  pawl_shared_release(p);
  pawl__free(p->node_id);
  pawl__free(p->principal);
  /* Poisoned before it is freed: a later call on it is refused while the
   * memory is not reused (pawl__check). */
  p->magic = PAWL__MAGIC_CLOSED;
  pawl__free(p);
  pawl__alloc_handles(-1);
}

const char *pawl_errmsg(pawl_t *p) {
  if (p && p->magic != PAWL__MAGIC_OPEN)
    return "the handle is closed (PAWL_EMISUSE)";
  return p && p->errmsg[0] ? p->errmsg : "no error";
}

const char *pawl_node_id(pawl_t *p) {
  return pawl__check_open(p) ? "" : p->node_id;
}

int64_t pawl_now(pawl_t *p) {
  PAWL__CHECK_OPEN(p);
  return pawl__store_now(p->store);
}

int pawl_checkpoint(pawl_t *p) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (!p->store->ops->maintenance.checkpoint) return 0;
  return pawl__from_store(p, p->store->ops->maintenance.checkpoint(p->store));
}

int pawl_schema_version(pawl_t *p, int *current, int *latest) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->schema.version(p->store, current,
                                                          latest));
}

/* ---- for the runner (pawl_internal.h) ----------------------------------- */

void pawl__host_set(pawl_t *p, struct host *h, const pawl__host_ops_t *ops,
                    int owns) {
  p->host = h;
  p->host_ops = h ? ops : NULL;
  p->owns_host = h ? owns : 0;
  /* The siblings pawl_sibling() made wake the root's own host; cleared
   * before the host is freed (its callers end it after this). */
  pawl__shared_t *sh = p->shared;
  if (sh && (owns || !h)) {
    pthread_mutex_lock(&sh->mu);
    if (sh->root == p) {
      sh->host = h;
      sh->host_ops = h ? ops : NULL;
    }
    pthread_mutex_unlock(&sh->mu);
  }
}

struct host *pawl__host_get(pawl_t *p) { return p->host; }

void pawl__wake(pawl_t *p) {
  if (p->host) {
    p->host_ops->wake(p->host);
    return;
  }
  pawl__shared_t *sh = p->shared;
  if (!sh) return;
  pthread_mutex_lock(&sh->mu);
  if (sh->root != p && sh->host) sh->host_ops->wake(sh->host);
  pthread_mutex_unlock(&sh->mu);
}

void pawl__bind(pawl_t *p) {
  if (atomic_load(&p->bound)) return;
  p->owner = pthread_self();
  atomic_store_explicit(&p->bound, 1, memory_order_release);
}

int pawl__bound(pawl_t *p) {
  if (!atomic_load_explicit(&p->bound, memory_order_acquire)) return 0;
  return pthread_equal(p->owner, pthread_self()) ? 1 : -1;
}

int64_t pawl__lease_ms(pawl_t *p) { return p->lease_ms; }

const char *pawl__store_name(pawl_t *p) { return p->store->ops->name; }

int64_t pawl__skew_ms(pawl_t *p) { return p->store->skew_ms; }

int pawl__clock_injected(pawl_t *p) { return p->store->clock != NULL; }

int pawl__data_version(pawl_t *p, uint64_t *v) {
  if (!p->store->ops->maintenance.data_version)
    return PAWL_EINVAL; /* not an error of the database: no errmsg */
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->maintenance.data_version(p->store,
                                                                    v));
}

int pawl__node_beat(pawl_t *p, const char *version, const char *queues,
                    int64_t started_at) {
  p->errmsg[0] = 0;
  store_node_t nd = {.id = p->node_id,
                     .incarnation = &p->incarnation,
                     .version = version,
                     .queues = queues,
                     .started_at = started_at};
  return pawl__from_store(p, p->store->ops->nodes.beat(p->store, &nd));
}

int pawl__node_stop(pawl_t *p) {
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->nodes.stop(p->store, p->node_id,
                                                       &p->incarnation));
}

int pawl__nodes_reap(pawl_t *p, int64_t silent_ms, size_t *n) {
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->nodes.reap(p->store, silent_ms, n));
}

/* The sweep lock's owner: the node id (cut to 255 bytes). */
static void pawl_recover_owner(pawl_t *p, char owner[256]) {
  snprintf(owner, 256, "%s", p->node_id);
}

int pawl__recover_lock(pawl_t *p, int *got) {
  p->errmsg[0] = 0;
  char owner[256];
  pawl_recover_owner(p, owner);
  return pawl__from_store(p, p->store->ops->locks.acquire(
                                p->store, "pawl.recover", owner, p->lease_ms,
                                got));
}

int pawl__recover_unlock(pawl_t *p) {
  p->errmsg[0] = 0;
  char owner[256];
  pawl_recover_owner(p, owner);
  return pawl__from_store(p, p->store->ops->locks.release(
                                p->store, "pawl.recover", owner));
}

int pawl__can_listen(pawl_t *p) { return p->store->ops->wakeup.listen != NULL; }

int pawl__listen(pawl_t *p) {
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->wakeup.listen(p->store));
}

int pawl__wakeup_wait(pawl_t *p, int timeout_ms, int *woke,
                      pawl_buf_t *heard) {
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->wakeup.wait(p->store, timeout_ms,
                                                       woke, heard));
}

void pawl__claim_floors(pawl_t *p, int listening, const char *rewinds) {
  if (p->store->ops->claim.hear)
    p->store->ops->claim.hear(p->store, listening, rewinds);
}

/* ---- enqueue ------------------------------------------------------------ */

/* Names (types, queues) are printable text without control characters, at
 * most 200 bytes: they show up in logs, CLI tables and metrics labels. */
static int pawl_check_text(pawl_t *p, const char *what, const char *s,
                           size_t max) {
  if (!s || !*s) return pawl__fail(p, PAWL_EINVAL, "%s must not be empty", what);
  size_t n = strlen(s);
  if (n > max)
    return pawl__fail(p, PAWL_EINVAL, "%s is longer than %zu bytes (got %zu)",
                      what, max, n);
  for (size_t i = 0, k; i < n; i += k) {
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return pawl__fail(p, PAWL_EINVAL, "%s contains a control character",
                        what);
    /* What every backend stores: PostgreSQL refuses other bytes. */
    if (!(k = pawl__json_utf8_len((const unsigned char *)s + i, n - i)))
      return pawl__fail(p, PAWL_EINVAL, "%s is not valid UTF-8 (at byte %zu)",
                        what, i + 1);
  }
  return 0;
}

/* Names and keys (types, queues, tags, idempotency, business, ordering and
 * signal keys, correlation ids, lock names) are text without control
 * characters, at most 200 bytes: they show up in logs, CLI tables and
 * metrics labels, and job code hands them in too. */
static int pawl_check_name(pawl_t *p, const char *what, const char *s) {
  return pawl_check_text(p, what, s, 200);
}

int pawl__check_name(pawl_t *p, const char *what, const char *s) {
  return pawl_check_name(p, what, s);
}

/* A reason recorded in a job's history (cancel, replace, queue pause). */
#define PAWL_REASON_MAX 1000

int pawl__check_reason(pawl_t *p, const char *reason) {
  if (!reason || !*reason) return 0;
  return pawl_check_text(p, "reason", reason, PAWL_REASON_MAX);
}

/* ---- who acts ----------------------------------------------------------- */

void pawl__act_as(pawl_t *p, const pawl__actor_t *a) {
  if (a) p->acting = *a;
  p->actor = a ? &p->acting : NULL;
}

const char *pawl__actor_name(pawl_t *p) {
  return p->actor ? p->actor->name : p->principal;
}

const char *pawl__actor_owner(pawl_t *p, int grant) {
  if (!p->actor || (p->actor->grants & grant)) return NULL;
  return p->actor->owner;
}

/* A number within [min, max], or PAWL_EINVAL naming it and its range. */
static int pawl_check_int(pawl_t *p, const char *what, int64_t v, int64_t min,
                          int64_t max, const char *unit) {
  if (pawl__bounds_check_int(what, v, min, max, unit, p->errmsg, sizeof p->errmsg))
    return PAWL_EINVAL;
  return 0;
}

/* JSON text of at most PAWL_PAYLOAD_MAX bytes (docs/security.md, "What
 * job code may write": one cap for every enqueuer and every job's output). */
static int pawl_check_json(pawl_t *p, const char *what, const char *s) {
  char err[256];
  size_t len = strlen(s);
  if (len > PAWL_PAYLOAD_MAX)
    return pawl__fail(p, PAWL_EINVAL,
                      "%s is %zu bytes; at most %d (16 MiB): put the data "
                      "elsewhere and a reference to it in the job",
                      what, len, PAWL_PAYLOAD_MAX);
  if (pawl__json_validate(s, len, err, sizeof err) != 0)
    return pawl__fail(p, PAWL_EINVAL, "%s is not valid JSON: %s", what, err);
  return 0;
}

/* Dependencies: a condition is "success", "failure", "done"
 * or "branch:NAME" with NAME a name (1..200 bytes, no control
 * characters). */
static int pawl_check_when(pawl_t *p, const char *when) {
  if (strcmp(when, "success") == 0 || strcmp(when, "failure") == 0 ||
      strcmp(when, "done") == 0)
    return 0;
  if (strncmp(when, "branch:", 7) == 0) return pawl_check_name(p, "branch name", when + 7);
  return pawl__fail(p, PAWL_EINVAL,
                    "when must be success, failure, done or branch:NAME "
                    "(got \"%.60s\")",
                    when);
}

static int pawl_id_cmp(const void *a, const void *b) {
  return memcmp(a, b, sizeof(pawl_id_t));
}

/* The parents of one job: at most PAWL_AFTER_MAX, none twice, and a
 * condition only with parents. */
static int pawl_check_after(pawl_t *p, const pawl_enqueue_opts_t *o) {
  int rc;
  if (o->when && (rc = pawl_check_when(p, o->when))) return rc;
  if (!o->nafter) {
    if (o->when)
      return pawl__fail(p, PAWL_EINVAL, "when \"%.60s\" needs after (the "
                        "jobs to wait for)", o->when);
    return 0;
  }
  if (!o->after)
    return pawl__fail(p, PAWL_EINVAL, "%zu parents but no array", o->nafter);
  if (o->nafter > PAWL_AFTER_MAX)
    return pawl__fail(p, PAWL_EINVAL, "after names %zu jobs; at most %d",
                      o->nafter, PAWL_AFTER_MAX);
  if (o->when && strncmp(o->when, "branch:", 7) == 0 &&
      (rc = pawl__branch_check(p, o->when + 7, o->after, o->nafter)))
    return rc;
  if (o->nafter == 1) return 0;
  pawl_id_t *sorted = pawl__malloc(o->nafter * sizeof *sorted);
  if (!sorted) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  memcpy(sorted, o->after, o->nafter * sizeof *sorted);
  qsort(sorted, o->nafter, sizeof *sorted, pawl_id_cmp);
  rc = 0;
  for (size_t i = 1; i < o->nafter && !rc; i++)
    if (memcmp(&sorted[i - 1], &sorted[i], sizeof *sorted) == 0) {
      char text[PAWL_ID_STRLEN];
      pawl_id_format(&sorted[i], text);
      rc = pawl__fail(p, PAWL_EINVAL, "after names job %s twice", text);
    }
  pawl__free(sorted);
  return rc;
}

/* Checks one job's input and fills a store_new_job_t. `tags` receives the
 * JSON array text (owned by the caller). */
static int pawl_prepare_job(pawl_t *p, const char *type, const char *payload,
                            const pawl_enqueue_opts_t *o, store_new_job_t *nj,
                            pawl_buf_t *tags) {
  int rc;
  if ((rc = pawl_check_name(p, "job type", type))) return rc;
  if (o->queue && (rc = pawl_check_name(p, "queue name", o->queue))) return rc;
  if (payload && (rc = pawl_check_json(p, "payload", payload))) return rc;
  if (o->params && (rc = pawl_check_json(p, "params", o->params))) return rc;
  if ((rc = pawl_check_int(p, "priority", o->priority, PAWL_PRIORITY_MIN,
                           PAWL_PRIORITY_MAX, NULL)))
    return rc;
  /* 0: not given; the job's script decides when it runs (see
   * pawl_enqueue_opts_t). */
  if (o->max_attempts &&
      (rc = pawl_check_int(p, "max_attempts", o->max_attempts, 1,
                           PAWL_ATTEMPTS_MAX, NULL)))
    return rc;
  if ((rc = pawl_check_int(p, "timeout", o->timeout_s, 0, PAWL_TIMEOUT_MAX_S,
                           "seconds")))
    return rc;
  if ((rc = pawl_check_int(p, "delay", o->delay_ms, 0, PAWL_DELAY_MAX_MS,
                           "ms")))
    return rc;
  if ((rc = pawl_check_int(p, "run_at", o->run_at, 0, PAWL_TIME_MAX_MS,
                           "ms since the epoch")))
    return rc;
  int64_t run_at = o->run_at;
  if (!run_at && o->delay_ms) {
    int64_t now = pawl__store_now(p->store);
    if (pawl__bounds_add_time(now, o->delay_ms, &run_at))
      return pawl__fail(p, PAWL_EINVAL,
                        "now (%lld ms) plus the delay (%lld ms) is past the "
                        "latest run time, %lld ms since the epoch",
                        (long long)now, (long long)o->delay_ms,
                        (long long)PAWL_TIME_MAX_MS);
  }
  if (o->idempotency_key &&
      (rc = pawl_check_name(p, "idempotency key", o->idempotency_key)))
    return rc;
  if (o->business_key &&
      (rc = pawl_check_name(p, "business key", o->business_key)))
    return rc;
  if (o->correlation_id &&
      (rc = pawl_check_name(p, "correlation id", o->correlation_id)))
    return rc;
  if (o->enqueued_by && (rc = pawl_check_name(p, "enqueued_by", o->enqueued_by)))
    return rc;
  if (o->ordering_key &&
      (rc = pawl_check_name(p, "ordering key", o->ordering_key)))
    return rc;
  if (o->resource && (rc = pawl__resource_check(p, o->resource))) return rc;
  /* Signals: the key, and when the wait runs out. */
  int64_t signal_timeout_at = 0;
  if (o->signal && (rc = pawl_check_name(p, "signal key", o->signal)))
    return rc;
  if (o->signal_timeout_ms && !o->signal)
    return pawl__fail(p, PAWL_EINVAL, "a signal timeout needs a signal key");
  if ((rc = pawl_check_int(p, "signal timeout", o->signal_timeout_ms, 0,
                           PAWL_DELAY_MAX_MS, "ms")))
    return rc;
  if (o->signal_timeout_ms &&
      pawl__bounds_add_time(pawl__store_now(p->store), o->signal_timeout_ms,
                            &signal_timeout_at))
    return pawl__fail(p, PAWL_EINVAL,
                      "now plus the signal timeout (%lld ms) is past the "
                      "latest time, %lld ms since the epoch",
                      (long long)o->signal_timeout_ms,
                      (long long)PAWL_TIME_MAX_MS);
  if ((rc = pawl_check_after(p, o))) return rc;
  if ((rc = pawl_check_int(p, "depth", o->depth, 0, PAWL_DEPTH_MAX, NULL)))
    return rc;
  pawl__buf_putc(tags, '[');
  for (size_t i = 0; i < o->ntags; i++) {
    if ((rc = pawl_check_name(p, "tag", o->tags[i]))) return rc;
    if (i) pawl__buf_putc(tags, ',');
    pawl__buf_json_string(tags, o->tags[i], strlen(o->tags[i]));
  }
  pawl__buf_putc(tags, ']');
  if (tags->oom) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  memset(nj, 0, sizeof *nj);
  pawl_id_new(&nj->id);
  nj->type = type;
  nj->queue = o->queue ? o->queue : "default";
  nj->priority = o->priority;
  nj->payload = payload ? payload : "{}";
  nj->params = o->params;
  nj->tags = pawl__buf_cstr(tags);
  nj->run_at = run_at;
  /* 0 stays 0: "not set", resolved from the script when the job runs. */
  nj->max_attempts = o->max_attempts;
  nj->timeout_s = o->timeout_s;
  nj->idempotency_key = o->idempotency_key;
  nj->business_key = o->business_key;
  nj->return_existing = o->return_existing;
  nj->correlation_id = o->correlation_id;
  nj->enqueued_by = o->enqueued_by ? o->enqueued_by : p->principal;
  nj->blocked = o->blocked;
  nj->ordering_key = o->ordering_key;
  nj->resource = o->resource;
  nj->signal_key = o->signal;
  nj->signal_timeout_at = signal_timeout_at;
  if (o->signal) nj->blocked = 1; /* it waits for the signal */
  nj->after = o->nafter ? o->after : NULL;
  nj->nafter = o->nafter;
  nj->when = o->when;
  nj->depth = o->depth;
  return 0;
}

int pawl__prepare_job(pawl_t *p, const char *type, const char *payload,
                      const pawl_enqueue_opts_t *o, store_new_job_t *nj,
                      pawl_buf_t *tags) {
  return pawl_prepare_job(p, type, payload, o, nj, tags);
}

int pawl_enqueue(pawl_t *p, const char *type, const char *payload,
                 const pawl_enqueue_opts_t *opts, pawl_id_t *out_id,
                 int *out_status) {
  PAWL__CHECK(p);
  pawl_enqueue_item_t item = {type, payload, opts};
  pawl_id_t id;
  int status;
  int rc = pawl_enqueue_many(p, &item, 1, &id, &status);
  if (rc) return rc;
  if (out_id) *out_id = id;
  if (out_status) *out_status = status;
  return 0;
}

static int pawl_enqueue_core(pawl_t *p, const pawl_enqueue_item_t *items,
                             size_t n, pawl_id_t *ids, int *statuses,
                             int chain, const char *instance_key,
                             const store_batch_new_t *batch);

/* Job instances: identity is for one job enqueued
 * alone; `what` names the call that refuses it ("a chain's step", "a
 * batch's child"), NULL for pawl_enqueue_many(), which takes it alone. */
static int pawl_identity_check(pawl_t *p, const pawl_enqueue_item_t *items,
                               size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    if (!items[i].opts || !items[i].opts->nidentity) continue;
    if (what)
      return pawl__fail(p, PAWL_EINVAL, "job %zu: %s may not have identity "
                        "fields (a job instance is enqueued alone)", i + 1,
                        what);
    if (n > 1)
      return pawl__fail(p, PAWL_EINVAL, "job %zu: a job with identity fields "
                        "is enqueued alone (one job per call)", i + 1);
  }
  return 0;
}

int pawl__enqueue_keyed(pawl_t *p, const pawl_enqueue_item_t *item,
                        const char *instance_key, pawl_id_t *id_out,
                        int *status_out) {
  return pawl_enqueue_core(p, item, 1, id_out, status_out, 0, instance_key,
                           NULL);
}

int pawl_enqueue_many(pawl_t *p, const pawl_enqueue_item_t *items, size_t n,
                      pawl_id_t *ids, int *statuses) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int rc = pawl_identity_check(p, items, n, NULL);
  if (rc) return rc;
  /* Job instances: one job per call, in steps.c. */
  if (n == 1 && items[0].opts && items[0].opts->nidentity) {
    if (!items[0].opts->identity)
      return pawl__fail(p, PAWL_EINVAL, "%zu identity fields but no array",
                        items[0].opts->nidentity);
    pawl_id_t id;
    int st;
    rc = pawl__enqueue_instance(p, &items[0], &id, &st);
    if (!rc && ids) ids[0] = id;
    if (!rc && statuses) statuses[0] = st;
    return rc;
  }
  return pawl_enqueue_core(p, items, n, ids, statuses, 0, NULL, NULL);
}

/* pawl_chain() (each job after the first also waits for the one before it
 * to succeed) and, with `batch` (batch.c), a batch's children:
 * each gets the batch's id and they go in through store.batch.create()
 * with the batch row. */
int pawl__enqueue_items(pawl_t *p, const pawl_enqueue_item_t *items, size_t n,
                        pawl_id_t *ids, int *statuses, int chain,
                        const store_batch_new_t *batch) {
  int rc = pawl_identity_check(p, items, n,
                                batch ? "a batch's child" : "a chain's step");
  if (rc) return rc;
  return pawl_enqueue_core(p, items, n, ids, statuses, chain, NULL, batch);
}

/* The enqueue of items[0..n): `chain`, `instance_key` (n == 1 when set)
 * and `batch` as the callers above say. */
static int pawl_enqueue_core(pawl_t *p, const pawl_enqueue_item_t *items,
                             size_t n, pawl_id_t *ids, int *statuses,
                             int chain, const char *instance_key,
                             const store_batch_new_t *batch) {
  if (n == 0) return 0;
  pawl_enqueue_opts_t defaults;
  pawl_enqueue_opts_init(&defaults);
  store_new_job_t *jobs = pawl__calloc(n, sizeof *jobs);
  pawl_buf_t *tags = pawl__calloc(n, sizeof *tags);
  pawl_id_t *tmp_ids = ids ? NULL : pawl__calloc(n, sizeof *tmp_ids);
  int *tmp_st = statuses ? NULL : pawl__calloc(n, sizeof *tmp_st);
  int rc = 0;
  if (!jobs || !tags || (!ids && !tmp_ids) || (!statuses && !tmp_st))
    rc = pawl__fail(p, PAWL_ENOMEM, "out of memory");
  for (size_t i = 0; i < n && !rc; i++) {
    rc = pawl_prepare_job(p, items[i].type, items[i].payload,
                          items[i].opts ? items[i].opts : &defaults, &jobs[i],
                          &tags[i]);
    if (!rc) jobs[i].instance_key = instance_key; /* n == 1 when set */
    if (rc && n > 1) {
      char msg[sizeof p->errmsg];
      snprintf(msg, sizeof msg, "%s", p->errmsg);
      pawl__fail(p, rc, "%s %zu: %s", chain ? "step" : "job", i + 1, msg);
    }
    jobs[i].after_prev = chain && i > 0;
    /* Dependencies with signals: both would take the job out
     * of `blocked` on their own (the last parent's end, the decision), so
     * the first would run it while the other still holds it. Refused
     * rather than half kept. */
    if (!rc && jobs[i].signal_key && (jobs[i].nafter || jobs[i].after_prev)) {
      char at[32] = "";
      if (n > 1)
        snprintf(at, sizeof at, "%s %zu: ", chain ? "step" : "job", i + 1);
      rc = pawl__fail(p, PAWL_EINVAL,
                      "%sa job may not wait both for parents (%s) and for a "
                      "signal (\"%.60s\"); give the signal to a job of its "
                      "own and make this one depend on it",
                      at, jobs[i].nafter ? "after" : "a chain",
                      jobs[i].signal_key);
    }
  }
  /* The host's events (if it wants them) hold their places before the
   * insert, so that no job is seen starting before it was enqueued. The
   * host is the handle's own, or the one the root of a pawl_sibling()
   * family runs: then the family's lock is held until the events are in
   * (the host cannot be freed meanwhile), or released at once when the
   * host wants no events. */
  struct host *eh = p->host;
  const pawl__host_ops_t *eops = p->host_ops;
  pawl__shared_t *held = NULL;
  if (!rc && !eh && p->shared) {
    pthread_mutex_lock(&p->shared->mu);
    if (p->shared->root != p && p->shared->host) {
      held = p->shared;
      eh = held->host;
      eops = held->host_ops;
    } else {
      pthread_mutex_unlock(&p->shared->mu);
    }
  }
  void *places =
      !rc && eh && eops->enqueue_begin ? eops->enqueue_begin(eh, n) : NULL;
  if (held && !places) {
    pthread_mutex_unlock(&held->mu);
    held = NULL;
    eh = NULL;
  }
  if (!rc && batch) {
    for (size_t i = 0; i < n; i++) jobs[i].batch_id = &batch->id;
    rc = pawl__from_store(p, p->store->ops->batch.create(p->store, batch,
                                                         jobs, n));
    /* A batch found by its identity: its children, not these. */
    int found = !rc && batch->found && *batch->found;
    for (size_t i = 0; !rc && i < n; i++) {
      (ids ? ids : tmp_ids)[i] = found ? batch->found_ids[i] : jobs[i].id;
      (statuses ? statuses : tmp_st)[i] =
          found ? PAWL_ENQ_DUPLICATE : PAWL_ENQ_NEW;
    }
  } else if (!rc) {
    rc = pawl__from_store(p, p->store->ops->jobs.insert(
                                p->store, jobs, n, ids ? ids : tmp_ids,
                                statuses ? statuses : tmp_st));
  }
  if (places) {
    void *at = places;
    const pawl_id_t *got = ids ? ids : tmp_ids;
    const int *st = statuses ? statuses : tmp_st;
    for (size_t i = 0; i < n; i++)
      eops->enqueue_fill(&at, i + 1 < n, &got[i], jobs[i].type,
                         jobs[i].queue, jobs[i].run_at,
                         !rc && st[i] == PAWL_ENQ_NEW);
    eops->enqueue_end(eh, places, n);
  }
  /* In-process enqueues wake the host at once (its poller, its step or
   * loop thread): the handle's own, or its family's root's, under the
   * family's lock so that it is not freed meanwhile. */
  if (!rc && eh) {
    eops->wake(eh);
  } else if (!rc) {
    pawl__wake(p);
  }
  if (held) pthread_mutex_unlock(&held->mu);
  if (tags)
    for (size_t i = 0; i < n; i++) pawl__buf_free(&tags[i]);
  pawl__free(tags);
  pawl__free(jobs);
  pawl__free(tmp_ids);
  pawl__free(tmp_st);
  return rc;
}

int pawl_chain(pawl_t *p, const pawl_enqueue_item_t *items, size_t n,
               pawl_id_t *ids, int *statuses) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (n == 0 || n > PAWL_AFTER_MAX)
    return pawl__fail(p, PAWL_EINVAL, "a chain has 1..%d steps (got %zu)",
                      PAWL_AFTER_MAX, n);
  return pawl__enqueue_items(p, items, n, ids, statuses, 1, NULL);
}

int pawl_deps_list(pawl_t *p, const pawl_id_t *id, pawl_dep_cb cb,
                   void *data) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->deps.list(p->store, id, cb, data));
}

/* ---- reading ------------------------------------------------------------ */

int pawl_get(pawl_t *p, const pawl_id_t *id, pawl_job_t **out) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->jobs.get(p->store, id, out));
}

int pawl_list(pawl_t *p, const pawl_filter_t *f, pawl_job_cb cb, void *data) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  pawl_filter_t all;
  if (!f) {
    pawl_filter_init(&all);
    f = &all;
  }
  int rc = pawl__filter_check(p, f); /* api/admin.c */
  if (rc) return rc;
  return pawl__from_store(p, p->store->ops->jobs.list(p->store, f, cb, data));
}

/* ---- operator actions --------------------------------------------------- */

static int pawl_transition(pawl_t *p, const pawl_id_t *id, store_op_t op,
                           const char *reason, pawl_job_t **out) {
  p->errmsg[0] = 0;
  int rc = pawl__check_reason(p, reason);
  if (rc) return rc;
  /* Job code reaches a transition only by restarting a dead job instance
   * (steps.c): the store refuses a job it did not enqueue, unless granted. */
  return pawl__from_store(p, p->store->ops->control.transition(
                                p->store, id, op, pawl__actor_name(p),
                                pawl__actor_owner(p, PAWL__GRANT_RESTART),
                                reason, out));
}

int pawl_cancel(pawl_t *p, const pawl_id_t *id, const char *reason,
                pawl_job_t **out) {
  PAWL__CHECK(p);
  return pawl_transition(p, id, STORE_OP_CANCEL, reason, out);
}

int pawl_pause(pawl_t *p, const pawl_id_t *id, const char *reason,
               pawl_job_t **out) {
  PAWL__CHECK(p);
  return pawl_transition(p, id, STORE_OP_PAUSE, reason, out);
}

int pawl_resume(pawl_t *p, const pawl_id_t *id, const char *reason,
                pawl_job_t **out) {
  PAWL__CHECK(p);
  return pawl_transition(p, id, STORE_OP_RESUME, reason, out);
}

int pawl_retry(pawl_t *p, const pawl_id_t *id, const char *reason,
               pawl_job_t **out) {
  PAWL__CHECK(p);
  return pawl_transition(p, id, STORE_OP_RETRY, reason, out);
}

/* ---- running jobs ------------------------------------------------------- */

int pawl_claim(pawl_t *p, const pawl_claim_opts_t *opts, size_t max,
               pawl_job_t ***out_jobs, size_t *out_n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (opts && pawl_check_int(p, "lease_ms", opts->lease_ms, 0,
                             PAWL_LEASE_MAX_MS, NULL))
    return PAWL_EINVAL;
  if (opts && opts->prefetch > max)
    return pawl__fail(p, PAWL_EINVAL,
                      "prefetch must be between 0 and max (%zu) (got %zu)",
                      max, opts->prefetch);
  store_claim_t c = {
      .queues = opts ? opts->queues : NULL,
      .nqueues = opts ? opts->nqueues : 0,
      .max = max,
      .owner = p->node_id,
      .token = &p->incarnation,
      .lease_ms = opts && opts->lease_ms > 0 ? opts->lease_ms : p->lease_ms,
      .limited_max = max - (opts ? opts->prefetch : 0),
      /* Claimed ahead: the last `prefetch` of `max`, which the caller
       * starts later (defer_start); without defer_start each job claimed
       * starts now. */
      .ahead_from = opts && opts->defer_start ? max - opts->prefetch : max,
  };
  for (size_t i = 0; i < c.nqueues; i++) {
    int rc = pawl_check_name(p, "queue name", c.queues[i]);
    if (rc) return rc;
  }
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  int rc = pawl__from_store(p, p->store->ops->claim.claim(p->store, &c, &jobs, &n));
  if (rc) return rc;
  /* A claimer that runs what it claims: the starts that matter (jobs
   * recovered before, rare) are recorded now, as pawl_begin() would. If
   * that fails the jobs are still the caller's; a loss of one of them is
   * then not counted. */
  for (size_t i = 0; !(opts && opts->defer_start) && i < n; i++)
    if (jobs[i]->recoveries > 0)
      p->store->ops->claim.start(p->store, &jobs[i]->id, &p->incarnation,
                                 jobs[i]->attempt, 0, 1);
  *out_jobs = jobs;
  *out_n = n;
  return 0;
}

/* The levels of ctx:log, lowest first. */
static const char *const pawl_log_levels[] = {"debug", "info", "warn",
                                              "error"};

/* Checks one log line of an outcome. */
static int pawl_check_log(pawl_t *p, const pawl_log_entry_t *l) {
  int known = 0;
  for (size_t i = 0; l->level && i < 4; i++)
    if (strcmp(l->level, pawl_log_levels[i]) == 0) known = 1;
  if (!known)
    return pawl__fail(p, PAWL_EINVAL,
                      "level must be debug, info, warn or error (got %s%s%s)",
                      l->level ? "\"" : "", l->level ? l->level : "NULL",
                      l->level ? "\"" : "");
  if (!l->message) return pawl__fail(p, PAWL_EINVAL, "message is NULL");
  size_t mlen = strlen(l->message), flen = l->fields ? strlen(l->fields) : 0;
  if (mlen > PAWL_LOG_MESSAGE_MAX)
    return pawl__fail(p, PAWL_EINVAL, "log message is %zu bytes; at most %d",
                      mlen, PAWL_LOG_MESSAGE_MAX);
  if (flen > PAWL_LOG_FIELDS_MAX)
    return pawl__fail(p, PAWL_EINVAL, "log fields are %zu bytes of JSON; at "
                      "most %d", flen, PAWL_LOG_FIELDS_MAX);
  if (l->at < 0) return pawl__fail(p, PAWL_EINVAL, "time must not be negative");
  if (l->fields && !pawl__json_is_object(l->fields, strlen(l->fields))) {
    char err[256];
    if (pawl__json_validate(l->fields, strlen(l->fields), err, sizeof err) != 0)
      return pawl__fail(p, PAWL_EINVAL, "fields are not valid JSON: %s", err);
    return pawl__fail(p, PAWL_EINVAL, "fields must be a JSON object");
  }
  return 0;
}

/* Checks one outcome before anything is written. */
static int pawl_check_outcome(pawl_t *p, const pawl_outcome_t *o) {
  int rc;
  if (o->kind == PAWL_OUT_SUCCEEDED && o->result &&
      (rc = pawl_check_json(p, "result", o->result)))
    return rc;
  if (o->kind == PAWL_OUT_SUCCEEDED && o->branches &&
      (rc = pawl_check_json(p, "branches", o->branches)))
    return rc;
  /* An error text is a log line's message in size (job code's are cut
   * to 2000 bytes by its sanitizer before they get here). */
  size_t elen = o->error ? strlen(o->error) : 0;
  if (elen > PAWL_LOG_MESSAGE_MAX)
    return pawl__fail(p, PAWL_EINVAL, "error is %zu bytes; at most %d", elen,
                      PAWL_LOG_MESSAGE_MAX);
  if ((o->kind == PAWL_OUT_RETRY || o->kind == PAWL_OUT_SNOOZE) &&
      (rc = pawl_check_int(p, "run_at", o->run_at, 0, PAWL_TIME_MAX_MS,
                           "ms since the epoch")))
    return rc;
  if ((rc = pawl_check_int(p, "started_at", o->started_at, 0,
                           PAWL_TIME_MAX_MS, "ms since the epoch")) ||
      (rc = pawl_check_int(p, "ended_at", o->ended_at, 0, PAWL_TIME_MAX_MS,
                           "ms since the epoch")))
    return rc;
  if (o->kind == PAWL_OUT_STARTED && !o->started_at)
    return pawl__fail(p, PAWL_EINVAL, "a started outcome needs started_at");
  if (o->started_at && o->ended_at && o->ended_at < o->started_at)
    return pawl__fail(p, PAWL_EINVAL,
                      "ended_at (%lld) is before started_at (%lld)",
                      (long long)o->ended_at, (long long)o->started_at);
  if (o->nlogs && !o->logs)
    return pawl__fail(p, PAWL_EINVAL, "%zu log lines but no array", o->nlogs);
  for (size_t i = 0; i < o->nlogs; i++) {
    if ((rc = pawl_check_log(p, &o->logs[i]))) {
      char msg[sizeof p->errmsg];
      snprintf(msg, sizeof msg, "%s", p->errmsg);
      return pawl__fail(p, rc, "log line %zu: %s", i + 1, msg);
    }
  }
  return 0;
}

int pawl_finish(pawl_t *p, const pawl_outcome_t *outs, size_t n, int *rcs) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  for (size_t i = 0; i < n; i++) {
    int rc = pawl_check_outcome(p, &outs[i]);
    if (rc) {
      if (n > 1) {
        char msg[sizeof p->errmsg];
        snprintf(msg, sizeof msg, "%s", p->errmsg);
        pawl__fail(p, rc, "outcome %zu: %s", i + 1, msg);
      }
      return rc;
    }
  }
  return pawl__from_store(p, p->store->ops->terminal.finish(
                                p->store, &p->incarnation, outs, n, rcs));
}

int pawl_heartbeat(pawl_t *p, size_t *out_n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  size_t n = 0;
  int rc = pawl__from_store(
      p, p->store->ops->claim.extend(p->store, &p->incarnation, p->lease_ms, &n));
  if (!rc && out_n) *out_n = n;
  return rc;
}

int pawl_recover(pawl_t *p, size_t *out_n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  size_t n = 0;
  int rc = pawl__from_store(p, p->store->ops->claim.recover(p->store, &n));
  if (!rc && out_n) *out_n = n;
  return rc;
}

int pawl_begin(pawl_t *p, const pawl_job_t *job) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  /* Started by its claim and never recovered: the common case costs
   * nothing (see pawl_recover()). */
  int ahead = job->started_at == 0, poison = job->recoveries > 0;
  if (!ahead && !poison) return 0;
  return pawl__from_store(p, p->store->ops->claim.start(
                                p->store, &job->id, &p->incarnation,
                                job->attempt, ahead ? pawl_now(p) : 0,
                                poison));
}

int pawl_progress(pawl_t *p, const pawl_id_t *id, int32_t attempt,
                  double done, double total) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  if (!isfinite(done) || !isfinite(total) || done < 0 || total < 0)
    return pawl__fail(p, PAWL_EINVAL,
                      "progress must be finite and not negative (got %g of %g)",
                      done, total);
  return pawl__from_store(p, p->store->ops->jobs.progress(
                                p->store, id, &p->incarnation, attempt, done,
                                total));
}

int pawl_extend(pawl_t *p, const pawl_id_t *id, int32_t attempt, int *held) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  int h = 0;
  int rc = pawl__from_store(p, p->store->ops->claim.extend_one(
                                  p->store, id, &p->incarnation, attempt,
                                  p->lease_ms, &h));
  if (!rc && held) *held = h;
  return rc;
}

static int pawl_lock_check(pawl_t *p, const char *name, const char *owner,
                           int64_t ttl_ms) {
  p->errmsg[0] = 0;
  int rc;
  if ((rc = pawl_check_name(p, "lock name", name)) ||
      (rc = pawl_check_name(p, "lock owner", owner)))
    return rc;
  /* The host's own locks (see PAWL__HOST_LOCK_PREFIX) are not the
   * caller's to take, in any spelling of the prefix: a lookalike in
   * `pawl locks` would mislead an operator as much. */
  size_t np = strlen(PAWL__HOST_LOCK_PREFIX), sp = strspn(name, " ");
  if (strncasecmp(name + sp, PAWL__HOST_LOCK_PREFIX, np) == 0)
    return pawl__fail(p, PAWL_EINVAL,
                      "lock name \"%.200s\" is reserved: names beginning "
                      "with \"%s\" are the host's own locks",
                      name, PAWL__HOST_LOCK_PREFIX);
  if (pawl_check_int(p, "lock TTL", ttl_ms, 1, PAWL_LEASE_MAX_MS, "ms"))
    return PAWL_EINVAL;
  return 0;
}

int pawl_lock_acquire(pawl_t *p, const char *name, const char *owner,
                      int64_t ttl_ms, int *got) {
  PAWL__CHECK(p);
  int g = 0, rc = pawl_lock_check(p, name, owner, ttl_ms);
  if (!rc)
    rc = pawl__from_store(
        p, p->store->ops->locks.acquire(p->store, name, owner, ttl_ms, &g));
  if (got) *got = rc ? 0 : g;
  return rc;
}

int pawl_lock_extend(pawl_t *p, const char *name, const char *owner,
                     int64_t ttl_ms, int *held) {
  PAWL__CHECK(p);
  int h = 0, rc = pawl_lock_check(p, name, owner, ttl_ms);
  if (!rc)
    rc = pawl__from_store(
        p, p->store->ops->locks.extend(p->store, name, owner, ttl_ms, &h));
  if (held) *held = rc ? 0 : h;
  return rc;
}

int pawl_lock_release(pawl_t *p, const char *name, const char *owner) {
  PAWL__CHECK(p);
  int rc = pawl_lock_check(p, name, owner, 1);
  if (!rc)
    rc = pawl__from_store(p, p->store->ops->locks.release(p->store, name, owner));
  return rc;
}

int pawl_next_due(pawl_t *p, const pawl_claim_opts_t *opts, int64_t *run_at) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  const char *const *queues = opts ? opts->queues : NULL;
  size_t nqueues = opts ? opts->nqueues : 0;
  if (nqueues && !queues)
    return pawl__fail(p, PAWL_EINVAL, "%zu queues but no array", nqueues);
  for (size_t i = 0; i < nqueues; i++) {
    int rc = pawl_check_name(p, "queue name", queues[i]);
    if (rc) return rc;
  }
  int64_t v = 0;
  int rc = pawl__from_store(
      p, p->store->ops->claim.next_due(p->store, queues, nqueues, &v));
  if (!rc) *run_at = v;
  return rc;
}

int pawl_history(pawl_t *p, const pawl_id_t *id, pawl_history_t **out) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  return pawl__from_store(p, p->store->ops->history.get(p->store, id, out));
}

int pawl_logs(pawl_t *p, const pawl_id_t *id, pawl_log_record_t **out,
              size_t *n) {
  PAWL__CHECK(p);
  p->errmsg[0] = 0;
  pawl_log_record_t *recs = NULL;
  size_t count = 0;
  int rc = pawl__from_store(p, p->store->ops->jobs.logs(p->store, id, &recs,
                                                       &count));
  if (rc) return rc;
  *out = recs;
  *n = count;
  return 0;
}
