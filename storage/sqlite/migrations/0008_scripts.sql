-- Lua scripts, at most one per trigger ("xrpc.query:<nsid>",
-- "record.index:<nsid>", ...). revision grows each time the source changes.
CREATE TABLE scripts (
    id          TEXT PRIMARY KEY,
    trigger     TEXT NOT NULL UNIQUE,
    source      TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    revision    INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

-- Secrets scripts read through `vars`, sealed (AES-256-GCM) before they
-- get here.
CREATE TABLE script_variables (
    key        TEXT PRIMARY KEY,
    sealed     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- Events whose script failed every retry. record is NULL for deletes;
-- resolved_at is NULL while the dead letter is unresolved.
CREATE TABLE dead_letters (
    id          TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
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
    record      TEXT,
    created_at  INTEGER NOT NULL,
    resolved_at INTEGER
);
-- The newest-first listing, of everything or of one collection; the
-- unresolved ones oldest first (retries) or newest first (the admin view).
CREATE INDEX dead_letters_newest ON dead_letters (created_at DESC, id DESC);
CREATE INDEX dead_letters_collection_newest ON dead_letters (collection, created_at DESC, id DESC);
CREATE INDEX dead_letters_unresolved ON dead_letters (created_at, id) WHERE resolved_at IS NULL;
