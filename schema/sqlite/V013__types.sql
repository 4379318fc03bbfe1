-- pawl schema, SQLite, version 13: what admin views know of job types.
-- Shipped migrations are never edited: add V014__*.sql instead.
--
-- One row per job type a host has loaded a script for: `redact`, the JSON
-- array of the payload field names its script lists in `redact = {...}`
-- ([] for none). Admin views (pawl show, pawl jobs --json, the console) run
-- without the scripts, on any machine that reaches the database, and hide
-- these fields as well as the built-in secret words. Written by the host
-- when it loads or reloads its scripts, only where the list changed. A type
-- whose script is gone keeps its row: its jobs stay hidden as they were.
-- `branches`: the names of the script's `branches`, sorted, []
-- for none; an enqueue with `when = "branch:NAME"` after a job of this
-- type is refused when NAME is not among them (NULL: not known, not
-- checked).
CREATE TABLE pawl_types (
  type        TEXT PRIMARY KEY,
  redact      TEXT NOT NULL CHECK (json_valid(redact) AND
                                   json_type(redact) = 'array'),
  branches    TEXT CHECK (branches IS NULL OR (json_valid(branches) AND
                                               json_type(branches) = 'array')),
  updated_at  INTEGER NOT NULL
) WITHOUT ROWID;
