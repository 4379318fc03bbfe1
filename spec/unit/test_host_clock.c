/* test_host_clock.c: the worker host (pawl_start) against an injected clock,
 * and with timers that cannot fire during a test.
 *
 * The host computes a retry's or a snooze's run_at from the store clock
 * when an attempt ends, and stores the attempt's end from the same clock.
 * With that clock frozen, every time the host stores is exact: these tests
 * pin delays to the millisecond, with no sleep and nothing measured, so a
 * slow, loaded or instrumented machine cannot make them fail.
 * The functional specs (spec/functional/host_spec.lua) check the same with the real
 * binary and the real clock, as bounds that hold at any speed.
 *
 * What a test waits for (a job reaching a state) it polls for, with a hang
 * guard (HC_HANG_MS) far beyond any machine's speed and within the runner's
 * alarm. Scripts are written into the test's temp dir, its working
 * directory. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nanosleep, clock_gettime under -std=c11 */
#endif
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "pawl.h"
#include "unit.h"

#define T0 INT64_C(1800000000000)

/* Hang guard for every wait: the runner's alarm (120 s) is behind it. */
#define HC_HANG_MS 60000

/* A timer that never fires while a test runs. */
#define HC_NEVER_MS 600000

static _Atomic int64_t hc_now = T0;

static int64_t hc_clock(void *data) {
  (void)data;
  return atomic_load(&hc_now);
}

static double hc_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void hc_nap(void) {
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, NULL);
}

/* Writes scripts/NAME.lua. */
static void hc_script(const char *name, const char *src) {
  char path[256];
  snprintf(path, sizeof path, "scripts/%s.lua", name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  CHECK_INT(fputs(src, f), >=, 0);
  CHECK_INT(fclose(f), ==, 0);
}

/* A handle on a new database in the temp dir, on the frozen clock (or the
 * real one when `frozen` is 0), with a lease no test outlives. */
static pawl_t *hc_open(int frozen) {
  CHECK_INT(mkdir("scripts", 0700), ==, 0);
  atomic_store(&hc_now, T0);
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:host.db";
  o.node_id = "node-hc";
  o.lease_ms = 3600000;
  if (frozen) o.clock = hc_clock;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  return p;
}

/* Starts the host with `workers` workers. The poller polls every
 * `poll_ms`; its other timers (script checks, heartbeats) fire only
 * every HC_NEVER_MS. The clock tests never poll either: a retry or a
 * snooze that runs once due shows that the poller sleeps until the next
 * due time (and that enqueues and outcomes wake it), not that it polls. */
static void hc_start_hold(pawl_t *p, int workers, int64_t poll_ms,
                          int64_t ahead_hold_ms) {
  pawl_host_opts_t o;
  pawl_host_opts_init(&o);
  o.ahead_hold_ms = ahead_hold_ms;
  o.scripts_dir = "scripts";
  o.workers = workers;
  o.poll_ms = poll_ms;
  o.reload_ms = HC_NEVER_MS;
  o.heartbeat_ms = HC_NEVER_MS;
  o.log_level = PAWL_LOG_WARN;
  o.allow_io = 1; /* the jobs' gates and markers are files */
  CHECK_OK(pawl_start(p, &o));
}

/* Jobs claimed ahead stay claimed however long the workers are busy (the
 * tests that hand them back say how soon). */
static void hc_start(pawl_t *p, int workers, int64_t poll_ms) {
  hc_start_hold(p, workers, poll_ms, HC_NEVER_MS);
}

static void hc_stop(pawl_t *p) {
  pawl_stop(p, PAWL_STOP_GRACEFUL);
  CHECK_OK(pawl_wait(p, HC_HANG_MS));
  pawl_close(p);
}

/* Enqueues a job (through the C API: a script's max_attempts does not
 * apply, so it is given here). */
static pawl_id_t hc_enqueue(pawl_t *p, const char *type, int max_attempts) {
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.max_attempts = max_attempts;
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, type, NULL, &o, &id, NULL));
  return id;
}

/* Waits until job `id` is in `state` at attempt `attempt`; returns it
 * (pawl_job_free()). */
#define hc_wait(p, id, state, attempt) \
  hc_wait_at(__FILE__, __LINE__, p, id, state, attempt)
static pawl_job_t *hc_wait_at(const char *file, int line, pawl_t *p,
                              const pawl_id_t *id, pawl_state_t state,
                              int attempt) {
  double deadline = hc_mono_ms() + HC_HANG_MS;
  for (;;) {
    pawl_job_t *j = NULL;
    if (pawl_get(p, id, &j) != 0)
      unit_fail(file, line, "get: %s", pawl_errmsg(p));
    if (j->state == state && j->attempt == attempt) return j;
    if (hc_mono_ms() > deadline)
      unit_fail(file, line,
                "job never reached %s at attempt %d: it is %s at attempt %d "
                "(last error: %s)",
                pawl_state_name(state), attempt, pawl_state_name(j->state),
                j->attempt, j->last_error ? j->last_error : "none");
    pawl_job_free(j);
    hc_nap();
  }
}

/* Asserts that a claim made now would not take job `id`: runs a probe job,
 * enqueued now (which wakes the poller), to its end, and checks that `id`
 * is still pending at `attempt` afterwards. The probe was claimed after
 * this call began, on the clock as it is. */
static void hc_check_not_due(pawl_t *p, const pawl_id_t *id, int attempt) {
  pawl_id_t probe = hc_enqueue(p, "probe", 1);
  pawl_job_free(hc_wait(p, &probe, PAWL_SUCCEEDED, 1));
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, id, &j));
  CHECK_INT(j->state, ==, PAWL_PENDING);
  CHECK_INT(j->attempt, ==, attempt);
  pawl_job_free(j);
}

/* The history event of attempt `attempt` whose reason starts with
 * `prefix`; NULL if none. */
static const pawl_event_t *hc_event(const pawl_history_t *h, int attempt,
                                    const char *prefix) {
  for (size_t i = 0; i < h->nevents; i++) {
    const pawl_event_t *e = &h->events[i];
    if (e->attempt == attempt && e->reason &&
        strncmp(e->reason, prefix, strlen(prefix)) == 0)
      return e;
  }
  return NULL;
}

static const char HC_PROBE[] = "return { run = function() return true end }\n";

/* ---- retries ------------------------------------------------------------ */

/* A retry is due exactly the policy's delay after the failed attempt ended
 * (the delay it returned for that attempt), not a millisecond sooner; the
 * history says so. */
void test_host_clock_retry_delays(void) {
  pawl_t *p = hc_open(1);
  hc_script("probe", HC_PROBE);
  hc_script("flaky",
            "return {\n"
            "  retry = function(attempt) return 0.2 * attempt end,\n"
            "  run = function(job)\n"
            "    if job.attempt < 3 then error(\"flaky \" .. job.attempt) end\n"
            "    return job.attempt\n"
            "  end,\n"
            "}\n");
  pawl_id_t id = hc_enqueue(p, "flaky", 5);
  hc_start(p, 1, HC_NEVER_MS);

  /* Attempt 1 fails at T0: due again at T0 + 0.2 s. */
  pawl_job_t *j = hc_wait(p, &id, PAWL_PENDING, 1);
  CHECK_INT(j->run_at, ==, T0 + 200);
  pawl_job_free(j);
  atomic_store(&hc_now, T0 + 199);
  hc_check_not_due(p, &id, 1);

  /* At T0 + 0.2 s attempt 2 runs, fails: the policy's 0.4 s for it. */
  atomic_store(&hc_now, T0 + 200);
  j = hc_wait(p, &id, PAWL_PENDING, 2);
  CHECK_INT(j->run_at, ==, T0 + 600);
  pawl_job_free(j);
  atomic_store(&hc_now, T0 + 599);
  hc_check_not_due(p, &id, 2);

  atomic_store(&hc_now, T0 + 600);
  j = hc_wait(p, &id, PAWL_SUCCEEDED, 3);
  CHECK_STR(j->result, "3");
  pawl_job_free(j);

  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, &id, &h));
  CHECK_INT(h->nattempts, ==, 3);
  static const int64_t at[] = {T0, T0 + 200, T0 + 600};
  for (size_t i = 0; i < 3; i++) {
    const pawl_attempt_t *a = &h->attempts[i];
    CHECK_INT(a->attempt, ==, (int)i + 1);
    CHECK_INT(a->scheduled_at, ==, at[i]);
    CHECK_INT(a->started_at, ==, at[i]);
    CHECK_STR(a->outcome, i < 2 ? "retry" : "succeeded");
    CHECK_INT(a->ended_at, ==, at[i]);
  }
  const pawl_event_t *e = hc_event(h, 1, "retry in");
  CHECK(e != NULL);
  CHECK_STR(e->reason, "retry in 200 ms");
  e = hc_event(h, 2, "retry in");
  CHECK(e != NULL);
  CHECK_STR(e->reason, "retry in 400 ms");
  pawl_history_free(h);
  hc_stop(p);
}

/* A job type with no script fails and is retried by the built-in policy:
 * 2 s after the failure, give or take its 10% jitter. */
void test_host_clock_default_policy(void) {
  pawl_t *p = hc_open(1);
  pawl_id_t id = hc_enqueue(p, "ghost", 5);
  hc_start(p, 1, HC_NEVER_MS);
  pawl_job_t *j = hc_wait(p, &id, PAWL_PENDING, 1);
  CHECK_STR(j->last_error, "no script for job type ghost");
  CHECK_INT(j->run_at, >=, T0 + 1800);
  CHECK_INT(j->run_at, <=, T0 + 2200);
  int64_t run_at = j->run_at;
  pawl_job_free(j);
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, &id, &h));
  const pawl_event_t *e = hc_event(h, 1, "retry in");
  CHECK(e != NULL);
  char want[64];
  snprintf(want, sizeof want, "retry in %lld ms", (long long)(run_at - T0));
  CHECK_STR(e->reason, want);
  pawl_history_free(h);
  hc_stop(p);
}

/* ---- snoozes ------------------------------------------------------------ */

/* pawl.snooze(0.3) runs the job again exactly 0.3 s later, and the snooze
 * uses no attempt. */
void test_host_clock_snooze(void) {
  pawl_t *p = hc_open(1);
  hc_script("probe", HC_PROBE);
  /* The marker file (in the working directory) says it snoozed once. */
  hc_script("sleepy",
            "return {\n"
            "  run = function(job)\n"
            "    local f = io.open(\"snoozed\", \"r\")\n"
            "    if f then f:close() return job.attempt end\n"
            "    assert(io.open(\"snoozed\", \"w\")):close()\n"
            "    pawl.snooze(0.3)\n"
            "  end,\n"
            "}\n");
  pawl_id_t id = hc_enqueue(p, "sleepy", 1);
  hc_start(p, 1, HC_NEVER_MS);
  /* Pending at attempt 0 before its first claim as after the snooze: wait
   * for the snooze in its history. */
  pawl_job_t *j = NULL;
  pawl_history_t *h = NULL;
  double deadline = hc_mono_ms() + HC_HANG_MS;
  for (;;) {
    CHECK_OK(pawl_history(p, &id, &h));
    if (h->nattempts == 1 && strcmp(h->attempts[0].outcome, "snoozed") == 0)
      break;
    pawl_history_free(h);
    if (hc_mono_ms() > deadline) unit_fail(__FILE__, __LINE__, "no snooze");
    hc_nap();
  }
  CHECK_INT(h->attempts[0].ended_at, ==, T0);
  const pawl_event_t *e = hc_event(h, 1, "snoozed");
  CHECK(e != NULL);
  CHECK_STR(e->reason, "snoozed for 300 ms");
  pawl_history_free(h);
  CHECK_OK(pawl_get(p, &id, &j));
  CHECK_INT(j->state, ==, PAWL_PENDING);
  CHECK_INT(j->attempt, ==, 0);
  CHECK_INT(j->run_at, ==, T0 + 300);
  pawl_job_free(j);
  atomic_store(&hc_now, T0 + 299);
  hc_check_not_due(p, &id, 0);
  atomic_store(&hc_now, T0 + 300);
  j = hc_wait(p, &id, PAWL_SUCCEEDED, 1);
  CHECK_STR(j->result, "1");
  CHECK_INT(j->started_at, ==, T0 + 300);
  pawl_job_free(j);
  hc_stop(p);
}

/* ---- waking ------------------------------------------------------------- */

/* A job's pawl.enqueue wakes the poller at once. Every timer of the poller
 * (poll, script check, heartbeat, lease recovery) is ten minutes or more,
 * and nothing else is in flight while the parent waits (no outcome, no free
 * worker): only the wakeup can have the child claimed before the parent
 * gives up on it, 30 s later, and fails. The parent waits for a file the
 * child creates.
 *
 * The parent naps 0.2 s before it enqueues, so that the poller has gone
 * back to sleep after claiming it: had the child come sooner, the poller's
 * next round would claim it without a wakeup, and a host whose wakeup is
 * broken could pass (it does without the nap). The nap can only hide a
 * bug on a very slow machine, never fail a working host. */
void test_host_wakeup_from_job(void) {
  pawl_t *p = hc_open(0);
  hc_script("parent",
            "return {\n"
            "  run = function(job)\n"
            "    pawl.sleep(0.2)\n"
            "    pawl.enqueue(\"child\", { ran = \"child-ran\" })\n"
            "    local deadline = pawl.time() + 30\n"
            "    while true do\n"
            "      local f = io.open(\"child-ran\", \"r\")\n"
            "      if f then f:close() break end\n"
            "      if pawl.time() > deadline then\n"
            "        error(\"the child did not run within 30 s\")\n"
            "      end\n"
            "      pawl.sleep(0.005)\n"
            "    end\n"
            "    return \"child ran\"\n"
            "  end,\n"
            "}\n");
  hc_script("child",
            "return {\n"
            "  run = function(job)\n"
            "    assert(io.open(job.payload.ran, \"w\")):close()\n"
            "  end,\n"
            "}\n");
  pawl_id_t id = hc_enqueue(p, "parent", 1);
  /* The poller's first round claims the parent. */
  hc_start(p, 2, HC_NEVER_MS);
  pawl_job_t *j = NULL;
  double deadline = hc_mono_ms() + HC_HANG_MS;
  for (;;) {
    CHECK_OK(pawl_get(p, &id, &j));
    if (j->state == PAWL_SUCCEEDED || j->state == PAWL_FAILED) break;
    pawl_job_free(j);
    if (hc_mono_ms() > deadline) unit_fail(__FILE__, __LINE__, "parent hangs");
    hc_nap();
  }
  if (j->state != PAWL_SUCCEEDED)
    unit_fail(__FILE__, __LINE__, "parent failed: %s", j->last_error);
  CHECK_STR(j->result, "\"child ran\"");
  CHECK_INT(j->attempt, ==, 1);
  pawl_job_free(j);
  hc_stop(p);
}

/* ---- run time and queue wait -------------------------------------------- */

/* A job claimed ahead of a free worker waits without running: its
 * attempt's run is its body's, measured by the worker, and the wait is
 * queue wait. One worker; `hold` runs until the test opens its gate (a
 * file), and `quick`, claimed with it, waits behind it. The clock is
 * frozen at T0 while both are claimed and `hold` starts, and moved 10 s on
 * before the gate opens: `quick` starts and ends at T0 + 10 s (it ran 0 ms
 * and waited 10 s), `hold` ran from T0 to T0 + 10 s. Before the worker
 * measured the run, `quick` was recorded as running from its claim. */
void test_host_clock_claimed_ahead_run_time(void) {
  pawl_t *p = hc_open(1);
  hc_script("hold",
            "return {\n"
            "  run = function(job)\n"
            "    assert(io.open(\"reached\", \"w\")):close()\n"
            "    for i = 1, 12000 do\n"
            "      local f = io.open(\"open\", \"r\")\n"
            "      if f then f:close() return \"opened\" end\n"
            "      pawl.sleep(0.005)\n"
            "    end\n"
            "    error(\"the gate was not opened within 60 s\")\n"
            "  end,\n"
            "}\n");
  hc_script("quick", "return { run = function(job) return 1 end }\n");
  pawl_id_t hold = hc_enqueue(p, "hold", 1);
  pawl_id_t quick = hc_enqueue(p, "quick", 1);
  hc_start(p, 1, HC_NEVER_MS);
  /* Both claimed by the first round; `hold` runs. */
  pawl_job_free(hc_wait(p, &quick, PAWL_RUNNING, 1));
  double deadline = hc_mono_ms() + HC_HANG_MS;
  while (access("reached", F_OK) != 0) {
    if (hc_mono_ms() > deadline) unit_fail(__FILE__, __LINE__, "hold hangs");
    hc_nap();
  }
  /* `quick` waits claimed, not running: no start, and its attempt says so;
   * `hold` runs. */
  pawl_job_t *q = NULL;
  CHECK_OK(pawl_get(p, &quick, &q));
  CHECK_INT(q->state, ==, PAWL_RUNNING);
  CHECK_INT(q->started_at, ==, 0);
  pawl_job_free(q);
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, &quick, &h));
  CHECK_INT(h->nattempts, ==, 1);
  CHECK_STR(h->attempts[0].outcome, "claimed");
  CHECK_INT(h->attempts[0].started_at, ==, 0);
  pawl_history_free(h);
  CHECK_OK(pawl_history(p, &hold, &h));
  CHECK_STR(h->attempts[0].outcome, "running");
  CHECK_INT(h->attempts[0].started_at, ==, T0);
  pawl_history_free(h);
  atomic_store(&hc_now, T0 + 10000);
  FILE *f = fopen("open", "w");
  CHECK(f != NULL);
  fclose(f);
  pawl_job_free(hc_wait(p, &quick, PAWL_SUCCEEDED, 1));
  pawl_job_free(hc_wait(p, &hold, PAWL_SUCCEEDED, 1));
  CHECK_OK(pawl_history(p, &quick, &h));
  CHECK_INT(h->nattempts, ==, 1);
  CHECK_INT(h->attempts[0].scheduled_at, ==, T0);
  CHECK_INT(h->attempts[0].started_at, ==, T0 + 10000); /* queue wait 10 s */
  CHECK_INT(h->attempts[0].ended_at, ==, T0 + 10000);   /* ran 0 ms */
  pawl_history_free(h);
  CHECK_OK(pawl_history(p, &hold, &h));
  CHECK_INT(h->attempts[0].started_at, ==, T0);
  CHECK_INT(h->attempts[0].ended_at, ==, T0 + 10000);
  pawl_history_free(h);
  hc_stop(p);
}

/* A job claimed ahead shows as running once its body starts, while it
 * runs, not only once it ends: its start is written (by the completer,
 * with the outcomes around it) without waiting for its end. One worker,
 * two gated jobs claimed together: the second waits claimed until the
 * first's gate opens, then runs, held at its own gate, and its row gets
 * its start (the clock's T0 + 10 s) while it is held. */
void test_host_clock_claimed_ahead_started_while_running(void) {
  pawl_t *p = hc_open(1);
  hc_script("gated",
            "return {\n"
            "  run = function(job)\n"
            "    assert(io.open(job.payload.reached, \"w\")):close()\n"
            "    for i = 1, 12000 do\n"
            "      local f = io.open(job.payload.gate, \"r\")\n"
            "      if f then f:close() return \"opened\" end\n"
            "      pawl.sleep(0.005)\n"
            "    end\n"
            "    error(\"the gate was not opened within 60 s\")\n"
            "  end,\n"
            "}\n");
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.max_attempts = 1;
  pawl_id_t first, second;
  CHECK_OK(pawl_enqueue(p, "gated", "{\"gate\":\"g1\",\"reached\":\"r1\"}", &o,
                        &first, NULL));
  CHECK_OK(pawl_enqueue(p, "gated", "{\"gate\":\"g2\",\"reached\":\"r2\"}", &o,
                        &second, NULL));
  hc_start(p, 1, HC_NEVER_MS);
  double deadline = hc_mono_ms() + HC_HANG_MS;
  while (access("r1", F_OK) != 0) {
    if (hc_mono_ms() > deadline) unit_fail(__FILE__, __LINE__, "first hangs");
    hc_nap();
  }
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &second, &j));
  CHECK_INT(j->state, ==, PAWL_RUNNING);
  CHECK_INT(j->started_at, ==, 0); /* claimed, waiting for the worker */
  pawl_job_free(j);
  atomic_store(&hc_now, T0 + 10000);
  FILE *f = fopen("g1", "w");
  CHECK(f != NULL);
  fclose(f);
  while (access("r2", F_OK) != 0) {
    if (hc_mono_ms() > deadline) unit_fail(__FILE__, __LINE__, "second hangs");
    hc_nap();
  }
  /* Held at its gate: its start is written while it runs. */
  for (;;) {
    CHECK_OK(pawl_get(p, &second, &j));
    int64_t started = j->started_at;
    int state = j->state;
    pawl_job_free(j);
    CHECK_INT(state, ==, PAWL_RUNNING);
    if (started) {
      CHECK_INT(started, ==, T0 + 10000);
      break;
    }
    if (hc_mono_ms() > deadline)
      unit_fail(__FILE__, __LINE__, "the second job's start was never written");
    hc_nap();
  }
  pawl_history_t *h = NULL;
  CHECK_OK(pawl_history(p, &second, &h));
  CHECK_STR(h->attempts[0].outcome, "running");
  pawl_history_free(h);
  f = fopen("g2", "w");
  CHECK(f != NULL);
  fclose(f);
  pawl_job_free(hc_wait(p, &second, PAWL_SUCCEEDED, 1));
  CHECK_OK(pawl_history(p, &second, &h));
  CHECK_INT(h->attempts[0].started_at, ==, T0 + 10000);
  pawl_history_free(h);
  hc_stop(p);
}

/* Every worker busy on a long job: a job claimed ahead goes back to
 * pending, unstarted and its attempt not counted, once no job has
 * started or ended for ahead_hold_ms (here 50 ms), and runs once the
 * worker is free. One worker held at a gate; `quick` claimed with it. */
void test_host_clock_claimed_ahead_handed_back(void) {
  pawl_t *p = hc_open(1);
  hc_script("hold",
            "return {\n"
            "  run = function(job)\n"
            "    assert(io.open(\"reached\", \"w\")):close()\n"
            "    for i = 1, 12000 do\n"
            "      local f = io.open(\"open\", \"r\")\n"
            "      if f then f:close() return \"opened\" end\n"
            "      pawl.sleep(0.005)\n"
            "    end\n"
            "    error(\"the gate was not opened within 60 s\")\n"
            "  end,\n"
            "}\n");
  hc_script("quick", "return { run = function(job) return 1 end }\n");
  pawl_id_t hold = hc_enqueue(p, "hold", 1);
  pawl_id_t quick = hc_enqueue(p, "quick", 1);
  hc_start_hold(p, 1, HC_NEVER_MS, 50);
  /* Handed back: pending again, attempt 0, one released attempt that
   * never started. */
  pawl_history_t *h = NULL;
  double deadline = hc_mono_ms() + HC_HANG_MS;
  for (;;) {
    CHECK_OK(pawl_history(p, &quick, &h));
    if (h->nattempts > 0 && strcmp(h->attempts[0].outcome, "claimed") != 0)
      break;
    pawl_history_free(h);
    if (hc_mono_ms() > deadline)
      unit_fail(__FILE__, __LINE__, "quick was never handed back");
    hc_nap();
  }
  CHECK_INT(h->nattempts, ==, 1);
  CHECK_STR(h->attempts[0].outcome, "released");
  CHECK_INT(h->attempts[0].started_at, ==, 0);
  if (!strstr(h->events[h->nevents - 1].reason, "busy on a long job"))
    unit_fail(__FILE__, __LINE__, "reason: %s", h->events[h->nevents - 1].reason);
  pawl_history_free(h);
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &quick, &j));
  CHECK_INT(j->state, ==, PAWL_PENDING);
  CHECK_INT(j->attempt, ==, 0);
  pawl_job_free(j);
  CHECK_OK(pawl_get(p, &hold, &j));
  CHECK_INT(j->state, ==, PAWL_RUNNING);
  pawl_job_free(j);
  FILE *f = fopen("open", "w");
  CHECK(f != NULL);
  fclose(f);
  pawl_job_free(hc_wait(p, &quick, PAWL_SUCCEEDED, 1));
  pawl_job_free(hc_wait(p, &hold, PAWL_SUCCEEDED, 1));
  hc_stop(p);
}
