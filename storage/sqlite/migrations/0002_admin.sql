CREATE TABLE admin_users (
    id           TEXT PRIMARY KEY,
    did          TEXT NOT NULL UNIQUE,
    is_super     BOOLEAN NOT NULL DEFAULT FALSE,
    permissions  TEXT NOT NULL DEFAULT '[]',
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER
);
-- At most one super user, whatever races occur.
CREATE UNIQUE INDEX admin_users_one_super ON admin_users (is_super) WHERE is_super;

CREATE TABLE admin_api_keys (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES admin_users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    key_prefix   TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    permissions  TEXT NOT NULL DEFAULT '[]',
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER
);
CREATE INDEX admin_api_keys_user ON admin_api_keys (user_id);

CREATE TABLE api_clients (
    id                     TEXT PRIMARY KEY,
    client_key             TEXT NOT NULL UNIQUE,
    secret_hash            TEXT NOT NULL,
    name                   TEXT NOT NULL,
    client_id_url          TEXT NOT NULL UNIQUE,
    client_uri             TEXT NOT NULL,
    redirect_uris          TEXT NOT NULL DEFAULT '[]',
    scopes                 TEXT NOT NULL,
    client_type            TEXT NOT NULL,
    allowed_origins        TEXT NOT NULL DEFAULT '[]',
    rate_limit_capacity    INTEGER,
    rate_limit_refill_rate REAL,
    is_active              BOOLEAN NOT NULL DEFAULT TRUE,
    created_by             TEXT NOT NULL,
    parent_client_id       TEXT REFERENCES api_clients (id) ON DELETE CASCADE,
    owner_did              TEXT,
    created_at             INTEGER NOT NULL,
    updated_at             INTEGER NOT NULL
);
CREATE INDEX api_clients_parent ON api_clients (parent_client_id);
CREATE INDEX api_clients_created ON api_clients (created_at DESC);

CREATE TABLE event_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    event_type TEXT NOT NULL,
    severity   TEXT NOT NULL,
    actor_did  TEXT,
    subject    TEXT,
    detail     TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL
);
CREATE INDEX event_log_type ON event_log (event_type, id DESC);
CREATE INDEX event_log_subject ON event_log (subject, id DESC);
CREATE INDEX event_log_created ON event_log (created_at);

CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE setting_blobs (
    key          TEXT PRIMARY KEY,
    content_type TEXT NOT NULL,
    data         BLOB NOT NULL,
    updated_at   INTEGER NOT NULL
);
