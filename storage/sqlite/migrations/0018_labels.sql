-- Labelers: the labelers the instance subscribes to, each with the
-- sequence number of the last event stored from its stream (NULL before
-- the first).
CREATE TABLE labelers (
    did        TEXT PRIMARY KEY,
    status     TEXT NOT NULL,
    cursor     INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- Labels: the latest label by cts for each (src, uri, val), a negation
-- included; they go with their labeler. cid is '' for any version of the
-- subject, exp NULL for never, sig NULL when unsigned.
CREATE TABLE labels (
    src TEXT NOT NULL REFERENCES labelers (did) ON DELETE CASCADE,
    uri TEXT NOT NULL,
    val TEXT NOT NULL,
    cid TEXT NOT NULL DEFAULT '',
    neg BOOLEAN NOT NULL,
    cts INTEGER NOT NULL,
    exp INTEGER,
    sig BLOB,
    ver INTEGER NOT NULL,
    PRIMARY KEY (src, uri, val)
);
-- A subject's labels, and record filters by a subject's label values.
CREATE INDEX labels_uri_val ON labels (uri, val);
