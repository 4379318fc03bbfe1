/* fault.c: TEST-ONLY fault injection (see fault.h for the plan's grammar).
 *
 * The plan and its counts. The plan is process-wide: every connection of
 * the process counts towards the same N. The store that refuses what the
 * plan says is stores/common/fault_store.c, which asks pawl__fault_open()
 * and pawl__fault_finish() here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fault.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAULT_MAX_RULES 16

typedef enum fault_mode {
  FAULT_FAIL,       /* claim, open, thread, result_alloc: the event fails */
  FAULT_TRANSIENT,  /* finish: the call fails with PAWL_EUNAVAIL */
  FAULT_PERMANENT,  /* finish: the marked outcome, unchanged, is refused */
  FAULT_LOGS,       /* finish: the marked outcome is refused with its logs */
  FAULT_POISON      /* finish: every outcome of the marked job is refused */
} fault_mode_t;

typedef struct fault_rule {
  fault_site_t site;
  uint64_t n;
  int plus;
  fault_mode_t mode;
  /* The outcome a permanent, logs or poison rule picked, once seen. */
  int marked;
  pawl_id_t id;
  int32_t attempt;
  int kind;
  uint64_t hash;
} fault_rule_t;

/* 0: the environment has not been read; 1: no plan; 2: a plan; 3: a
 * malformed PAWL_TEST_FAULTS (every open fails, saying so). */
static atomic_int fault_state;
static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static fault_rule_t fault_rules[FAULT_MAX_RULES];
static size_t fault_nrules;
static uint64_t fault_counts[FAULT_NSITES];
static char fault_bad[300];

static const char *const fault_site_names[FAULT_NSITES] = {
    [FAULT_FINISH] = "finish", [FAULT_CLAIM] = "claim", [FAULT_OPEN] = "open",
    [FAULT_THREAD] = "thread", [FAULT_RESULT_ALLOC] = "result_alloc"};

/* Parses one rule (`len` bytes at `s`). Returns 0 or -1 with err set. */
static int fault_parse_rule(const char *s, size_t len, fault_rule_t *r,
                            char *err, size_t errlen) {
  char text[128];
  if (len == 0 || len >= sizeof text) {
    snprintf(err, errlen, "PAWL_TEST_FAULTS: rule %s is not SITE:N[+][:MODE]",
             len ? "too long" : "empty");
    return -1;
  }
  memcpy(text, s, len);
  text[len] = 0;
  char *site = text, *num = strchr(site, ':');
  if (!num) goto bad;
  *num++ = 0;
  char *mode = strchr(num, ':');
  if (mode) *mode++ = 0;
  memset(r, 0, sizeof *r);
  r->site = FAULT_NSITES;
  for (int i = 0; i < FAULT_NSITES; i++)
    if (strcmp(site, fault_site_names[i]) == 0) r->site = (fault_site_t)i;
  if (r->site == FAULT_NSITES) goto bad;
  char *end = NULL;
  unsigned long long n = strtoull(num, &end, 10);
  if (end == num || n == 0 || n > 1000000000ull || num[0] == '-') goto bad;
  if (*end == '+') {
    r->plus = 1;
    end++;
  }
  if (*end) goto bad;
  r->n = n;
  if (r->site == FAULT_FINISH) {
    if (!mode) goto bad;
    if (strcmp(mode, "transient") == 0)
      r->mode = FAULT_TRANSIENT;
    else if (strcmp(mode, "permanent") == 0)
      r->mode = FAULT_PERMANENT;
    else if (strcmp(mode, "logs") == 0)
      r->mode = FAULT_LOGS;
    else if (strcmp(mode, "poison") == 0)
      r->mode = FAULT_POISON;
    else
      goto bad;
    if (r->plus && r->mode != FAULT_TRANSIENT) goto bad;
  } else {
    if (mode && strcmp(mode, "transient") != 0) goto bad;
    r->mode = FAULT_FAIL;
  }
  return 0;
bad:
  snprintf(err, errlen,
           "PAWL_TEST_FAULTS: rule \"%.*s\" is not SITE:N[+][:MODE] (sites: "
           "finish, claim, open, thread, result_alloc; finish takes "
           "transient, permanent, logs or poison)",
           (int)(len > 100 ? 100 : len), s);
  return -1;
}

/* Parses `spec` into the rules. Called with fault_mu held. */
static int fault_parse(const char *spec, char *err, size_t errlen) {
  fault_nrules = 0;
  memset(fault_counts, 0, sizeof fault_counts);
  if (!spec || !*spec) return 0;
  const char *s = spec;
  for (;;) {
    size_t len = strcspn(s, ",");
    if (fault_nrules == FAULT_MAX_RULES) {
      snprintf(err, errlen, "PAWL_TEST_FAULTS: at most %d rules",
               FAULT_MAX_RULES);
      fault_nrules = 0;
      return -1;
    }
    if (fault_parse_rule(s, len, &fault_rules[fault_nrules], err, errlen)) {
      fault_nrules = 0;
      return -1;
    }
    fault_nrules++;
    if (!s[len]) break;
    s += len + 1;
  }
  return 0;
}

/* Reads PAWL_TEST_FAULTS once. */
static void fault_init(void) {
  if (atomic_load(&fault_state) != 0) return;
  pthread_mutex_lock(&fault_mu);
  if (atomic_load(&fault_state) == 0) {
    const char *env = getenv("PAWL_TEST_FAULTS");
    int bad = fault_parse(env, fault_bad, sizeof fault_bad) != 0;
    atomic_store(&fault_state, bad ? 3 : fault_nrules ? 2 : 1);
  }
  pthread_mutex_unlock(&fault_mu);
}

int pawl__fault_plan_set(const char *spec, char *err, size_t errlen) {
  char scratch[300];
  if (!err || !errlen) {
    err = scratch;
    errlen = sizeof scratch;
  }
  err[0] = 0;
  pthread_mutex_lock(&fault_mu);
  int rc = fault_parse(spec, err, errlen);
  atomic_store(&fault_state, fault_nrules ? 2 : 1);
  pthread_mutex_unlock(&fault_mu);
  return rc ? PAWL_EINVAL : 0;
}

/* Counts one event of `site`; 1 if a rule says it fails. Called with
 * fault_mu held. */
static int fault_count(fault_site_t site) {
  uint64_t k = ++fault_counts[site];
  int hit = 0;
  for (size_t i = 0; i < fault_nrules; i++) {
    const fault_rule_t *r = &fault_rules[i];
    if (r->site == site && (r->plus ? k >= r->n : k == r->n)) hit = 1;
  }
  return hit;
}

int pawl__fault_hit(fault_site_t site) {
  if (atomic_load_explicit(&fault_state, memory_order_acquire) == 1) return 0;
  fault_init();
  if (atomic_load(&fault_state) != 2) return 0;
  pthread_mutex_lock(&fault_mu);
  int hit = fault_count(site);
  pthread_mutex_unlock(&fault_mu);
  return hit;
}

/* ---- the store sites ------------------------------------------------------ */

static uint64_t fault_hash(const char *s, uint64_t h) {
  if (!s) return (h ^ 0xff) * 1099511628211u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211u;
  return (h ^ 0xfe) * 1099511628211u;
}

static uint64_t fault_outcome_hash(const pawl_outcome_t *o) {
  return fault_hash(o->error, fault_hash(o->result, 1469598103934665603u));
}

static uint64_t fault_logs_hash(const pawl_outcome_t *o) {
  uint64_t h = 1469598103934665603u;
  for (size_t i = 0; i < o->nlogs; i++)
    h = fault_hash(o->logs[i].fields, fault_hash(o->logs[i].message, h));
  return h;
}

/* Whether rule r (with a marked outcome) refuses `o`. */
static int fault_refuses(const fault_rule_t *r, const pawl_outcome_t *o) {
  if (memcmp(&r->id, &o->id, sizeof o->id) != 0) return 0;
  switch (r->mode) {
  case FAULT_POISON: return 1;
  case FAULT_LOGS:
    return o->attempt == r->attempt && o->nlogs > 0 &&
           fault_logs_hash(o) == r->hash;
  case FAULT_PERMANENT:
    return o->attempt == r->attempt && (int)o->kind == r->kind &&
           fault_outcome_hash(o) == r->hash;
  default: return 0;
  }
}

int pawl__fault_finish(const pawl_outcome_t *outs, size_t n, size_t *refused) {
  pthread_mutex_lock(&fault_mu);
  /* Start records are not counted: a plan names the Nth outcome that
   * ends an attempt, wherever the completer's batches put the starts. */
  size_t ends = 0;
  for (size_t k = 0; k < n; k++) ends += outs[k].kind != PAWL_OUT_STARTED;
  uint64_t base = fault_counts[FAULT_FINISH];
  fault_counts[FAULT_FINISH] += ends;
  int transient = 0;
  const pawl_outcome_t *bad = NULL;
  for (size_t i = 0; i < fault_nrules; i++) {
    fault_rule_t *r = &fault_rules[i];
    if (r->site != FAULT_FINISH) continue;
    int carries = r->n > base && r->n <= base + ends;
    if (r->mode == FAULT_TRANSIENT) {
      if (r->plus ? base + ends >= r->n : carries) transient = 1;
      continue;
    }
    if (!r->marked && carries) {
      /* The (r->n - base)th end of this call. */
      const pawl_outcome_t *o = outs;
      for (uint64_t left = r->n - base;; o++)
        if (o->kind != PAWL_OUT_STARTED && --left == 0) break;
      r->marked = 1;
      r->id = o->id;
      r->attempt = o->attempt;
      r->kind = (int)o->kind;
      r->hash = r->mode == FAULT_LOGS ? fault_logs_hash(o) : fault_outcome_hash(o);
    }
    for (size_t k = 0; r->marked && !bad && k < n; k++)
      if (fault_refuses(r, &outs[k])) bad = &outs[k];
  }
  pthread_mutex_unlock(&fault_mu);
  if (transient) return PAWL_EUNAVAIL;
  if (bad) {
    *refused = (size_t)(bad - outs);
    return PAWL_EINVAL;
  }
  return 0;
}

int pawl__fault_open(char *errbuf, size_t errlen) {
  fault_init();
  int state = atomic_load(&fault_state);
  if (state == 1 || state == 0) return 0;
  if (state == 3) {
    snprintf(errbuf, errlen, "%s", fault_bad);
    return PAWL_EINVAL;
  }
  if (pawl__fault_hit(FAULT_OPEN)) {
    snprintf(errbuf, errlen,
             "database unreachable: fault injected (PAWL_TEST_FAULTS open)");
    return PAWL_EUNAVAIL;
  }
  int wrap = 0;
  pthread_mutex_lock(&fault_mu);
  for (size_t i = 0; i < fault_nrules; i++)
    if (fault_rules[i].site == FAULT_FINISH || fault_rules[i].site == FAULT_CLAIM)
      wrap = 1;
  pthread_mutex_unlock(&fault_mu);
  return wrap;
}
