-- pawl schema, SQLite, version 17: recurring definitions of scripts that
-- fail to load. Shipped migrations are never edited: add a later one
-- instead.
--
-- load_error: set while the script that declares a script-born definition
-- fails to load (what the loading node reported); NULL once it loads. The
-- definition itself is kept as it was, enabled or not: a script that does
-- not load is not a script that is gone.
ALTER TABLE pawl_recurring ADD COLUMN load_error TEXT;
