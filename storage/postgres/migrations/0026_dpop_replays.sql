-- DPoP proofs accepted recently, shared by every instance on the database:
-- a proof (key thumbprint and jti) accepted by one is refused by the others
-- until it expires (issue 21). proof_hash is SHA-256 of the thumbprint, a
-- zero byte and the jti. Rows are inserted if absent in one statement and
-- swept by expiry; no index on expires_at, since a sweep deletes most of
-- the table and scans it anyway.
CREATE TABLE dpop_replays (
    proof_hash BYTEA PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
);
