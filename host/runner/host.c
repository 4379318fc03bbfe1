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
#include "fault.h"
#include "iso8601.h"
#include "pawl_internal.h"
#include "utf8.h"
#include "worker.h"

/* Outcomes written per transaction, at most. */
#define HOST_BATCH 1024
/* Jobs claimed per transaction, at most. */
#define HOST_CLAIM_MAX 1000
/* The watchdog's tick: how late a timeout may fire. */
#define HOST_WATCHDOG_MS 20
/* Running jobs looked at by --until-idle (jobs left by a dead node). */
#define HOST_RUNNING_SCAN 1000

int64_t pawl__host_mono_ms(void) {
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
  pthread_cond_signal(&h->poll_cv);
  pthread_mutex_unlock(&h->mu);
}

void pawl__host_outcome_free(host_outcome_t *o) {
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

void pawl__host_push_outcome(host_t *h, host_outcome_t *o) {
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

void pawl__host_scripts_free(host_script_t *s, size_t n) {
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

host_script_t *pawl__host_scripts_copy(host_t *h, size_t *n, uint64_t *gen) {
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
  pawl__buf_init(&b);
  char chunk[8192];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) pawl__buf_append(&b, chunk, k);
  int bad = ferror(f) || b.oom;
  fclose(f);
  *len = b.len;
  char *s = bad ? NULL : pawl__buf_detach(&b);
  pawl__buf_free(&b);
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

/* Looks at the scripts directory; if it changed, loads the new list in the
 * loader's `probe` state (which logs each broken script) and installs it,
 * bumping the generation. A script that does not load is installed with
 * the text of the version it had: workers reload only between jobs, so
 * one that was busy through the last good change must still get that
 * version, not the one before. One that never loaded is left out, so that
 * workers do not run a top level that failed (or never returned) again.
 * Returns 1 when it installed a new list, 0 when nothing changed, -1 when
 * the host's stop cut the load short (nothing installed). Called by the
 * loader only (the one writer of h->scripts). */
static int host_scan_scripts(host_t *h, uint64_t *last_sig, worker_t *probe) {
  host_script_t *list = NULL;
  size_t n = 0;
  uint64_t sig = 0;
  if (host_list_scripts(h->scripts_dir, &list, &n, &sig) != 0) sig = 0;
  if (sig == *last_sig && h->scripts_gen != 0) {
    pawl__host_scripts_free(list, n);
    return 0;
  }
  char **errors = calloc(n ? n : 1, sizeof *errors);
  if (pawl__worker_load_list(probe, list, n, errors) != 0) {
    for (size_t i = 0; errors && i < n; i++) free(errors[i]);
    free(errors);
    pawl__host_scripts_free(list, n);
    return -1;
  }
  *last_sig = sig;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (errors && errors[i]) {
      const host_script_t *old = NULL;
      for (size_t k = 0; k < h->nscripts && !old; k++)
        if (strcmp(h->scripts[k].name, list[i].name) == 0 && h->scripts[k].src)
          old = &h->scripts[k];
      char *keep = old ? host_memdup(old->src, old->len) : NULL;
      free(list[i].src);
      list[i].src = keep;
      list[i].len = keep ? old->len : 0;
      free(errors[i]);
      if (!keep) {
        free(list[i].name);
        free(list[i].path);
        continue;
      }
    }
    list[kept++] = list[i];
  }
  free(errors);
  pthread_mutex_lock(&h->mu);
  host_script_t *old = h->scripts;
  size_t nold = h->nscripts;
  h->scripts = list;
  h->nscripts = kept;
  h->scripts_gen++;
  /* Idle workers load the new list now, not before their next job. */
  pthread_cond_broadcast(&h->work_cv);
  pthread_mutex_unlock(&h->mu);
  pawl__host_scripts_free(old, nold);
  return 1;
}

/* ---- the poller --------------------------------------------------------- */

typedef struct poller {
  host_t *h;
  pawl_t *p;
  int64_t next_heartbeat, next_recover;
  int64_t claim_failed_at;   /* last "claim failed" logged (mono ms): while
                                the database is away, once every 5 s */
  /* For --until-idle's give-up: since when claims, and heartbeats, have
   * failed in a row (mono ms; 0: the last one worked, or no claim was
   * tried: a node whose workers are all busy does not claim), and why. A
   * database that is away fails both; with every slot taken (by outcomes
   * it cannot write, say) only the heartbeat still asks. */
  int64_t claims_failing_since, beats_failing_since;
  char claim_err[300], beat_err[300];
  int64_t swept_for_idle;    /* last sweep forced by --until-idle (mono) */
} poller_t;

static void host_log_rc(host_t *h, pawl_t *p, const char *what) {
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR, what);
  pawl__log_str(&line, "error", pawl_errmsg(p));
  pawl__log_end(&line);
}

void pawl__host_hand_back(host_t *h, pawl_job_t *job) {
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
  pawl__host_push_outcome(h, o);
}

/* A tenth of the lease as a margin: the database's lease was set a little
 * after our clock reading, but other nodes may run a little fast. */
int pawl__host_lapsed(host_t *h, int64_t claimed_mono, int64_t now_mono) {
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
    pawl__host_hand_back(h, it->job);
    free(it);
  }
}

/* Hands back the jobs workers are still running after the grace period,
 * and interrupts them: their own outcomes will be refused as stale. */
static void host_release_running(host_t *h) {
  pthread_mutex_lock(&h->mu);
  h->abandon_at = pawl__host_mono_ms() + 2000;
  int running = h->running;
  pthread_mutex_unlock(&h->mu);
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_INFO,
            "interrupting the jobs still running; they are handed back");
  pawl__log_int(&line, "jobs", running);
  pawl__log_end(&line);
  for (int i = 0; i < h->nworkers; i++) pawl__worker_interrupt_stop(h->workers[i]);
}

static void poller_chores(poller_t *pl, int64_t now) {
  host_t *h = pl->h;
  if (now >= pl->next_heartbeat) {
    pl->next_heartbeat = now + h->opts.heartbeat_ms;
    if (pawl_heartbeat(pl->p, NULL) != 0) {
      if (!pl->beats_failing_since) pl->beats_failing_since = now;
      snprintf(pl->beat_err, sizeof pl->beat_err, "%s", pawl_errmsg(pl->p));
      host_log_rc(h, pl->p, "heartbeat failed");
      pthread_mutex_lock(&h->mu);
      int lapsed = pawl__host_lapsed(h, 0, pawl__host_mono_ms()) && !h->lapsed_logged;
      if (lapsed) h->lapsed_logged = 1;
      pthread_mutex_unlock(&h->mu);
      if (lapsed) {
        log_line_t line;
        pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
                  "database unreachable for longer than the lease: not "
                  "starting new jobs until it is back");
        pawl__log_end(&line);
      }
    } else {
      pthread_mutex_lock(&h->mu);
      h->beat_ok_mono = now;
      pl->beats_failing_since = 0;
      int was_lapsed = h->lapsed_logged;
      h->lapsed_logged = 0;
      pthread_mutex_unlock(&h->mu);
      if (was_lapsed) {
        log_line_t line;
        pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "database reachable again");
        pawl__log_end(&line);
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
        pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
                  "took back jobs whose lease expired");
        pawl__log_int(&line, "jobs", (int64_t)n);
        pawl__log_end(&line);
      }
      /* Nodes silent for five leases are gone: their jobs were taken back
       * long ago; the node table lists the living. */
      size_t reaped = 0;
      if (st->ops->nodes.reap(st, 5 * pl->p->lease_ms, &reaped) == 0 && reaped) {
        log_line_t line;
        pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "removed silent nodes");
        pawl__log_int(&line, "nodes", (int64_t)reaped);
        pawl__log_end(&line);
      }
      st->ops->locks.release(st, "pawl.recover", owner);
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
  /* Outcomes the completer cannot write yet count as work held: a node
   * whose database takes no outcomes does not claim more. */
  int outstanding = h->queued + h->running + h->backlog;
  int capacity = host_capacity(h);
  int want = capacity - outstanding;
  /* Claim in batches: when a good part of the capacity is free, or a
   * worker is idle with nothing queued. */
  int idle = h->queued == 0 && h->running < h->nworkers;
  pthread_mutex_unlock(&h->mu);
  if (want <= 0 || !(idle || want >= capacity / 4 || want >= 64)) {
    pl->claims_failing_since = 0; /* not tried: no news */
    return 0;
  }
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
    int64_t now = pawl__host_mono_ms();
    if (!pl->claims_failing_since) pl->claims_failing_since = now;
    snprintf(pl->claim_err, sizeof pl->claim_err, "%s", pawl_errmsg(pl->p));
    if (!pl->claim_failed_at || now - pl->claim_failed_at >= 5000) {
      pl->claim_failed_at = now;
      host_log_rc(h, pl->p, "claim failed");
    }
    return 0;
  }
  pl->claim_failed_at = 0;
  pl->claims_failing_since = 0;
  if (n == 0) return 0;
  int64_t claimed = pawl__host_mono_ms();
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
  int busy = h->queued || h->running || h->outcomes || h->writing ||
             h->backlog;
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

/* What running_elsewhere() gathers. */
typedef struct poller_scan {
  size_t n;
  int64_t lease_end;         /* earliest lease expiry seen */
} poller_scan_t;

static int poller_scan_job(const pawl_job_t *j, void *data) {
  poller_scan_t *s = data;
  s->n++;
  if (j->lease_expires && (!s->lease_end || j->lease_expires < s->lease_end))
    s->lease_end = j->lease_expires;
  return 0;
}

/* Jobs running in the database while this node runs none (it is idle):
 * another node's, or a dead node's until their leases expire. How many
 * (at most HOST_RUNNING_SCAN are looked at), and the earliest lease end. */
static size_t poller_running_elsewhere(poller_t *pl, int64_t *lease_end) {
  pawl_filter_t f;
  pawl_filter_init(&f);
  f.state = PAWL_RUNNING;
  f.limit = HOST_RUNNING_SCAN;
  if (pl->h->opts.nqueues == 1) f.queue = pl->h->queues[0];
  poller_scan_t s = {0, 0};
  if (pawl_list(pl->p, &f, poller_scan_job, &s) != 0) return 0;
  *lease_end = s.lease_end;
  return s.n;
}

/* --until-idle with a database that keeps failing claims (or heartbeats)
 * for longer than give_up_ms: stop, and say so (pawl_host_status).
 * Returns 1 when it gave up. */
static int poller_give_up(poller_t *pl, int64_t now) {
  host_t *h = pl->h;
  if (!h->opts.until_idle || h->opts.give_up_ms <= 0) return 0;
  /* Whichever has failed longest: claims, heartbeats, outcome writes. */
  struct {
    int64_t since;
    const char *what, *why;
  } f[3] = {{pl->claims_failing_since, "claiming jobs", pl->claim_err},
            {pl->beats_failing_since, "extending leases", pl->beat_err},
            {0, "writing outcomes", NULL}};
  char write_err[sizeof h->write_err];
  pthread_mutex_lock(&h->mu);
  f[2].since = h->writes_failing_since;
  memcpy(write_err, h->write_err, sizeof write_err);
  pthread_mutex_unlock(&h->mu);
  f[2].why = write_err;
  int k = -1;
  for (int i = 0; i < 3; i++)
    if (f[i].since && (k < 0 || f[i].since < f[k].since)) k = i;
  int64_t failing = k < 0 ? 0 : now - f[k].since;
  if (k < 0 || failing < h->opts.give_up_ms) return 0;
  const char *what = f[k].what, *why = f[k].why;
  pthread_mutex_lock(&h->mu);
  h->gave_up = 1;
  snprintf(h->gave_up_msg, sizeof h->gave_up_msg,
           "gave up: %s has failed for %.1f s: %s", what,
           (double)failing / 1000.0, why);
  pthread_mutex_unlock(&h->mu);
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
            "giving up: the database has failed for longer than the give-up "
            "time");
  pawl__log_str(&line, "failing", what);
  pawl__log_num(&line, "failing_s", (double)failing / 1000.0);
  pawl__log_str(&line, "error", why);
  pawl__log_end(&line);
  pawl_stop(h->p, PAWL_STOP_GRACEFUL);
  return 1;
}

/* --until-idle found nothing to do here: stop, unless a job comes due or
 * a lease left by a dead node expires within idle_wait_ms (that job is
 * taken back and run: it is work this run was started for). `next_due` is
 * the earliest pending job's run_at (0: none); it becomes what the poller
 * waits for. Returns 1 when the host is stopping. */
static int poller_until_idle(poller_t *pl, int64_t now, int64_t *next_due) {
  host_t *h = pl->h;
  int64_t db_now = pawl_now(pl->p), lease_end = 0;
  size_t elsewhere = poller_running_elsewhere(pl, &lease_end);
  if (elsewhere && lease_end && lease_end - db_now <= h->opts.idle_wait_ms) {
    if (lease_end <= db_now + 100) {
      /* Expired: lease recovery takes it back at its next sweep. Make that
       * soon (at most once a second), and look again shortly. */
      if (now - pl->swept_for_idle >= 1000) {
        pl->swept_for_idle = now;
        pl->next_recover = now;
      }
      lease_end = db_now + 100;
    }
    if (*next_due == 0 || lease_end < *next_due) *next_due = lease_end;
  }
  if (*next_due != 0 && *next_due - db_now <= h->opts.idle_wait_ms) return 0;
  if (elsewhere) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
              "stopping while jobs are still running elsewhere: on other "
              "nodes, or left by a node that died (lease recovery takes "
              "those back once their leases expire)");
    pawl__log_int(&line, "running", (int64_t)elsewhere);
    if (lease_end) {
      char when[32];
      pawl__iso8601_format(lease_end, when);
      pawl__log_str(&line, "first_lease_expires", when);
    }
    pawl__log_end(&line);
  }
  pawl_stop(h->p, PAWL_STOP_GRACEFUL);
  return 1;
}

static void *poller_main(void *arg) {
  poller_t *pl = arg;
  host_t *h = pl->h;
  int64_t stop_started = 0;
  for (;;) {
    int64_t now = pawl__host_mono_ms();
    pthread_mutex_lock(&h->mu);
    int stopping = h->stopping;
    /* No job before the loader has installed the scripts (it wakes us). */
    int ready = h->scripts_gen != 0;
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
      size_t got = ready ? poller_claim(pl) : 0;
      if (got > 0) continue;
      if (poller_give_up(pl, pawl__host_mono_ms())) continue;
    }
    int64_t wait = h->opts.poll_ms;
    if (!stopping) {
      int64_t next_due = 0;
      int idle = poller_idle(pl, &next_due);
      /* Jobs due soon (a retry, a snooze) are part of the work this run
       * was started for: wait for those, not for ones far in the future. */
      if (h->opts.until_idle && idle && poller_until_idle(pl, now, &next_due))
        continue;
      if (next_due > 0 && ready) {
        int64_t until = next_due - pawl_now(pl->p);
        if (until < wait) wait = until < 1 ? 1 : until;
      }
    } else {
      wait = 10;
    }
    int64_t chores = pl->next_heartbeat;
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
    pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
              "outcome not stored: the job is no longer ours (canceled or "
              "taken back)");
  } else {
    pawl__log_begin(&line, &h->log, level, msgs[o->out.kind]);
  }
  pawl__log_id(&line, "job", &o->out.id);
  if (o->job) {
    pawl__log_str(&line, "type", o->job->type);
    pawl__log_str(&line, "queue", o->job->queue);
  }
  pawl__log_int(&line, "attempt", o->out.attempt);
  if (o->worker >= 0) pawl__log_num(&line, "duration_ms", o->duration_ms);
  if (o->out.kind == PAWL_OUT_RETRY || o->out.kind == PAWL_OUT_SNOOZE) {
    char when[32];
    pawl__iso8601_format(o->out.run_at, when);
    pawl__log_str(&line, "run_at", when);
  }
  if (o->error) {
    /* The first line (the message with its file:line); the traceback is in
     * the stored error (pawl show). */
    size_t n = strcspn(o->error, "\n");
    char *first = strndup(o->error, n);
    pawl__log_str(&line, "error", first ? first : o->error);
    free(first);
  }
  pawl__log_end(&line);
}

/* The completer ends once nothing more can arrive: the poller is done and
 * every worker has ended, or the stuck ones have been given up on. Called
 * with h->mu held. */
static int completer_may_end(host_t *h) {
  if (!h->poller_done) return 0;
  if (h->workers_alive == 0) return 1;
  if (h->abandon_at && pawl__host_mono_ms() >= h->abandon_at && !h->abandoned) {
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

/* The completer's buffers and state. pawl_start makes them, so that a
 * failed allocation fails the start instead of leaving a host whose
 * outcomes nobody writes. Used by the completer thread only. */
typedef struct completer {
  host_t *h;
  pawl_t *p;                 /* its connection; NULL until it could open */
  pawl_outcome_t *outs;      /* HOST_BATCH each */
  int *rcs;
  host_outcome_t **batch;
  host_outcome_t *pending;   /* kept after a failed write, in order */
  /* One round's verdicts: written (or given up on), and to write again. */
  host_outcome_t *done, **done_tail;
  host_outcome_t *again, **again_tail;
  int down;                  /* this round met a database that is away
                                (its code), 0: not */
  char err[512];             /* why */
} completer_t;

static void completer_free(completer_t *c) {
  if (!c) return;
  free(c->outs);
  free(c->rcs);
  free(c->batch);
  free(c);
}

static completer_t *completer_new(host_t *h) {
  completer_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->h = h;
  c->outs = malloc(HOST_BATCH * sizeof *c->outs);
  c->rcs = malloc(HOST_BATCH * sizeof *c->rcs);
  c->batch = malloc(HOST_BATCH * sizeof *c->batch);
  if (!c->outs || !c->rcs || !c->batch) {
    completer_free(c);
    return NULL;
  }
  return c;
}

/* Errors that say the database is away, busy or out of room, not that it
 * refuses what was written: the outcomes are kept and written again later.
 * Any other error refuses something in the batch (bad data: PAWL_EINVAL,
 * PostgreSQL's data exceptions), and retrying it as it is would fail the
 * same way for ever. */
static int completer_transient(int rc) {
  return rc == PAWL_EUNAVAIL || rc == PAWL_EBUSY || rc == PAWL_EIO ||
         rc == PAWL_ENOMEM;
}

static void completer_push(host_outcome_t ***tail, host_outcome_t *o) {
  o->next = NULL;
  **tail = o;
  *tail = &o->next;
}

/* One write; each outcome's verdict goes into its rc when it returns 0. */
static int completer_finish(completer_t *c, host_outcome_t **b, size_t n) {
  for (size_t i = 0; i < n; i++) c->outs[i] = b[i]->out;
  int rc = pawl_finish(c->p, c->outs, n, c->rcs);
  if (!rc)
    for (size_t i = 0; i < n; i++) b[i]->rc = c->rcs[i];
  return rc;
}

static void completer_went_down(completer_t *c, int rc, const char *why) {
  if (c->down) return;
  c->down = rc;
  snprintf(c->err, sizeof c->err, "%s", why);
}

/* Text from the store made safe to store and log (valid UTF-8, no NUL),
 * cut to fit `len` (a byte may become three). */
static void completer_reason(char *out, size_t len, const char *why) {
  char *safe = pawl__utf8_scrub(why, strnlen(why, (len - 1) / 3), NULL);
  snprintf(out, len, "%s", safe ? safe : "the database refused it");
  free(safe);
}

static void completer_free_logs(host_outcome_t *o) {
  for (size_t i = 0; i < o->nlogs; i++) {
    free((char *)o->logs[i].level);
    free((char *)o->logs[i].message);
    free((char *)o->logs[i].fields);
  }
  free(o->logs);
  o->logs = NULL;
  o->nlogs = 0;
  o->out.logs = NULL;
  o->out.nlogs = 0;
}

/* First rewrite of a refused outcome: the same outcome without its log
 * lines, and one line saying they were dropped (none when out of memory).
 * Returns 0. */
static int completer_strip_logs(host_outcome_t *o, const char *why) {
  size_t n = o->nlogs;
  completer_free_logs(o);
  pawl_log_entry_t *e = calloc(1, sizeof *e);
  char *msg = NULL;
  if (!e || asprintf(&msg, "%zu log line%s of this attempt could not be "
                     "stored: %s", n, n == 1 ? "" : "s", why) < 0) {
    free(e);
    return 0; /* the outcome goes without its note */
  }
  e->level = strdup("warn");
  e->message = msg;
  if (!e->level) {
    free(msg);
    free(e);
    return 0;
  }
  o->logs = e;
  o->nlogs = 1;
  o->out.logs = e;
  o->out.nlogs = 1;
  return 0;
}

/* Second rewrite: no log lines, and a failure saying what could not be
 * stored in place of what was refused. A success becomes a failure for
 * good (dead-lettered): the retry policy is Lua, which the completer does
 * not run, and the refusal is about the data, which a retry would likely
 * produce again; an operator can `pawl retry` it. A retry keeps its time,
 * a failure stays one. Hooks do not run for a rewritten outcome. Returns
 * -1 when out of memory. */
static int completer_rewrite(host_outcome_t *o, const char *why) {
  completer_free_logs(o);
  o->hooks = 0;
  const char *what = NULL;
  switch (o->out.kind) {
  case PAWL_OUT_SUCCEEDED:
    o->out.kind = PAWL_OUT_FAILED;
    what = "the job's result could not be stored";
    break;
  case PAWL_OUT_FAILED:
  case PAWL_OUT_RETRY:
    what = "the job's outcome could not be stored";
    break;
  default:
    return 0; /* nothing of its own to replace */
  }
  char *msg = NULL;
  if (asprintf(&msg, "%s: %s", what, why) < 0) return -1;
  free(o->result);
  o->result = NULL;
  free(o->error);
  o->error = msg;
  o->out.result = NULL;
  o->out.error = msg;
  return 0;
}

static const char *const completer_kinds[] = {
    [PAWL_OUT_SUCCEEDED] = "succeeded", [PAWL_OUT_FAILED] = "failed",
    [PAWL_OUT_RETRY] = "retry", [PAWL_OUT_SNOOZE] = "snooze",
    [PAWL_OUT_RELEASE] = "release"};

/* An outcome that will not be stored: logged with its job id, counted for
 * pawl_host_status(), and sent on its way with `rc` (its hooks, if any,
 * are only released). Its job stays running until the lease expires, when
 * lease recovery takes it back. */
static void completer_unstored(completer_t *c, host_outcome_t *o, int rc,
                               const char *msg, const char *why) {
  host_t *h = c->h;
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR, msg);
  pawl__log_id(&line, "job", &o->out.id);
  if (o->job) pawl__log_str(&line, "type", o->job->type);
  pawl__log_int(&line, "attempt", o->out.attempt);
  pawl__log_str(&line, "outcome", completer_kinds[o->out.kind]);
  pawl__log_str(&line, "error", why);
  pawl__log_end(&line);
  pthread_mutex_lock(&h->mu);
  h->unstored++;
  h->unstored_rc = rc;
  /* The reason, cut to fit (the log line above has all of it). */
  size_t n = strnlen(why, sizeof h->unstored_msg - 1);
  memcpy(h->unstored_msg, why, n);
  h->unstored_msg[n] = 0;
  pthread_mutex_unlock(&h->mu);
  o->rc = rc;
  o->hooks = 0;
  completer_push(&c->done_tail, o);
}

/* An outcome the database refused on its own (rc, why): rewritten, first
 * without its log lines, then as a failure saying what was refused, and
 * written alone each time; refused a third time, it is dropped. The
 * rewrites stay with the outcome, so one kept for later (the database
 * went away meanwhile) goes on from where it was. */
static void completer_refused(completer_t *c, host_outcome_t *o, int rc,
                              const char *why_in) {
  char why[1024];
  for (;;) {
    completer_reason(why, sizeof why, why_in);
    int step = ++o->refusals;
    if (step == 1 && o->nlogs == 0) step = ++o->refusals;
    int oom = 0;
    if (step == 1) {
      oom = completer_strip_logs(o, why);
      log_line_t line;
      pawl__log_begin(&line, &c->h->log, PAWL_LOG_WARN,
                "the database refused an outcome: writing it again without "
                "its log lines");
      pawl__log_id(&line, "job", &o->out.id);
      pawl__log_str(&line, "error", why);
      pawl__log_end(&line);
    } else if (step == 2) {
      log_line_t line;
      pawl__log_begin(&line, &c->h->log, PAWL_LOG_ERROR,
                "the database refused an outcome: storing a failure that "
                "says so instead");
      pawl__log_id(&line, "job", &o->out.id);
      pawl__log_str(&line, "outcome", completer_kinds[o->out.kind]);
      pawl__log_str(&line, "error", why);
      pawl__log_end(&line);
      oom = completer_rewrite(o, why);
    }
    if (step > 2 || oom) {
      completer_unstored(c, o, rc,
                         "outcome dropped: the database refused it and its "
                         "replacement; the job is taken back when its lease "
                         "expires",
                         why);
      return;
    }
    rc = completer_finish(c, &o, 1);
    if (rc == 0) {
      if (o->rc == 0 || o->rc == PAWL_ELEASE) {
        completer_push(&c->done_tail, o);
        return;
      }
      rc = o->rc;
      why_in = pawl_strerror(rc);
    } else if (completer_transient(rc)) {
      completer_went_down(c, rc, pawl_errmsg(c->p));
      completer_push(&c->again_tail, o);
      return;
    } else {
      why_in = pawl_errmsg(c->p);
    }
  }
}

/* Writes b[0..n). Written outcomes go to done. When the database refuses
 * the batch, the batch is halved until each refused outcome stands alone
 * (the others are written), and each of those is rewritten. Once the
 * database is found away, nothing more is tried this round: the rest is
 * kept, in order, for the next. */
static void completer_write(completer_t *c, host_outcome_t **b, size_t n,
                            int top) {
  if (c->down) {
    for (size_t i = 0; i < n; i++) completer_push(&c->again_tail, b[i]);
    return;
  }
  int rc = completer_finish(c, b, n);
  if (rc == 0) {
    for (size_t i = 0; i < n; i++) {
      if (b[i]->rc == 0 || b[i]->rc == PAWL_ELEASE)
        completer_push(&c->done_tail, b[i]);
      else
        completer_refused(c, b[i], b[i]->rc, pawl_strerror(b[i]->rc));
    }
    return;
  }
  if (completer_transient(rc)) {
    completer_went_down(c, rc, pawl_errmsg(c->p));
    completer_write(c, b, n, 0); /* keeps them all */
    return;
  }
  if (n == 1) {
    completer_refused(c, b[0], rc, pawl_errmsg(c->p));
    return;
  }
  if (top) {
    log_line_t line;
    pawl__log_begin(&line, &c->h->log, PAWL_LOG_WARN,
              "the database refused a batch of outcomes: writing it in parts "
              "to find the refused ones");
    pawl__log_int(&line, "outcomes", (int64_t)n);
    pawl__log_str(&line, "error", pawl_errmsg(c->p));
    pawl__log_end(&line);
  }
  completer_write(c, b, n / 2, 0);
  completer_write(c, b + n / 2, n - n / 2, 0);
}

/* Waits `ms`, or less when the host starts stopping (or stops at once),
 * or its flush deadline passes. New outcomes do not cut it short: while
 * the database is away, they wait for the next round. Called with h->mu
 * held. */
static void completer_backoff(host_t *h, int64_t ms) {
  int64_t now = pawl__host_mono_ms(), until = now + ms;
  int stopping = h->stopping;
  while (now < until && h->stopping == stopping &&
         !(h->flush_until && now >= h->flush_until)) {
    int64_t left = until - now;
    if (h->flush_until && h->flush_until - now < left) left = h->flush_until - now;
    struct timespec ts = host_deadline(left > 0 ? left : 1);
    pthread_cond_timedwait(&h->done_cv, &h->mu, &ts);
    now = pawl__host_mono_ms();
  }
}

static void *completer_main(void *arg) {
  completer_t *c = arg;
  host_t *h = c->h;
  int64_t backoff = 10;
  for (;;) {
    pthread_mutex_lock(&h->mu);
    while (!h->out_head && !c->pending && !completer_may_end(h)) {
      struct timespec ts = host_deadline(50);
      pthread_cond_timedwait(&h->done_cv, &h->mu, &ts);
    }
    if (!h->out_head && !c->pending) {
      pthread_mutex_unlock(&h->mu);
      break;
    }
    /* Take up to a batch: everything that arrived while we were writing
     * the last one goes into one transaction (group commit). */
    size_t n = 0;
    while (c->pending && n < HOST_BATCH) {
      c->batch[n++] = c->pending;
      c->pending = c->pending->next;
    }
    while (h->out_head && n < HOST_BATCH) {
      host_outcome_t *o = h->out_head;
      h->out_head = o->next;
      if (!h->out_head) h->out_tail = NULL;
      h->outcomes--;
      c->batch[n++] = o;
    }
    h->writing = (int)n;
    pthread_mutex_unlock(&h->mu);

    c->done = c->again = NULL;
    c->done_tail = &c->done;
    c->again_tail = &c->again;
    c->down = 0;
    if (!c->p) {
      /* Opened here, not by pawl_start, so that a database that is away
       * for a moment does not stop the host from starting; until it is
       * back, this is a failed write like any other. */
      char err[512];
      int rc = pawl__open_sibling(h->p, NULL, &c->p, err, sizeof err);
      if (rc) {
        c->p = NULL;
        completer_went_down(c, rc == PAWL_ENOMEM ? rc : PAWL_EUNAVAIL, err);
      }
    }
    completer_write(c, c->batch, n, 1);
    /* What is kept goes before whatever was still left from before. */
    *c->again_tail = c->pending;
    c->pending = c->again;

    pthread_mutex_lock(&h->mu);
    h->writing = 0;
    if (!c->down) {
      h->writes_failing_since = 0;
    } else if (!h->writes_failing_since) {
      h->writes_failing_since = pawl__host_mono_ms();
      snprintf(h->write_err, sizeof h->write_err, "%s", c->err);
    }
    int give_up = c->down && h->stopping && h->flush_until &&
                  pawl__host_mono_ms() >= h->flush_until;
    pthread_mutex_unlock(&h->mu);
    if (c->down) {
      log_line_t line;
      pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
                give_up ? "writing outcomes failed; stopping: not trying "
                          "again"
                        : "writing outcomes failed; retrying");
      pawl__log_str(&line, "error", c->err);
      pawl__log_end(&line);
    }
    if (give_up) {
      /* Stopping, and the deadline for writing has passed: the rest is
       * not stored. Each is listed; their jobs stay running until their
       * leases expire, and lease recovery takes them back. */
      size_t left = 0;
      while (c->pending) {
        host_outcome_t *o = c->pending;
        c->pending = o->next;
        left++;
        completer_unstored(c, o, c->down,
                           "outcome not stored: the host is stopping and the "
                           "database does not take it; the job is taken back "
                           "when its lease expires",
                           c->err);
      }
      log_line_t line;
      pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR,
                "outcomes not stored at the stop (listed above)");
      pawl__log_int(&line, "outcomes", (int64_t)left);
      pawl__log_end(&line);
    }
    size_t kept = 0;
    for (host_outcome_t *o = c->pending; o; o = o->next) kept++;

    pthread_mutex_lock(&h->mu);
    h->backlog = (int)kept;
    for (host_outcome_t *o = c->done, *next; o; o = next) {
      next = o->next;
      if (o->worker >= 0)
        h->avg_job_ms = 0.95 * h->avg_job_ms + 0.05 * o->duration_ms;
      if (o->rc == 0 || o->rc == PAWL_ELEASE) completer_log(h, o);
      if (o->worker >= 0 && o->hook_ref >= 0) {
        /* Hooks run in the worker whose state holds their reference (one
         * not stored only releases it there). */
        worker_t *w = h->workers[o->worker];
        o->next = w->inbox;
        w->inbox = o;
        pthread_cond_broadcast(&h->work_cv);
      } else {
        pawl__host_outcome_free(o);
      }
    }
    h->wake = 1;
    pthread_cond_signal(&h->poll_cv);
    if (c->down && !give_up) {
      completer_backoff(h, backoff);
      if (backoff < 2000) backoff *= 2;
    } else if (!c->down) {
      backoff = 10;
    }
    pthread_mutex_unlock(&h->mu);
  }
  pawl_close(c->p);
  c->p = NULL;
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
    int64_t now = pawl__host_mono_ms();
    for (int i = 0; i < h->nworkers; i++) pawl__worker_watch(h->workers[i], now);
    if (h->probe) pawl__worker_watch(h->probe, now);
    pthread_mutex_lock(&h->mu);
    struct timespec ts = host_deadline(HOST_WATCHDOG_MS);
    pthread_cond_timedwait(&h->stop_cv, &h->mu, &ts);
  }
  h->watchdog_done = 1;
  pthread_cond_broadcast(&h->stop_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- the loader ---------------------------------------------------------- */

/* Loading a script runs its top level, which may take long or never
 * return: that happens here, under the watchdog (the load deadline), never
 * on the poller's path. The loader owns a Lua state that only loads
 * scripts (the probe), so that each broken script is reported once, and
 * installs each new list for the workers. */
typedef struct loader {
  host_t *h;
  worker_t probe;
  uint64_t sig;              /* signature of the directory last loaded */
} loader_t;

static void *loader_main(void *arg) {
  loader_t *ld = arg;
  host_t *h = ld->h;
  ld->probe.thread = pthread_self(); /* before any call the watchdog sees */
  pawl__worker_bind(&ld->probe);
  int first = 1;
  pthread_mutex_lock(&h->mu);
  while (!h->stopping) {
    pthread_mutex_unlock(&h->mu);
    if (host_scan_scripts(h, &ld->sig, &ld->probe) > 0) {
      if (!first) {
        log_line_t line;
        pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "scripts loaded");
        pawl__log_str(&line, "dir", h->scripts_dir);
        pawl__log_int(&line, "files", (int64_t)h->nscripts);
        pawl__log_end(&line);
      }
      first = 0;
      pawl__host_wake(h); /* jobs may be claimed now */
    }
    pthread_mutex_lock(&h->mu);
    if (h->stopping) break;
    struct timespec ts = host_deadline(h->opts.reload_ms);
    pthread_cond_timedwait(&h->load_cv, &h->mu, &ts);
  }
  h->loader_done = 1;
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
        pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
                  "not hearing about new jobs; polling until the database "
                  "is back");
        pawl__log_str(&line, "error", err);
        pawl__log_end(&line);
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
    if (woke) pawl__host_wake(h);
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

/* Frees the loader (its thread has ended or never started). */
static void host_loader_free(host_t *h, loader_t *ld) {
  if (!ld) return;
  if (ld->probe.L) {
    pawl__worker_close(&ld->probe);
    pthread_mutex_destroy(&ld->probe.dl);
  }
  free(ld);
  h->loader_state = NULL;
  h->probe = NULL;
}

static void host_free(host_t *h) {
  if (!h) return;
  if (h->signal_held) pawl__worker_signal_release(h->interrupt_signal);
  for (int i = 0; i < h->nworkers; i++) {
    if (!h->workers[i]) continue;
    pawl__worker_close(h->workers[i]);
    pawl_close(h->workers[i]->p);
    pthread_mutex_destroy(&h->workers[i]->dl);
    free(h->workers[i]);
  }
  free(h->workers);
  pawl__host_scripts_free(h->scripts, h->nscripts);
  for (size_t i = 0; h->queues && i < h->opts.nqueues; i++) free(h->queues[i]);
  free(h->queues);
  completer_free(h->completer_state);
  free(h->scripts_dir);
  free(h->queues_csv);
  pawl__log_destroy(&h->log);
  pthread_mutex_destroy(&h->mu);
  pthread_mutex_destroy(&h->lua_init);
  pthread_cond_destroy(&h->poll_cv);
  pthread_cond_destroy(&h->work_cv);
  pthread_cond_destroy(&h->done_cv);
  pthread_cond_destroy(&h->stop_cv);
  pthread_cond_destroy(&h->load_cv);
  free(h);
}

static int host_fail(pawl_t *p, host_t *h, int rc, const char *msg) {
  pawl__fail(p, rc, "%s", msg);
  p->host = NULL;
  p->owns_host = 0;
  host_free(h);
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
  if (nothers == 0) h->completer_done = h->watchdog_done = h->loader_done = 1;
  pthread_cond_broadcast(&h->work_cv);
  pthread_cond_broadcast(&h->load_cv);
  pthread_cond_broadcast(&h->done_cv);
  pthread_cond_broadcast(&h->stop_cv);
  pthread_cond_broadcast(&h->poll_cv);
  pthread_mutex_unlock(&h->mu);
  for (int i = 0; i < workers; i++) pthread_join(h->workers[i]->thread, NULL);
  for (int i = 0; i < nothers; i++) pthread_join(*others[i], NULL);
  pthread_sigmask(SIG_SETMASK, old, NULL);
  poller_t *pl = h->poller_state;
  h->poller_state = NULL;
  host_loader_free(h, h->loader_state);
  pawl_close(pl->p);
  free(pl);
  return host_fail(p, h, rc, msg);
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
  host_cond_init(&h->load_cv);
  pawl__log_init(&h->log, in->log_level, in->log_json, in->log_fn, in->log_data);
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
        {"load_timeout_ms", o->load_timeout_ms, 0,
         PAWL_TIMEOUT_MAX_S * INT64_C(1000)},
    };
    char msg[256];
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
      if (pawl__bounds_check_int(nums[i].name, nums[i].v, nums[i].min, nums[i].max,
                           NULL, msg, sizeof msg))
        return host_fail(p, h, PAWL_EINVAL, msg);
    int sig = o->interrupt_signal == 0    ? SIGURG
              : o->interrupt_signal == -1 ? 0
                                          : o->interrupt_signal;
    if (pawl__worker_signal_check(sig, msg, sizeof msg))
      return host_fail(p, h, PAWL_EINVAL, msg);
    h->interrupt_signal = sig;
  }
  if (o->poll_ms <= 0) o->poll_ms = 1000;
  if (o->heartbeat_ms <= 0) o->heartbeat_ms = p->lease_ms / 3 > 0 ? p->lease_ms / 3 : 1;
  if (o->grace_ms <= 0) o->grace_ms = 30000;
  if (o->reload_ms <= 0) o->reload_ms = 1000;
  if (o->default_timeout_s <= 0) o->default_timeout_s = 300;
  if (o->load_timeout_ms <= 0) o->load_timeout_ms = 10000;
  if (o->idle_wait_ms == 0) o->idle_wait_ms = 5000;
  if (o->idle_wait_ms < 0) o->idle_wait_ms = 0;
  {
    char msg[200] = "";
    if (o->give_up_ms < -1 || o->give_up_ms > PAWL_GIVE_UP_MAX_MS)
      snprintf(msg, sizeof msg,
               "give_up_ms must be -1 (never) or between 0 and %lld (got %lld)",
               (long long)PAWL_GIVE_UP_MAX_MS, (long long)o->give_up_ms);
    else if (o->flush_ms < 0 || o->flush_ms > PAWL_GIVE_UP_MAX_MS)
      snprintf(msg, sizeof msg, "flush_ms must be between 0 and %lld (got %lld)",
               (long long)PAWL_GIVE_UP_MAX_MS, (long long)o->flush_ms);
    if (msg[0]) return host_fail(p, h, PAWL_EINVAL, msg);
  }
  if (o->give_up_ms == 0) o->give_up_ms = 60000;
  if (o->flush_ms == 0) o->flush_ms = 10000;
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
    pawl__buf_init(&csv);
    for (size_t i = 0; i < o->nqueues; i++) {
      if (i) pawl__buf_putc(&csv, ',');
      pawl__buf_puts(&csv, h->queues[i]);
    }
    h->queues_csv = pawl__buf_detach(&csv);
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
    if (pawl__worker_signal_acquire(h->interrupt_signal) != 0) {
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
  loader_t *ld = calloc(1, sizeof *ld);
  char err[512];
  int rc = pl && ld ? 0 : PAWL_ENOMEM;
  if (!rc) {
    pl->h = h;
    rc = pawl__open_sibling(p, NULL, &pl->p, err, sizeof err);
  }
  if (!rc) {
    /* The loader's state, created first (lua-cjson's static); the loader
     * thread loads the scripts once every worker's state is ready. */
    ld->h = h;
    ld->probe.h = h;
    ld->probe.index = -1;
    ld->probe.signal = h->interrupt_signal;
    pthread_mutex_init(&ld->probe.dl, NULL);
    rc = pawl__worker_open(&ld->probe, err, sizeof err);
    if (rc) {
      pthread_mutex_destroy(&ld->probe.dl);
    } else {
      h->loader_state = ld;
      h->probe = &ld->probe;
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
    w->signal = h->interrupt_signal;
    pthread_mutex_init(&w->dl, NULL);
    rc = pawl__open_sibling(p, NULL, &w->p, err, sizeof err);
  }
  if (!rc && !(h->completer_state = completer_new(h))) rc = PAWL_ENOMEM;
  if (rc) {
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pl) {
      pawl_close(pl->p);
      free(pl);
    }
    host_loader_free(h, ld);
    return host_fail(p, h, rc, rc == PAWL_ENOMEM ? "out of memory" : err);
  }
  {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "host started");
    pawl__log_str(&line, "node", pawl_node_id(p));
    pawl__log_int(&line, "workers", o->workers);
    pawl__log_str(&line, "scripts", h->scripts_dir);
    pawl__log_str(&line, "db", p->store->ops->name);
    pawl__log_end(&line);
  }
  /* Scheduling follows the database clock; retry times this node computes
   * are corrected by the skew, but a large one means a clock is wrong. */
  if (p->store->skew_ms > 1000 || p->store->skew_ms < -1000) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
              "this machine's clock differs from the database's by more "
              "than a second");
    pawl__log_int(&line, "skew_ms", p->store->skew_ms);
    pawl__log_end(&line);
  }
  h->beat_ok_mono = pawl__host_mono_ms();
  h->workers_alive = o->workers;
  h->poller_state = pl;
  /* Each worker thread builds its own Lua state, one at a time (lua-cjson's
   * initialisation writes a static; the probe above opened it first), and
   * no job is claimed before every state is ready. */
  int started = 0, terr = 0;
  for (int i = 0; i < o->workers && !terr; i++)
    if (!(terr = host_thread_start(&h->workers[i]->thread, pawl__worker_main,
                                   h->workers[i])))
      started++;
  pthread_mutex_lock(&h->mu);
  h->workers_alive -= o->workers - started; /* those that never started */
  while (h->states_ready + h->states_failed < started)
    pthread_cond_wait(&h->stop_cv, &h->mu);
  int failed = h->states_failed || terr;
  pthread_mutex_unlock(&h->mu);
  if (failed) {
    if (terr)
      snprintf(err, sizeof err, "cannot start a worker thread: %s",
               strerror(terr));
    else
      snprintf(err, sizeof err, "%s", h->start_err);
    return host_unwind(p, h, &old, started, NULL, 0,
                       terr ? PAWL_ENOMEM : PAWL_ESTORE, err);
  }
  /* The other threads; the poller last, so that nothing is claimed unless
   * every thread that writes, watches and listens is there. */
  struct {
    pthread_t *t;
    void *(*fn)(void *);
    void *arg;
    int *done;
    const char *name;
  } threads[] = {
      {&h->completer, completer_main, h->completer_state, &h->completer_done,
       "completer"},
      {&h->watchdog, watchdog_main, h, &h->watchdog_done, "watchdog"},
      {&h->loader, loader_main, ld, &h->loader_done, "loader"},
      {&h->checkpointer, checkpointer_main, h, &h->checkpointer_done,
       "checkpointer"},
      {&h->listener, listener_main, h, &h->listener_done, "listener"},
      {&h->poller, poller_main, pl, &h->poller_done, "poller"},
  };
  int nthreads = (int)(sizeof threads / sizeof *threads), up = 0, nrun = 0;
  pthread_t *running[sizeof threads / sizeof *threads];
  if (!p->store->ops->wakeup.listen) h->listener_done = 1;
  for (; up < nthreads; up++) {
    if (threads[up].t == &h->listener && !p->store->ops->wakeup.listen)
      continue;
    if ((terr = host_thread_start(threads[up].t, threads[up].fn,
                                  threads[up].arg)))
      break;
    running[nrun++] = threads[up].t;
  }
  if (terr) {
    snprintf(err, sizeof err, "cannot start the %s thread: %s",
             threads[up].name, strerror(terr));
    /* Those never started count as ended; the others end as in a stop. */
    pthread_mutex_lock(&h->mu);
    for (int i = up; i < nthreads; i++) *threads[i].done = 1;
    pthread_mutex_unlock(&h->mu);
    return host_unwind(p, h, &old, started, running, nrun, PAWL_ENOMEM, err);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return 0;
}

void pawl_stop(pawl_t *p, int how) {
  host_t *h = p->host;
  if (!h) return;
  pthread_mutex_lock(&h->mu);
  int was = h->stopping;
  if (how > h->stopping) h->stopping = how;
  /* Outcomes the database does not take are tried until the grace period
   * and the flush time have passed; after a stop-now, once more each. */
  int64_t now = pawl__host_mono_ms();
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
  pthread_mutex_unlock(&h->mu);
  /* A script being loaded is no job: cut it short (nothing installed). */
  if (h->probe) pawl__worker_interrupt_stop(h->probe);
}

int pawl_host_status(pawl_t *p) {
  host_t *h = p->host;
  if (!h) return 0;
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
  host_t *h = p->host;
  if (!h) return 0;
  int64_t end = timeout_ms >= 0 ? pawl__host_mono_ms() + timeout_ms : 0;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    int rest = h->completer_done && h->watchdog_done && h->poller_done &&
               h->checkpointer_done && h->listener_done;
    if (rest && !h->loader_done && !h->loader_abandoned) {
      int64_t now = pawl__host_mono_ms();
      if (!h->loader_giveup_at)
        h->loader_giveup_at = now + 2000;
      else if (now >= h->loader_giveup_at)
        h->loader_abandoned = 1;
    }
    if (rest && (h->loader_done || h->loader_abandoned)) break;
    if (timeout_ms >= 0) {
      int64_t left = end - pawl__host_mono_ms();
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
  int loader_abandoned = h->loader_abandoned;
  h->joined = 1;
  pthread_mutex_unlock(&h->mu);
  if (!joined) {
    pthread_join(h->poller, NULL);
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
    if (p->store->ops->wakeup.listen) pthread_join(h->listener, NULL);
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

void pawl__host_free(pawl_t *p) {
  host_t *h = p->host;
  if (!h) return;
  pawl_stop(p, PAWL_STOP_NOW);
  pawl_wait(p, -1);
  p->host = NULL;
  p->owns_host = 0;
  if (h->abandoned || h->loader_abandoned) {
    /* A worker stuck in a blocking C call may still touch the host's
     * memory: leave it allocated (the process is about to end). */
    return;
  }
  poller_t *pl = h->poller_state;
  if (pl) {
    pawl_close(pl->p);
    free(pl);
  }
  host_loader_free(h, h->loader_state);
  host_free(h);
}
