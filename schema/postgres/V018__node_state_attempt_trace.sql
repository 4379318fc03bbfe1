-- pawl schema, PostgreSQL, version 18: a node's clean stop, and an
-- attempt's traceback apart from its error.
-- Shipped migrations are never edited: add V019__*.sql instead.
--
-- stopped_at: when the node stopped cleanly (its last act, after its jobs
-- were finished or handed back); NULL while it runs. A heartbeat (the node
-- started again under its id) clears it. A node that died has NULL here
-- and a last_beat that lapsed: the views tell it from the lease.
ALTER TABLE pawl_nodes ADD COLUMN stopped_at timestamptz;

-- trace: the Lua traceback of a failed attempt (sanitized like error),
-- NULL for none; error keeps the message alone. The archive keeps the
-- same columns in the same order (it is filled with SELECT x.*).
ALTER TABLE pawl_attempts ADD COLUMN trace text;
ALTER TABLE pawl_attempts_archive ADD COLUMN trace text;
