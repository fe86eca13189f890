-- Record events whose record-event script failed and that wait for an
-- automatic retry (appview.Config.ScriptRetry). They are not dead letters:
-- a row is deleted when an attempt succeeds, and moved to dead_letters
-- when the last attempt fails. due_at is when the next attempt may be
-- made; an instance running the attempt pushes it forward (its claim, taken
-- with FOR UPDATE SKIP LOCKED), so that a stopped instance's retries are
-- taken up again. created_at is the first failure; record is NULL for
-- deletes. IDs compare bytewise, as in dead_letters.
CREATE TABLE script_retries (
    id          TEXT COLLATE "C" PRIMARY KEY,
    lexicon_id  TEXT NOT NULL DEFAULT '',
    uri         TEXT NOT NULL DEFAULT '',
    did         TEXT NOT NULL DEFAULT '',
    collection  TEXT NOT NULL DEFAULT '',
    rkey        TEXT NOT NULL DEFAULT '',
    action      TEXT NOT NULL DEFAULT '',
    cid         TEXT NOT NULL DEFAULT '',
    rev         TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    attempts    INTEGER NOT NULL DEFAULT 0,
    record      JSONB,
    created_at  TIMESTAMPTZ NOT NULL,
    due_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX script_retries_due ON script_retries (due_at, id);
