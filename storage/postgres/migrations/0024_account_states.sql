-- The status of each account as the network's #account events report it
-- (ingest.AccountEvent): active, or inactive with a status such as
-- deactivated, takendown, suspended or deleted. Written in the record
-- batches, in stream order: an inactive account's records are removed in
-- the same transaction, and upserts of its records are skipped while its
-- row says inactive.
CREATE TABLE account_states (
    did        TEXT PRIMARY KEY,
    active     BOOLEAN NOT NULL,
    status     TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
