/* fault.h: TEST-ONLY fault injection: a store that refuses the Nth write,
 * a thread that does not start, an allocation that fails. The plan lives
 * here, in core/, so that every layer may ask it; the store that refuses
 * is stores/common/fault_store.c.
 *
 * Off unless the environment variable PAWL_TEST_FAULTS is set when the
 * first database is opened (the `pawl` binary, the library), or a C test
 * calls pawl__fault_plan_set(). It exists so that tests can drive the paths that
 * real failures take (a refused outcome, a database that stays away, a
 * thread that cannot start) without hoping for them. Never set
 * PAWL_TEST_FAULTS in production: a node with faults planned refuses work
 * on purpose. A malformed plan makes every open fail with a message naming
 * the rule, so a typo cannot pass for a plan that never fires.
 *
 * A plan is rules separated by commas; a rule is SITE:N[+][:MODE]. N
 * counts events of the site in this process, from 1; "N+" means the Nth
 * and every later one.
 *
 *   finish:N[+]:transient  the finish call carrying the Nth outcome (or
 *                          every call from it on) fails with PAWL_EUNAVAIL,
 *                          nothing written: a database that went away
 *   finish:N:permanent     the Nth outcome is bad data: every finish call
 *                          that carries it unchanged (same job, attempt,
 *                          kind, result and error; log lines aside) fails
 *                          with PAWL_EINVAL; a rewritten one passes
 *   finish:N:logs          the Nth outcome is refused (PAWL_EINVAL) as long
 *                          as it carries its own log lines
 *   finish:N:poison        every outcome of the Nth outcome's job is
 *                          refused (PAWL_EINVAL), rewritten or not
 *   claim:N[+]             the Nth claim call (or every one from it on)
 *                          fails with PAWL_EUNAVAIL
 *   open:N[+]              the Nth database open (every one from it on)
 *                          fails with PAWL_EUNAVAIL
 *   thread:N[+]            the Nth thread the host starts (...) fails to
 *                          start, as if pthread_create said EAGAIN
 *   result_alloc:N[+]      the Nth copy of a job's result (...) fails, as
 *                          if out of memory
 *
 * Outcomes are counted as finish calls carry them: an outcome written
 * again after a failure is counted again. The start records the completer
 * writes for jobs claimed ahead (PAWL_OUT_STARTED) are not counted. */
#ifndef PAWL_FAULT_H
#define PAWL_FAULT_H

#include <stddef.h>

#include "pawl.h"

typedef enum fault_site {
  FAULT_FINISH,
  FAULT_CLAIM,
  FAULT_OPEN,
  FAULT_THREAD,
  FAULT_RESULT_ALLOC,
  FAULT_NSITES
} fault_site_t;

/* Replaces the plan (NULL or "": none) and resets every count. Returns 0,
 * or PAWL_EINVAL with a message in err when `spec` is malformed (the plan
 * is then empty). For C tests; the environment variable is read once, on
 * first use, unless this was called before. Not for use while stores are
 * in use on other threads. */
int pawl__fault_plan_set(const char *spec, char *err, size_t errlen);

/* 1 if this event of `site` is to fail (and counts it), else 0. Cheap when
 * no plan is set. For the sites that are not store calls (thread,
 * result_alloc). Thread-safe. */
int pawl__fault_hit(fault_site_t site);

/* For the store wrapper (stores/common/fault_store.c), on every store pawl
 * opens: 1 if the plan touches the store's calls (finish, claim), so the
 * store is to be wrapped; 0 if it does not (no plan: nothing changes); or,
 * with an "open" fault due or a malformed PAWL_TEST_FAULTS, PAWL_EUNAVAIL
 * or PAWL_EINVAL with the message in errbuf (the open fails). */
int pawl__fault_open(char *errbuf, size_t errlen);

/* The finish site, for the store wrapper: counts the n outcomes of one
 * finish call and says what the plan does to it: 0 (nothing),
 * PAWL_EUNAVAIL (a database that went away: nothing is written), or
 * PAWL_EINVAL with *refused the index of an outcome refused as bad data. */
int pawl__fault_finish(const pawl_outcome_t *outs, size_t n, size_t *refused);

#endif
