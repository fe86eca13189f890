-- The instance as an OAuth client of accounts' authorization servers:
-- pending authorization requests (single-use state, sealed PKCE verifier
-- and DPoP key) and the sessions they produce (sealed tokens and DPoP key).
CREATE TABLE oauth_client_requests (
    state         TEXT PRIMARY KEY,
    purpose       TEXT NOT NULL,
    subject       TEXT NOT NULL DEFAULT '',
    domain_origin TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    account_did   TEXT NOT NULL DEFAULT '',
    sealed_data   TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX oauth_client_requests_expires ON oauth_client_requests (expires_at);

CREATE TABLE oauth_client_sessions (
    did           TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    purpose       TEXT NOT NULL,
    domain_origin TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    sealed_data   TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (did, session_id)
);
