-- The instance's own OAuth client keys: ES256 keys it signs its
-- confidential-client assertions with (private_key_jwt). At most one
-- current key; retiring keys stay published until revoked.
CREATE TABLE instance_oauth_keys (
    kid                TEXT PRIMARY KEY,
    sealed_private_key TEXT NOT NULL,
    public_jwk         TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('current', 'retiring', 'revoked')),
    created_at         INTEGER NOT NULL,
    retired_at         INTEGER,
    revoked_at         INTEGER
);
CREATE UNIQUE INDEX instance_oauth_keys_one_current ON instance_oauth_keys (status) WHERE status = 'current';
