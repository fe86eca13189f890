-- The instance's service identity: the domains it is served on (one of
-- them primary: its host names the did:web) and the verification methods
-- its DID document lists.
CREATE TABLE domains (
    id         TEXT PRIMARY KEY,
    url        TEXT NOT NULL UNIQUE,
    is_primary BOOLEAN NOT NULL DEFAULT FALSE,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
-- At most one primary domain, whatever races occur.
CREATE UNIQUE INDEX domains_one_primary ON domains (is_primary) WHERE is_primary;

CREATE TABLE verification_methods (
    fragment             TEXT PRIMARY KEY,
    key_type             TEXT NOT NULL,
    public_key_multibase TEXT NOT NULL,
    sealed_private_key   TEXT NOT NULL DEFAULT '',
    created_at           INTEGER NOT NULL
);
