/* test_bounds.c: numbers from outside are bounded.
 *
 * The C API refuses values outside the ranges of pawl.h with PAWL_EINVAL
 * and a message naming the value and the range; nothing is clamped, and
 * sums of times cannot overflow. The clock is injected. */
#include <math.h>
#include <stdarg.h>

#include "bounds.h"
#include "pawl.h"
#include "store.h"
#include "unit.h"

static int64_t bounds_now = INT64_C(1800000000000);

static int64_t bounds_clock(void *data) {
  (void)data;
  return bounds_now;
}

static pawl_t *bounds_open(void) {
  pawl_options_t o;
  pawl_options_init(&o);
  o.db = "sqlite:bounds.db";
  o.clock = bounds_clock;
  pawl_t *p = NULL;
  char err[512];
  if (pawl_open(&p, &o, err, sizeof err))
    unit_fail(__FILE__, __LINE__, "open: %s", err);
  return p;
}

static int count_jobs_cb(const pawl_job_t *j, void *data) {
  (void)j;
  (*(int *)data)++;
  return 0;
}

static int count_jobs(pawl_t *p) {
  int n = 0;
  CHECK_OK(pawl_list(p, NULL, count_jobs_cb, &n));
  return n;
}

/* The message contains every one of the NULL-terminated strings. */
static void check_msg(int line, const char *msg, ...) {
  va_list ap;
  va_start(ap, msg);
  for (const char *want; (want = va_arg(ap, const char *));)
    if (!strstr(msg, want))
      unit_fail(__FILE__, line, "message \"%s\" lacks \"%s\"", msg, want);
  va_end(ap);
}
#define CHECK_MSG(msg, ...) check_msg(__LINE__, msg, __VA_ARGS__, (char *)NULL)

void test_bounds_checker(void) {
  char err[256];
  CHECK_INT(pawl__bounds_check("x", 1.5, 0, 10, 0, NULL, err, sizeof err), ==, 0);
  CHECK_INT(pawl__bounds_check("x", 1.5, 0, 10, 1, NULL, err, sizeof err), ==, -1);
  CHECK_STR(err, "x must be a whole number between 0 and 10 (got 1.5)");
  CHECK_INT(pawl__bounds_check("d", NAN, 0, 10, 0, "s", err, sizeof err), ==, -1);
  CHECK_MSG(err, "d must be a number between 0 and 10 s (got ", "nan");
  CHECK_INT(pawl__bounds_check("d", INFINITY, 0, 1e300, 0, NULL, err, sizeof err), ==, -1);
  CHECK_MSG(err, "(got inf)");
  CHECK_INT(pawl__bounds_check("d", -INFINITY, -1e300, 0, 0, NULL, err, sizeof err), ==, -1);
  CHECK_INT(pawl__bounds_check("d", 1e300, 0, 10, 0, NULL, err, sizeof err), ==, -1);
  CHECK_MSG(err, "(got 1e+300)");
  CHECK_INT(pawl__bounds_check("d", 10, 0, 10, 1, NULL, err, sizeof err), ==, 0);
  CHECK_INT(pawl__bounds_check_int("n", INT64_MAX, 0, 5, "ms", err, sizeof err), ==, -1);
  CHECK_STR(err, "n must be between 0 and 5 ms (got 9223372036854775807)");
  int64_t t = 7;
  CHECK_INT(pawl__bounds_add_time(INT64_MAX, 1, &t), ==, -1);
  CHECK_INT(pawl__bounds_add_time(1, INT64_MAX, &t), ==, -1);
  CHECK_INT(pawl__bounds_add_time(PAWL_TIME_MAX_MS, 1, &t), ==, -1);
  CHECK_INT(pawl__bounds_add_time(0, -1, &t), ==, -1);
  CHECK_INT(t, ==, 7);
  CHECK_INT(pawl__bounds_add_time(PAWL_TIME_MAX_MS - 1, 1, &t), ==, 0);
  CHECK_INT(t, ==, PAWL_TIME_MAX_MS);
}

/* One enqueue with one field set; must be refused naming `what`. */
#define REFUSE(field, value, ...)                                            \
  do {                                                                       \
    pawl_enqueue_opts_t o_;                                                  \
    pawl_enqueue_opts_init(&o_);                                             \
    o_.field = value;                                                        \
    CHECK_INT(pawl_enqueue(p, "t", NULL, &o_, NULL, NULL), ==, PAWL_EINVAL); \
    CHECK_MSG(pawl_errmsg(p), __VA_ARGS__);                                  \
  } while (0)

void test_bounds_enqueue_refused(void) {
  pawl_t *p = bounds_open();
  REFUSE(priority, PAWL_PRIORITY_MAX + 1,
         "priority must be between -1000000 and 1000000 (got 1000001)");
  REFUSE(priority, INT32_MIN, "priority", "(got -2147483648)");
  REFUSE(max_attempts, PAWL_ATTEMPTS_MAX + 1,
         "max_attempts must be between 1 and 10000 (got 10001)");
  REFUSE(max_attempts, -1, "max_attempts", "(got -1)");
  REFUSE(timeout_s, PAWL_TIMEOUT_MAX_S + 1,
         "timeout must be between 0 and 86400 seconds (got 86401)");
  REFUSE(timeout_s, -1, "timeout", "(got -1)");
  REFUSE(delay_ms, INT64_MAX,
         "delay must be between 0 and 315360000000 ms (got 9223372036854775807)");
  REFUSE(delay_ms, -5, "delay", "(got -5)");
  REFUSE(run_at, INT64_MAX, "run_at must be between 0 and 253402300799999",
         "(got 9223372036854775807)");
  REFUSE(run_at, -1, "run_at", "(got -1)");
  CHECK_INT(count_jobs(p), ==, 0);
  pawl_close(p);
}

/* now + delay past the latest time (an injected clock far out): refused,
 * not wrapped around into the past. */
void test_bounds_enqueue_delay_overflow(void) {
  pawl_t *p = bounds_open();
  bounds_now = PAWL_TIME_MAX_MS - 1000;
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.delay_ms = 1001;
  CHECK_INT(pawl_enqueue(p, "t", NULL, &o, NULL, NULL), ==, PAWL_EINVAL);
  CHECK_MSG(pawl_errmsg(p), "plus the delay", "latest run time");
  o.delay_ms = 1000;
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "t", NULL, &o, &id, NULL));
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &id, &j));
  CHECK_INT(j->run_at, ==, PAWL_TIME_MAX_MS);
  pawl_job_free(j);
  CHECK_INT(count_jobs(p), ==, 1);
  pawl_close(p);
}

/* The ends of every range are accepted, and kept exactly. */
void test_bounds_enqueue_limits_accepted(void) {
  pawl_t *p = bounds_open();
  pawl_enqueue_opts_t o;
  pawl_enqueue_opts_init(&o);
  o.priority = PAWL_PRIORITY_MIN;
  o.max_attempts = PAWL_ATTEMPTS_MAX;
  o.timeout_s = PAWL_TIMEOUT_MAX_S;
  o.delay_ms = PAWL_DELAY_MAX_MS;
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "t", NULL, &o, &id, NULL));
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &id, &j));
  CHECK_INT(j->priority, ==, PAWL_PRIORITY_MIN);
  CHECK_INT(j->max_attempts, ==, PAWL_ATTEMPTS_MAX);
  CHECK_INT(j->timeout_s, ==, PAWL_TIMEOUT_MAX_S);
  CHECK_INT(j->run_at, ==, bounds_now + PAWL_DELAY_MAX_MS);
  pawl_job_free(j);
  pawl_enqueue_opts_init(&o);
  o.priority = PAWL_PRIORITY_MAX;
  o.run_at = PAWL_TIME_MAX_MS;
  CHECK_OK(pawl_enqueue(p, "t", NULL, &o, &id, NULL));
  CHECK_OK(pawl_get(p, &id, &j));
  CHECK_INT(j->run_at, ==, PAWL_TIME_MAX_MS);
  pawl_job_free(j);
  pawl_close(p);
}

/* Leases, lock TTLs and a retry's run_at: bounded too. */
void test_bounds_open_claim_lock_finish(void) {
  pawl_options_t oo;
  pawl_options_init(&oo);
  oo.db = "sqlite:bounds.db";
  oo.lease_ms = INT64_MAX;
  pawl_t *bad = NULL;
  char err[512];
  CHECK_INT(pawl_open(&bad, &oo, err, sizeof err), ==, PAWL_EINVAL);
  CHECK_MSG(err, "lease_ms must be between 0 and 86400000",
            "(got 9223372036854775807)");
  CHECK(bad == NULL);
  oo.lease_ms = 0;
  oo.age_boost_ms = PAWL_AGE_BOOST_MAX_MS + 1;
  CHECK_INT(pawl_open(&bad, &oo, err, sizeof err), ==, PAWL_EINVAL);
  CHECK_MSG(err, "age boost must be between 0 and 2592000000 ms",
            "(got 2592000001)");

  pawl_t *p = bounds_open();
  pawl_id_t id;
  CHECK_OK(pawl_enqueue(p, "t", NULL, NULL, &id, NULL));
  pawl_claim_opts_t co = {.lease_ms = PAWL_LEASE_MAX_MS + 1};
  pawl_job_t **jobs = NULL;
  size_t n = 0;
  CHECK_INT(pawl_claim(p, &co, 1, &jobs, &n), ==, PAWL_EINVAL);
  CHECK_MSG(pawl_errmsg(p), "lease_ms", "(got 86400001)");
  co.lease_ms = -1;
  CHECK_INT(pawl_claim(p, &co, 1, &jobs, &n), ==, PAWL_EINVAL);
  co.lease_ms = 0;
  CHECK_OK(pawl_claim(p, &co, 1, &jobs, &n));
  CHECK_INT(n, ==, 1);

  int got = 1;
  CHECK_INT(pawl_lock_acquire(p, "l", "me", INT64_MAX, &got), ==, PAWL_EINVAL);
  CHECK_MSG(pawl_errmsg(p), "lock TTL must be between 1 and 86400000 ms");
  CHECK_INT(got, ==, 0);
  int held = 1;
  CHECK_INT(pawl_lock_extend(p, "l", "me", 0, &held), ==, PAWL_EINVAL);

  pawl_outcome_t out = {.id = id, .attempt = 1, .kind = PAWL_OUT_RETRY,
                        .error = "e", .run_at = INT64_MAX};
  int rc = 0;
  CHECK_INT(pawl_finish(p, &out, 1, &rc), ==, PAWL_EINVAL);
  CHECK_MSG(pawl_errmsg(p), "run_at must be between 0 and 253402300799999");
  out.kind = PAWL_OUT_SNOOZE;
  out.run_at = -1;
  CHECK_INT(pawl_finish(p, &out, 1, &rc), ==, PAWL_EINVAL);
  /* Nothing was written: the job still runs under attempt 1. */
  pawl_job_t *j = NULL;
  CHECK_OK(pawl_get(p, &id, &j));
  CHECK_INT(j->state, ==, PAWL_RUNNING);
  pawl_job_free(j);
  out.run_at = PAWL_TIME_MAX_MS;
  CHECK_OK(pawl_finish(p, &out, 1, &rc));
  CHECK_INT(rc, ==, 0);
  pawl_jobs_free(jobs, n);
  pawl_close(p);
}

/* The rank cannot overflow even with values past the API's bounds. */
void test_bounds_store_rank_saturates(void) {
  /* No boost: a time like the others, priority first. */
  CHECK_INT(store_rank(5, 1000, 0), ==, 5 * STORE_RANK_NO_BOOST_MS - 1000);
  CHECK_INT(store_rank(PAWL_PRIORITY_MIN, PAWL_TIME_MAX_MS, 0), >, INT64_MIN);
  CHECK_INT(store_rank(PAWL_PRIORITY_MAX, 0, 0), <, INT64_MAX);
  CHECK_INT(store_rank(2, 1000, 10), ==, 20 - 1000);
  CHECK_INT(store_rank(INT32_MAX, INT64_MIN, INT64_MAX), ==, INT64_MAX);
  CHECK_INT(store_rank(INT32_MIN, INT64_MAX, INT64_MAX), ==, INT64_MIN);
  CHECK_INT(store_rank(0, INT64_MIN, 1), ==, INT64_MAX);
  /* Within the bounds, the exact value. */
  CHECK_INT(store_rank(PAWL_PRIORITY_MAX, 0, PAWL_AGE_BOOST_MAX_MS), ==,
            (int64_t)PAWL_PRIORITY_MAX * PAWL_AGE_BOOST_MAX_MS);
  CHECK_INT(store_rank(PAWL_PRIORITY_MIN, PAWL_TIME_MAX_MS,
                       PAWL_AGE_BOOST_MAX_MS),
            ==,
            (int64_t)PAWL_PRIORITY_MIN * PAWL_AGE_BOOST_MAX_MS -
                PAWL_TIME_MAX_MS);
}

/* The host's periods and default timeout: refused before anything starts. */
void test_bounds_host_opts(void) {
  pawl_t *p = bounds_open();
  CHECK_INT(system("mkdir -p scripts"), ==, 0);
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.scripts_dir = "scripts";
  ho.default_timeout_s = INT64_MAX;
  CHECK_INT(pawl_start(p, &ho), ==, PAWL_EINVAL);
  CHECK_MSG(pawl_errmsg(p), "default_timeout_s must be between 0 and 86400");
  pawl_host_opts_init(&ho);
  ho.scripts_dir = "scripts";
  ho.grace_ms = INT64_MAX;
  CHECK_INT(pawl_start(p, &ho), ==, PAWL_EINVAL);
  CHECK_MSG(pawl_errmsg(p), "grace_ms", "(got 9223372036854775807)");
  pawl_close(p);
}

/* Sizes (a job's heap ceiling): one reader for pawl run --job-memory and
 * a script's `memory`; every refusal names the value and the range. */
void test_bounds_sizes(void) {
  char err[300];
  int64_t v = 0;
  static const struct {
    const char *text;
    int64_t want;
  } ok[] = {
      {"64M", INT64_C(64) << 20},      {"1G", INT64_C(1) << 30},
      {"1048576", INT64_C(1) << 20},   {"2048K", INT64_C(2) << 20},
      {"512KiB", -1},                  {"64 MB", INT64_C(64) << 20},
      {"2 GiB", INT64_C(2) << 30},     {"64g", INT64_C(64) << 30},
      {"1048576B", INT64_C(1) << 20},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int rc = pawl__bounds_size("memory", ok[i].text, PAWL_JOB_MEMORY_MIN,
                               PAWL_JOB_MEMORY_MAX, &v, err, sizeof err);
    if (ok[i].want < 0) { /* read, but below the minimum */
      CHECK_INT(rc, ==, -1);
      CHECK_MSG(err, "memory must be a size between 1 MiB and 64 GiB",
                "(got \"512KiB\")");
    } else {
      CHECK_INT(rc, ==, 0);
      CHECK_INT(v, ==, ok[i].want);
    }
  }
  static const char *const bad[] = {
      "", "M", "lots", "1.5G", "-1", "0", "1K", "65G", "1T", "64MM", "64 M B",
      " 64M", "64M ", "99999999999999999999", "9223372036854775807K",
      "18014398509481984T"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = 7;
    CHECK_INT(pawl__bounds_size("--job-memory", bad[i], PAWL_JOB_MEMORY_MIN,
                                PAWL_JOB_MEMORY_MAX, &v, err, sizeof err),
              ==, -1);
    CHECK_MSG(err, "--job-memory must be a size between 1 MiB and 64 GiB");
    CHECK_INT(v, ==, 7);
  }
  CHECK_INT(pawl__bounds_size_num("memory", 1.5 * 1048576, PAWL_JOB_MEMORY_MIN,
                                  PAWL_JOB_MEMORY_MAX, &v, err, sizeof err),
            ==, 0);
  CHECK_INT(v, ==, 1572864);
  CHECK_INT(pawl__bounds_size_num("memory", 1048576.5, PAWL_JOB_MEMORY_MIN,
                                  PAWL_JOB_MEMORY_MAX, &v, err, sizeof err),
            ==, -1);
  CHECK_MSG(err, "(got 1048576.5)");
  CHECK_INT(pawl__bounds_size_num("memory", NAN, PAWL_JOB_MEMORY_MIN,
                                  PAWL_JOB_MEMORY_MAX, &v, err, sizeof err),
            ==, -1);
  CHECK_MSG(err, "(got nan)");
  CHECK_INT(pawl__bounds_size_num("memory", 1e300, PAWL_JOB_MEMORY_MIN,
                                  PAWL_JOB_MEMORY_MAX, &v, err, sizeof err),
            ==, -1);
  char text[32];
  pawl__bounds_size_text(INT64_C(256) << 20, text, sizeof text);
  CHECK_STR(text, "256 MiB");
  pawl__bounds_size_text(INT64_C(3) << 29, text, sizeof text);
  CHECK_STR(text, "1536 MiB");
  pawl__bounds_size_text(1000, text, sizeof text);
  CHECK_STR(text, "1000 bytes");
  /* The host option: pawl_start refuses it with the same words. */
  pawl_t *p = bounds_open();
  CHECK_INT(system("mkdir -p scripts"), ==, 0);
  pawl_host_opts_t ho;
  pawl_host_opts_init(&ho);
  ho.scripts_dir = "scripts";
  ho.job_memory = 1000;
  CHECK_INT(pawl_start(p, &ho), ==, PAWL_EINVAL);
  CHECK_MSG(pawl_errmsg(p), "job_memory must be a size between 1 MiB and 64 GiB",
            "(got 1000)");
  ho.job_memory = INT64_MAX;
  CHECK_INT(pawl_start(p, &ho), ==, PAWL_EINVAL);
  ho.job_memory = -1;
  CHECK_INT(pawl_start(p, &ho), ==, PAWL_EINVAL);
  pawl_close(p);
}
