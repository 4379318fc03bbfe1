-- pawl schema, SQLite, version 16: what job code enqueues (docs/security.md,
-- "What job code may write").
-- Shipped migrations are never edited: add V017__*.sql instead.
--
-- depth: the generation of a job in a line of jobs enqueued by jobs. A job
-- enqueued by an operator, the CLI, the C API or SQL has 0; one enqueued by
-- job code has its parent's depth + 1 (host/lua/host_fns.c), which the
-- parent's max_depth bounds. The claim reads the column with the row and
-- never filters or sorts on it: no index has it.
ALTER TABLE pawl_jobs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pawl_jobs_archive ADD COLUMN depth INTEGER;

-- ident: the identity of a batch made by job code (the parent job's id and
-- the ordinal of its pawl.batch call in the run, or the key the script
-- gave), so that a rerun of the parent after a crash finds the batch it
-- made instead of making another. NULL (batches from operators and
-- programs without a key) for none.
ALTER TABLE pawl_batches ADD COLUMN ident TEXT;
CREATE UNIQUE INDEX pawl_batches_ident ON pawl_batches (ident)
  WHERE ident IS NOT NULL;
