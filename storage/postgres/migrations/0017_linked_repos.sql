-- Linked repos: grants by which an account lets the instance write into its
-- repository, the invites that carry a grant to whoever follows them, and
-- the grant's sealed OAuth session.
--
-- `did` is unique (several NULLs are allowed: open grants and grants pinned
-- to a handle before authorization). A grant pinned to a DID stores that DID
-- at creation, so the rule covers it before authorization too.
CREATE TABLE linked_repos (
    id                TEXT PRIMARY KEY,
    did               TEXT UNIQUE,
    handle            TEXT,
    reason            TEXT NOT NULL DEFAULT '',
    scopes            TEXT NOT NULL,
    status            TEXT NOT NULL,
    last_error        TEXT,
    last_refreshed_at TIMESTAMPTZ,
    authorized_at     TIMESTAMPTZ,
    created_by        TEXT NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX linked_repos_created ON linked_repos (created_at);

-- invite_id is the hex SHA-256 of the invite token; the token itself is
-- never stored.
CREATE TABLE linked_repo_invites (
    invite_id  TEXT PRIMARY KEY,
    grant_id   TEXT NOT NULL REFERENCES linked_repos (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ,
    revoked_at TIMESTAMPTZ
);
CREATE INDEX linked_repo_invites_grant ON linked_repo_invites (grant_id);

-- The grant's OAuth session, sealed by the OAuth client: opaque here.
CREATE TABLE linked_repo_sessions (
    grant_id   TEXT PRIMARY KEY REFERENCES linked_repos (id) ON DELETE CASCADE,
    sealed     TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
