/* handle.h: the handle's layout (api/ only; never installed: the public
 * API sees pawl_t as opaque, and the runner reaches it through the pawl__
 * functions of pawl_internal.h, never through these fields). Tests and
 * benchmarks that drive a store directly may include it. */
#ifndef PAWL_HANDLE_H
#define PAWL_HANDLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "pawl.h"
#include "pawl_internal.h"
#include "buf.h"
#include "store.h"

/* What a handle shares with the handles pawl_sibling() made of it: the
 * write gate, and the host that runs on the first handle (its root), so
 * that a sibling's enqueue on another thread wakes it. Freed with the last
 * handle that holds it (refs, under mu). */
typedef struct pawl__shared {
  pthread_mutex_t mu;
  int refs;
  pthread_mutex_t gate;    /* the write gate of all of them */
  pawl_t *root;            /* the handle pawl_open() made (NULL once closed) */
  struct host *host;       /* the root's host while it runs, under mu */
  const pawl__host_ops_t *host_ops;
} pawl__shared_t;

/* A handle's magic: PAWL__MAGIC_OPEN from pawl_open() to pawl_close(),
 * which poisons it (PAWL__MAGIC_CLOSED) before freeing the handle, so that
 * a call on a closed handle whose memory was not reused yet is refused
 * (PAWL_EMISUSE) instead of running on freed memory, as SQLite's
 * SQLITE_MISUSE does. It catches what it can: freed memory may be reused. */
#define PAWL__MAGIC_OPEN UINT32_C(0x7061776c)   /* "pawl" */
#define PAWL__MAGIC_CLOSED UINT32_C(0xdeadf00d)

struct pawl {
  uint32_t magic;
  /* The thread that drives the handle in step mode or on a libuv loop:
   * set (bound = 1, after owner) when step mode starts or the handle is
   * attached; from then on every call on the handle from another thread
   * is refused (pawl__check), since the Lua state, the connection and the
   * loop's handles are that thread's (pawl__bind). */
  pthread_t owner;
  _Atomic int bound;
  pawl__shared_t *shared;  /* NULL for the host's own siblings
                              (pawl__open_sibling): they borrow the gate */
  store_t *store;          /* owned; this handle's one connection */
  struct host *host;       /* the worker host started on this handle (owned
                              by the handle that started it), or the host a
                              sibling handle belongs to (borrowed) */
  const pawl__host_ops_t *host_ops; /* what the API calls of `host` */
  int owns_host;
  pthread_mutex_t *gate;   /* the write gate of this handle and its
                              siblings (see store_config_t); owned by the
                              handle pawl_open() made */
  store_config_t cfg;      /* as opened; cfg.url is owned */
  char *node_id;           /* owned */
  char *principal;         /* owned; actor in history for operator actions */
  pawl__actor_t acting;    /* job code acting now (pawl__act_as), its
                              strings borrowed for one call */
  const pawl__actor_t *actor; /* &acting while job code acts, else NULL */
  pawl_id_t incarnation;   /* this handle's lease token: a restarted node
                              with the same node id is a new incarnation */
  int64_t lease_ms;
  struct pawl__defs *defs; /* job types defined on it (defs.c), or NULL */
  char errmsg[512];
};

/* Wakes the host after a change that may make jobs due (an enqueue, a
 * signal, a resume): the handle's own host, or the host its pawl_sibling()
 * family's root runs (pawl.c). */
void pawl__wake(pawl_t *p);

/* A handle's definitions (defs.c): made by pawl_open (NULL: out of
 * memory), freed by pawl_close. */
struct pawl__defs *pawl__defs_new(void);
void pawl__defs_destroy(struct pawl__defs *d);

/* Checks a pawl_filter_t (api/admin.c): 0, or PAWL_EINVAL with p->errmsg
 * naming the bad field and its range. */
int pawl__filter_check(pawl_t *p, const pawl_filter_t *f);

/* Checks a name (a job type, a queue, a tag: 1..200 bytes without control
 * characters; pawl.c): 0, or PAWL_EINVAL with p->errmsg naming `what`. */
int pawl__check_name(pawl_t *p, const char *what, const char *s);
/* The same rule for a reason recorded in a job's history (1..1000 bytes;
 * NULL passes). */
int pawl__check_reason(pawl_t *p, const char *reason);
/* Who is acting through `p` now: job code's name while pawl__act_as() is
 * in force, else the handle's principal. */
const char *pawl__actor_name(pawl_t *p);
/* The enqueued_by a job must have for `p` to act on it with the action
 * `grant` (PAWL__GRANT_*): NULL (any job) unless job code without that
 * grant is acting. */
const char *pawl__actor_owner(pawl_t *p, int grant);
/* Copies the store's message (or rc's text) into p->errmsg after a failed
 * store call; returns rc (pawl.c). */
int pawl__from_store(pawl_t *p, int rc);
/* Checks that the parents after[0..n) may fire branch `name` (types.c):
 * PAWL_EINVAL, naming the parent and its type's branches, when a parent's
 * type has its branch names recorded in pawl_types (a host loaded its
 * script) and `name` is not among them; 0 otherwise (a parent not found
 * is left to the store's insert, which refuses it). */
int pawl__branch_check(pawl_t *p, const char *name, const pawl_id_t *after,
                       size_t n);
/* Checks the resource an enqueue names (api/limits.c): 0, or PAWL_EINVAL
 * with p->errmsg saying why. */
int pawl__resource_check(pawl_t *p, const char *resource);

/* Checks one job's input and fills *nj as pawl_enqueue() does (pawl.c): a
 * fresh id, the input's strings (borrowed); `tags` receives the tags' JSON
 * text (the caller's: pawl__buf_free()). 0, or PAWL_EINVAL with p->errmsg
 * naming the bad input. */
int pawl__prepare_job(pawl_t *p, const char *type, const char *payload,
                      const pawl_enqueue_opts_t *o, store_new_job_t *nj,
                      pawl_buf_t *tags);

/* Enqueues items[0..n) as pawl_enqueue_many() does, as pawl_chain() does
 * with `chain`, or, with `batch`, as that batch's children (batch.c). */
int pawl__enqueue_items(pawl_t *p, const pawl_enqueue_item_t *items, size_t n,
                        pawl_id_t *ids, int *statuses, int chain,
                        const store_batch_new_t *batch);

/* Job instances (steps.c): the enqueue of one job whose
 * opts name identifying fields: finds its instance, refuses a completed
 * one (PAWL_EDONE), restarts a dead one, returns a live one, else inserts
 * the job with the instance key through pawl__enqueue_keyed (pawl.c),
 * which records the instance in the insert's transaction. */
int pawl__enqueue_instance(pawl_t *p, const pawl_enqueue_item_t *item,
                           pawl_id_t *id_out, int *status_out);
int pawl__enqueue_keyed(pawl_t *p, const pawl_enqueue_item_t *item,
                        const char *instance_key, pawl_id_t *id_out,
                        int *status_out);

#endif
