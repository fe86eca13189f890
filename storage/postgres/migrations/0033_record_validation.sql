-- Store and flag, don't drop: a record its lexicon refuses may be stored
-- with the refusal (the validation mode flag or hide). invalid holds the
-- validation error, NULL for a valid record: the column costs a valid
-- record one NULL byte, and no existing index changes, so the read
-- paths keep their plans. The partial index holds only the flagged
-- records: the counts per collection and reason, and nothing else, read
-- it, and a valid record's write never touches it.
ALTER TABLE records ADD COLUMN invalid TEXT;
CREATE INDEX records_invalid ON records (collection, invalid, uri) WHERE invalid IS NOT NULL;

-- The background re-validation of a collection's stored records after a
-- revision of its lexicon: one row per collection, the pass resuming
-- after (after_created, after_uri) in the collection's newest-first
-- listing order. revision is the lexicon revision the pass validates
-- against; a newer revision restarts it.
CREATE TABLE validation_passes (
    collection    TEXT PRIMARY KEY,
    revision      INTEGER NOT NULL,
    after_created TIMESTAMPTZ,
    after_uri     TEXT,
    checked       BIGINT NOT NULL DEFAULT 0,
    flagged       BIGINT NOT NULL DEFAULT 0,
    cleared       BIGINT NOT NULL DEFAULT 0,
    done          BOOLEAN NOT NULL DEFAULT FALSE,
    started_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);
