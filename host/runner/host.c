/* host.c: the worker host's life: pawl__host_start() (checks the
 * options, makes every thread's state, starts the threads; pawl_start() is
 * ops/start.c's, which hands it the servers: hooks.h), pawl_stop(),
 * pawl_wait(), pawl_host_status(), and the hand-offs the threads share
 * (outcomes to the completer, jobs handed back). The threads themselves are in
 * poller.c, completer.c, worker.c, loader.c, watchdog.c, checkpointer.c
 * and listener.c; host.h says who owns what. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alloc.h"
#include "host.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bounds.h"
#include "buf.h"
#include "clock.h"
#include "fault.h"
#include "hooks.h"
#include "metrics.h"
#include "pawl_internal.h"
#include "weburl.h"
#include "worker.h"

static void host_close(pawl_t *p);

/* pawl_close() from another thread than the loop's while attached
 * (PAWL_UV_THREADS) is refused: the loop's handles are closed on it. */
static int host_close_refused(pawl_t *p) {
  host_t *h = pawl__host_get(p);
  return h && pawl__uv_foreign(h);
}

/* What the API layer calls of a host attached to a handle. */
static const pawl__host_ops_t host_ops = {
    .wake = pawl__host_wake,
    .free = host_close,
    .close_refused = host_close_refused,
    .enqueue_begin = pawl__host_enqueue_begin,
    .enqueue_fill = pawl__host_enqueue_fill,
    .enqueue_end = pawl__host_enqueue_end,
};

/* Starts a thread of the host. Returns 0 or an errno value (the test seam
 * "thread" makes it fail on purpose). */
static int host_thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
  if (pawl__fault_hit(FAULT_THREAD)) return EAGAIN;
  return pthread_create(t, NULL, fn, arg);
}

void pawl_host_opts_init(pawl_host_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->prefetch = -1;
  o->log_level = PAWL_LOG_INFO;
}

void pawl__host_wake(host_t *h) {
  pthread_mutex_lock(&h->mu);
  h->wake = 1;
  h->news++;
  pthread_cond_signal(&h->poll_cv);
  pthread_mutex_unlock(&h->mu);
}

void pawl__host_outcome_free(host_outcome_t *o) {
  if (!o) return;
  pawl_job_free(o->job);
  pawl__free(o->result);
  pawl__free(o->branches);
  pawl__free(o->error);
  pawl__free(o->trace);
  for (size_t i = 0; i < o->nlogs; i++) {
    pawl__free((char *)o->logs[i].level);
    pawl__free((char *)o->logs[i].message);
    pawl__free((char *)o->logs[i].fields);
  }
  pawl__free(o->logs);
  pawl__free(o);
}

void pawl__host_push_outcome(host_t *h, host_outcome_t *o) {
  o->next = NULL;
  pthread_mutex_lock(&h->mu);
  if (o->slot && o->out.kind == PAWL_OUT_STARTED) {
    *o->slot = o; /* host_outcome_t.slot */
  } else if (o->slot) {
    /* The attempt's end: its start, still queued, goes with it. */
    if (*o->slot) {
      (*o->slot)->superseded = 1;
      (*o->slot)->slot = NULL;
      *o->slot = NULL;
    }
    o->slot = NULL;
  }
  if (h->out_tail)
    h->out_tail->next = o;
  else
    h->out_head = o;
  h->out_tail = o;
  h->outcomes++;
  pthread_cond_signal(&h->done_cv);
  pthread_mutex_unlock(&h->mu);
}

void pawl__host_hand_back(host_t *h, pawl_job_t *job) {
  pawl__host_hand_back_why(h, job, NULL);
}

void pawl__host_hand_back_why(host_t *h, pawl_job_t *job, const char *why) {
  host_outcome_t *o = pawl__calloc(1, sizeof *o);
  if (!o) {
    pawl_job_free(job);
    return; /* its lease expires and recovery takes it back */
  }
  /* Out of memory for the reason: the event says "node stopping". */
  if (why) o->error = pawl__strdup(why);
  o->out.error = o->error;
  o->job = job;
  o->worker = -1;
  o->hook_ref = PAWL__LUA_NOREF;
  o->out.id = job->id;
  o->out.attempt = job->attempt;
  o->out.kind = PAWL_OUT_RELEASE;
  pawl__host_push_outcome(h, o);
}

void pawl__host_hand_back_items(host_t *h, host_item_t *items) {
  while (items) {
    host_item_t *it = items;
    items = it->next;
    pawl__host_hand_back(h, it->job);
    pawl__free(it);
  }
}

void pawl__host_release_queued(host_t *h) {
  pthread_mutex_lock(&h->mu);
  host_item_t *items = h->queue_head;
  h->queue_head = h->queue_tail = NULL;
  host_item_t *own = h->own_head;
  h->own_head = h->own_tail = NULL;
  for (host_item_t *it = own; it; it = it->next)
    if (it->slot >= 0) h->qslots[it->slot].held--;
  h->queued = 0;
  h->own_queued = 0;
  pthread_mutex_unlock(&h->mu);
  pawl__host_hand_back_items(h, items);
  pawl__host_hand_back_items(h, own);
}

size_t pawl__host_release_stalled(host_t *h, int64_t now, int64_t hold_ms) {
  pthread_mutex_lock(&h->mu);
  host_item_t *items = NULL;
  size_t n = 0;
  if (h->pool > 0 && h->pool_running >= h->pool && h->queue_head &&
      now - h->pool_moved_mono >= hold_ms && !h->stopping) {
    items = h->queue_head;
    h->queue_head = h->queue_tail = NULL;
    for (host_item_t *it = items; it; it = it->next) n++;
    h->queued -= (int)n;
  }
  pthread_mutex_unlock(&h->mu);
  while (items) {
    host_item_t *it = items;
    items = it->next;
    pawl__host_hand_back_why(h, it->job, "claimed ahead; every worker of its "
                                         "node was busy on a long job");
    pawl__free(it);
  }
  return n;
}

host_item_t *pawl__host_take_locked(host_t *h) {
  host_item_t *it = NULL;
  if (h->own_head) {
    it = h->own_head;
    h->own_head = it->next;
    if (!h->own_head) h->own_tail = NULL;
    h->own_queued--;
  } else if (h->queue_head && h->pool_running < h->pool) {
    it = h->queue_head;
    h->queue_head = it->next;
    if (!h->queue_head) h->queue_tail = NULL;
    h->pool_running++;
    h->pool_moved_mono = pawl__mono_ms();
  }
  if (it) {
    h->queued--;
    h->running++;
    pawl__metrics_busy(h->metrics, h->running);
  }
  return it;
}

void pawl__host_item_done_locked(host_t *h, const host_item_t *it) {
  h->running--;
  pawl__metrics_busy(h->metrics, h->running);
  if (it->slot >= 0) {
    h->qslots[it->slot].held--;
  } else {
    h->pool_running--;
    h->pool_moved_mono = pawl__mono_ms();
  }
}

size_t pawl__host_items_make(pawl_job_t **jobs, size_t n, int64_t claimed_mono,
                             host_item_t **first, host_item_t **last) {
  size_t kept = 0;
  *first = *last = NULL;
  for (size_t i = 0; i < n; i++) {
    host_item_t *it = pawl__malloc(sizeof *it);
    if (!it) {
      pawl_job_free(jobs[i]); /* recovered when its lease expires */
      continue;
    }
    it->job = jobs[i];
    it->claimed_mono = claimed_mono;
    it->slot = -1;
    it->next = NULL;
    if (*last)
      (*last)->next = it;
    else
      *first = it;
    *last = it;
    kept++;
  }
  pawl__free(jobs);
  return kept;
}

/* A tenth of the lease as a margin: the database's lease was set a little
 * after our clock reading, but other nodes may run a little fast. */
int pawl__host_lapsed(host_t *h, int64_t claimed_mono, int64_t now_mono) {
  int64_t renewed = claimed_mono > h->beat_ok_mono ? claimed_mono : h->beat_ok_mono;
  int64_t lease = pawl__lease_ms(h->p);
  return now_mono >= renewed + lease - lease / 10;
}

/* ---- start -------------------------------------------------------------- */

void pawl__host_free(host_t *h) {
  if (!h) return;
  if (h->ops) h->ops->webhook_free(h); /* before the log it writes to goes */
  if (h->signal_held) pawl__worker_signal_release(h->interrupt_signal);
  for (int i = 0; i < h->nworkers; i++) {
    if (!h->workers[i]) continue;
    pawl__worker_close(h->workers[i]);
    pawl_close(h->workers[i]->p);
    pthread_mutex_destroy(&h->workers[i]->dl);
    pawl__free(h->workers[i]);
  }
  pawl__free(h->workers);
  pawl__host_scripts_free(h->scripts, h->nscripts);
  pawl_recurring_free(h->crons, h->ncrons);
  pawl__free(h->types_json);
  for (size_t i = 0; h->queues && i < h->opts.nqueues; i++) pawl__free(h->queues[i]);
  pawl__free(h->queues);
  for (size_t i = 0; h->allow_webhook && i < h->opts.nallow_webhook; i++)
    pawl__free(h->allow_webhook[i]);
  pawl__free(h->allow_webhook);
  pawl__free(h->qslots);
  pawl__free(h->pool_queues);
  pawl__completer_free(h->completer_state);
  if (h->ops) h->ops->admin_free(h->admin);
  pawl__retention_drop(h);
  if (h->ops) h->ops->serve_stop(h); /* before the metrics it serves */
  pawl__metrics_free(h->metrics);
  pawl_script_errors_free(h->load_errors, h->nload_errors);
  pawl__free(h->scripts_dir);
  pawl__free(h->queues_csv);
  pawl__host_events_free(h);
  pawl__buf_free(&h->heard);
  pawl__log_destroy(&h->log);
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->poll_cv);
  pthread_cond_destroy(&h->work_cv);
  pthread_cond_destroy(&h->done_cv);
  pthread_cond_destroy(&h->stop_cv);
  pthread_cond_destroy(&h->load_cv);
  pthread_cond_destroy(&h->chores_cv);
  pawl__free(h);
}

static int host_fail(pawl_t *p, host_t *h, int rc, const char *msg) {
  pawl__fail(p, rc, "%s", msg);
  pawl__host_set(p, NULL, NULL, 0);
  pawl__host_free(h);
  return rc;
}

/* Undoes a pawl_start that could not start every thread or every worker's
 * Lua state: the threads that did start (`workers` workers, and `others`)
 * are stopped and joined, the host is freed, and pawl_start fails with rc
 * and msg. Nothing was claimed: the poller starts last. A thread that was
 * never started has its done flag set by the caller (for the workers'
 * failure, none of the others was started). */
static int host_unwind(pawl_t *p, host_t *h, const sigset_t *old, int workers,
                       pthread_t *const *others, int nothers, int rc,
                       const char *msg) {
  pthread_mutex_lock(&h->mu);
  h->stopping = PAWL_STOP_NOW;
  h->poller_done = 1;
  h->chores_stop = 1;
  if (nothers == 0) h->completer_done = h->watchdog_done = h->loader_done = 1;
  pthread_cond_broadcast(&h->work_cv);
  pthread_cond_broadcast(&h->load_cv);
  pthread_cond_broadcast(&h->done_cv);
  pthread_cond_broadcast(&h->stop_cv);
  pthread_cond_broadcast(&h->poll_cv);
  pthread_cond_broadcast(&h->chores_cv);
  pthread_mutex_unlock(&h->mu);
  for (int i = 0; i < workers; i++) pthread_join(h->workers[i]->thread, NULL);
  for (int i = 0; i < nothers; i++) pthread_join(*others[i], NULL);
  pthread_sigmask(SIG_SETMASK, old, NULL);
  pawl__poller_free(h->poller_state);
  h->poller_state = NULL;
  pawl__poller_free(h->chores_state);
  h->chores_state = NULL;
  pawl__loader_free(h, h->loader_state);
  return host_fail(p, h, rc, msg);
}

/* A new host for `p` with the options as given: its locks, condition
 * variables and log. NULL when out of memory. */
host_t *pawl__host_new(pawl_t *p, const pawl_host_opts_t *in) {
  host_t *h = pawl__calloc(1, sizeof *h);
  if (!h) return NULL;
  h->p = p;
  h->opts = *in;
  pthread_mutex_init(&h->mu, NULL);
  pawl__cond_init_mono(&h->poll_cv);
  pawl__cond_init_mono(&h->work_cv);
  pawl__cond_init_mono(&h->done_cv);
  pawl__cond_init_mono(&h->stop_cv);
  pawl__cond_init_mono(&h->load_cv);
  pawl__cond_init_mono(&h->chores_cv);
  pawl__log_init(&h->log, in->log_level, in->log_json, in->log_fn, in->log_data);
  return h;
}

/* Checks the numbers of h->opts (each bounded before it is added to a
 * clock reading) and fills in the defaults. 0, or PAWL_EINVAL with the
 * message in `msg`. */
int pawl__host_check_opts(pawl_t *p, host_t *h, char *msg, size_t len) {
  pawl_host_opts_t *o = &h->opts;
  if (o->nqueues && !o->queues) {
    snprintf(msg, len, "%zu queues but no array", o->nqueues);
    return PAWL_EINVAL;
  }
  if (o->nallow_webhook > 64 || (o->nallow_webhook && !o->allow_webhook)) {
    snprintf(msg, len, "allow_webhook: at most 64 destinations, in an array "
             "(got %zu)", o->nallow_webhook);
    return PAWL_EINVAL;
  }
  for (size_t i = 0; i < o->nallow_webhook; i++)
    if (pawl__web_grant_check(o->allow_webhook[i], msg, len) != 0)
      return PAWL_EINVAL;
  /* Per-queue concurrency: queues with a number have workers
   * of their own; the others (or every queue, with no list) share the
   * pool of `workers`, which is there only when some queue shares it. */
  int64_t own = 0;
  int shared = o->nqueues == 0 || !o->queue_concurrency;
  for (size_t i = 0; o->queue_concurrency && i < o->nqueues; i++) {
    int c = o->queue_concurrency[i];
    if (c < 0 || c > PAWL_QUEUE_CONCURRENCY_MAX) {
      snprintf(msg, len,
               "concurrency of queue %.200s must be between 1 and %d (0: it "
               "shares the workers) (got %d)",
               o->queues[i] ? o->queues[i] : "?", PAWL_QUEUE_CONCURRENCY_MAX,
               c);
      return PAWL_EINVAL;
    }
    if (c == 0) shared = 1;
    own += c;
    if (c > 0 && h->step) {
      snprintf(msg, len,
               "step mode runs one job at a time: a concurrency per queue "
               "(queue %.200s) needs pawl_start()'s worker threads",
               o->queues[i] ? o->queues[i] : "?");
      return PAWL_EINVAL;
    }
  }
  if (o->metrics && h->step) { /* the metrics endpoint */
    snprintf(msg, len,
             "the metrics endpoint needs pawl_start()'s threads (its HTTP "
             "server and the gauges' reader): step mode and pawl_attach_uv() "
             "serve none");
    return PAWL_EINVAL;
  }
  if (!shared && o->workers > 0) {
    snprintf(msg, len,
             "workers (%d) has no queue to serve: every queue has a "
             "concurrency of its own (give a queue without a number to "
             "share the workers)",
             o->workers);
    return PAWL_EINVAL;
  }
  if (shared && o->workers <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o->workers = n > 0 ? (int)n : 1;
  }
  h->pool = shared ? o->workers : 0;
  if (h->pool + own > 1024) {
    if (own)
      snprintf(msg, len,
               "at most 1024 workers (got %d shared and %lld of the queues' "
               "own)",
               h->pool, (long long)own);
    else
      snprintf(msg, len, "at most 1024 workers");
    return PAWL_EINVAL;
  }
  /* The threads: the pool's and every queue's own. */
  o->workers = h->pool + (int)own;
  /* Periods are added to clock readings: bound them like delays. */
  const struct {
    const char *name;
    int64_t v, min, max;
  } nums[] = {
      {"poll_ms", o->poll_ms, 0, PAWL_DELAY_MAX_MS},
      {"ahead_hold_ms", o->ahead_hold_ms, 0, PAWL_DELAY_MAX_MS},
      {"heartbeat_ms", o->heartbeat_ms, 0, PAWL_LEASE_MAX_MS},
      {"grace_ms", o->grace_ms, 0, PAWL_DELAY_MAX_MS},
      {"reload_ms", o->reload_ms, 0, PAWL_DELAY_MAX_MS},
      {"idle_wait_ms", o->idle_wait_ms, -1, PAWL_DELAY_MAX_MS},
      {"default_timeout_s", o->default_timeout_s, 0, PAWL_TIMEOUT_MAX_S},
      {"load_timeout_ms", o->load_timeout_ms, 0,
       PAWL_TIMEOUT_MAX_S * INT64_C(1000)},
  };
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
    if (pawl__bounds_check_int(nums[i].name, nums[i].v, nums[i].min,
                               nums[i].max, NULL, msg, len))
      return PAWL_EINVAL;
  int sig = o->interrupt_signal == 0    ? SIGURG
            : o->interrupt_signal == -1 ? 0
                                        : o->interrupt_signal;
  if (pawl__worker_signal_check(sig, msg, len)) return PAWL_EINVAL;
  h->interrupt_signal = sig;
  int64_t lease_ms = pawl__lease_ms(p);
  if (o->poll_ms <= 0) o->poll_ms = 1000;
  if (o->ahead_hold_ms <= 0) o->ahead_hold_ms = 100;
  if (o->heartbeat_ms <= 0) o->heartbeat_ms = lease_ms / 3 > 0 ? lease_ms / 3 : 1;
  if (o->grace_ms <= 0) o->grace_ms = 30000;
  if (o->reload_ms <= 0) o->reload_ms = 1000;
  if (o->default_timeout_s <= 0) o->default_timeout_s = 300;
  if (o->load_timeout_ms <= 0) o->load_timeout_ms = 10000;
  if (o->idle_wait_ms == 0) o->idle_wait_ms = 5000;
  if (o->idle_wait_ms < 0) o->idle_wait_ms = 0;
  if (o->give_up_ms < -1 || o->give_up_ms > PAWL_GIVE_UP_MAX_MS) {
    snprintf(msg, len,
             "give_up_ms must be -1 (never) or between 0 and %lld (got %lld)",
             (long long)PAWL_GIVE_UP_MAX_MS, (long long)o->give_up_ms);
    return PAWL_EINVAL;
  }
  if (o->flush_ms < 0 || o->flush_ms > PAWL_GIVE_UP_MAX_MS) {
    snprintf(msg, len, "flush_ms must be between 0 and %lld (got %lld)",
             (long long)PAWL_GIVE_UP_MAX_MS, (long long)o->flush_ms);
    return PAWL_EINVAL;
  }
  if (o->give_up_ms == 0) o->give_up_ms = 60000;
  if (o->flush_ms == 0) o->flush_ms = 10000;
  /* The heap ceiling of jobs whose scripts set none (0: the default). */
  int64_t mem = o->job_memory ? o->job_memory : PAWL_JOB_MEMORY_DEFAULT;
  if (pawl__bounds_size_num("job_memory", (double)mem, PAWL_JOB_MEMORY_MIN,
                            PAWL_JOB_MEMORY_MAX, &o->job_memory, msg, len))
    return PAWL_EINVAL;
  return 0;
}

/* Copies the strings of the options (the host owns them from here on)
 * and checks that the scripts directory is there. 0, or PAWL_ENOMEM /
 * PAWL_EIO with the message in `msg`. */
int pawl__host_copy_strings(host_t *h, const pawl_host_opts_t *in, char *msg,
                             size_t len) {
  pawl_host_opts_t *o = &h->opts;
  /* No directory: "", or NULL for a handle with job types defined. */
  int no_dir = o->scripts_dir ? !*o->scripts_dir : pawl__defs_count(h->p) > 0;
  h->scripts_dir = no_dir ? NULL
                          : pawl__strdup(o->scripts_dir ? o->scripts_dir
                                                  : "./scripts");
  h->queues = pawl__calloc(o->nqueues ? o->nqueues : 1, sizeof *h->queues);
  int oom = (!no_dir && !h->scripts_dir) || !h->queues;
  for (size_t i = 0; !oom && i < o->nqueues; i++)
    oom = !(h->queues[i] = pawl__strdup(in->queues[i]));
  if (!oom) {
    pawl_buf_t csv;
    pawl__buf_init(&csv);
    for (size_t i = 0; i < o->nqueues; i++) {
      if (i) pawl__buf_putc(&csv, ',');
      pawl__buf_puts(&csv, h->queues[i]);
      /* A queue's own concurrency shows in the node table (mail=4). */
      if (in->queue_concurrency && in->queue_concurrency[i] > 0)
        pawl__buf_printf(&csv, "=%d", in->queue_concurrency[i]);
    }
    h->queues_csv = pawl__buf_detach(&csv);
    oom = !h->queues_csv;
  }
  if (!oom && o->nallow_webhook) {
    h->allow_webhook = pawl__calloc(o->nallow_webhook, sizeof *h->allow_webhook);
    oom = !h->allow_webhook;
    for (size_t i = 0; !oom && i < o->nallow_webhook; i++)
      oom = !(h->allow_webhook[i] = pawl__strdup(in->allow_webhook[i]));
  }
  if (oom) {
    snprintf(msg, len, "out of memory");
    return PAWL_ENOMEM;
  }
  o->scripts_dir = h->scripts_dir;
  o->queues = (const char *const *)h->queues;
  o->allow_webhook = (const char *const *)h->allow_webhook;
  int rrc = pawl__retention_copy(h, in->retention, msg, len);
  if (rrc) return rrc;
  /* Per-queue concurrency: a slot per numbered queue; the pool claims the
   * rest (every queue when there is no list). */
  const int *conc = in->queue_concurrency;
  o->queue_concurrency = NULL; /* borrowed: read here only */
  if (conc && o->nqueues) {
    h->qslots = pawl__calloc(o->nqueues, sizeof *h->qslots);
    h->pool_queues = pawl__calloc(o->nqueues, sizeof *h->pool_queues);
    if (!h->qslots || !h->pool_queues) {
      snprintf(msg, len, "out of memory");
      return PAWL_ENOMEM;
    }
    for (size_t i = 0; i < o->nqueues; i++) {
      if (conc[i] > 0)
        h->qslots[h->nqslots++] =
            (host_qslot_t){.name = h->queues[i], .limit = conc[i]};
      else
        h->pool_queues[h->npool_queues++] = h->queues[i];
    }
  } else {
    h->pool_queues = NULL;
    h->npool_queues = o->nqueues;
  }
  struct stat sb;
  if (h->scripts_dir &&
      (stat(h->scripts_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
    snprintf(msg, len, "scripts directory %s does not exist", h->scripts_dir);
    return PAWL_EIO;
  }
  return 0;
}

/* Makes the state of every thread before any starts, so that a failed
 * allocation, a connection that cannot open or a Lua state that cannot be
 * built fails the start: the poller (and its connection), the loader and
 * its Lua state (the first of the process's states to be created: see
 * pawl__lua_open()), each worker (and its connection; its Lua state is
 * built on its own thread) and the completer. 0, or an error code with
 * the message in `err`. */
static int host_make_threads(host_t *h, char *err, size_t errlen) {
  pawl_t *p = h->p;
  int n = h->opts.workers;
  int rc = pawl__poller_new(h, &h->poller_state, err, errlen);
  if (!rc) rc = pawl__poller_new(h, &h->chores_state, err, errlen);
  if (!rc) rc = pawl__loader_new(h, err, errlen);
  if (!rc) rc = h->ops->webhook_new(h, err, errlen); /* alerts */
  if (rc) return rc;
  h->workers = pawl__calloc((size_t)n, sizeof *h->workers);
  if (!h->workers) goto oom;
  for (int i = 0; i < n; i++) {
    worker_t *w = pawl__calloc(1, sizeof *w);
    if (!w) goto oom;
    h->workers[i] = w;
    h->nworkers = i + 1;
    w->h = h;
    w->index = i;
    w->signal = h->interrupt_signal;
    pthread_mutex_init(&w->dl, NULL);
    if ((rc = pawl__open_sibling(p, NULL, &w->p, err, errlen))) return rc;
  }
  if (!(h->completer_state = pawl__completer_new(h))) goto oom;
  return 0;
oom:
  snprintf(err, errlen, "out of memory");
  return PAWL_ENOMEM;
}

static void host_log_started(host_t *h) {
  pawl_t *p = h->p;
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "host started");
  pawl__log_str(&line, "node", pawl_node_id(p));
  pawl__log_int(&line, "workers", h->opts.workers);
  pawl__log_str(&line, "scripts", h->scripts_dir ? h->scripts_dir : "(none)");
  pawl__log_str(&line, "db", pawl__store_name(p));
  pawl__log_end(&line);
  /* Scheduling follows the database clock; retry times this node computes
   * are corrected by the skew, but a large one means a clock is wrong. */
  int64_t skew = pawl__skew_ms(p);
  if (skew > 1000 || skew < -1000) {
    pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
              "this machine's clock differs from the database's by more "
              "than a second");
    pawl__log_int(&line, "skew_ms", skew);
    pawl__log_end(&line);
  }
}

/* Starts the workers. Each builds its own Lua state, and no job is
 * claimed before every state is ready. Returns how many started; *terr
 * receives pthread_create's error, and *failed whether any did not start
 * or could not build its state. */
static int host_start_workers(host_t *h, int *terr, int *failed) {
  int n = h->opts.workers, started = 0;
  *terr = 0;
  for (int i = 0; i < n && !*terr; i++)
    if (!(*terr = host_thread_start(&h->workers[i]->thread, pawl__worker_main,
                                    h->workers[i])))
      started++;
  pthread_mutex_lock(&h->mu);
  h->workers_alive -= n - started; /* those that never started */
  while (h->states_ready + h->states_failed < started)
    pthread_cond_wait(&h->stop_cv, &h->mu);
  *failed = h->states_failed || *terr;
  pthread_mutex_unlock(&h->mu);
  return started;
}

/* Starts the other threads; the poller last, so that nothing is claimed
 * unless every thread that writes, watches and listens is there. On
 * failure, unwinds (see host_unwind) and returns its code. */
static int host_start_others(host_t *h, const sigset_t *old, int workers) {
  pawl_t *p = h->p;
  struct {
    pthread_t *t;
    void *(*fn)(void *);
    void *arg;
    int *done;
    const char *name;
  } threads[] = {
      {&h->completer, pawl__completer_main, h->completer_state,
       &h->completer_done, "completer"},
      {&h->watchdog, pawl__watchdog_main, h, &h->watchdog_done, "watchdog"},
      {&h->loader, pawl__loader_main, h->loader_state, &h->loader_done,
       "loader"},
      {&h->checkpointer, pawl__checkpointer_main, h, &h->checkpointer_done,
       "checkpointer"},
      {&h->listener, pawl__listener_main, h, &h->listener_done, "listener"},
      {&h->admin_thread, h->ops->admin_main, h->admin, &h->admin_done,
       "admin console"},
      {&h->metrics_thread, pawl__metrics_main, h, &h->metrics_done,
       "metrics"},
      {&h->chores, pawl__chores_main, h->chores_state, &h->chores_done,
       "chores"},
      {&h->poller, pawl__poller_main, h->poller_state, &h->poller_done,
       "poller"},
  };
  int nthreads = (int)(sizeof threads / sizeof *threads), up = 0, nrun = 0;
  pthread_t *running[sizeof threads / sizeof *threads];
  int listen = pawl__can_listen(p), terr = 0;
  if (!listen) h->listener_done = 1;
  if (!h->admin) h->admin_done = 1;
  if (!h->metrics) h->metrics_done = 1;
  for (; up < nthreads; up++) {
    if (threads[up].t == &h->listener && !listen) continue;
    if (threads[up].t == &h->admin_thread && !h->admin) continue;
    if (threads[up].t == &h->metrics_thread && !h->metrics) continue;
    if ((terr = host_thread_start(threads[up].t, threads[up].fn,
                                  threads[up].arg)))
      break;
    if (threads[up].t == &h->listener) h->listener_started = 1;
    if (threads[up].t == &h->chores) h->chores_started = 1;
    if (threads[up].t == &h->admin_thread) h->admin_started = 1;
    if (threads[up].t == &h->metrics_thread) h->metrics_started = 1;
    running[nrun++] = threads[up].t;
  }
  if (!terr) return 0;
  char err[512];
  snprintf(err, sizeof err, "cannot start the %s thread: %s",
           threads[up].name, strerror(terr));
  /* Those never started count as ended; the others end as in a stop. */
  pthread_mutex_lock(&h->mu);
  for (int i = up; i < nthreads; i++) *threads[i].done = 1;
  pthread_mutex_unlock(&h->mu);
  return host_unwind(p, h, old, workers, running, nrun, PAWL_ENOMEM, err);
}

/* pawl_start() itself is ops/start.c's: it passes the servers' table
 * (hooks.h says why). */
int pawl__host_start(pawl_t *p, const pawl_host_opts_t *in,
                     const pawl__ops_hooks_t *ops) {
  PAWL__CHECK(p);
  host_t *running = pawl__host_get(p);
  if (running && running->step)
    return pawl__fail(p, PAWL_EBUSY,
                      "the handle is in step mode (pawl_step): it cannot "
                      "start threads too; open another handle");
  if (running) {
    pthread_mutex_lock(&running->mu);
    int joined = running->joined;
    pthread_mutex_unlock(&running->mu);
    return pawl__fail(p, PAWL_EBUSY, "%s",
                      joined ? "the host on this handle has stopped "
                               "(pawl_wait() returned); a handle runs one "
                               "host in its life: open another handle"
                             : "the host is already running");
  }
  pawl_host_opts_t defaults;
  if (!in) {
    pawl_host_opts_init(&defaults);
    in = &defaults;
  }
  host_t *h = pawl__host_new(p, in);
  if (!h) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  char err[640];
  int rc = pawl__host_check_opts(p, h, err, sizeof err);
  if (rc) return host_fail(p, h, rc, err);
  h->started_at = pawl_now(p);
  h->avg_job_ms = 1.0;
  if ((rc = pawl__host_copy_strings(h, in, err, sizeof err)))
    return host_fail(p, h, rc, err);
  h->ops = ops;
  pawl__host_set(p, h, &host_ops, 1);
  if (h->interrupt_signal) {
    if (pawl__worker_signal_acquire(h->interrupt_signal) != 0) {
      snprintf(err, sizeof err, "cannot install the interrupt signal %d: %s",
               h->interrupt_signal, strerror(errno));
      return host_fail(p, h, PAWL_EINVAL, err);
    }
    h->signal_held = 1;
  }
  /* Threads start with the interrupt signal blocked; workers unblock it,
   * so one of ours never lands on another thread (a signal sent to the
   * whole process then reaches the calling thread or a worker, and the
   * handler passes it on). */
  sigset_t block, old;
  sigemptyset(&block);
  if (h->interrupt_signal) sigaddset(&block, h->interrupt_signal);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  /* The admin console's sockets are bound now: a path that must be
   * refused fails the start before any thread runs. */
  if (!(rc = host_make_threads(h, err, sizeof err)) && in->admin)
    rc = ops->admin_new(h, in->admin, &h->admin, err, sizeof err);
  h->opts.admin = NULL; /* borrowed for the call only */
  /* So is the metrics endpoint's address. */
  if (!rc && in->metrics)
    rc = ops->serve_new(h, in->metrics, err, sizeof err);
  h->opts.metrics = NULL;
  if (rc) {
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pawl__poller_free(h->poller_state);
    h->poller_state = NULL;
    pawl__poller_free(h->chores_state);
    h->chores_state = NULL;
    pawl__loader_free(h, h->loader_state);
    return host_fail(p, h, rc, err);
  }
  host_log_started(h);
  h->beat_ok_mono = pawl__mono_ms();
  h->workers_alive = h->opts.workers;
  int terr = 0, failed = 0;
  int started = host_start_workers(h, &terr, &failed);
  if (failed) {
    if (terr)
      snprintf(err, sizeof err, "cannot start a worker thread: %s",
               strerror(terr));
    else
      snprintf(err, sizeof err, "%s", h->start_err);
    return host_unwind(p, h, &old, started, NULL, 0,
                       terr ? PAWL_ENOMEM : PAWL_ESTORE, err);
  }
  if ((rc = host_start_others(h, &old, started))) return rc;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return 0;
}

/* ---- stop, wait --------------------------------------------------------- */

void pawl_stop(pawl_t *p, int how) {
  if (pawl__check_open(p)) return; /* closed: nothing to stop */
  host_t *h = pawl__host_get(p);
  if (!h || h->step) return; /* step mode has nothing running between calls */
  pthread_mutex_lock(&h->mu);
  int was = h->stopping;
  if (how > h->stopping) h->stopping = how;
  /* Outcomes the database does not take are tried until the grace period
   * and the flush time have passed; after a stop-now, once more each. */
  int64_t now = pawl__mono_ms();
  if (h->stopping == PAWL_STOP_GRACEFUL && was == 0)
    h->flush_until = now + h->opts.grace_ms + h->opts.flush_ms;
  else if (h->stopping == PAWL_STOP_NOW && was != PAWL_STOP_NOW &&
           (!h->flush_until || now < h->flush_until))
    h->flush_until = now;
  /* Once the host has stopped there is nothing left to hand back. */
  int ended = h->poller_done && h->completer_done;
  if (h->stopping != was && !ended) {
    log_line_t line;
    if (h->stopping == PAWL_STOP_GRACEFUL) {
      pawl__log_begin(&line, &h->log, PAWL_LOG_INFO,
                "stopping: no new jobs; running ones may finish");
      pawl__log_num(&line, "grace_s", (double)h->opts.grace_ms / 1000.0);
    } else {
      pawl__log_begin(&line, &h->log, PAWL_LOG_INFO,
                "stopping now: unfinished jobs are handed back");
    }
    pawl__log_end(&line);
  }
  h->wake = 1;
  pthread_cond_broadcast(&h->poll_cv);
  pthread_cond_broadcast(&h->work_cv);
  pthread_cond_broadcast(&h->done_cv);
  pthread_cond_broadcast(&h->load_cv);
  worker_t *alerter = h->alerter; /* made by the loader thread */
  pthread_mutex_unlock(&h->mu);
  /* A script being loaded is no job: cut it short (nothing installed). */
  if (h->probe) pawl__worker_interrupt_stop(h->probe);
  /* A global on_dead hook too: its outbox row stays, for the
   * next host to run once its lease has run out. */
  if (alerter) pawl__worker_interrupt_stop(alerter);
}

int pawl_host_status(pawl_t *p) {
  PAWL__CHECK(p);
  host_t *h = pawl__host_get(p);
  if (!h || h->step) return 0;
  pthread_mutex_lock(&h->mu);
  int ended = h->joined;
  int rc = 0;
  if (ended && h->gave_up) {
    rc = PAWL_EUNAVAIL;
    if (h->unstored)
      pawl__fail(p, rc, "%s; and %d outcome%s could not be stored (see the "
                 "log)", h->gave_up_msg, h->unstored,
                 h->unstored == 1 ? "" : "s");
    else
      pawl__fail(p, rc, "%s", h->gave_up_msg);
  } else if (ended && h->unstored) {
    rc = h->unstored_rc ? h->unstored_rc : PAWL_ESTORE;
    pawl__fail(p, rc,
               "%d outcome%s could not be stored (each is in the log; those "
               "jobs are taken back when their leases expire): %s",
               h->unstored, h->unstored == 1 ? "" : "s", h->unstored_msg);
  }
  pthread_mutex_unlock(&h->mu);
  return rc;
}

int pawl_wait(pawl_t *p, int64_t timeout_ms) {
  PAWL__CHECK(p);
  host_t *h = pawl__host_get(p);
  if (!h || h->step) return 0;
  int64_t end = timeout_ms >= 0 ? pawl__mono_ms() + timeout_ms : 0;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    int rest = h->completer_done && h->watchdog_done && h->poller_done &&
               h->checkpointer_done && h->listener_done && h->admin_done &&
               h->metrics_done;
    if (rest && !h->loader_done && !h->loader_abandoned) {
      int64_t now = pawl__mono_ms();
      if (!h->loader_giveup_at)
        h->loader_giveup_at = now + 2000;
      else if (now >= h->loader_giveup_at)
        h->loader_abandoned = 1;
    }
    if (rest && (h->loader_done || h->loader_abandoned)) break;
    if (timeout_ms >= 0) {
      int64_t left = end - pawl__mono_ms();
      if (left <= 0) {
        pthread_mutex_unlock(&h->mu);
        return PAWL_EBUSY;
      }
      struct timespec ts = pawl__mono_deadline(left < 50 ? left : 50);
      pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
    } else {
      struct timespec ts = pawl__mono_deadline(50);
      pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
    }
  }
  int joined = h->joined, abandoned = h->abandoned;
  int loader_abandoned = h->loader_abandoned;
  h->joined = 1;
  pthread_mutex_unlock(&h->mu);
  if (!joined) {
    pthread_join(h->poller, NULL);
    if (h->chores_started) pthread_join(h->chores, NULL);
    pthread_join(h->completer, NULL);
    pthread_join(h->watchdog, NULL);
    pthread_join(h->checkpointer, NULL);
    if (loader_abandoned) {
      pthread_detach(h->loader);
      log_line_t line;
      pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
                "the script loader, stuck in a blocking C call, was left behind");
      pawl__log_end(&line);
    } else {
      pthread_join(h->loader, NULL);
    }
    if (h->listener_started) pthread_join(h->listener, NULL);
    if (h->admin_started) pthread_join(h->admin_thread, NULL);
    if (h->metrics_started) pthread_join(h->metrics_thread, NULL);
    if (h->ops) h->ops->serve_stop(h); /* scraped until the host has stopped */
    if (abandoned) {
      /* Their jobs were handed back; they cannot be joined. */
      for (int i = 0; i < h->nworkers; i++) pthread_detach(h->workers[i]->thread);
      log_line_t line;
      pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
                "workers stuck in blocking C calls were left behind");
      pawl__log_int(&line, "workers", abandoned);
      pawl__log_end(&line);
    } else {
      for (int i = 0; i < h->nworkers; i++)
        pthread_join(h->workers[i]->thread, NULL);
    }
    /* No thread of ours waits for the signal any more: the previous
     * handler is back once the last host using it has stopped. */
    if (h->signal_held) {
      h->signal_held = 0;
      pawl__worker_signal_release(h->interrupt_signal);
    }
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "host stopped");
    pawl__log_end(&line);
  }
  return 0;
}

/* pawl_close() of the handle that started the host (pawl__host_ops_t). */
static void host_close(pawl_t *p) {
  host_t *h = pawl__host_get(p);
  if (!h) return;
  /* Attached (PAWL_UV_THREADS; on the loop's thread: host_close_refused):
   * detached first, so that the loop's next turn finds no timer of a
   * freed handle. */
  if (h->uv) pawl_detach_uv(p);
  pawl_stop(p, PAWL_STOP_NOW);
  pawl_wait(p, -1);
  pawl__host_set(p, NULL, NULL, 0);
  if (h->abandoned || h->loader_abandoned || h->admin_abandoned) {
    /* A worker stuck in a blocking C call may still touch the host's
     * memory: leave it allocated (the process is about to end). */
    return;
  }
  pawl__poller_free(h->poller_state);
  pawl__poller_free(h->chores_state);
  pawl__loader_free(h, h->loader_state);
  pawl__host_free(h);
}
