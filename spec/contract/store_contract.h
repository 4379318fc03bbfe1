/* store_contract.h: the store contract suite, written once for every
 * backend.
 *
 * Each contract test is a function taking the database URL of a fresh,
 * empty database. A backend registers the suite by defining, for each
 * CONTRACT_TEST(name) below, a unit test that makes a URL and calls
 * contract_<name>(url): see contract_sqlite.c and contract_postgres.c. */
#ifndef PAWL_STORE_CONTRACT_H
#define PAWL_STORE_CONTRACT_H

#define CONTRACT_TESTS(X)      \
  X(enqueue_get)               \
  X(enqueue_defaults)          \
  X(enqueue_bad_input)         \
  X(enqueue_many_atomic)       \
  X(enqueue_many_fields)       \
  X(claim_order)               \
  X(claim_due_only)            \
  X(claim_queues)              \
  X(claim_batch_lease)         \
  X(age_boost)                 \
  X(finish_success)            \
  X(finish_stale)              \
  X(retry_then_success)        \
  X(dead_letter)               \
  X(snooze_release)            \
  X(release_keeps_place)       \
  X(transitions)               \
  X(transition_noop)           \
  X(idempotency_key)           \
  X(business_key)              \
  X(idempotency_business_existing) \
  X(heartbeat_extends)         \
  X(heartbeat_expired)         \
  X(recover_expired)           \
  X(recover_poison)            \
  X(recover_unset_max_attempts) \
  X(recover_not_started)       \
  X(recover_poison_deferred)   \
  X(begin)                     \
  X(history_operator)          \
  X(list_filters)              \
  X(list_reentrant)            \
  X(history_out_of_memory)     \
  X(locks)                     \
  X(nodes)                     \
  X(progress)                  \
  X(extend_one)                \
  X(next_due)                  \
  X(logs)                      \
  X(logs_bad_input)            \
  X(json_policy)

/* Starts `n` processes that open `url` (a database nobody has migrated yet)
 * at the same instant and enqueue one job each; checks that every one
 * succeeded. The caller then checks the schema was migrated once. */
void contract_open_race(const char *url, int n);

#define CONTRACT_DECLARE(name) void contract_##name(const char *url);
CONTRACT_TESTS(CONTRACT_DECLARE)
#undef CONTRACT_DECLARE

#endif
