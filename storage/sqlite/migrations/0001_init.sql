-- Records: one row per AT URI. Times are integer microseconds since the epoch.
CREATE TABLE records (
    uri        TEXT PRIMARY KEY,
    did        TEXT NOT NULL,
    collection TEXT NOT NULL,
    rkey       TEXT NOT NULL,
    cid        TEXT NOT NULL,
    rev        TEXT NOT NULL DEFAULT '',
    record     TEXT NOT NULL,
    indexed_at INTEGER NOT NULL
);
CREATE INDEX records_collection_newest ON records (collection, indexed_at DESC, uri DESC);
CREATE INDEX records_collection_did_newest ON records (collection, did, indexed_at DESC, uri DESC);
CREATE INDEX records_did ON records (did);

CREATE TABLE lexicons (
    id                TEXT PRIMARY KEY,
    revision          INTEGER NOT NULL,
    lexicon_type      TEXT NOT NULL,
    lexicon_json      TEXT NOT NULL,
    backfill          BOOLEAN NOT NULL,
    target_collection TEXT,
    script            TEXT,
    index_hook        TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
);

CREATE TABLE stream_cursors (
    name       TEXT PRIMARY KEY,
    value      INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
