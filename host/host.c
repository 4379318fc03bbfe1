/* host.c: the worker host: poller, completer, watchdog, and the stop logic.
 * See host.h for who owns what. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "host.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "bounds.h"
#include "iso8601.h"
#include "pawl_internal.h"
#include "worker.h"

/* Outcomes written per transaction, at most. */
#define HOST_BATCH 1024
/* Jobs claimed per transaction, at most. */
#define HOST_CLAIM_MAX 1000
/* The watchdog's tick: how late a timeout may fire. */
#define HOST_WATCHDOG_MS 20

int64_t host_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An absolute CLOCK_MONOTONIC time `ms` from now, for timed waits (the
 * condition variables are created with the monotonic clock). */
static struct timespec host_deadline(int64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  return ts;
}

static void host_cond_init(pthread_cond_t *c) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(c, &a);
  pthread_condattr_destroy(&a);
}

void pawl_host_opts_init(pawl_host_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->prefetch = -1;
  o->log_level = PAWL_LOG_INFO;
}

void host_wake(host_t *h) {
  pthread_mutex_lock(&h->mu);
  h->wake = 1;
  pthread_cond_signal(&h->poll_cv);
  pthread_mutex_unlock(&h->mu);
}

void host_outcome_free(host_outcome_t *o) {
  if (!o) return;
  pawl_job_free(o->job);
  free(o->result);
  free(o->error);
  for (size_t i = 0; i < o->nlogs; i++) {
    free((char *)o->logs[i].level);
    free((char *)o->logs[i].message);
    free((char *)o->logs[i].fields);
  }
  free(o->logs);
  free(o);
}

void host_push_outcome(host_t *h, host_outcome_t *o) {
  o->next = NULL;
  pthread_mutex_lock(&h->mu);
  if (h->out_tail)
    h->out_tail->next = o;
  else
    h->out_head = o;
  h->out_tail = o;
  h->outcomes++;
  pthread_cond_signal(&h->done_cv);
  pthread_mutex_unlock(&h->mu);
}

/* ---- scripts ------------------------------------------------------------ */

void host_scripts_free(host_script_t *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(s[i].name);
    free(s[i].path);
    free(s[i].src);
  }
  free(s);
}

/* A copy of `len` bytes and a NUL, or NULL. */
static char *host_memdup(const char *p, size_t len) {
  char *c = malloc(len + 1);
  if (!c) return NULL;
  memcpy(c, p, len);
  c[len] = 0;
  return c;
}

host_script_t *host_scripts_copy(host_t *h, size_t *n, uint64_t *gen) {
  pthread_mutex_lock(&h->mu);
  host_script_t *c = calloc(h->nscripts ? h->nscripts : 1, sizeof *c);
  size_t k = 0;
  for (size_t i = 0; c && i < h->nscripts; i++) {
    const host_script_t *s = &h->scripts[i];
    c[k].name = strdup(s->name);
    c[k].path = strdup(s->path);
    c[k].src = s->src ? host_memdup(s->src, s->len) : NULL;
    c[k].len = s->len;
    if (c[k].name && c[k].path && (c[k].src || !s->src)) {
      k++;
    } else {
      free(c[k].name);
      free(c[k].path);
      free(c[k].src);
    }
  }
  *gen = h->scripts_gen;
  pthread_mutex_unlock(&h->mu);
  *n = k;
  return c;
}

static int host_script_cmp(const void *a, const void *b) {
  return strcmp(((const host_script_t *)a)->name,
                ((const host_script_t *)b)->name);
}

/* The contents of `path` (NUL-terminated, *len bytes), or NULL if it
 * cannot be read. */
static char *host_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  pawl_buf_t b;
  buf_init(&b);
  char chunk[8192];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&b, chunk, k);
  int bad = ferror(f) || b.oom;
  fclose(f);
  *len = b.len;
  char *s = bad ? NULL : buf_detach(&b);
  buf_free(&b);
  return s;
}

/* Lists the scripts directory: NAME.lua files are job types, _defaults.lua
 * the defaults; other files starting with '_' or '.' are ignored. Each
 * file's text is read here, once for all workers. *sig receives a
 * signature of names, sizes, modification times and contents, so any
 * change to the directory shows. Returns -1 if the directory is unusable. */
static int host_list_scripts(const char *dir, host_script_t **out, size_t *n,
                             uint64_t *sig) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  host_script_t *list = NULL;
  size_t count = 0, cap = 0;
  uint64_t hash = 1469598103934665603u;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".lua") != 0) continue;
    if (e->d_name[0] == '.') continue;
    if (e->d_name[0] == '_' && strcmp(e->d_name, "_defaults.lua") != 0) continue;
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir, e->d_name) < 0) continue;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
      free(path);
      continue;
    }
    if (count == cap) {
      cap = cap ? cap * 2 : 16;
      void *p = realloc(list, cap * sizeof *list);
      if (!p) {
        free(path);
        break;
      }
      list = p;
    }
    list[count].name = strndup(e->d_name, len - 4);
    list[count].path = path;
    if (!list[count].name) {
      free(path);
      continue;
    }
    host_script_t *s = &list[count];
    s->len = 0;
    s->src = host_read_file(path, &s->len);
    count++;
    uint64_t parts[3] = {(uint64_t)sb.st_size, (uint64_t)sb.st_mtim.tv_sec,
                         (uint64_t)sb.st_mtim.tv_nsec};
    for (const char *c = e->d_name; *c; c++) hash = (hash ^ (uint8_t)*c) * 1099511628211u;
    for (int i = 0; i < 3; i++) hash = (hash ^ parts[i]) * 1099511628211u;
    for (size_t i = 0; s->src && i < s->len; i++)
      hash = (hash ^ (uint8_t)s->src[i]) * 1099511628211u;
  }
  closedir(d);
  if (count) qsort(list, count, sizeof *list, host_script_cmp);
  /* readdir order is arbitrary: make the signature order-free by also
   * mixing in the count (xor-free FNV is order dependent, so rehash the
   * sorted names). */
  uint64_t sorted = 1469598103934665603u ^ count;
  for (size_t i = 0; i < count; i++)
    for (const char *c = list[i].name; *c; c++)
      sorted = (sorted ^ (uint8_t)*c) * 1099511628211u;
  *sig = hash ^ sorted;
  *out = list;
  *n = count;
  return 0;
}

/* Looks at the scripts directory; if it changed, installs the new list and
 * bumps the generation. Returns 1 when it changed. With a `probe` state,
 * the new list is loaded there first (which logs each broken script), and
 * a script that does not load is installed with the text of the version
 * it had: workers reload only between jobs, so one that was busy through
 * the last good change must still get that version, not the one before.
 * Called by the poller only (the one writer of h->scripts). */
static int host_scan_scripts(host_t *h, uint64_t *last_sig, worker_t *probe) {
  host_script_t *list = NULL;
  size_t n = 0;
  uint64_t sig = 0;
  if (host_list_scripts(h->scripts_dir, &list, &n, &sig) != 0) sig = 0;
  if (sig == *last_sig && h->scripts_gen != 0) {
    host_scripts_free(list, n);
    return 0;
  }
  *last_sig = sig;
  if (probe) {
    int *failed = calloc(n ? n : 1, sizeof *failed);
    worker_load_list(probe, list, n, failed);
    for (size_t i = 0; failed && i < n; i++) {
      if (!failed[i]) continue;
      for (size_t k = 0; k < h->nscripts; k++) {
        const host_script_t *old = &h->scripts[k];
        if (strcmp(old->name, list[i].name) != 0 || !old->src) continue;
        char *keep = host_memdup(old->src, old->len);
        if (keep) {
          free(list[i].src);
          list[i].src = keep;
          list[i].len = old->len;
        }
      }
    }
    free(failed);
  }
  pthread_mutex_lock(&h->mu);
  host_script_t *old = h->scripts;
  size_t nold = h->nscripts;
  h->scripts = list;
  h->nscripts = n;
  h->scripts_gen++;
  pthread_mutex_unlock(&h->mu);
  host_scripts_free(old, nold);
  return 1;
}

/* ---- the poller --------------------------------------------------------- */

typedef struct poller {
  host_t *h;
  pawl_t *p;
  worker_t probe;            /* a Lua state that only loads scripts, so that
                                each broken script is reported once */
  uint64_t script_sig;
  int64_t next_heartbeat, next_recover, next_scan;
  int64_t claim_failed_at;   /* last "claim failed" logged (mono ms): while
                                the database is away, once every 5 s */
} poller_t;

static void host_log_rc(host_t *h, pawl_t *p, const char *what) {
  log_line_t line;
  log_begin(&line, &h->log, PAWL_LOG_ERROR, what);
  log_str(&line, "error", pawl_errmsg(p));
  log_end(&line);
}

void host_hand_back(host_t *h, pawl_job_t *job) {
  host_outcome_t *o = calloc(1, sizeof *o);
  if (!o) {
    pawl_job_free(job);
    return; /* its lease expires and recovery takes it back */
  }
  o->job = job;
  o->worker = -1;
  o->hook_ref = LUA_NOREF;
  o->out.id = job->id;
  o->out.attempt = job->attempt;
  o->out.kind = PAWL_OUT_RELEASE;
  host_push_outcome(h, o);
}

/* A tenth of the lease as a margin: the database's lease was set a little
 * after our clock reading, but other nodes may run a little fast. */
int host_lapsed(host_t *h, int64_t claimed_mono, int64_t now_mono) {
  int64_t renewed = claimed_mono > h->beat_ok_mono ? claimed_mono : h->beat_ok_mono;
  int64_t lease = h->p->lease_ms;
  return now_mono >= renewed + lease - lease / 10;
}

/* Hands back jobs that never started (stopping): pending again, no attempt
 * used. They go through the completer like any outcome. */
static void host_release_queued(host_t *h) {
  pthread_mutex_lock(&h->mu);
  host_item_t *items = h->queue_head;
  h->queue_head = h->queue_tail = NULL;
  h->queued = 0;
  pthread_mutex_unlock(&h->mu);
  while (items) {
    host_item_t *it = items;
    items = it->next;
    host_hand_back(h, it->job);
    free(it);
  }
}

/* Hands back the jobs workers are still running after the grace period,
 * and interrupts them: their own outcomes will be refused as stale. */
static void host_release_running(host_t *h) {
  pthread_mutex_lock(&h->mu);
  h->abandon_at = host_mono_ms() + 2000;
  pthread_mutex_unlock(&h->mu);
  for (int i = 0; i < h->nworkers; i++) {
    worker_t *w = h->workers[i];
    pthread_mutex_lock(&w->dl);
    if (atomic_load(&w->in_lua)) {
      atomic_store(&w->interrupt_why, WORKER_INT_STOP);
      atomic_store(&w->interrupt_seq, atomic_load(&w->seq));
      worker_interrupt(w);
    }
    pthread_mutex_unlock(&w->dl);
  }
}

static void poller_chores(poller_t *pl, int64_t now) {
  host_t *h = pl->h;
  if (now >= pl->next_heartbeat) {
    pl->next_heartbeat = now + h->opts.heartbeat_ms;
    if (pawl_heartbeat(pl->p, NULL) != 0) {
      host_log_rc(h, pl->p, "heartbeat failed");
      pthread_mutex_lock(&h->mu);
      int lapsed = host_lapsed(h, 0, host_mono_ms()) && !h->lapsed_logged;
      if (lapsed) h->lapsed_logged = 1;
      pthread_mutex_unlock(&h->mu);
      if (lapsed) {
        log_line_t line;
        log_begin(&line, &h->log, PAWL_LOG_ERROR,
                  "database unreachable for longer than the lease: not "
                  "starting new jobs until it is back");
        log_end(&line);
      }
    } else {
      pthread_mutex_lock(&h->mu);
      h->beat_ok_mono = now;
      int was_lapsed = h->lapsed_logged;
      h->lapsed_logged = 0;
      pthread_mutex_unlock(&h->mu);
      if (was_lapsed) {
        log_line_t line;
        log_begin(&line, &h->log, PAWL_LOG_INFO, "database reachable again");
        log_end(&line);
      }
    }
    store_node_t nd = {.id = pawl_node_id(pl->p),
                       .incarnation = &pl->p->incarnation,
                       .version = PAWL_VERSION,
                       .queues = h->queues_csv,
                       .started_at = h->started_at};
    pl->p->store->ops->nodes.beat(pl->p->store, &nd);
  }
  if (now >= pl->next_recover) {
    pl->next_recover = now + pl->p->lease_ms / 2;
    /* One node sweeps at a time; the lock's TTL frees it if we die. */
    int got = 0;
    store_t *st = pl->p->store;
    char owner[256];
    snprintf(owner, sizeof owner, "%s", pawl_node_id(pl->p));
    if (st->ops->locks.acquire(st, "pawl.recover", owner, pl->p->lease_ms, &got) == 0 &&
        got) {
      size_t n = 0;
      if (pawl_recover(pl->p, &n) != 0)
        host_log_rc(h, pl->p, "lease recovery failed");
      else if (n > 0) {
        log_line_t line;
        log_begin(&line, &h->log, PAWL_LOG_WARN,
                  "took back jobs whose lease expired");
        log_int(&line, "jobs", (int64_t)n);
        log_end(&line);
      }
      /* Nodes silent for five leases are gone: their jobs were taken back
       * long ago; the node table lists the living. */
      size_t reaped = 0;
      if (st->ops->nodes.reap(st, 5 * pl->p->lease_ms, &reaped) == 0 && reaped) {
        log_line_t line;
        log_begin(&line, &h->log, PAWL_LOG_INFO, "removed silent nodes");
        log_int(&line, "nodes", (int64_t)reaped);
        log_end(&line);
      }
      st->ops->locks.release(st, "pawl.recover", owner);
    }
  }
  if (now >= pl->next_scan) {
    pl->next_scan = now + h->opts.reload_ms;
    if (host_scan_scripts(h, &pl->script_sig, &pl->probe)) {
      log_line_t line;
      log_begin(&line, &h->log, PAWL_LOG_INFO, "scripts loaded");
      log_str(&line, "dir", h->scripts_dir);
      log_int(&line, "files", (int64_t)h->nscripts);
      log_end(&line);
    }
  }
}

/* How many jobs this node holds at most: the workers plus a prefetch.
 * Unless set, the prefetch adapts to how long jobs take: about 10 ms of
 * work per worker, so short jobs are claimed in big batches (the claim's
 * cost is per transaction) while long ones are not hoarded by one node.
 * Called with h->mu held. */
static int host_capacity(host_t *h) {
  int workers = h->nworkers, prefetch = h->opts.prefetch;
  if (prefetch < 0) {
    double avg = h->avg_job_ms > 0.01 ? h->avg_job_ms : 0.01;
    double n = 10.0 / avg * workers;
    prefetch = n > 1000 ? 1000 : n < workers ? workers : (int)n;
  }
  return workers + prefetch;
}

/* Claims what fits and queues it for the workers. Returns how many. */
static size_t poller_claim(poller_t *pl) {
  host_t *h = pl->h;
  pthread_mutex_lock(&h->mu);
  int outstanding = h->queued + h->running;
  int capacity = host_capacity(h);
  int want = capacity - outstanding;
  /* Claim in batches: when a good part of the capacity is free, or a
   * worker is idle with nothing queued. */
  int idle = h->queued == 0 && h->running < h->nworkers;
  pthread_mutex_unlock(&h->mu);
  if (want <= 0 || !(idle || want >= capacity / 4 || want >= 64)) return 0;
  if (want > HOST_CLAIM_MAX) want = HOST_CLAIM_MAX;
  /* Claimed ahead of the workers: a worker records the start of a job
   * recovered before (pawl_begin), so that a dead node's queued jobs are
   * not blamed for its death. */
  pawl_claim_opts_t co = {.queues = (const char *const *)h->queues,
                          .nqueues = h->opts.nqueues,
                          .defer_start = 1};
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  if (pawl_claim(pl->p, &co, (size_t)want, &jobs, &n) != 0) {
    int64_t now = host_mono_ms();
    if (!pl->claim_failed_at || now - pl->claim_failed_at >= 5000) {
      pl->claim_failed_at = now;
      host_log_rc(h, pl->p, "claim failed");
    }
    return 0;
  }
  pl->claim_failed_at = 0;
  if (n == 0) return 0;
  int64_t claimed = host_mono_ms();
  host_item_t *first = NULL, *last = NULL;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    host_item_t *it = malloc(sizeof *it);
    if (!it) {
      pawl_job_free(jobs[i]); /* recovered when its lease expires */
      continue;
    }
    it->job = jobs[i];
    it->claimed_mono = claimed;
    it->next = NULL;
    if (last)
      last->next = it;
    else
      first = it;
    last = it;
    kept++;
  }
  free(jobs);
  pthread_mutex_lock(&h->mu);
  if (first) {
    if (h->queue_tail)
      h->queue_tail->next = first;
    else
      h->queue_head = first;
    h->queue_tail = last;
    h->queued += (int)kept;
  }
  pthread_cond_broadcast(&h->work_cv);
  pthread_mutex_unlock(&h->mu);
  return n;
}

/* True when --until-idle should stop: nothing queued, running or being
 * written, and no pending job due now. */
static int poller_idle(poller_t *pl, int64_t *next_due) {
  host_t *h = pl->h;
  pthread_mutex_lock(&h->mu);
  int busy = h->queued || h->running || h->outcomes || h->writing;
  pthread_mutex_unlock(&h->mu);
  /* Busy: the next completion wakes us anyway, and the query below reads
   * every pending row, which is for an idle poller only. */
  *next_due = 0;
  if (busy) return 0;
  pawl_claim_opts_t co = {.queues = (const char *const *)h->queues,
                          .nqueues = h->opts.nqueues};
  if (pawl_next_due(pl->p, &co, next_due) != 0) return 0;
  return *next_due == 0 || *next_due > pawl_now(pl->p);
}

static void *poller_main(void *arg) {
  poller_t *pl = arg;
  host_t *h = pl->h;
  int64_t stop_started = 0;
  for (;;) {
    int64_t now = host_mono_ms();
    pthread_mutex_lock(&h->mu);
    int stopping = h->stopping;
    h->wake = 0;
    pthread_mutex_unlock(&h->mu);
    if (stopping) {
      if (!stop_started) {
        stop_started = now;
        host_release_queued(h);
      }
      pthread_mutex_lock(&h->mu);
      int running = h->running;
      pthread_mutex_unlock(&h->mu);
      if (running == 0) break;
      if (stopping == PAWL_STOP_NOW || now - stop_started >= h->opts.grace_ms) {
        host_release_running(h);
        break;
      }
      poller_chores(pl, now); /* leases of running jobs stay fresh */
    } else {
      poller_chores(pl, now);
      size_t got = poller_claim(pl);
      if (got > 0) continue;
    }
    int64_t wait = h->opts.poll_ms;
    if (!stopping) {
      int64_t next_due = 0;
      int idle = poller_idle(pl, &next_due);
      /* Jobs due soon (a retry, a snooze) are part of the work this run
       * was started for: wait for those, not for ones far in the future. */
      if (h->opts.until_idle && idle &&
          (next_due == 0 || next_due - pawl_now(pl->p) > h->opts.idle_wait_ms)) {
        pawl_stop(h->p, PAWL_STOP_GRACEFUL);
        continue;
      }
      if (next_due > 0) {
        int64_t until = next_due - pawl_now(pl->p);
        if (until < wait) wait = until < 1 ? 1 : until;
      }
    } else {
      wait = 10;
    }
    int64_t chores = pl->next_heartbeat < pl->next_scan ? pl->next_heartbeat
                                                         : pl->next_scan;
    if (chores - now < wait) wait = chores - now > 1 ? chores - now : 1;
    pthread_mutex_lock(&h->mu);
    if (!h->wake && h->stopping == stopping) {
      struct timespec ts = host_deadline(wait);
      pthread_cond_timedwait(&h->poll_cv, &h->mu, &ts);
    }
    pthread_mutex_unlock(&h->mu);
  }
  pthread_mutex_lock(&h->mu);
  h->poller_done = 1;
  pthread_cond_broadcast(&h->work_cv);
  pthread_cond_broadcast(&h->done_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- the completer ------------------------------------------------------ */

static void completer_log(host_t *h, const host_outcome_t *o) {
  static const char *const msgs[] = {
      [PAWL_OUT_SUCCEEDED] = "job succeeded",
      [PAWL_OUT_FAILED] = "job failed: dead-lettered",
      [PAWL_OUT_RETRY] = "job failed: will retry",
      [PAWL_OUT_SNOOZE] = "job snoozed",
      [PAWL_OUT_RELEASE] = "job handed back"};
  int level = o->out.kind == PAWL_OUT_SUCCEEDED ? PAWL_LOG_INFO
              : o->out.kind == PAWL_OUT_FAILED  ? PAWL_LOG_ERROR
              : o->out.kind == PAWL_OUT_RETRY   ? PAWL_LOG_WARN
                                                : PAWL_LOG_INFO;
  log_line_t line;
  if (o->rc == PAWL_ELEASE) {
    log_begin(&line, &h->log, PAWL_LOG_WARN,
              "outcome not stored: the job is no longer ours (canceled or "
              "taken back)");
  } else {
    log_begin(&line, &h->log, level, msgs[o->out.kind]);
  }
  log_id(&line, "job", &o->out.id);
  if (o->job) {
    log_str(&line, "type", o->job->type);
    log_str(&line, "queue", o->job->queue);
  }
  log_int(&line, "attempt", o->out.attempt);
  if (o->worker >= 0) log_num(&line, "duration_ms", o->duration_ms);
  if (o->out.kind == PAWL_OUT_RETRY || o->out.kind == PAWL_OUT_SNOOZE) {
    char when[32];
    iso8601_format(o->out.run_at, when);
    log_str(&line, "run_at", when);
  }
  if (o->error) {
    /* The first line (the message with its file:line); the traceback is in
     * the stored error (pawl show). */
    size_t n = strcspn(o->error, "\n");
    char *first = strndup(o->error, n);
    log_str(&line, "error", first ? first : o->error);
    free(first);
  }
  log_end(&line);
}

/* The completer ends once nothing more can arrive: the poller is done and
 * every worker has ended, or the stuck ones have been given up on. Called
 * with h->mu held. */
static int completer_may_end(host_t *h) {
  if (!h->poller_done) return 0;
  if (h->workers_alive == 0) return 1;
  if (h->abandon_at && host_mono_ms() >= h->abandon_at && !h->abandoned) {
    /* Workers stuck in blocking C calls: hand their jobs back by id (the
     * release is refused as stale if a worker did finish meanwhile). */
    h->abandoned = h->workers_alive;
    for (int i = 0; i < h->nworkers; i++) {
      worker_t *w = h->workers[i];
      pthread_mutex_lock(&w->dl);
      host_outcome_t *o = w->has_current ? calloc(1, sizeof *o) : NULL;
      if (o) {
        o->worker = -1;
        o->hook_ref = LUA_NOREF;
        o->out.id = w->current_id;
        o->out.attempt = w->current_attempt;
        o->out.kind = PAWL_OUT_RELEASE;
        o->next = h->out_head;
        if (!h->out_head) h->out_tail = o;
        h->out_head = o;
        h->outcomes++;
      }
      pthread_mutex_unlock(&w->dl);
    }
    return 0;
  }
  return h->abandoned > 0;
}

static void *completer_main(void *arg) {
  host_t *h = arg;
  pawl_t *p = NULL;
  char err[512];
  int64_t backoff = 10;
  while (pawl__open_sibling(h->p, NULL, &p, err, sizeof err) != 0) {
    log_line_t line;
    log_begin(&line, &h->log, PAWL_LOG_ERROR, "completer cannot open the database");
    log_str(&line, "error", err);
    log_end(&line);
    struct timespec ts = {backoff / 1000, (backoff % 1000) * 1000000};
    nanosleep(&ts, NULL);
    if (backoff < 2000) backoff *= 2;
  }
  pawl_outcome_t *outs = malloc(HOST_BATCH * sizeof *outs);
  int *rcs = malloc(HOST_BATCH * sizeof *rcs);
  host_outcome_t **batch = malloc(HOST_BATCH * sizeof *batch);
  host_outcome_t *pending = NULL; /* taken from the queue, not yet written */
  for (;;) {
    pthread_mutex_lock(&h->mu);
    while (!h->out_head && !pending && !completer_may_end(h)) {
      struct timespec ts = host_deadline(50);
      pthread_cond_timedwait(&h->done_cv, &h->mu, &ts);
    }
    if (!h->out_head && !pending) {
      pthread_mutex_unlock(&h->mu);
      break;
    }
    /* Take up to a batch: everything that arrived while we were writing
     * the last one goes into one transaction (group commit). */
    size_t n = 0;
    while (pending && n < HOST_BATCH) {
      batch[n++] = pending;
      pending = pending->next;
    }
    while (h->out_head && n < HOST_BATCH) {
      host_outcome_t *o = h->out_head;
      h->out_head = o->next;
      if (!h->out_head) h->out_tail = NULL;
      h->outcomes--;
      batch[n++] = o;
    }
    h->writing = (int)n;
    pthread_mutex_unlock(&h->mu);
    for (size_t i = 0; i < n; i++) outs[i] = batch[i]->out;
    int rc = pawl_finish(p, outs, n, rcs);
    if (rc != 0) {
      /* Keep every outcome in memory and try again: none is lost while
       * the database is away. */
      host_log_rc(h, p, "writing outcomes failed; retrying");
      for (size_t i = n; i-- > 0;) {
        batch[i]->next = pending;
        pending = batch[i];
      }
      struct timespec ts = {backoff / 1000, (backoff % 1000) * 1000000};
      nanosleep(&ts, NULL);
      if (backoff < 2000) backoff *= 2;
      continue;
    }
    backoff = 10;
    pthread_mutex_lock(&h->mu);
    h->writing = 0;
    for (size_t i = 0; i < n; i++) {
      host_outcome_t *o = batch[i];
      o->rc = rcs[i];
      if (o->worker >= 0)
        h->avg_job_ms = 0.95 * h->avg_job_ms + 0.05 * o->duration_ms;
      completer_log(h, o);
      if (o->worker >= 0 && o->hook_ref >= 0) {
        /* Hooks run in the worker whose state holds their reference. */
        worker_t *w = h->workers[o->worker];
        o->next = w->inbox;
        w->inbox = o;
        pthread_cond_broadcast(&h->work_cv);
      } else {
        host_outcome_free(o);
      }
    }
    h->wake = 1;
    pthread_cond_signal(&h->poll_cv);
    pthread_mutex_unlock(&h->mu);
  }
  free(outs);
  free(rcs);
  free(batch);
  pawl_close(p);
  pthread_mutex_lock(&h->mu);
  h->completer_done = 1;
  pthread_cond_broadcast(&h->work_cv);
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- the watchdog ------------------------------------------------------- */

static void *watchdog_main(void *arg) {
  host_t *h = arg;
  pthread_mutex_lock(&h->mu);
  while (!h->completer_done) {
    pthread_mutex_unlock(&h->mu);
    int64_t now = host_mono_ms();
    for (int i = 0; i < h->nworkers; i++) {
      worker_t *w = h->workers[i];
      pthread_mutex_lock(&w->dl);
      uint64_t seq = atomic_load(&w->seq);
      if (w->deadline && now >= w->deadline &&
          atomic_load(&w->interrupt_seq) != seq) {
        atomic_store(&w->interrupt_why, WORKER_INT_TIMEOUT);
        atomic_store(&w->interrupt_seq, seq);
        worker_interrupt(w);
      } else if (w->deadline && now >= w->deadline + 1000 &&
                 atomic_load(&w->interrupt_seq) == seq) {
        /* Still not back a second later: the signal may have landed
         * between instructions the hook never reached (a blocking C
         * call). Ask again; it is harmless if it is already unwinding. */
        w->deadline = now;
        worker_interrupt(w);
      }
      pthread_mutex_unlock(&w->dl);
    }
    pthread_mutex_lock(&h->mu);
    struct timespec ts = host_deadline(HOST_WATCHDOG_MS);
    pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
  }
  h->watchdog_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- the checkpointer --------------------------------------------------- */

/* The host's connections do not checkpoint in their commits (that puts an
 * fsync into a claim or a finish now and then: the pickup latency's long
 * tail). This thread does it, every 50 ms, without blocking writers. */
static void *checkpointer_main(void *arg) {
  host_t *h = arg;
  pawl_t *p = NULL;
  char err[512];
  int ok = pawl__open_sibling(h->p, NULL, &p, err, sizeof err) == 0;
  pthread_mutex_lock(&h->mu);
  while (!h->completer_done) {
    struct timespec ts = host_deadline(50);
    pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
    pthread_mutex_unlock(&h->mu);
    if (ok && p->store->ops->maintenance.checkpoint)
      p->store->ops->maintenance.checkpoint(p->store);
    pthread_mutex_lock(&h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  if (ok && p->store->ops->maintenance.checkpoint)
    p->store->ops->maintenance.checkpoint(p->store);
  pawl_close(p);
  pthread_mutex_lock(&h->mu);
  h->checkpointer_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- the listener ------------------------------------------------------- */

/* Stores that can hear other processes' enqueues (PostgreSQL NOTIFY) get a
 * connection of their own that only listens, and wakes the poller at once.
 * Polling stays the safety net: while this connection is down, jobs are
 * still found within poll_ms. */
static void *listener_main(void *arg) {
  host_t *h = arg;
  pawl_t *p = NULL;
  char err[512];
  int64_t backoff = 100;
  int listening = 0, down = 0;
  pthread_mutex_lock(&h->mu);
  while (!h->poller_done) {
    pthread_mutex_unlock(&h->mu);
    int rc = 0, woke = 0;
    if (!p && pawl__open_sibling(h->p, NULL, &p, err, sizeof err) != 0) {
      p = NULL;
      rc = -1;
    } else if (!listening) {
      rc = p->store->ops->wakeup.listen(p->store);
      if (!rc) listening = 1;
      snprintf(err, sizeof err, "%s", p->store->errmsg);
    } else {
      rc = p->store->ops->wakeup.wait(p->store, 200, &woke);
      snprintf(err, sizeof err, "%s", p->store->errmsg);
    }
    if (rc) {
      if (!down) {
        log_line_t line;
        log_begin(&line, &h->log, PAWL_LOG_WARN,
                  "not hearing about new jobs; polling until the database "
                  "is back");
        log_str(&line, "error", err);
        log_end(&line);
      }
      down = 1;
      pthread_mutex_lock(&h->mu);
      struct timespec ts = host_deadline(backoff);
      pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
      if (backoff < 2000) backoff *= 2;
      continue;
    }
    if (down && listening) {
      /* Jobs may have come in while we were deaf. */
      down = 0;
      backoff = 100;
      woke = 1;
    }
    if (woke) host_wake(h);
    pthread_mutex_lock(&h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  pawl_close(p);
  pthread_mutex_lock(&h->mu);
  h->listener_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- start, stop, wait -------------------------------------------------- */

static void host_free(host_t *h) {
  if (!h) return;
  if (h->signal_held) worker_signal_release(h->interrupt_signal);
  for (int i = 0; i < h->nworkers; i++) {
    if (!h->workers[i]) continue;
    worker_close(h->workers[i]);
    pawl_close(h->workers[i]->p);
    pthread_mutex_destroy(&h->workers[i]->dl);
    free(h->workers[i]);
  }
  free(h->workers);
  host_scripts_free(h->scripts, h->nscripts);
  for (size_t i = 0; i < h->opts.nqueues; i++) free(h->queues[i]);
  free(h->queues);
  free(h->scripts_dir);
  free(h->queues_csv);
  log_destroy(&h->log);
  pthread_mutex_destroy(&h->mu);
  pthread_mutex_destroy(&h->lua_init);
  pthread_cond_destroy(&h->poll_cv);
  pthread_cond_destroy(&h->work_cv);
  pthread_cond_destroy(&h->done_cv);
  pthread_cond_destroy(&h->stop_cv);
  free(h);
}

static int host_fail(pawl_t *p, host_t *h, int rc, const char *msg) {
  pawl__fail(p, rc, "%s", msg);
  p->host = NULL;
  p->owns_host = 0;
  host_free(h);
  return rc;
}

int pawl_start(pawl_t *p, const pawl_host_opts_t *in) {
  if (p->host) return pawl__fail(p, PAWL_EBUSY, "the host is already running");
  pawl_host_opts_t defaults;
  if (!in) {
    pawl_host_opts_init(&defaults);
    in = &defaults;
  }
  host_t *h = calloc(1, sizeof *h);
  if (!h) return pawl__fail(p, PAWL_ENOMEM, "out of memory");
  h->p = p;
  h->opts = *in;
  pthread_mutex_init(&h->mu, NULL);
  pthread_mutex_init(&h->lua_init, NULL);
  host_cond_init(&h->poll_cv);
  host_cond_init(&h->work_cv);
  host_cond_init(&h->done_cv);
  host_cond_init(&h->stop_cv);
  log_init(&h->log, in->log_level, in->log_json, in->log_fn, in->log_data);
  pawl_host_opts_t *o = &h->opts;
  if (o->workers <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o->workers = n > 0 ? (int)n : 1;
  }
  if (o->workers > 1024) return host_fail(p, h, PAWL_EINVAL, "at most 1024 workers");
  {
    /* Periods are added to clock readings: bound them like delays. */
    const struct {
      const char *name;
      int64_t v, min, max;
    } nums[] = {
        {"poll_ms", o->poll_ms, 0, PAWL_DELAY_MAX_MS},
        {"heartbeat_ms", o->heartbeat_ms, 0, PAWL_LEASE_MAX_MS},
        {"grace_ms", o->grace_ms, 0, PAWL_DELAY_MAX_MS},
        {"reload_ms", o->reload_ms, 0, PAWL_DELAY_MAX_MS},
        {"idle_wait_ms", o->idle_wait_ms, -1, PAWL_DELAY_MAX_MS},
        {"default_timeout_s", o->default_timeout_s, 0, PAWL_TIMEOUT_MAX_S},
    };
    char msg[256];
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
      if (bounds_check_int(nums[i].name, nums[i].v, nums[i].min, nums[i].max,
                           NULL, msg, sizeof msg))
        return host_fail(p, h, PAWL_EINVAL, msg);
    int sig = o->interrupt_signal == 0    ? SIGURG
              : o->interrupt_signal == -1 ? 0
                                          : o->interrupt_signal;
    if (worker_signal_check(sig, msg, sizeof msg))
      return host_fail(p, h, PAWL_EINVAL, msg);
    h->interrupt_signal = sig;
  }
  if (o->poll_ms <= 0) o->poll_ms = 1000;
  if (o->heartbeat_ms <= 0) o->heartbeat_ms = p->lease_ms / 3 > 0 ? p->lease_ms / 3 : 1;
  if (o->grace_ms <= 0) o->grace_ms = 30000;
  if (o->reload_ms <= 0) o->reload_ms = 1000;
  if (o->default_timeout_s <= 0) o->default_timeout_s = 300;
  if (o->idle_wait_ms == 0) o->idle_wait_ms = 5000;
  if (o->idle_wait_ms < 0) o->idle_wait_ms = 0;
  h->started_at = pawl_now(p);
  h->avg_job_ms = 1.0;
  h->scripts_dir = strdup(o->scripts_dir ? o->scripts_dir : "./scripts");
  h->queues = calloc(o->nqueues ? o->nqueues : 1, sizeof *h->queues);
  if (!h->scripts_dir || !h->queues)
    return host_fail(p, h, PAWL_ENOMEM, "out of memory");
  for (size_t i = 0; i < o->nqueues; i++)
    if (!(h->queues[i] = strdup(in->queues[i])))
      return host_fail(p, h, PAWL_ENOMEM, "out of memory");
  {
    pawl_buf_t csv;
    buf_init(&csv);
    for (size_t i = 0; i < o->nqueues; i++) {
      if (i) buf_putc(&csv, ',');
      buf_puts(&csv, h->queues[i]);
    }
    h->queues_csv = buf_detach(&csv);
    if (!h->queues_csv) return host_fail(p, h, PAWL_ENOMEM, "out of memory");
  }
  o->scripts_dir = h->scripts_dir;
  o->queues = (const char *const *)h->queues;
  struct stat sb;
  if (stat(h->scripts_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    char msg[600];
    snprintf(msg, sizeof msg, "scripts directory %s does not exist",
             h->scripts_dir);
    return host_fail(p, h, PAWL_EIO, msg);
  }
  p->host = h;
  p->owns_host = 1;

  if (h->interrupt_signal) {
    if (worker_signal_acquire(h->interrupt_signal) != 0) {
      char msg[128];
      snprintf(msg, sizeof msg, "cannot install the interrupt signal %d: %s",
               h->interrupt_signal, strerror(errno));
      return host_fail(p, h, PAWL_EINVAL, msg);
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

  poller_t *pl = calloc(1, sizeof *pl);
  char err[512];
  int rc = pl ? 0 : PAWL_ENOMEM;
  if (!rc) {
    pl->h = h;
    rc = pawl__open_sibling(p, NULL, &pl->p, err, sizeof err);
  }
  if (!rc) {
    uint64_t sig = 0;
    host_scan_scripts(h, &sig, NULL);
    pl->script_sig = sig;
    pl->probe.h = h;
    pl->probe.index = -1;
    pthread_mutex_init(&pl->probe.dl, NULL);
    rc = worker_open(&pl->probe, err, sizeof err);
    if (!rc) {
      pl->probe.scripts_gen = 0;
      worker_reload(&pl->probe, 1);
    }
  }
  h->workers = calloc((size_t)o->workers, sizeof *h->workers);
  if (!rc && !h->workers) rc = PAWL_ENOMEM;
  for (int i = 0; !rc && i < o->workers; i++) {
    worker_t *w = calloc(1, sizeof *w);
    if (!w) {
      rc = PAWL_ENOMEM;
      break;
    }
    h->workers[i] = w;
    h->nworkers = i + 1;
    w->h = h;
    w->index = i;
    pthread_mutex_init(&w->dl, NULL);
    rc = pawl__open_sibling(p, NULL, &w->p, err, sizeof err);
  }
  if (rc) {
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pl) {
      worker_close(&pl->probe);
      pawl_close(pl->p);
      free(pl);
    }
    return host_fail(p, h, rc, rc == PAWL_ENOMEM ? "out of memory" : err);
  }
  {
    log_line_t line;
    log_begin(&line, &h->log, PAWL_LOG_INFO, "host started");
    log_str(&line, "node", pawl_node_id(p));
    log_int(&line, "workers", o->workers);
    log_str(&line, "scripts", h->scripts_dir);
    log_str(&line, "db", p->store->ops->name);
    log_end(&line);
  }
  /* Scheduling follows the database clock; retry times this node computes
   * are corrected by the skew, but a large one means a clock is wrong. */
  if (p->store->skew_ms > 1000 || p->store->skew_ms < -1000) {
    log_line_t line;
    log_begin(&line, &h->log, PAWL_LOG_WARN,
              "this machine's clock differs from the database's by more "
              "than a second");
    log_int(&line, "skew_ms", p->store->skew_ms);
    log_end(&line);
  }
  h->beat_ok_mono = host_mono_ms();
  h->workers_alive = o->workers;
  h->poller_state = pl;
  /* Each worker thread builds its own Lua state, one at a time (lua-cjson's
   * initialisation writes a static; the probe above opened it first), and
   * no job is claimed before every state is ready. */
  for (int i = 0; i < o->workers; i++)
    pthread_create(&h->workers[i]->thread, NULL, worker_main, h->workers[i]);
  pthread_mutex_lock(&h->mu);
  while (h->states_ready + h->states_failed < o->workers)
    pthread_cond_wait(&h->stop_cv, &h->mu);
  int failed = h->states_failed;
  if (failed) {
    /* Nothing ran yet: let the workers that did start leave at once. */
    h->stopping = PAWL_STOP_NOW;
    h->completer_done = 1;
    pthread_cond_broadcast(&h->work_cv);
  }
  pthread_mutex_unlock(&h->mu);
  if (failed) {
    for (int i = 0; i < o->workers; i++) pthread_join(h->workers[i]->thread, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    worker_close(&pl->probe);
    pthread_mutex_destroy(&pl->probe.dl);
    pawl_close(pl->p);
    free(pl);
    h->poller_state = NULL;
    snprintf(err, sizeof err, "%s", h->start_err);
    return host_fail(p, h, PAWL_ESTORE, err);
  }
  pthread_create(&h->completer, NULL, completer_main, h);
  pthread_create(&h->watchdog, NULL, watchdog_main, h);
  pthread_create(&h->checkpointer, NULL, checkpointer_main, h);
  if (p->store->ops->wakeup.listen)
    pthread_create(&h->listener, NULL, listener_main, h);
  else
    h->listener_done = 1;
  pthread_create(&h->poller, NULL, poller_main, pl);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return 0;
}

void pawl_stop(pawl_t *p, int how) {
  host_t *h = p->host;
  if (!h) return;
  pthread_mutex_lock(&h->mu);
  int was = h->stopping;
  if (how > h->stopping) h->stopping = how;
  /* Once the host has stopped there is nothing left to hand back. */
  int ended = h->poller_done && h->completer_done;
  if (h->stopping != was && !ended) {
    log_line_t line;
    if (h->stopping == PAWL_STOP_GRACEFUL) {
      log_begin(&line, &h->log, PAWL_LOG_INFO,
                "stopping: no new jobs; running ones may finish");
      log_num(&line, "grace_s", (double)h->opts.grace_ms / 1000.0);
    } else {
      log_begin(&line, &h->log, PAWL_LOG_INFO,
                "stopping now: unfinished jobs are handed back");
    }
    log_end(&line);
  }
  h->wake = 1;
  pthread_cond_broadcast(&h->poll_cv);
  pthread_cond_broadcast(&h->work_cv);
  pthread_mutex_unlock(&h->mu);
}

int pawl_wait(pawl_t *p, int64_t timeout_ms) {
  host_t *h = p->host;
  if (!h) return 0;
  int64_t end = timeout_ms >= 0 ? host_mono_ms() + timeout_ms : 0;
  pthread_mutex_lock(&h->mu);
  while (!(h->completer_done && h->watchdog_done && h->poller_done &&
           h->checkpointer_done && h->listener_done)) {
    if (timeout_ms >= 0) {
      int64_t left = end - host_mono_ms();
      if (left <= 0) {
        pthread_mutex_unlock(&h->mu);
        return PAWL_EBUSY;
      }
      struct timespec ts = host_deadline(left < 50 ? left : 50);
      pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
    } else {
      struct timespec ts = host_deadline(50);
      pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
    }
  }
  int joined = h->joined, abandoned = h->abandoned;
  h->joined = 1;
  pthread_mutex_unlock(&h->mu);
  if (!joined) {
    pthread_join(h->poller, NULL);
    pthread_join(h->completer, NULL);
    pthread_join(h->watchdog, NULL);
    pthread_join(h->checkpointer, NULL);
    if (p->store->ops->wakeup.listen) pthread_join(h->listener, NULL);
    if (abandoned) {
      /* Their jobs were handed back; they cannot be joined. */
      for (int i = 0; i < h->nworkers; i++) pthread_detach(h->workers[i]->thread);
      log_line_t line;
      log_begin(&line, &h->log, PAWL_LOG_ERROR,
                "workers stuck in blocking C calls were left behind");
      log_int(&line, "workers", abandoned);
      log_end(&line);
    } else {
      for (int i = 0; i < h->nworkers; i++)
        pthread_join(h->workers[i]->thread, NULL);
    }
    /* No thread of ours waits for the signal any more: the previous
     * handler is back once the last host using it has stopped. */
    if (h->signal_held) {
      h->signal_held = 0;
      worker_signal_release(h->interrupt_signal);
    }
    log_line_t line;
    log_begin(&line, &h->log, PAWL_LOG_INFO, "host stopped");
    log_end(&line);
  }
  return 0;
}

void pawl__host_free(pawl_t *p) {
  host_t *h = p->host;
  if (!h) return;
  pawl_stop(p, PAWL_STOP_NOW);
  pawl_wait(p, -1);
  p->host = NULL;
  p->owns_host = 0;
  if (h->abandoned) {
    /* A worker stuck in a blocking C call may still touch the host's
     * memory: leave it allocated (the process is about to end). */
    return;
  }
  poller_t *pl = h->poller_state;
  if (pl) {
    worker_close(&pl->probe);
    pthread_mutex_destroy(&pl->probe.dl);
    pawl_close(pl->p);
    free(pl);
  }
  host_free(h);
}
