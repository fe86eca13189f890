-- The sync state of each repository followed through a verified event
-- source (the relay firehose): the revision and MST root of the last
-- commit applied, stored with the records and the stream cursor. The next
-- commit's since and prevData must match them, else commits were missed.
CREATE TABLE repo_states (
    did        TEXT PRIMARY KEY,
    rev        TEXT NOT NULL,
    data       TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
