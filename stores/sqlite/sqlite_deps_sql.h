/* sqlite_deps_sql.h: the SQL of dependencies between jobs
 * (schema/sqlite/V011__deps.sql). */
#ifndef PAWL_SQLITE_DEPS_SQL_H
#define PAWL_SQLITE_DEPS_SQL_H

/* Does parent row p (ended in state `st`) meet the edge's condition `c`?
 * 'failure' asks for failed; a canceled parent meets only 'done'. */
#define SQLITE_DEPS_MET(c, st)                                               \
  "(CASE " c " WHEN 'success' THEN " st " = 2 WHEN 'failure' THEN " st       \
  " = 3 WHEN 'done' THEN 1 ELSE " st " = 2 AND EXISTS (SELECT 1 FROM "       \
  "json_each(coalesce(p.branches, '[]')) WHERE value = substr(" c ", 8)) "   \
  "END)"

/* The release of a finish's parents, one statement per batch: ?1 is the
 * JSON array of the seqs of the jobs that ended in this transaction with
 * deps_open (the success UPDATE notes them through pawl_tp_note(), the
 * failure and the operator's transitions through the store); every
 * blocked child of theirs counts their ends at once (deps_left down by
 * how many of its parents are in the batch, deps_unmet up by those whose
 * condition failed). Returns the children whose last parent it was. */
#define SQLITE_DEPS_RELEASE                                                  \
  "UPDATE pawl_jobs AS c SET deps_left = c.deps_left - x.n, deps_unmet = "   \
  "c.deps_unmet + x.unmet FROM (SELECT d.child AS child, count(*) AS n, "    \
  "sum(NOT " SQLITE_DEPS_MET("d.cond", "p.state") ") AS unmet FROM "         \
  "pawl_jobs AS p JOIN pawl_deps AS d ON d.parent = p.id WHERE p.seq IN "    \
  "(SELECT value FROM json_each(?1)) AND p.deps_open = 1 AND p.state IN "    \
  "(2, 3, 4) GROUP BY d.child) AS x WHERE c.id = x.child AND c.state = 6 "   \
  "RETURNING id, deps_left, deps_unmet"

/* Their ends are counted: closed (a manual retry opens them again). */
#define SQLITE_DEPS_CLOSE                                                    \
  "UPDATE pawl_jobs SET deps_open = 0 WHERE seq IN (SELECT value FROM "      \
  "json_each(?1)) AND deps_open = 1 AND state IN (2, 3, 4)"

/* The seq of job ?1 if its end is still to be counted. */
#define SQLITE_DEPS_OPEN_SEQ                                                 \
  "SELECT seq FROM pawl_jobs WHERE id = ?1 AND deps_open = 1"

/* A new child's parent ?1 on condition ?2: its state as the child counts
 * it (paused from failed counts as failed) and whether it meets ?2. */
#define SQLITE_DEPS_PARENT                                                   \
  "SELECT CASE WHEN p.state = 5 THEN p.paused_from ELSE p.state END AS st, " \
  SQLITE_DEPS_MET("?2", "(CASE WHEN p.state = 5 THEN p.paused_from ELSE "    \
                  "p.state END)")                                            \
  " FROM pawl_jobs AS p WHERE p.id = ?1"

#define SQLITE_DEPS_EDGE                                                     \
  "INSERT INTO pawl_deps (parent, child, cond) VALUES (?1, ?2, ?3)"
#define SQLITE_DEPS_MARK_OPEN                                                \
  "UPDATE pawl_jobs SET deps_open = 1 WHERE id = ?1 AND deps_open = 0"
#define SQLITE_DEPS_COUNTS                                                   \
  "UPDATE pawl_jobs SET deps_left = ?2, deps_unmet = ?3 WHERE id = ?1"

/* Why child ?1 is canceled: its first parent whose condition failed. */
#define SQLITE_DEPS_WHY                                                      \
  "SELECT p.id, p.state, d.cond FROM pawl_deps AS d JOIN pawl_jobs AS p ON " \
  "p.id = d.parent WHERE d.child = ?1 AND p.state IN (2, 3, 4) AND NOT "     \
  SQLITE_DEPS_MET("d.cond", "p.state") " ORDER BY p.id LIMIT 1"

/* Did a parent that ended in state `st` (failed 3 or canceled 4, the
 * states a retry reopens) leave condition `c` unmet? 1 or 0. */
#define SQLITE_DEPS_UNMET_ENDED(c, st)                                       \
  "(CASE " c " WHEN 'failure' THEN " st " <> 3 WHEN 'done' THEN 0 ELSE 1 "   \
  "END)"

/* A manual retry (pawl__store_deps_reopen): the blocked children of
 * parent ?1, whose end they counted in state ?2, stop counting it. */
#define SQLITE_DEPS_UNCOUNT                                                  \
  "UPDATE pawl_jobs AS c SET deps_left = c.deps_left + 1, deps_unmet = "     \
  "c.deps_unmet - " SQLITE_DEPS_UNMET_ENDED("d.cond", "?2") " FROM "         \
  "pawl_deps AS d WHERE d.parent = ?1 AND c.id = d.child AND c.state = 6"
/* The children of parent ?1 (its end counted in state ?2) that its end
 * canceled: see store_reopen_steps_t.canceled. */
#define SQLITE_DEPS_CANCELED                                                 \
  "SELECT c.id FROM pawl_deps AS d JOIN pawl_jobs AS c ON c.id = d.child "   \
  "WHERE d.parent = ?1 AND c.state = 4 AND c.deps_left = 0 AND "             \
  "c.deps_unmet > 0 AND " SQLITE_DEPS_UNMET_ENDED("d.cond", "?2") " = 1 "    \
  "AND c.batch_id IS NULL AND NOT EXISTS (SELECT 1 FROM pawl_signals AS s "  \
  "WHERE s.job_id = c.id) AND (c.business_key IS NULL OR NOT EXISTS "        \
  "(SELECT 1 FROM pawl_jobs AS o WHERE o.business_key = c.business_key "     \
  "AND o.state IN (0, 1, 5, 6))) ORDER BY c.id"
#define SQLITE_DEPS_RECOUNT                                                  \
  "UPDATE pawl_jobs SET deps_left = deps_left + 1, deps_unmet = deps_unmet " \
  "- 1 WHERE id = ?1"
#define SQLITE_DEPS_REOPEN_SELF                                              \
  "UPDATE pawl_jobs SET deps_open = EXISTS (SELECT 1 FROM pawl_deps WHERE "  \
  "parent = ?1) WHERE id = ?1"

/* The branches that fired when job ?1 succeeded (?2, a JSON array). */
#define SQLITE_DEPS_BRANCHES                                                 \
  "UPDATE pawl_jobs SET branches = ?2 WHERE id = ?1 AND state = 2"

/* Replace (README "Dependencies and chains"): the replacement
 * ?2 of the live job ?1 takes its place in the graph. Its children follow
 * the replacement (they wait for its end, not the canceled old job's: the
 * old one stops being open so its cancel releases nobody), and it waits
 * for the old job's parents, with the old job's counts. SQLite's one
 * writer keeps the counts from moving meanwhile. */
#define SQLITE_DEPS_HAND_PARENT                                              \
  "UPDATE pawl_deps SET parent = ?2 WHERE parent = ?1"
#define SQLITE_DEPS_HAND_CHILD                                               \
  "UPDATE pawl_deps SET child = ?2 WHERE child = ?1"
#define SQLITE_DEPS_HAND_CLOSE                                               \
  "UPDATE pawl_jobs SET deps_open = 0 WHERE id = ?1 AND deps_open = 1"
#define SQLITE_DEPS_TAKE_OVER                                                \
  "UPDATE pawl_jobs SET deps_open = EXISTS (SELECT 1 FROM pawl_deps WHERE "  \
  "parent = ?2), deps_left = o.deps_left, deps_unmet = o.deps_unmet FROM "   \
  "(SELECT deps_left, deps_unmet FROM pawl_jobs WHERE id = ?1) AS o WHERE "  \
  "pawl_jobs.id = ?2"

/* A job's edges for `pawl show`: its parents, then its children, oldest
 * first. */
#define SQLITE_DEPS_LIST                                                     \
  "SELECT 1, p.id, p.type, p.state, d.cond FROM pawl_deps AS d JOIN "        \
  "pawl_jobs AS p ON p.id = d.parent WHERE d.child = ?1 UNION ALL SELECT 0, "\
  "c.id, c.type, c.state, d.cond FROM pawl_deps AS d JOIN pawl_jobs AS c ON "\
  "c.id = d.child WHERE d.parent = ?1 ORDER BY 1 DESC, 2"

#endif
