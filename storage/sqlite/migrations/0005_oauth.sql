-- OAuth: DPoP key provisions, device sessions and client authentication
-- keys. Secrets (private keys, tokens) are sealed before they get here.

-- A provision's hvp_ handle is a single-use bearer value: only its SHA-256
-- is kept. used_at is set once, when a session registers the key.
CREATE TABLE dpop_provisions (
    id             TEXT PRIMARY KEY,
    handle_hash    TEXT NOT NULL UNIQUE,
    client_id      TEXT NOT NULL REFERENCES api_clients (id) ON DELETE CASCADE,
    sealed_key     TEXT NOT NULL,
    jkt            TEXT NOT NULL,
    pkce_challenge TEXT,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    used_at        INTEGER
);
CREATE INDEX dpop_provisions_client ON dpop_provisions (client_id);
CREATE INDEX dpop_provisions_expires ON dpop_provisions (expires_at);

-- One row per device: a user may be signed in on several devices of one
-- app, each with its own DPoP key (jkt).
CREATE TABLE device_sessions (
    id                   TEXT PRIMARY KEY,
    client_id            TEXT NOT NULL REFERENCES api_clients (id) ON DELETE CASCADE,
    did                  TEXT NOT NULL,
    dpop_key_id          TEXT NOT NULL,
    jkt                  TEXT NOT NULL,
    sealed_dpop_key      TEXT NOT NULL,
    sealed_access_token  TEXT NOT NULL,
    sealed_refresh_token TEXT NOT NULL,
    expires_at           INTEGER NOT NULL,
    scopes               TEXT NOT NULL,
    pds_url              TEXT NOT NULL,
    issuer               TEXT NOT NULL,
    auth_kid             TEXT,
    version              INTEGER NOT NULL DEFAULT 1,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    UNIQUE (client_id, jkt)
);
CREATE INDEX device_sessions_client_did ON device_sessions (client_id, did, created_at DESC);
CREATE INDEX device_sessions_auth_kid ON device_sessions (client_id, auth_kid) WHERE auth_kid IS NOT NULL;

-- ES256 keys Lexview signs client assertions with. At most one current
-- key per client; retiring keys stay published until their sessions end.
CREATE TABLE client_auth_keys (
    client_id          TEXT NOT NULL REFERENCES api_clients (id) ON DELETE CASCADE,
    kid                TEXT NOT NULL,
    sealed_private_key TEXT NOT NULL,
    public_jwk         TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('current', 'retiring', 'revoked')),
    created_at         INTEGER NOT NULL,
    retired_at         INTEGER,
    revoked_at         INTEGER,
    PRIMARY KEY (client_id, kid)
);
CREATE UNIQUE INDEX client_auth_keys_one_current ON client_auth_keys (client_id) WHERE status = 'current';
