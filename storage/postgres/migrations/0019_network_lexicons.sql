-- Network lexicons: lexicons fetched from their NSID's authority (DNS TXT
-- _lexicon.<authority> -> DID -> PDS -> com.atproto.lexicon.schema record).
-- The lexicon itself is a row of `lexicons`; this row is its provenance.
CREATE TABLE network_lexicons (
    nsid                TEXT PRIMARY KEY,
    authority_did       TEXT NOT NULL,
    target_collection   TEXT,
    cid                 TEXT NOT NULL DEFAULT '',
    last_fetched_at     TIMESTAMPTZ NOT NULL,
    upstream_deleted_at TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL
);
