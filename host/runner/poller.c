/* poller.c: the poller thread: claims batches of due jobs sized to the
 * free workers (plus an adaptive prefetch) and queues them for the
 * workers, and decides when the host stops (--until-idle, give-up, grace
 * period); and the chores (heartbeat, node beat, lease recovery,
 * recurring definitions, signal timeouts, retention), which the chores
 * thread runs on a poller of its own (step mode: on its thread). See
 * host.h for who owns what. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "host.h"
#include "iso8601.h"
#include "metrics.h"
#include "pawl_internal.h"
#include "worker.h"

/* Jobs claimed per transaction, at most. */
#define HOST_CLAIM_MAX 1000
/* How much work the adaptive prefetch claims ahead of the free workers:
 * about this many ms of jobs per worker, so that the jobs claimed ahead
 * wait about that long for a worker. */
#define HOST_AHEAD_WORK_MS 10.0
/* Every worker of the pool busy and none of its jobs started or ended
 * for h->opts.ahead_hold_ms: they are busy on long jobs. The jobs claimed
 * ahead would wait for them; they go back to pending (without using an
 * attempt), so that another node runs them on time, or this one once a
 * worker is free, and nothing more is claimed ahead until a job starts or
 * ends. */
/* Running jobs looked at by --until-idle (jobs left by a dead node). */
#define HOST_RUNNING_SCAN 1000

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
  int64_t claimed_at;        /* the store's clock just before the last
                                claim that was tried; 0: none tried */
  int borrowed;              /* p is step mode's handle: not closed here */
  host_ticker_t ticker;      /* recurring definitions (ticker.c) */
  uint64_t types_synced;     /* types_gen written (types_sync.c) */
  host_retention_t retention; /* old finished jobs (retention.c) */
  /* Waits for a signal (mono ms): when to look again for the earliest
   * deadline (new waits are found this way, at least once a second), and
   * that deadline (0: none known). */
  int64_t next_signal_look, signal_due;
  int64_t floors_reset_at; /* mono ms: the next claim starts from the top
                              (FLOORS_RESET_MS) */
  uint64_t idle_after;     /* --until-idle: the chores round to wait for
                              before stopping (0: none asked yet) */
} poller_t;

/* How often the claims start from the top of the claim order anyway, not
 * from their floors (store.h, claim.hear): a defence only, for a row that
 * became claimable above a floor without a wakeup saying so. (A node that
 * died in the middle of a claim had such rows locked: the lease recovery
 * that follows its death sends every floor to the top.) Under a pinned
 * horizon it is a walk of every row taken since the pin began, so rare. */
#define FLOORS_RESET_MS (5 * 60000)

/* How often the poller looks for waits added since (the bound on how late
 * a wait added elsewhere expires), and how soon after an expiry round (a
 * row a delivery held was left to it). */
#define SIGNAL_LOOK_MS 500
#define SIGNAL_RELOOK_MS 100

/* Logs a failed database call (and counts it for the metrics). */
static void host_log_rc(host_t *h, pawl_t *p, const char *what) {
  pawl__metrics_add(h->metrics, MET_DB_ERRORS, 1);
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_ERROR, what);
  pawl__log_str(&line, "error", pawl_errmsg(p));
  pawl__log_end(&line);
}

/* Hands back the jobs workers are still running after the grace period,
 * and interrupts them: their own outcomes will be refused as stale. */
static void host_release_running(host_t *h) {
  pthread_mutex_lock(&h->mu);
  h->abandon_at = pawl__mono_ms() + 2000;
  int running = h->running;
  pthread_mutex_unlock(&h->mu);
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_INFO,
            "interrupting the jobs still running; they are handed back");
  pawl__log_int(&line, "jobs", running);
  pawl__log_end(&line);
  for (int i = 0; i < h->nworkers; i++) pawl__worker_interrupt_stop(h->workers[i]);
}

/* The heartbeat: extends this node's leases, notes whether the database
 * still hears from us (a node that lapsed starts no job: see
 * pawl__host_lapsed()), and records the node in the node table. */
static void poller_heartbeat(poller_t *pl, int64_t now) {
  host_t *h = pl->h;
  if (pawl_heartbeat(pl->p, NULL) != 0) {
    host_log_rc(h, pl->p, "heartbeat failed");
    pthread_mutex_lock(&h->mu);
    /* Under mu: the claiming poller's give-up reads them (the chores
     * thread beats). */
    if (!pl->beats_failing_since) pl->beats_failing_since = now;
    snprintf(pl->beat_err, sizeof pl->beat_err, "%s", pawl_errmsg(pl->p));
    int lapsed = pawl__host_lapsed(h, 0, pawl__mono_ms()) && !h->lapsed_logged;
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
  pawl__node_beat(pl->p, PAWL_VERSION, h->queues_csv, h->started_at);
}

/* Lease recovery: one node sweeps at a time (the lock's TTL frees it if we
 * die), taking back the jobs of nodes that died, and removing nodes
 * silent for five leases (their jobs were taken back long ago; the node table
 * lists the living). */
static void poller_sweep(poller_t *pl) {
  host_t *h = pl->h;
  int got = 0;
  if (pawl__recover_lock(pl->p, &got) != 0 || !got) return;
  size_t n = 0;
  if (pawl_recover(pl->p, &n) != 0)
    host_log_rc(h, pl->p, "lease recovery failed");
  else if (n > 0) {
    pawl__metrics_add(h->metrics, MET_LEASES_RECOVERED, (int64_t)n);
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_WARN,
              "took back jobs whose lease expired");
    pawl__log_int(&line, "jobs", (int64_t)n);
    pawl__log_end(&line);
  }
  size_t reaped = 0;
  if (pawl__nodes_reap(pl->p, 5 * pawl__lease_ms(pl->p), &reaped) == 0 &&
      reaped) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_INFO, "removed silent nodes");
    pawl__log_int(&line, "nodes", (int64_t)reaped);
    pawl__log_end(&line);
  }
  pawl__recover_unlock(pl->p);
}

/* Waits for a signal that ran out fail (signal_timeout), at their
 * deadline: the poller's wake considers the earliest one (read
 * through the index pawl_signals_due), and looks again for new waits
 * every SIGNAL_LOOK_MS. Every node does it (an expiry is a compare-and-set
 * on the wait's row: of two nodes, one expires it). */
static void poller_signals(poller_t *pl, int64_t now) {
  host_t *h = pl->h;
  int64_t at = 0;
  pl->signal_due = 0;
  pl->next_signal_look = now + SIGNAL_LOOK_MS;
  if (pawl__signal_next_deadline(pl->p, &at) != 0) {
    host_log_rc(h, pl->p, "reading signal deadlines failed");
    return;
  }
  if (!at) return;
  int64_t until = at - pawl_now(pl->p);
  if (until > 0) {
    if (until < SIGNAL_LOOK_MS) pl->signal_due = now + until;
    return;
  }
  size_t expired = 0;
  pl->next_signal_look = now + SIGNAL_RELOOK_MS;
  if (pawl_signal_expire(pl->p, &expired) != 0)
    host_log_rc(h, pl->p, "expiring signal waits failed");
  else if (expired > 0) {
    log_line_t line;
    pawl__log_begin(&line, &h->log, PAWL_LOG_INFO,
                    "failed jobs whose wait for a signal timed out");
    pawl__log_int(&line, "jobs", (int64_t)expired);
    pawl__log_end(&line);
  }
}

/* Every worker of the pool busy on long jobs: the jobs claimed ahead go
 * back to pending, their attempts given back (host_stalled()). */
static void poller_release_stalled(poller_t *pl, int64_t now) {
  host_t *h = pl->h;
  size_t n = pawl__host_release_stalled(h, now, h->opts.ahead_hold_ms);
  if (!n) return;
  log_line_t line;
  pawl__log_begin(&line, &h->log, PAWL_LOG_INFO,
                  "handed back jobs claimed ahead: every worker is busy on "
                  "a long job");
  pawl__log_int(&line, "jobs", (int64_t)n);
  pawl__log_end(&line);
}

void pawl__poller_chores(poller_t *pl, int64_t now) {
  if (now >= pl->next_heartbeat) {
    pl->next_heartbeat = now + pl->h->opts.heartbeat_ms;
    poller_heartbeat(pl, now);
  }
  if (now >= pl->next_recover) {
    pl->next_recover = now + pawl__lease_ms(pl->p) / 2;
    poller_sweep(pl);
  }
  if (now >= pl->next_signal_look ||
      (pl->signal_due && now >= pl->signal_due))
    poller_signals(pl, now);
  pawl__ticker_chore(pl->h, pl->p, &pl->ticker, now);
  pawl__types_chore(pl->h, pl->p, &pl->types_synced);
  pawl__retention_chore(pl->h, pl->p, &pl->retention, now);
}

/* True when every worker of the pool is busy and none of its jobs has
 * started or ended for h->opts.ahead_hold_ms: a job claimed ahead now would
 * wait for a long job to end. Called with h->mu held. */
static int host_stalled(host_t *h, int64_t now) {
  return h->pool > 0 && h->pool_running >= h->pool &&
         now - h->pool_moved_mono >= h->opts.ahead_hold_ms;
}

/* How many jobs this node holds at most: the workers plus a prefetch, the
 * jobs claimed ahead of a free worker, which wait for one. Only what the
 * workers will take soon is claimed ahead: unless set, the prefetch is
 * about HOST_AHEAD_WORK_MS of work per worker, by how long jobs take on
 * average, so short jobs are claimed in big batches (the claim's cost is
 * per transaction) while long ones are not claimed ahead at all (each is
 * claimed when a worker is free for it); and none is, set or not, while
 * the pool is stalled on long jobs (host_stalled()). Called with h->mu
 * held. */
static int host_capacity(host_t *h, int64_t now) {
  /* The shared pool's workers: a queue with workers of its own claims for
   * itself (poller_claim_own). */
  int workers = h->pool, prefetch = h->opts.prefetch;
  if (workers <= 0) return 0;
  if (host_stalled(h, now)) return workers;
  if (prefetch < 0) {
    double avg = h->avg_job_ms > 0.01 ? h->avg_job_ms : 0.01;
    double n = HOST_AHEAD_WORK_MS / avg * workers;
    prefetch = n > 1000 ? 1000 : (int)n;
  }
  return workers + prefetch;
}

/* Claims up to `want` jobs of `queues` (nqueues 0: every queue) for
 * slot `slot` (-1: the shared pool) and queues them for the workers; the
 * last `prefetch` of `want` have no free worker yet, and no job needing a
 * limit's permit is claimed for them (pawl_claim_opts_t). Returns how many;
 * *failed = 1 when the claim failed. */
/* Floors (store.h, claim.hear): what the listener heard since the last
 * claim moves them back, before each claim and each next_due; now and
 * then every claim starts from the top anyway. */
static void poller_hear(poller_t *pl) {
  host_t *h = pl->h;
  pawl_buf_t heard;
  pthread_mutex_lock(&h->mu);
  heard = h->heard;
  memset(&h->heard, 0, sizeof h->heard);
  int hearing = h->hearing;
  pthread_mutex_unlock(&h->mu);
  int64_t mono = pawl__mono_ms();
  if (mono >= pl->floors_reset_at) {
    pawl__buf_reset(&heard);
    pawl__buf_puts(&heard, "*\n");
    pl->floors_reset_at = mono + FLOORS_RESET_MS;
  }
  pawl__claim_floors(pl->p, hearing && !heard.oom, pawl__buf_cstr(&heard));
  pawl__buf_free(&heard);
}

static size_t poller_claim_for(poller_t *pl, const char *const *queues,
                               size_t nqueues, int want, int prefetch,
                               int slot, int *failed) {
  host_t *h = pl->h;
  /* Claimed ahead of the workers: a worker records the start of a job
   * recovered before (pawl_begin), so that a dead node's queued jobs are
   * not blamed for its death. */
  pawl_claim_opts_t co = {.queues = queues,
                          .nqueues = nqueues,
                          .defer_start = 1,
                          .prefetch = prefetch > 0 ? (size_t)prefetch : 0};
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  *failed = 0;
  pl->claimed_at = pawl_now(pl->p);
  poller_hear(pl);
  if (pawl_claim(pl->p, &co, (size_t)want, &jobs, &n) != 0) {
    int64_t now = pawl__mono_ms();
    if (!pl->claims_failing_since) pl->claims_failing_since = now;
    snprintf(pl->claim_err, sizeof pl->claim_err, "%s", pawl_errmsg(pl->p));
    if (!pl->claim_failed_at || now - pl->claim_failed_at >= 5000) {
      pl->claim_failed_at = now;
      host_log_rc(h, pl->p, "claim failed");
    } else {
      pawl__metrics_add(h->metrics, MET_DB_ERRORS, 1); /* logged or not */
    }
    *failed = 1;
    return 0;
  }
  if (n == 0) return 0;
  pawl__metrics_claim_batch(h->metrics, n);
  host_item_t *first, *last;
  size_t kept =
      pawl__host_items_make(jobs, n, pawl__mono_ms(), &first, &last);
  for (host_item_t *it = first; it; it = it->next) it->slot = slot;
  pthread_mutex_lock(&h->mu);
  if (first && h->draining) {
    /* pawl_drain() came while claiming: these go back, unstarted. */
    pthread_mutex_unlock(&h->mu);
    pawl__host_hand_back_items(h, first);
    return n;
  }
  if (first && slot >= 0) {
    /* The slot's own list: a worker is free for each of them. */
    if (h->own_tail)
      h->own_tail->next = first;
    else
      h->own_head = first;
    h->own_tail = last;
    h->own_queued += (int)kept;
    h->qslots[slot].held += (int)kept;
    h->queued += (int)kept;
  } else if (first) {
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

/* The queues with workers of their own: each claims, in a claim
 * of its own, as many jobs as it has free workers (no prefetch: a job
 * claimed beyond them would wait while its queue is at its number). A
 * busy queue thus never takes a worker, or a claim, from another. */
static size_t poller_claim_own(poller_t *pl, int *tried, int *failed) {
  host_t *h = pl->h;
  size_t got = 0;
  int64_t now = pawl__mono_ms();
  for (int i = 0; i < h->nqslots; i++) {
    host_qslot_t *sl = &h->qslots[i];
    pthread_mutex_lock(&h->mu);
    int want = sl->limit - sl->held;
    int dry = sl->dry && sl->dry_news == h->news &&
              now - sl->dry_at < h->opts.poll_ms;
    uint64_t news = h->news;
    pthread_mutex_unlock(&h->mu);
    if (want <= 0 || dry) continue;
    const char *q = sl->name;
    int f = 0;
    *tried = 1;
    /* No prefetch: each job claimed has a free worker of its queue. */
    size_t n = poller_claim_for(pl, &q, 1, want, 0, i, &f);
    got += n;
    if (f) {
      *failed = 1;
      break; /* the database is away: the next poll tries again */
    }
    /* Only the poller writes these. */
    sl->dry = n < (size_t)want;
    sl->dry_news = news;
    sl->dry_at = now;
  }
  return got;
}

/* Claims what fits and queues it for the workers. Returns how many. */
static size_t poller_claim(poller_t *pl) {
  host_t *h = pl->h;
  int tried = 0, failed = 0;
  size_t got = poller_claim_own(pl, &tried, &failed);
  pthread_mutex_lock(&h->mu);
  /* Outcomes the completer cannot write yet count as work held: a node
   * whose database takes no outcomes does not claim more. The queues with
   * workers of their own are not the pool's. */
  int pool_queued = h->queued - h->own_queued;
  int outstanding = pool_queued + h->pool_running + h->backlog;
  int capacity = host_capacity(h, pawl__mono_ms());
  int want = capacity - outstanding;
  /* Claim in batches: when a good part of the capacity is free, or a
   * worker is idle with nothing queued. */
  int idle = pool_queued == 0 && h->pool_running < h->pool;
  /* The pool's workers free for a job claimed now: the rest of `want` is
   * a prefetch, which no job needing a limit's permit (max_running) is
   * claimed for; jobs under rate limits alone are (pawl_claim_opts_t). */
  int free_workers = h->pool - h->pool_running - pool_queued;
  pthread_mutex_unlock(&h->mu);
  if (!failed && want > 0 && (idle || want >= capacity / 4 || want >= 64)) {
    if (want > HOST_CLAIM_MAX) want = HOST_CLAIM_MAX;
    tried = 1;
    const char *const *queues =
        (const char *const *)(h->pool_queues ? h->pool_queues : h->queues);
    int prefetch = want - (free_workers > 0 ? free_workers : 0);
    got += poller_claim_for(pl, queues, h->npool_queues, want, prefetch, -1,
                            &failed);
  }
  if (!failed) {
    pl->claim_failed_at = 0;
    pl->claims_failing_since = 0; /* worked, or not tried: no news */
  }
  (void)tried;
  return got;
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
  poller_hear(pl);
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
            {0, "extending leases", NULL},
            {0, "writing outcomes", NULL}};
  char write_err[sizeof h->write_err], beat_err[sizeof pl->beat_err];
  /* The heartbeat is the chores thread's (step mode: ours). */
  const poller_t *beater = h->chores_state ? h->chores_state : pl;
  pthread_mutex_lock(&h->mu);
  f[1].since = beater->beats_failing_since;
  memcpy(beat_err, beater->beat_err, sizeof beat_err);
  f[2].since = h->writes_failing_since;
  memcpy(write_err, h->write_err, sizeof write_err);
  pthread_mutex_unlock(&h->mu);
  f[1].why = beat_err;
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
  /* The chores are another thread's: one round of them that began after
   * this idle look first (it writes the recurring definitions the scripts
   * brought, and fires what is due, which this run then claims). */
  if (h->chores_state) {
    pthread_mutex_lock(&h->mu);
    int wait_round = !pl->idle_after || h->chores_rounds < pl->idle_after;
    if (!pl->idle_after) {
      pl->idle_after = h->chores_rounds + 2;
      h->chores_asked = 1;
      pthread_cond_signal(&h->chores_cv);
    }
    pthread_mutex_unlock(&h->mu);
    if (wait_round) return 0;
  }
  int64_t db_now = pawl_now(pl->p), lease_end = 0;
  size_t elsewhere = poller_running_elsewhere(pl, &lease_end);
  if (elsewhere && lease_end && lease_end - db_now <= h->opts.idle_wait_ms) {
    if (lease_end <= db_now + 100) {
      /* Expired: lease recovery takes it back at its next sweep. Make that
       * soon (at most once a second), and look again shortly. */
      if (now - pl->swept_for_idle >= 1000) {
        pl->swept_for_idle = now;
        if (h->chores_state) {
          pthread_mutex_lock(&h->mu);
          h->sweep_soon = 1;
          pthread_cond_signal(&h->chores_cv);
          pthread_mutex_unlock(&h->mu);
        } else {
          pl->next_recover = now;
        }
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

void *pawl__poller_main(void *arg) {
  poller_t *pl = arg;
  host_t *h = pl->h;
  int64_t stop_started = 0;
  for (;;) {
    int64_t now = pawl__mono_ms();
    pthread_mutex_lock(&h->mu);
    int stopping = h->stopping;
    /* No job before the loader has installed the scripts (it wakes us). */
    int ready = h->scripts_gen != 0;
    /* pawl_drain(): claim nothing; what was claimed ahead goes back. */
    int draining = h->draining;
    int64_t grace_ms = h->opts.grace_ms; /* pawl_stop_grace() may set it */
    h->wake = 0;
    pthread_mutex_unlock(&h->mu);
    if (stopping) {
      if (!stop_started) {
        stop_started = now;
        pawl__host_release_queued(h);
      }
      pthread_mutex_lock(&h->mu);
      int running = h->running;
      pthread_mutex_unlock(&h->mu);
      if (running == 0) break;
      if (stopping == PAWL_STOP_NOW || now - stop_started >= grace_ms) {
        host_release_running(h);
        break;
      }
      /* leases of running jobs stay fresh */
      if (!h->chores_state) pawl__poller_chores(pl, now);
    } else {
      if (!h->chores_state) pawl__poller_chores(pl, now);
      poller_release_stalled(pl, now);
      pl->claimed_at = 0;
      size_t got = ready && !draining ? poller_claim(pl) : 0;
      if (got > 0) {
        pl->idle_after = 0; /* not idle: the next idle look asks again */
        continue;
      }
      if (poller_give_up(pl, pawl__mono_ms())) continue;
    }
    int64_t wait = h->opts.poll_ms;
    if (!stopping) {
      int64_t next_due = 0;
      int idle = poller_idle(pl, &next_due);
      /* Jobs due soon (a retry, a snooze) are part of the work this run
       * was started for: wait for those, not for ones far in the future. */
      /* Not before the first load of the scripts: a host that stopped
       * then would not have loaded them at all (nor said what in them is
       * broken), and jobs due by then would wait for the next run. */
      if (h->opts.until_idle && idle && ready &&
          poller_until_idle(pl, now, &next_due))
        continue;
      if (next_due > 0 && ready) {
        int64_t until = next_due - pawl_now(pl->p);
        /* Due already when the claim that just took nothing ran: held
         * back by the claim (its ordering key is busy: another node runs
         * a job of it), not newly due. Asking again at once would spin;
         * the poll interval it is (a completion here or an enqueue
         * anywhere wakes us sooner). */
        if (pl->claimed_at && next_due <= pl->claimed_at) until = wait;
        if (until < wait) wait = until < 1 ? 1 : until;
      }
    } else {
      wait = 10;
    }
    if (!h->chores_state) {
      int64_t chores = pawl__poller_next_chore(pl);
      if (chores - now < wait) wait = chores - now > 1 ? chores - now : 1;
    } else if (wait > SIGNAL_LOOK_MS) {
      /* The chores are another thread's, but the poller still looks again
       * at this pace, as it did when it ran them: a worker that starts a
       * job does not wake it, and jobs claimed ahead behind a long one are
       * handed back only by a poller that looks (poller_release_stalled). */
      wait = SIGNAL_LOOK_MS;
    }
    /* Jobs claimed ahead while every worker is busy: look again when they
     * would have waited too long (poller_release_stalled()). */
    pthread_mutex_lock(&h->mu);
    if (!stopping && h->queue_head && h->pool > 0 &&
        h->pool_running >= h->pool) {
      int64_t at = h->pool_moved_mono + h->opts.ahead_hold_ms - now;
      if (at < wait) wait = at > 1 ? at : 1;
    }
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_lock(&h->mu);
    if (!h->wake && h->stopping == stopping) {
      struct timespec ts = pawl__mono_deadline(wait);
      /* Time has passed: jobs may have come due (h->news). */
      if (pthread_cond_timedwait(&h->poll_cv, &h->mu, &ts) == ETIMEDOUT)
        h->news++;
    }
    pthread_mutex_unlock(&h->mu);
  }
  /* No beat may follow the node's stop (a beat marks it running again):
   * the chores end first. */
  pthread_mutex_lock(&h->mu);
  h->chores_stop = 1;
  pthread_cond_broadcast(&h->chores_cv);
  while (h->chores_started && !h->chores_done)
    pthread_cond_wait(&h->done_cv, &h->mu);
  pthread_mutex_unlock(&h->mu);
  /* Its jobs are finished or handed back: the node table says at once
   * that this node stopped, instead of listing it as silent for minutes.
   * A database that is away keeps the mark from being written; the node
   * is then told dead by its lapsed beat, later. */
  if (pawl__node_stop(pl->p) != 0)
    host_log_rc(h, pl->p, "recording the node's stop failed");
  pthread_mutex_lock(&h->mu);
  h->poller_done = 1;
  pthread_cond_broadcast(&h->work_cv);
  pthread_cond_broadcast(&h->done_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}


void *pawl__chores_main(void *arg) {
  poller_t *pl = arg;
  host_t *h = pl->h;
  pthread_mutex_lock(&h->mu);
  while (!h->chores_stop) {
    int soon = h->sweep_soon;
    h->sweep_soon = 0;
    h->chores_asked = 0;
    pthread_mutex_unlock(&h->mu);
    int64_t now = pawl__mono_ms();
    if (soon) pl->next_recover = now;
    pawl__poller_chores(pl, now);
    int64_t wait = pawl__poller_next_chore(pl) - pawl__mono_ms();
    pthread_mutex_lock(&h->mu);
    /* A round done: the poller waiting for one (--until-idle) looks. */
    h->chores_rounds++;
    h->wake = 1;
    pthread_cond_signal(&h->poll_cv);
    if (!h->chores_stop && !h->sweep_soon && !h->chores_asked && wait > 0) {
      struct timespec ts = pawl__mono_deadline(wait);
      pthread_cond_timedwait(&h->chores_cv, &h->mu, &ts);
    }
  }
  h->chores_done = 1;
  pthread_cond_broadcast(&h->done_cv);
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

int pawl__poller_new(host_t *h, struct poller **out, char *err,
                     size_t errlen) {
  poller_t *pl = pawl__calloc(1, sizeof *pl);
  if (!pl) {
    snprintf(err, errlen, "out of memory");
    return PAWL_ENOMEM;
  }
  pl->h = h;
  int rc = pawl__open_sibling(h->p, NULL, &pl->p, err, errlen);
  if (rc) {
    pawl__free(pl);
    return rc;
  }
  *out = pl;
  return 0;
}

int pawl__poller_borrow(host_t *h, pawl_t *p, struct poller **out) {
  poller_t *pl = pawl__calloc(1, sizeof *pl);
  if (!pl) return PAWL_ENOMEM;
  pl->h = h;
  pl->p = p;
  pl->borrowed = 1;
  *out = pl;
  return 0;
}

int64_t pawl__poller_next_chore(const struct poller *pl) {
  int64_t next = pl->next_heartbeat < pl->next_recover ? pl->next_heartbeat
                                                       : pl->next_recover;
  if (pl->ticker.next_tick < next) next = pl->ticker.next_tick;
  /* A step (a game loop) is not woken only to look for new waits: it
   * looks when it runs its chores anyway (poll_ms is how often an idle
   * step looks at the database); a known deadline wakes it. */
  if (!pl->h->step && pl->next_signal_look < next) next = pl->next_signal_look;
  if (pl->signal_due && pl->signal_due < next) next = pl->signal_due;
  if (pl->h->retention && pl->retention.next_at < next)
    next = pl->retention.next_at;
  return next;
}

void pawl__poller_free(struct poller *pl) {
  if (!pl) return;
  pawl__retention_stop(pl->p, &pl->retention);
  pawl__ticker_free(&pl->ticker);
  if (!pl->borrowed) pawl_close(pl->p);
  pawl__free(pl);
}
